"""What-if answers: one trace through several scenarios side by side (``compare``), and the
cheapest configuration that meets a target (``size``).

Both reuse finished runs: a run is keyed on (trace, data version, scenario hash, model version)
(``pipelines.replay.run_id``), so a scenario already replayed by the same code is read back, not
replayed again.

**Sizing** orders the variants (the product of the ``--vary`` lists) by cost: each list is given
cheapest first, and a variant's cost is the sum of its values' positions (ties: the earlier
list's position first). It replays them in that order and stops at the first that meets every
target: that one is the cheapest. Before replaying a variant, the trace's exact LRU hit-ratio
curve prunes it when it cannot do better than a variant that already failed:

- the variants that differ only in cache capacity (``CAPACITY_KEYS``) form one family;
- the curve gives the hit ratio at each variant's capacity of the caches whose size is varied
  (the SSD cache's, at its chunk size; the DRAM cache's, at its page size; their sum when both
  vary), 0 for a cache switched off;
- a variant whose curve hit ratio is at most ``min_gain`` above that of a cheaper failed member
  of its family is predicted to fail and skipped: more capacity that holds no more of the
  working set does not change what reaches the back end. Above the trace's footprint this is
  exact (nothing is ever evicted: the runs are the same); on a flat stretch of the curve below
  it, it is an approximation, and ``prune=False`` replays everything.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.catalog import TraceRef
from pipelines.replay import replay_trace, run_paths
from replay.scenario import Scenario, load
from schemas.units import parse_size

#: short target names -> run summary keys (any other summary key may be used as is)
TARGET_ALIASES = {
    "mean_ms": "latency_mean_ms", "p50_ms": "latency_p50_ms", "p95_ms": "latency_p95_ms",
    "p99_ms": "latency_p99_ms", "max_ms": "latency_max_ms",
}
_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
#: scenario keys that change only how much the caches hold (a family for curve pruning)
CAPACITY_KEYS = frozenset({"dram.cache_bytes", "ssd_cache.capacity_bytes", "ssd_cache.drives", "ssd_cache.enabled"})
#: a variant's response time has warmed up from the first interval whose mean is within this
#: share of the mean over the run's last tenth
WARM_TOLERANCE = 0.10
#: the skew slice when no FAST VP scenario is compared: VNX2's 256 MiB (doc)
DEFAULT_SLICE_BYTES = 256 << 20


@dataclass(frozen=True)
class Target:
    """``metric op value``, e.g. ``p95_ms<=5`` (metric: a run summary key or an alias)."""

    metric: str
    op: str
    value: float
    text: str

    def met(self, row: dict) -> bool:
        v = row.get(self.metric)
        return v is not None and _OPS[self.op](v, self.value)


def parse_target(text: str) -> Target:
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*", text)
    if not m:
        raise ValueError(f"target {text!r}: expected METRIC OP NUMBER such as p95_ms<=5 or iops>=20000 "
                         f"(OP one of <=, <, >=, >; METRIC a run summary key or one of {', '.join(TARGET_ALIASES)})")
    try:
        value = float(m.group(3))
    except ValueError:
        raise ValueError(f"target {text!r}: {m.group(3)!r} is not a number") from None
    return Target(TARGET_ALIASES.get(m.group(1), m.group(1)), m.group(2), value, text.strip())


def _check_metrics(targets: Sequence[Target], metrics: dict) -> None:
    """A target on a metric a run does not report is a typo, not a miss."""
    for t in targets:
        if t.metric not in metrics:
            raise ValueError(f"target {t.text!r}: no metric {t.metric!r}; use one of {', '.join(TARGET_ALIASES)}, "
                             "iops, mb_per_s or another key of the run summary (tiercast replay --json)")


def scenario_of(spec: str, overrides: Sequence[str] = ()) -> Scenario:
    """``NAME`` or ``NAME key=value ...`` (a preset or a .toml path, then overrides of its own),
    plus the ``overrides`` every scenario gets. A scenario with overrides is labelled with them."""
    ref, *own = spec.split()
    if not ref:
        raise ValueError("empty scenario")
    sets = [*overrides, *own]
    sc = load(ref, sets)
    return sc.relabel(f"{sc.name} [{', '.join(own)}]") if own else sc


def warmup_s(intervals: pl.DataFrame) -> float | None:
    """Seconds from the trace's start to the start of the first interval whose array-wide mean
    response time is within ``WARM_TOLERANCE`` of the mean over the last tenth of the run (None:
    no interval with requests)."""
    if intervals.height == 0:
        return None
    a = (intervals.group_by("interval_start_ns")
         .agg(pl.col("requests").sum(), (pl.col("latency_mean_ms").fill_null(0) * pl.col("requests")).sum().alias("w"))
         .filter(pl.col("requests") > 0).sort("interval_start_ns")
         .with_columns(lat=pl.col("w") / pl.col("requests")))
    if a.height == 0:
        return None
    start, end = a["interval_start_ns"][0], a["interval_start_ns"][-1]
    tail = a.filter(pl.col("interval_start_ns") >= start + 0.9 * (end - start))
    steady = float(tail["w"].sum() / tail["requests"].sum())
    ok = a.filter((pl.col("lat") - steady).abs() <= WARM_TOLERANCE * steady)
    return float(ok["interval_start_ns"][0] / 1e9) if ok.height else None


def _pct_change(v: float | None, base: float | None) -> float | None:
    return None if v is None or not base else 100.0 * (v - base) / base


def _row(label: str, s: dict, intervals: pl.DataFrame) -> dict:
    tiers = {t["tier"]: t["request_share"] for t in json.loads(s["tiers"])} if s.get("tiers") else None
    return {
        "scenario": label, "run_id": s["run_id"], "reused": bool(s.get("already_done")),
        "requests": s["requests"], "iops": s["iops"], "mb_per_s": s["mb_per_s"],
        "latency_mean_ms": s["latency_mean_ms"], "latency_p95_ms": s["latency_p95_ms"],
        "latency_p99_ms": s["latency_p99_ms"],
        "dram_read_hit_ratio": s["read_hit_ratio"], "dram_write_hit_ratio": s["write_hit_ratio"],
        "ssd_hit_ratio": s.get("ssd_hit_ratio"), "ssd_fill_pct_end": s.get("ssd_fill_pct"),
        "tier_request_share": tiers,
        "flush_mb_per_s": s["flush_mb_per_s"], "forced_flush_count": s["forced_flush_count"],
        "forced_flush_stall_ms": s["forced_flush_stall_ms"], "throttle_delay_sum_ms": s["throttle_delay_sum_ms"],
        "warmup_s": warmup_s(intervals),
    }


def _replay(trace: TraceRef, data_dir: Path, sc: Scenario, label: str,
            progress: Callable[[str], Callable | None] | None) -> tuple[dict, dict]:
    """(the comparison row, the run summary)."""
    cb = progress(label) if progress else None
    s = replay_trace(trace, data_dir, sc, progress=cb)
    return _row(label, s, pl.read_parquet(run_paths(data_dir, s["run_id"])["volume_intervals"])), s


def compare(trace: TraceRef, data_dir: str | Path, scenarios: Sequence[Scenario],
            progress: Callable[[str], Callable | None] | None = None, measured: Sequence[str] | None = None,
            warn: Callable[[str], None] | None = None) -> list[dict]:
    """One row per scenario (``_row``; runs already made are reused), plus the change of IOPS,
    mean and p95 response time against the first scenario (``*_change_pct``), and each run
    against the captures that measured this trace (``model_vs_measured``: MAPE and bias per
    device, kept for the report): the captures ``measured`` names, else every matching one
    (:func:`pipelines.compare.matching_captures`; one that cannot be compared is passed to
    ``warn`` and left out)."""
    if not scenarios:
        raise ValueError("compare needs at least one scenario")
    labels = [sc.name for sc in scenarios]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"scenario {dup[0]!r} given twice: compare each configuration once")
    rows = [_replay(trace, Path(data_dir), sc, sc.name, progress)[0] for sc in scenarios]
    base = rows[0]
    for r in rows:
        for k in ("iops", "latency_mean_ms", "latency_p95_ms"):
            r[f"{k}_change_pct"] = _pct_change(r[k], base[k])
    _against_measured(trace, Path(data_dir), rows, measured, warn)
    return rows


def _against_measured(trace: TraceRef, data_dir: Path, rows: list[dict], measured: Sequence[str] | None,
                      warn: Callable[[str], None] | None) -> None:
    from pipelines.compare import compare_and_save, error_summary, matching_captures

    auto = measured is None
    refs = [c["capture_id"] for c in matching_captures(data_dir, trace.trace_id)] if auto else list(measured)
    for r in rows:
        r["model_vs_measured"] = []
        for ref in refs:
            try:
                r["model_vs_measured"].append(error_summary(compare_and_save(data_dir, r["run_id"], ref)))
            except (LookupError, ValueError, FileNotFoundError) as e:
                if not auto:
                    raise
                if warn:
                    warn(f"{r['scenario']} not compared with capture {ref}: {e}")


def trace_skews(trace: TraceRef, data_dir: str | Path, scenarios: Sequence[Scenario]) -> list[dict]:
    """The trace's skew (``tiercast skew``) at the slice size of every FAST VP scenario, else at
    :data:`DEFAULT_SLICE_BYTES`: one streaming count of the trace, cheap next to a replay, so
    ``compare`` always does it; a result of the same key (trace, data version, slice, code) is
    read back, not recomputed."""
    from pipelines.analytics import skew_result

    sizes = sorted({p.slice_bytes for sc in scenarios if sc.tiering for p in sc.pools
                    if p.name == sc.tiering.pool and p.slice_bytes}) or [DEFAULT_SLICE_BYTES]
    return [skew_result(trace, data_dir, b) for b in sizes]


# --------------------------------------------------------------------------------------------
# sizing
# --------------------------------------------------------------------------------------------
def parse_vary(text: str) -> tuple[str, list[str]]:
    """``key=v1,v2,...`` -> (key, values), values cheapest first."""
    key, sep, values = text.partition("=")
    vals = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not key.strip() or not vals:
        raise ValueError(f"--vary {text!r}: expected KEY=V1,V2,... such as ssd_cache.capacity_bytes=0,100GB,200GB")
    return key.strip(), vals


def _overrides(key: str, value: str) -> list[str]:
    """``ssd_cache.capacity_bytes=0`` means no SSD cache (its 0 otherwise means "from the drives")."""
    if key == "ssd_cache.capacity_bytes" and parse_size(value) == 0:
        return ["ssd_cache.enabled=false"]
    if key == "ssd_cache.capacity_bytes":
        return [f"{key}={value}", "ssd_cache.enabled=true"]
    return [f"{key}={value}"]


def _label(values: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


@dataclass
class Variant:
    values: dict[str, str]
    cost: tuple[int, ...]
    scenario: Scenario
    family: tuple[tuple[str, str], ...]  # the non-capacity values
    capacity_bytes: int = 0
    curve_hit_ratio: float | None = None
    row: dict | None = None
    meets: bool | None = None
    skipped: str | None = None  # why it was not replayed
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return _label(self.values)


def varied_capacity_bytes(sc: Scenario, keys: Sequence[str]) -> int:
    """The capacity of the caches whose size ``keys`` vary: the SSD cache (0 when off) and/or the
    DRAM cache."""
    ssd = any(k.startswith("ssd_cache.") for k in keys if k in CAPACITY_KEYS)
    cap = (sc.ssd.usable_bytes(sc.drive_classes) if sc.ssd else 0) if ssd else 0
    return cap + (sc.dram.cache_bytes if "dram.cache_bytes" in keys else 0)


def variants(base: str, vary: Sequence[tuple[str, list[str]]], overrides: Sequence[str] = ()) -> list[Variant]:
    """Every combination of the ``vary`` values on ``base``, cheapest first."""
    if not vary:
        raise ValueError("size needs at least one --vary KEY=V1,V2,...")
    keys = [k for k, _ in vary]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"--vary {dup[0]!r} given twice")
    out = []
    for idx in itertools.product(*(range(len(v)) for _, v in vary)):
        values = {k: vals[i] for (k, vals), i in zip(vary, idx, strict=True)}
        sets = [*overrides, *(o for k, v in values.items() for o in _overrides(k, v))]
        sc = load(base, sets)
        out.append(Variant(values, (sum(idx), *idx), sc.relabel(f"{sc.name} [{_label(values)}]"),
                           tuple((k, v) for k, v in values.items() if k not in CAPACITY_KEYS),
                           varied_capacity_bytes(sc, keys)))
    return sorted(out, key=lambda v: v.cost)


def curve_page_bytes(vs: Sequence[Variant]) -> int:
    """The SSD cache's chunk when its size varies, else the DRAM page."""
    if not any(k.startswith("ssd_cache.") for k in vs[0].values if k in CAPACITY_KEYS):
        return vs[0].scenario.dram.page_bytes
    for v in vs:
        if v.scenario.ssd:
            return v.scenario.ssd.chunk_bytes
    return vs[0].scenario.dram.page_bytes


@dataclass
class SizeResult:
    targets: list[str]
    chosen: Variant | None
    variants: list[Variant]
    curve_page_bytes: int | None

    def counts(self) -> dict[str, int]:
        c = {"variants": len(self.variants), "replayed": sum(v.row is not None for v in self.variants),
             "replayed_now": sum(v.row is not None and not v.row["reused"] for v in self.variants), "pruned_by_curve": 0, "not_needed": 0}
        for v in self.variants:
            if v.skipped == "curve":
                c["pruned_by_curve"] += 1
            elif v.skipped == "cheaper variant met the targets":
                c["not_needed"] += 1
        c["saved"] = c["pruned_by_curve"] + c["not_needed"]
        return c

    def as_dict(self) -> dict:
        return {
            "targets": self.targets, "chosen": self.chosen.label if self.chosen else None,
            "chosen_scenario": self.chosen.scenario.name if self.chosen else None,
            "chosen_run_id": self.chosen.row["run_id"] if self.chosen else None,
            "curve_page_bytes": self.curve_page_bytes, **self.counts(),
            "variants": [{"variant": v.label, **v.values, "cost_rank": k, "varied_capacity_bytes": v.capacity_bytes,
                          "curve_hit_ratio": v.curve_hit_ratio, "meets": v.meets, "skipped": v.skipped,
                          "notes": v.notes, **(v.row or {})} for k, v in enumerate(self.variants)],
        }


def size(trace: TraceRef, data_dir: str | Path, base: str, vary: Sequence[tuple[str, list[str]]],
         targets: Sequence[Target], overrides: Sequence[str] = (), prune: bool = True, min_gain: float = 0.005,
         exhaustive: bool = False, progress: Callable[[str], Callable | None] | None = None,
         curve: Callable[[int, list[int]], list[float]] | None = None) -> SizeResult:
    """The cheapest variant meeting every target (module docstring). ``exhaustive``: replay every
    variant (for checking the pruned search). ``curve(page_bytes, capacities)``: hit ratios
    (default: the exact LRU curve of the trace, ``pipelines.simulate.mrc``)."""
    if not targets:
        raise ValueError("size needs at least one --target such as p95_ms<=5")
    d = Path(data_dir)
    vs = variants(base, vary, overrides)
    page = None
    if prune and not exhaustive and len(vs) > 1 and CAPACITY_KEYS & set(vs[0].values):
        page = curve_page_bytes(vs)
        caps = sorted({v.capacity_bytes for v in vs if v.capacity_bytes >= page})
        if curve is None:
            from pipelines.simulate import mrc

            def curve(p: int, c: list[int]) -> list[float]:
                return mrc(trace, d, page_size=p, sizes=c)["hit_ratio"].to_list()

        hr = dict(zip(caps, curve(page, caps), strict=True)) if caps else {}
        for v in vs:
            v.curve_hit_ratio = hr.get(v.capacity_bytes, 0.0)  # less than a page: holds nothing
    failed: dict[tuple, list[float]] = {}
    chosen = None
    for v in vs:
        if chosen is not None and not exhaustive:
            v.skipped = "cheaper variant met the targets"
            continue
        if v.curve_hit_ratio is not None:
            worse = [h for h in failed.get(v.family, []) if v.curve_hit_ratio <= h + min_gain]
            if worse:
                v.skipped = "curve"
                v.meets = False
                v.notes.append(f"LRU hit ratio {v.curve_hit_ratio:.4f} at {v.capacity_bytes:,} B is within "
                               f"{min_gain} of a cheaper variant that failed ({max(worse):.4f})")
                continue
        v.row, summary = _replay(trace, d, v.scenario, v.scenario.name, progress)
        metrics = {**summary, **v.row}  # targets may name any summary key
        _check_metrics(targets, metrics)
        v.meets = all(t.met(metrics) for t in targets)
        if v.meets:
            chosen = chosen or v
        elif v.curve_hit_ratio is not None:
            failed.setdefault(v.family, []).append(v.curve_hit_ratio)
    return SizeResult([t.text for t in targets], chosen, vs, page)
