"""What-if answers: one trace through several scenarios side by side (``compare``), and the
cheapest configuration that meets a target (``size``).

Both reuse finished runs: a run is keyed on (trace, data version, scenario hash, model version)
(``pipelines.replay.run_id``), so a scenario already replayed by the same code is read back, not
replayed again.

**Sizing** orders the variants (the product of the ``--vary`` lists) by cost: each list is given
cheapest first, and a variant's cost is the sum of its values' positions (ties: the earlier
list's position first). It replays them in that order and stops at the first that meets every
target: that one is the cheapest. All variants run in one replay mode (:func:`one_mode`).

A variant is skipped without a replay only when its run is provably the same as that of a
cheaper variant that failed: the two differ in nothing but the SSD cache's ``capacity_bytes``,
and both caches hold every chunk the trace touches (the exact LRU curve at the SSD cache's own
chunk size gives the footprint), so nothing is ever evicted and the same chunks take the same
slots: same I/O, same times, same answer for every target that is not about the cache's fill.
Nothing else is pruned: a larger DRAM cache, more drives or a larger SSD cache below the
footprint can change the answer either way (more SSD capacity can mean more promotions loading
the drives), and a hit-ratio curve cannot see an admission rule (FAST Cache promotes a chunk
after 3 hits, QCache on its populate threshold) or the DRAM cache in front. ``size`` and
``size --exhaustive`` therefore choose the same variant (a property test checks it).

The curve still informs: each variant with an SSD cache shows the LRU hit ratio at its capacity
(all accesses, every miss admitted, at the cache's chunk size), and a replay whose SSD hit ratio
differs from it by more than ``CURVE_MISS`` gets a caveat saying why.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines import physics
from pipelines.catalog import TraceRef
from pipelines.progress import Progress
from pipelines.replay import replay_trace, resolve_mode, run_paths
from pipelines.simulate import total_rows
from pipelines.workers import run_all
from replay.scenario import Scenario, load
from schemas.units import parse_size

#: short target names -> run summary keys (any other summary key may be used as is)
TARGET_ALIASES = {
    "mean_ms": "latency_mean_ms", "p50_ms": "latency_p50_ms", "p95_ms": "latency_p95_ms",
    "p99_ms": "latency_p99_ms", "max_ms": "latency_max_ms",
}
_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
#: the one key whose variants can be provably identical (an SSD cache above the trace's footprint)
SSD_CAPACITY_KEY = "ssd_cache.capacity_bytes"
#: a replay's SSD hit ratio this far from the curve's prediction gets a caveat
CURVE_MISS = 0.1
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


def one_mode(trace: TraceRef, scenarios: Sequence[Scenario], outstanding: int | None = None) -> list[Scenario]:
    """The scenarios with one replay mode for all, so that their runs can stand side by side:
    closed loop at ``outstanding`` when it is given, else each scenario's mode resolved for the
    trace (``pipelines.replay.resolve_mode``: the trace's own timing); a ValueError when they then
    disagree (a scenario file asking for another mode)."""
    if outstanding is not None:
        return [sc.with_replay(mode="closed", outstanding=int(outstanding)) for sc in scenarios]
    out = [resolve_mode(sc, trace)[0] for sc in scenarios]
    modes = {(sc.replay.mode, sc.replay.outstanding if sc.replay.mode == "closed" else None) for sc in out}
    if len(modes) > 1:
        said = "; ".join(f"{sc.name}: {sc.replay.mode}" + (f" {sc.replay.outstanding}" if sc.replay.mode == "closed"
                                                            else "") for sc in out)
        raise ValueError(f"the scenarios ask for different replay modes ({said}): runs of different modes are not "
                         "comparable; pass --outstanding N (closed loop for all) or --set replay.mode=open")
    return out


def _pct_change(v: float | None, base: float | None) -> float | None:
    return None if v is None or not base else 100.0 * (v - base) / base


def _row(label: str, s: dict, intervals: pl.DataFrame) -> dict:
    ran = s["mechanisms"]
    tiers = {t["tier"]: t["request_share"] for t in s["tiers"]} if "tiering" in ran else None
    ssd = "ssd_cache" in ran
    return {
        "scenario": label, "mode": s["mode"], "outstanding": s["outstanding"], "run_id": s["run_id"],
        "reused": bool(s.get("already_done")),
        "requests": s["requests"], "iops": s["iops"], "mb_per_s": s["mb_per_s"],
        "latency_mean_ms": s["latency_mean_ms"], "latency_p95_ms": s["latency_p95_ms"],
        "latency_p99_ms": s["latency_p99_ms"],
        "dram_read_hit_ratio": s["read_hit_ratio"], "dram_write_hit_ratio": s["write_hit_ratio"],
        "ssd_hit_ratio": s["ssd_hit_ratio"] if ssd else None, "ssd_fill_pct_end": s["ssd_fill_pct"] if ssd else None,
        "tier_request_share": tiers,
        "flush_mb_per_s": s["flush_mb_per_s"], "forced_flush_count": s["forced_flush_count"],
        "forced_flush_stall_ms": s["forced_flush_stall_ms"], "throttle_delay_sum_ms": s["throttle_delay_sum_ms"],
        "warmup_s": warmup_s(intervals), "warnings": s.get("warnings") or [],
        # a cloud volume's list price (replay.prices; None for an array: no price table for it yet)
        "cost_per_month": s.get("cost_per_month"), "currency": s.get("currency"),
        "measured_requests": s.get("measured_requests"), "windows": s.get("windows") or [],
    }


def _replay(trace: TraceRef, data_dir: Path, sc: Scenario, label: str,
            progress: Progress | None = None) -> tuple[dict, dict]:
    """(the comparison row, the run summary); ``progress(done, total)`` in requests."""
    s = replay_trace(trace, data_dir, sc, progress=progress)
    return _row(label, s, pl.read_parquet(run_paths(data_dir, s["run_id"])["volume_intervals"])), s


def _replay_pair(trace: TraceRef, data_dir: Path, sc: Scenario, label: str) -> tuple[dict, dict]:
    """:func:`_replay` in a worker process (``size --jobs``)."""
    return _replay(trace, data_dir, sc, label)


def _replay_row(trace: TraceRef, data_dir: Path, sc: Scenario, progress: Progress | None = None) -> dict:
    """The comparison row of one scenario (a worker process's task; its progress goes to the parent)."""
    return _replay(trace, data_dir, sc, sc.name, progress)[0]


def _one_of(progress: Callable[[str], Progress | None] | None, k: int, n: int, what: str, name: str) -> Progress | None:
    """The progress callback of the k-th of n replays, labelled ``scenario k of n: NAME``."""
    return progress(f"{what} {k} of {n}: {name}") if progress else None


def _all_at_once(progress: Callable[[str], Progress | None] | None, n: int, jobs: int,
                 total: int) -> Callable[[int, int, int], None] | None:
    """The progress of ``n`` replays in ``jobs`` worker processes as one bar, labelled ``N scenarios on
    P processes``: the requests the workers replayed out of ``n`` x the trace's ``total``."""
    if progress is None:
        return None
    done = [0] * n
    cb = progress(f"{n} scenarios on {min(jobs, n)} processes")

    def each(i: int, d: int, _total: int) -> None:
        done[i] = d
        if cb:
            cb(sum(done), n * total)
    return each


#: relative CPU cost of a replay by what its scenario models, for ``compare --jobs``' order (longest
#: first): end-to-end CPU-s per 10 M requests of ``benchmarks/array.py`` (2026-11-28): vnx1-flare 2.0,
#: vnx2-mcx 2.1, vnx5400 2.3 (DRAM cache and RAID), + FAST Cache 1.0 (vnx5400-fastcache 3.3), + FAST VP
#: 1.3 (vnx5400-fastvp 3.6), aws-gp3 1.5, violin6232 1.3; snapshots: est (not benchmarked)
REPLAY_COST = {"base": 2.2, "cloud:": 1.5, "all_flash": 1.3, "ssd_cache:": 1.0, "fast_vp:": 1.3, "snapshots:": 0.5}


def replay_cost(sc: Scenario) -> float:
    """A replay's expected CPU per request, relative (``REPLAY_COST``): only the order matters."""
    f = sc.features()
    if any(x.startswith("cloud:") for x in f):
        return REPLAY_COST["cloud:"]
    base = REPLAY_COST["all_flash"] if "all_flash" in f else REPLAY_COST["base"]
    return base + sum(REPLAY_COST[k] for k in ("ssd_cache:", "fast_vp:", "snapshots:") if any(x.startswith(k) for x in f))


def compare(trace: TraceRef, data_dir: str | Path, scenarios: Sequence[Scenario],
            progress: Callable[[str], Progress | None] | None = None, measured: Sequence[str] | None = None,
            warn: Callable[[str], None] | None = None, outstanding: int | None = None, jobs: int = 1) -> list[dict]:
    """One row per scenario (``_row``; runs already made are reused), plus the change of IOPS,
    mean and p95 response time against the first scenario (``*_change_pct``), and each run
    against the captures that measured this trace (``model_vs_measured``: MAPE and bias per
    device, kept for the report): the captures ``measured`` names, else every matching one
    (:func:`pipelines.compare.matching_captures`; one that cannot be compared is passed to
    ``warn`` and left out). ``jobs`` > 1: the replays run in that many worker processes
    (``pipelines.workers``; same rows). ``progress(label)`` gives the callback of one bar, in
    requests: one per replay labelled ``scenario k of n: NAME``, or one for all the workers."""
    if not scenarios:
        raise ValueError("compare needs at least one scenario")
    labels = [sc.name for sc in scenarios]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"scenario {dup[0]!r} given twice: compare each configuration once")
    scenarios = one_mode(trace, scenarios, outstanding)
    n = len(scenarios)
    if jobs > 1 and n > 1:
        total = total_rows(trace) if progress else 0
        each = _all_at_once(progress, n, jobs, total)
        rows = run_all(_replay_row, [(trace, Path(data_dir), sc) for sc in scenarios], jobs, each=each,
                       cost=[replay_cost(sc) for sc in scenarios])
        if each:
            for i in range(n):  # a reused run reports nothing: count every run as done at the end
                each(i, total, total)
    else:
        rows = [_replay(trace, Path(data_dir), sc, sc.name, _one_of(progress, k, n, "scenario", sc.name))[0]
                for k, sc in enumerate(scenarios, 1)]
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


def capacity_free(metric: str) -> bool:
    """Whether a target metric is the same for two runs that differ only in an SSD cache's size
    above the footprint (everything but the cache's fill and size)."""
    return not (metric.startswith("ssd_") and any(w in metric for w in ("fill", "slots", "capacity", "pct",
                                                                          "time_to", "cache_bytes")))


@dataclass
class Variant:
    values: dict[str, str]
    cost: tuple[int, ...]
    scenario: Scenario
    family: tuple[tuple[str, str], ...]  # every value but the SSD cache's capacity
    ssd_bytes: int = 0  # its SSD cache's capacity (0: none)
    ssd_chunk_bytes: int = 0
    curve_hit_ratio: float | None = None  # LRU hit ratio at ssd_bytes, ssd_chunk_bytes pages
    footprint_bytes: int | None = None  # the trace's footprint at ssd_chunk_bytes
    row: dict | None = None
    meets: bool | None = None
    skipped: str | None = None  # why it was not replayed
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return _label(self.values)

    @property
    def above_footprint(self) -> bool:
        return bool(self.ssd_bytes) and self.footprint_bytes is not None and self.ssd_bytes >= self.footprint_bytes


def variants(base: str, vary: Sequence[tuple[str, list[str]]], overrides: Sequence[str] = ()) -> list[Variant]:
    """Every combination of the ``vary`` values on ``base``, cheapest first."""
    if not vary:
        raise ValueError("size needs at least one --vary KEY=V1,V2,...")
    keys = [k for k, _ in vary]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"--vary {dup[0]!r} given twice")
    mode = [k for k in keys if k.startswith("replay.")]
    if mode:
        raise ValueError(f"--vary {mode[0]!r}: every variant replays in one mode (use --outstanding N for closed loop)")
    out = []
    for idx in itertools.product(*(range(len(v)) for _, v in vary)):
        values = {k: vals[i] for (k, vals), i in zip(vary, idx, strict=True)}
        sets = [*overrides, *(o for k, v in values.items() for o in _overrides(k, v))]
        sc = load(base, sets)
        ssd = sc.ssd_cache
        out.append(Variant(values, (sum(idx), *idx), sc.relabel(f"{sc.name} [{_label(values)}]"),
                           tuple((k, v) for k, v in values.items() if k != SSD_CAPACITY_KEY),
                           ssd.usable_bytes(sc.drive_classes) if ssd else 0, ssd.chunk_bytes if ssd else 0))
    return sorted(out, key=lambda v: v.cost)


@dataclass
class SizeResult:
    targets: list[str]
    chosen: Variant | None
    variants: list[Variant]
    mode: dict = field(default_factory=dict)
    headroom: dict | None = None  # the chosen variant's (pipelines.headroom.Headroom.as_dict)

    def counts(self) -> dict[str, int]:
        c = {"variants": len(self.variants), "replayed": sum(v.row is not None for v in self.variants),
             "replayed_now": sum(v.row is not None and not v.row["reused"] for v in self.variants),
             "identical_skipped": 0, "not_needed": 0}
        for v in self.variants:
            if v.skipped == "identical":
                c["identical_skipped"] += 1
            elif v.skipped == "cheaper variant met the targets":
                c["not_needed"] += 1
        c["saved"] = c["identical_skipped"] + c["not_needed"]
        return c

    def as_dict(self) -> dict:
        return {
            "targets": self.targets, **self.mode, "chosen": self.chosen.label if self.chosen else None,
            "headroom": self.headroom,
            "chosen_scenario": self.chosen.scenario.name if self.chosen else None,
            "chosen_run_id": self.chosen.row["run_id"] if self.chosen else None, **self.counts(),
            "variants": [{"variant": v.label, **v.values, "cost_rank": k, "ssd_cache_bytes": v.ssd_bytes,
                          "curve_page_bytes": v.ssd_chunk_bytes or None, "curve_hit_ratio": v.curve_hit_ratio,
                          "footprint_bytes": v.footprint_bytes, "meets": v.meets, "skipped": v.skipped,
                          "notes": v.notes, **(v.row or {})} for k, v in enumerate(self.variants)],
        }


def _curves(trace: TraceRef, d: Path, vs: Sequence[Variant],
            curve: Callable[[int, list[int]], tuple[list[float], int]] | None) -> None:
    """Each SSD-cached variant's curve hit ratio and the trace's footprint, at its chunk size."""
    if curve is None:
        from pipelines.simulate import mrc

        def curve(p: int, c: list[int]) -> tuple[list[float], int]:
            rows = mrc(trace, d, page_size=p, sizes=c)
            return rows["hit_ratio"].to_list(), int(rows["footprint_bytes"][0])

    for chunk in sorted({v.ssd_chunk_bytes for v in vs if v.ssd_bytes}):
        members = [v for v in vs if v.ssd_bytes and v.ssd_chunk_bytes == chunk]
        caps = sorted({max(v.ssd_bytes, chunk) for v in members})
        hits, footprint = curve(chunk, caps)
        hr = dict(zip(caps, hits, strict=True))
        for v in members:
            v.curve_hit_ratio = hr[max(v.ssd_bytes, chunk)]
            v.footprint_bytes = footprint


def _twin(v: Variant, failed: Sequence[Variant]) -> Variant | None:
    """A cheaper failed variant whose run is provably the same as ``v``'s (module docstring)."""
    if not v.above_footprint:
        return None
    return next((u for u in failed if u.family == v.family and u.above_footprint
                 and u.ssd_chunk_bytes == v.ssd_chunk_bytes), None)


def _curve_note(v: Variant, summary: dict) -> str | None:
    got = summary["ssd_hit_ratio"] if "ssd_cache" in summary["mechanisms"] else None
    if v.curve_hit_ratio is None or got is None or abs(got - v.curve_hit_ratio) <= CURVE_MISS:
        return None
    sc = v.scenario.ssd_cache
    rule = (f"FAST Cache promotes a chunk after {sc.promote_after_hits} accesses" if sc.kind == "fastcache"
            else f"QCache populates a block on its populate-on-read threshold {sc.populate_on_read}")
    return (f"the LRU curve at {v.ssd_chunk_bytes >> 10} KiB chunks predicted an SSD hit ratio of "
            f"{v.curve_hit_ratio:.2f}; the replay gave {got:.2f}: the curve admits every miss and sees every "
            f"access, while {rule} and the DRAM cache in front takes its hits")


def size(trace: TraceRef, data_dir: str | Path, base: str, vary: Sequence[tuple[str, list[str]]],
         targets: Sequence[Target], overrides: Sequence[str] = (), prune: bool = True,
         exhaustive: bool = False, progress: Callable[[str], Progress | None] | None = None,
         curve: Callable[[int, list[int]], tuple[list[float], int]] | None = None,
         outstanding: int | None = None, growth_pct: float | None = None, headroom: bool = True,
         jobs: int = 1) -> SizeResult:
    """The cheapest variant meeting every target (module docstring). ``exhaustive``: replay every
    variant (for checking the search); ``prune=False``: skip no identical twin. ``curve(page_bytes,
    capacities)``: (hit ratios, footprint bytes) (default: the exact LRU curve of the trace,
    ``pipelines.simulate.mrc``). ``headroom``: also the load factor at which the chosen variant stops
    meeting the targets (``pipelines.headroom``; open loop only), dated at ``growth_pct`` a year.
    ``jobs`` > 1: the next ``jobs`` variants still to decide are replayed at once in worker processes
    (``pipelines.workers``) and then judged one by one as with one job, so the result is the same;
    runs the search then does not need (past the answer, or twins of a failure in the same batch)
    are made and left in the data directory, unused."""
    if not targets:
        raise ValueError("size needs at least one --target such as p95_ms<=5")
    d = Path(data_dir)
    vs = variants(base, vary, overrides)
    for v, sc in zip(vs, one_mode(trace, [v.scenario for v in vs], outstanding), strict=True):
        v.scenario = sc
    _curves(trace, d, vs, curve)
    twins_ok = prune and not exhaustive and all(capacity_free(t.metric) for t in targets)
    failed: list[Variant] = []
    chosen = None
    ahead: dict[int, tuple[dict, dict]] = {}  # jobs > 1: variant index -> its replay, made in a batch
    for v in vs:
        if chosen is not None and not exhaustive:
            v.skipped = "cheaper variant met the targets"
            continue
        twin = _twin(v, failed) if twins_ok else None
        if twin is not None:
            v.skipped = "identical"
            v.meets = False
            v.notes.append(f"same run as {twin.label}, which failed: both SSD caches hold the trace's whole "
                           f"footprint ({v.footprint_bytes:,} B at {v.ssd_chunk_bytes >> 10} KiB chunks)")
            continue
        k = vs.index(v)
        if jobs > 1 and k not in ahead:
            batch = [u for u in vs[k:] if not (twins_ok and _twin(u, failed))][:jobs]
            if len(batch) > 1:
                cb = _one_of(progress, k + 1, len(vs), "variants", f"{len(batch)} on {jobs} processes")
                pairs = run_all(_replay_pair, [(trace, d, u.scenario, u.scenario.name) for u in batch], jobs)
                ahead.update((vs.index(u), p) for u, p in zip(batch, pairs, strict=True))
                if cb:
                    cb(1, 1)
        if k in ahead:
            v.row, summary = ahead.pop(k)
        else:
            v.row, summary = _replay(trace, d, v.scenario, v.scenario.name,
                                     _one_of(progress, k + 1, len(vs), "variant", v.label))
        metrics = {**summary, **v.row}  # targets may name any summary key
        _check_metrics(targets, metrics)
        v.meets = all(t.met(metrics) for t in targets)
        note = _curve_note(v, summary)
        if note:
            v.notes.append(note)
            v.row["warnings"] = [*v.row["warnings"], physics.finding("size_curve", physics.CAVEAT, note)]
        if v.meets:
            chosen = chosen or v
        else:
            failed.append(v)
    sc = vs[0].scenario.replay
    mode = {"mode": sc.mode, "outstanding": sc.outstanding if sc.mode == "closed" else None}
    res = SizeResult([t.text for t in targets], chosen, vs, mode)
    if chosen is not None and headroom:
        from pipelines.headroom import headroom as measure_headroom

        def replay(s: Scenario, label: str) -> dict:
            row, summary = _replay(trace, d, s, label, _one_of(progress, 1, 1, "headroom", label))
            return {**summary, **row}

        res.headroom = measure_headroom(trace, d, chosen.scenario, targets, replay, growth_pct).as_dict()
    return res
