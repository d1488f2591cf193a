"""``tiercast size TRACE --cloud aws --target 'p99_ms<=5'``: the cheapest cloud volume that meets
every target over the whole trace, its monthly cost, the runner-up, and why the cheaper ones fail.

**Candidates.** For each volume type of the provider (its preset: ``aws-gp2``, ``aws-gp3``, ...,
whose latency figures it keeps), a grid of configurations within the type's published limits:
sizes for the types whose rates follow their size (gp2, st1, pd-balanced, Azure Premium SSD
tiers), provisioned IOPS and MiB/s for the others (:data:`IOPS_GRID`, :data:`MIB_GRID`), each at
least as large as the trace's footprint (the highest byte it touches, per volume, added up: every
trace volume lands on the one cloud volume). Each is priced from the price table
(``replay.prices``) without a replay.

**Search.** Candidates are replayed cheapest first until one meets every target (the answer),
then on among the other volume types until one of them meets them too (the runner-up: the
cheapest alternative of another type, not the answer with a little more throughput). A candidate is skipped without a replay when a cheaper one of
the same type that failed has every rate at least as high (IOPS, MiB/s, burst and credits): a
token bucket with higher rates never starts a request later and service times do not depend on
the rates, so it would fail too (``dominated``).

**Why cheaper ones fail**: the targets they missed and by how much, how long requests waited for
tokens in all, and the interval of the trace where they waited most.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.catalog import TraceRef
from pipelines.replay import replay_trace, run_paths
from pipelines.whatif import Target, _check_metrics, one_mode
from replay.mech.cloud.types import AZURE_PREMIUM_TIERS, GIB, TYPES
from replay.prices import monthly_cost
from replay.scenario import Scenario, load

#: the preset of each volume type (its latency figures and region)
PRESETS = {"gp2": "aws-gp2", "gp3": "aws-gp3", "io2": "aws-io2", "st1": "aws-st1",
           "premium-ssd": "azure-premium-p30", "premium-ssd-v2": "azure-premium-v2",
           "pd-balanced": "gcp-pd-balanced", "hyperdisk-balanced": "gcp-hyperdisk-balanced"}
#: provisioned IOPS and MiB/s tried (within each type's limits)
IOPS_GRID = (1000, 2000, 3000, 4000, 5000, 6000, 8000, 10_000, 12_000, 16_000, 20_000, 32_000, 48_000, 64_000,
             80_000, 128_000, 160_000, 256_000)
MIB_GRID = (125, 140, 250, 500, 750, 1000, 1200, 2000, 2400, 4000)
#: sizes tried for the types whose rates follow their size (GiB; the footprint is always tried)
SIZE_GRID = (100, 250, 334, 500, 1000, 2000, 3000, 4000, 5334, 8000, 12_800, 16_384, 32_768, 65_536)


@dataclass
class Candidate:
    volume_type: str
    sets: list[str]
    scenario: Scenario
    cost: float
    currency: str
    rates: tuple[float, ...]  # (iops, MiB/s, burst IOPS, I/O credits, burst MiB/s, byte credits)
    summary: dict | None = None
    meets: bool | None = None
    skipped: str | None = None
    why: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        c = self.scenario.cloud
        lim = c.limits
        tier = f" {lim.tier}" if lim.tier else ""
        burst = f" (burst {lim.burst_iops:,.0f} IOPS)" if lim.burst_iops else ""
        burst += f" (burst {lim.burst_mib_per_s:,.0f} MiB/s)" if lim.burst_mib_per_s else ""
        return (f"{c.volume_type}{tier} {c.size_bytes / GIB:,.0f} GiB, {lim.iops:,.0f} IOPS, "
                f"{lim.mib_per_s:,.0f} MiB/s{burst}")

    def dominated_by(self, other: Candidate) -> bool:
        """Whether ``other`` (same type) has every rate at least as high as this one's."""
        return other.volume_type == self.volume_type and all(o >= m for o, m in zip(other.rates, self.rates,
                                                                                     strict=True))


def footprint_bytes(trace: TraceRef) -> int:
    """The highest byte the trace touches per volume, added up."""
    total = 0
    for f in trace.volume_files:
        m = pl.scan_parquet(f).select((pl.col("offset") + pl.col("size").cast(pl.Int64)).max()).collect().item()
        total += int(m or 0)
    return total


def _type_grid(t, fp_gib: float) -> list[list[str]]:
    """Overrides (size, iops, mib_per_s) of every configuration of type ``t`` tried."""
    lo = max(t.size_min_gib, fp_gib)
    if lo > t.size_max_gib:
        return []
    out = []
    if t.azure_tiers:
        return [[f"cloud.size_bytes={tier.size_gib}GiB"] for tier in AZURE_PREMIUM_TIERS
                if lo <= tier.size_gib <= t.size_max_gib]
    if not t.provisioned_iops:
        sizes = sorted({float(_ceil_gib(lo)), *(float(s) for s in SIZE_GRID if lo <= s <= t.size_max_gib)})
        return [[f"cloud.size_bytes={int(s)}GiB"] for s in sizes]
    for iops in IOPS_GRID:
        if not t.iops_min <= iops <= t.iops_max:
            continue
        size = max(lo, iops / t.iops_max_per_gib if t.iops_max_per_gib else lo)
        if size > t.size_max_gib:
            continue
        mibs = [None]
        if t.provisioned_mib:
            mibs = [m for m in MIB_GRID if t.mib_min <= m <= t.mib_max
                    and (m <= t.mib_default or m <= t.mib_max_per_iops * iops)]
        for m in mibs:
            sets = [f"cloud.size_bytes={_ceil_gib(size)}GiB", f"cloud.iops={iops}"]
            if m is not None:
                sets.append(f"cloud.mib_per_s={m}")
            out.append(sets)
    return out


def _ceil_gib(v: float) -> int:
    return int(-(-v // 1))


def candidates(provider: str, fp_bytes: int, overrides: Sequence[str] = (),
               types: Sequence[str] | None = None) -> list[Candidate]:
    """Every configuration tried for ``provider``, cheapest first (ties: the faster first)."""
    out = []
    for name, t in TYPES.items():
        if t.provider != provider or (types and name not in types):
            continue
        for sets in _type_grid(t, fp_bytes / GIB):
            try:
                sc = load(PRESETS[name], [*overrides, *sets])
            except ValueError:
                continue  # outside the type's published limits
            c = sc.cloud
            lim = c.limits
            price = monthly_cost(c)
            sc = sc.relabel(f"{sc.name} [{', '.join(s.removeprefix('cloud.') for s in sets)}]")
            out.append(Candidate(name, sets, sc, price["cost_per_month"], price["currency"],
                                 (lim.iops, lim.mib_per_s, lim.burst_iops, lim.credit_ios, lim.burst_mib_per_s,
                                  lim.credit_bytes)))
    if not out:
        raise ValueError(f"no {provider} volume type holds the trace's footprint of {fp_bytes / GIB:,.1f} GiB")
    return sorted(out, key=lambda c: (c.cost, -c.rates[0], -c.rates[1]))


def why_failed(c: Candidate, targets: Sequence[Target], data_dir: Path) -> str:
    """The targets it missed, its token waits, and where in the trace it waited most."""
    s = c.summary
    missed = [f"{t.metric.removeprefix('latency_')} {s.get(t.metric, float('nan')):,.1f} (target {t.text})"
              for t in targets if not t.met(s)]
    parts = ["; ".join(missed)]
    wait_s = (s.get("throttle_delay_sum_ms") or 0.0) / 1e3
    if s.get("throttled_requests"):
        where = ""
        path = run_paths(data_dir, s["run_id"]).get("cloud_intervals")
        if path is not None and path.is_file():
            t = pl.read_parquet(path)
            if t.height:
                worst = t.sort("throttle_wait_sum_ms").row(-1, named=True)
                first = s.get("first_arrival_ns") or 0
                where = (f", most in the interval from {(worst['interval_start_ns'] - first) / 1e9:,.0f} s "
                         f"({worst['throttle_wait_sum_ms'] / 1e3:,.1f} s of waits)")
        parts.append(f"{s['throttled_requests']:,} requests waited for tokens, {wait_s:,.1f} s in all{where}")
    if s.get("burst_exhausted_s") is not None:
        parts.append(f"burst credits ran out at {s['burst_exhausted_s']:,.0f} s")
    return "; ".join(p for p in parts if p)


@dataclass
class CloudSizeResult:
    provider: str
    targets: list[str]
    footprint_bytes: int
    candidates: list[Candidate]
    chosen: Candidate | None
    runner_up: Candidate | None
    mode: dict

    def as_dict(self) -> dict:
        def one(c: Candidate | None) -> dict | None:
            if c is None:
                return None
            s = c.summary or {}
            return {"label": c.label, "scenario": c.scenario.name, "volume_type": c.volume_type,
                    "cost_per_month": c.cost, "currency": c.currency, "meets": c.meets, "skipped": c.skipped,
                    "why": c.why, "run_id": s.get("run_id"), "iops": s.get("iops"),
                    "latency_mean_ms": s.get("latency_mean_ms"), "latency_p99_ms": s.get("latency_p99_ms"),
                    "throttle_delay_sum_ms": s.get("throttle_delay_sum_ms"),
                    "burst_exhausted_s": s.get("burst_exhausted_s")}

        cheaper = [c for c in self.candidates if self.chosen is None or c.cost < self.chosen.cost]
        return {"provider": self.provider, "targets": self.targets, **self.mode,
                "footprint_bytes": self.footprint_bytes, "chosen": one(self.chosen), "runner_up": one(self.runner_up),
                "candidates": len(self.candidates), "replayed": sum(c.summary is not None for c in self.candidates),
                "dominated_skipped": sum(c.skipped == "dominated" for c in self.candidates),
                "cheaper_failed": [one(c) for c in cheaper if c.meets is False]}


def size_cloud(trace: TraceRef, data_dir: str | Path, provider: str, targets: Sequence[Target],
               overrides: Sequence[str] = (), types: Sequence[str] | None = None,
               progress: Callable[[str], Callable | None] | None = None,
               outstanding: int | None = None) -> CloudSizeResult:
    """The cheapest candidate meeting every target and the runner-up (module docstring)."""
    if not targets:
        raise ValueError("size needs at least one --target such as p99_ms<=5")
    d = Path(data_dir)
    fp = footprint_bytes(trace)
    cands = candidates(provider, fp, overrides, types)
    for c, sc in zip(cands, one_mode(trace, [c.scenario for c in cands], outstanding), strict=True):
        c.scenario = sc
    failed: list[Candidate] = []
    met: list[Candidate] = []
    for c in cands:
        if len(met) == 2:
            c.skipped = "costlier than the runner-up"
            continue
        if met and c.volume_type == met[0].volume_type:
            c.skipped = "the answer's type: the runner-up is another type"
            continue
        twin = next((f for f in failed if c.dominated_by(f)), None)
        if twin is not None:
            c.skipped, c.meets = "dominated", False
            c.why = f"every rate at most {twin.label}'s, which failed"
            continue
        cb = progress(c.scenario.name) if progress else None
        c.summary = replay_trace(trace, d, c.scenario, progress=cb)
        _check_metrics(targets, c.summary)
        c.meets = all(t.met(c.summary) for t in targets)
        if c.meets:
            met.append(c)
        else:
            c.why = why_failed(c, targets, d)
            failed.append(c)
    sc = cands[0].scenario.replay
    mode = {"mode": sc.mode, "outstanding": sc.outstanding if sc.mode == "closed" else None}
    return CloudSizeResult(provider, [t.text for t in targets], fp, cands, met[0] if met else None,
                           met[1] if len(met) > 1 else None, mode)
