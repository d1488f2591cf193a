"""Array replay steps: a trace through a scenario (``replay_trace``), and the closed-loop curve of
IOPS and response time against outstanding I/Os (``sweep_trace``).

Plain functions called the same way by the CLI, the DAGs and the tests. The trace is streamed
in time order, segment by segment, through :class:`replay.array.ArrayModel` (state carried across
segments, so any segment size gives the same results). Outputs, under the data directory, one
dataset per table so the load step can put a view on each::

    results/array_runs/<run_id>/summary.parquet    one row: the run summary (also summary.json)
    results/array_volume_intervals/<run_id>.parquet  per interval and volume
    results/array_rg_intervals/<run_id>.parquet      per interval and RAID group
    results/array_latency_hist/<run_id>.parquet    response-time histogram of the measured requests
    results/array_sweeps/<sweep_id>.parquet        one row per outstanding-I/O count

``run_id`` = hash of (trace id, scenario hash, model version): replaying the same trace through
the same scenario with the same model code finds the finished run and returns it (``force``
redoes it). The model version (``replay.version``, ``array_model_version()``) hashes the source of
every module an array result depends on, this one included, so a change to a kernel gives new
run ids and the replay runs again; each summary and sweep row records its ``model_version``.

Per-interval columns (both tables unless noted): requests, reads, writes, read_pages,
read_hit_pages, write_pages, write_hit_pages (coalesced into a dirty page), bytes, iops, mb_per_s,
read_hit_ratio, write_hit_ratio, latency_mean_ms / p50 / p95 / p99 / max (response time: issue to
completion, including stalls and throttling), stall_delay_sum_ms / throttle_delay_sum_ms (the
delays of this volume's / group's requests added up: several requests wait at once, so the sum
can exceed the interval) and stalled_requests / throttled_requests (how many waited),
dirty_pct_mean / dirty_pct_max (dirty pages of the write cache as requests saw it), flush_ops,
flush_pages, flush_pages_per_s, flush_mb_per_s, backend_ios, forced_flushes and
forced_flush_stall_ms (array-wide: a forced flush stalls everyone), and per RAID group
rg_dirty_pct_max, pre_cleaning_age_ms (MCx) and utilization (drive busy time over width x
interval; back-end time is counted in the interval the I/O was issued in). A request
belongs to the RAID group of its first page. Percentiles come from a per-interval histogram of
1 %-wide logarithmic latency buckets (within 1 %); max is exact. With an SSD cache (FAST Cache,
QCache), also: ssd_read_hits / ssd_read_misses / ssd_write_hits / ssd_write_misses (host I/Os
reaching the SSD cache: DRAM read-miss runs and flush runs) and ssd_promotions, as counts and
``_per_s``, ssd_hit_ratio, ssd_fill_pct (slots in use at the interval's end) and
ssd_dirty_pct_max. All-flash (``[flash]``, replay.mech.flash.kernel), array-wide in both tables:
flash_free_bytes / flash_free_pct (free space at its lowest in the interval), flash_gc_bytes,
flash_gc_mib_per_s, flash_write_amplification, flash_host_write_mib_per_s, flash_gc_waits,
flash_gc_wait_sum_ms. A cloud volume (``[cloud]``) adds its own table, ``cloud_intervals``, and its
summary fields (``burst_exhausted_s``, ``cost_per_month``, ``currency``, ...) through
``replay/mech/cloud/results.py``. Background work (flushes, and the promotions they cause) counts in the
interval and for the volume / group of the request during whose processing it ran.

Summary: the counters of the model, the cache sizes the run had (``dram_cache_bytes``,
``dram_write_cache_bytes``, ``ssd_cache_bytes``; FLARE's ``dram_high_watermark_pct`` /
``dram_low_watermark_pct``: what a report marks), plus ``iops``, ``mb_per_s``, latency mean/p50/p95/p99/max,
``read_hit_ratio``, ``write_hit_ratio``, ``flush_mb_per_s``, ``forced_flush_count``,
``forced_flush_stall_ms``, ``throttle_delay_sum_ms`` / ``throttled_requests`` /
``throttle_delay_mean_ms`` (per throttled request) and the same three for forced-flush stalls,
``ssd_*`` counters, ``ssd_time_to_50pct_fill_s`` / ``ssd_time_to_90pct_fill_s`` and
``ssd_hit_ratio_last10pct`` / ``ssd_read_hit_ratio_last10pct`` (the last 10 % of the simulated
time) with an SSD cache, ``flash_time_to_cliff_s`` and pre- / post-cliff write IOPS and MiB/s
on an all-flash array, computed over the requests after the scenario's ``warmup_pct`` (IOMeter's ramp-up), from the
first issue to the last completion of those. The model's counters (``*_ns`` sums, counts) cover
every request.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from pipelines import confidence, files, physics
from pipelines import tiering as tier_tables
from pipelines.catalog import TraceRef, write_json_atomic
from pipelines.dataset import package_version
from pipelines.progress import Progress
from pipelines.simulate import read_frames, replay_with_stream, total_rows
from pipelines.workers import run_all
from replay import groupby
from replay.array import ArrayModel
from replay.intervals import (
    AUTO_INTERVALS_NS,
    IntervalAggregator,
    add_all,
    auto_interval_ns,
    group_sums,
    outcome_frame,
)
from replay.mech import MECHANISMS
from replay.mech.flash import sums as flash_sums
from replay.model import Segment
from replay.pages import SegmentBuilder
from replay.scenario import MAX_OUTSTANDING, Scenario, load, loads, preset_names
from replay.tally import LAT_BASE, LOG_BASE, RequestTally
from replay.version import ARRAY_MODEL, model_version
from schemas.trace import OP_READ, OP_WRITE
from traces.source import prefetch as prefetch_items

#: record logs kept in time order for what reads them in order (stall spans, the tier moves); the
#: others are only summed per interval (any order gives the same sums)
SORTED_LOGS = ("forced_flush", "relocation")
#: per-interval sums of requests and flushes in compiled code (the request tables in the kernel's
#: loop, ``replay.tally``; the rest ``replay.groupby``); False: Polars group-bys on frames of them
#: (the reference the tests compare with)
COMPILED_SUMS = True
#: requests per segment of an array replay. Segments of 2 M requests made arrays of 16-350 MB per
#: segment (the outcome columns, the request tables' scratch), mapped afresh for each: in a fresh
#: process, 10 M requests, 1.7-2.1 s of page-fault system time (vnx5400-fastcache; vnx2-mcx
#: 0.6-0.8 s); at 512 k 0.3-0.6 s, user time unchanged, half the peak RSS (docs/performance.md)
ARRAY_BATCH_ROWS = 1 << 19


#: the mechanisms' results modules (``replay/mech/<name>/results.py``): what they aggregate as a
#: replay streams, their tables and summary fields
RESULTS = {m.name: m.module("results") for m in MECHANISMS if m.has("results")}


def array_model_version() -> str:
    """Hash of the source of the modules an array replay's results depend on (``ARRAY_MODEL``)."""
    return model_version(ARRAY_MODEL)


def run_id(trace_id: str, scenario: Scenario, data_version: str = "") -> str:
    """Stable id of (trace, its data version, scenario, model version): the same replay by the
    same code gets the same id; a change to the model's code, or a re-ingest of the trace by
    another reader version (same trace id, new data: ``TraceRef.data_version``), gives a new one."""
    blob = f"{trace_id}\0{data_version}\0{scenario.hash}\0{array_model_version()}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def scenario_list() -> list[dict]:
    """The presets in ``replay/scenarios/`` (``tiercast scenarios``)."""
    return [load(n).describe() for n in preset_names()]


# --------------------------------------------------------------------------------------------
# per-interval aggregation
# --------------------------------------------------------------------------------------------
def _req_sums() -> dict[str, pl.Expr]:
    lat = pl.col("latency_ns")
    return {
        "requests": pl.len().cast(pl.Int64),
        "reads": (pl.col("op") == OP_READ).sum().cast(pl.Int64),
        "writes": (pl.col("op") == OP_WRITE).sum().cast(pl.Int64),
        "read_pages": pl.col("read_pages").sum(),
        "read_hit_pages": pl.col("read_hit_pages").sum(),
        "write_pages": pl.col("write_pages").sum(),
        "write_hit_pages": pl.col("write_hit_pages").sum(),
        "bytes": pl.col("size_bytes").cast(pl.Int64).sum(),
        "latency_sum_ns": lat.sum(),
        "stall_sum_ns": pl.col("stall_ns").sum(),
        "stalled_requests": (pl.col("stall_ns") > 0).sum().cast(pl.Int64),
        "throttle_sum_ns": pl.col("throttle_ns").sum(),
        "throttled_requests": (pl.col("throttle_ns") > 0).sum().cast(pl.Int64),
        "backend_read_ios": pl.col("backend_ios").sum(),
        "backend_read_busy_ns": pl.col("backend_busy_ns").sum(),
        "dirty_sum": pl.col("dirty_pages").sum(),
        "rg_dirty_sum": pl.col("rg_dirty_pages").sum(),
    }


_REQ_MAXES = {
    "latency_max_ns": pl.col("latency_ns").max(),
    "dirty_max": pl.col("dirty_pages").max(),
    "rg_dirty_max": pl.col("rg_dirty_pages").max(),
}
_FLUSH_SUMS = {
    "flush_ops": pl.len().cast(pl.Int64),
    "flush_pages": pl.col("pages").sum(),
    "flush_bytes": pl.col("bytes").sum(),
    "backend_write_ios": pl.col("ios").sum(),
    "backend_write_busy_ns": pl.col("busy_ns").sum(),
    "age_sum_ns": pl.col("age_ns").sum(),
}
_STALL_SUMS = {"forced_flushes": pl.len().cast(pl.Int64), "forced_flush_stall_ns": pl.col("stall_ns").sum()}
#: MCx, per RAID group: throttled adaptation ticks and their weakest trigger (throttle records,
#: ``replay.events``), and writes that waited for room in a pool 100 % dirty (cache-full waits)
_THROTTLE_SUMS = {"throttle_ticks": pl.col("ticks").sum()}
_THROTTLE_MINS = {f"throttle_{k}": pl.col(k).min() for k in ("past_age_min_ns", "window_full_min_ns", "drain_min_ns",
                                                            "admit_min_pages_per_s")}
_FULL_WAIT_SUMS = {"cache_full_waits": pl.len().cast(pl.Int64), "cache_full_wait_ns": pl.col("wait_ns").sum()}
#: With an SSD cache: reads reaching it and writes the DRAM cache wrote through (per request) ...
_SSD_REQ_SUMS = {name: pl.col(name).sum() for name in ("ssd_read_hits", "ssd_read_misses", "ssd_through_hits",
                                                       "ssd_through_misses")}
_SSD_REQ_MAXES = {"ssd_dirty_max": pl.col("ssd_dirty_slots").max()}
#: ... flushes into it and past it (flush records) ...
_SSD_FLUSH_SUMS = {"ssd_flush_hits": pl.col("ssd_hits").sum(), "ssd_flush_misses": pl.col("ssd_misses").sum()}
#: ... and promotions (records at their own times; slots in use after each: never falls)
_PROMO_SUMS = {"ssd_promotions": pl.len().cast(pl.Int64), "ssd_promotion_bytes": pl.col("bytes").sum()}
_PROMO_MAXES = {"ssd_used_max": pl.col("slots_used").max()}
#: per-interval SSD event counts (also as ``_per_s``)
SSD_EVENTS = ("ssd_read_hits", "ssd_read_misses", "ssd_write_hits", "ssd_write_misses", "ssd_promotions")
#: the SSD hit ratio of the run's last 10 % of simulated time comes from per-second sums
SSD_FINE_NS = 1_000_000_000
#: All-flash (``replay.mech.flash.kernel``), array-wide per interval: host writes, GC copies and waits, and the
#: space used (free space at its lowest in the interval = the space GC can free - this maximum)
_FLASH_SUMS = {
    "flash_host_write_bytes": pl.when(pl.col("op") == OP_WRITE).then(pl.col("size_bytes")).otherwise(0)
    .cast(pl.Int64).sum(),
    "flash_gc_bytes": pl.col("flash_gc_bytes").sum(),
    "flash_gc_wait_ns": pl.col("throttle_ns").sum(),
    "flash_gc_waits": (pl.col("throttle_ns") > 0).sum().cast(pl.Int64),
}


def _lat_bucket(latency_ns: pl.Expr) -> pl.Expr:
    return (pl.max_horizontal(latency_ns, pl.lit(1)).cast(pl.Float64).log() / LOG_BASE).floor().cast(pl.Int32)


def _sorted_by(df: pl.DataFrame, cols: list[str]) -> bool:
    """Whether ``df``'s rows are in the order of ``cols`` (lexicographic, ascending); False when a
    column is not an integer (FAST VP's tier names: Polars sorts those)."""
    if not all(df.schema[c].is_integer() for c in cols):
        return False
    tie = np.ones(max(df.height - 1, 0), dtype=bool)  # the pairs of rows equal so far
    for c in cols:
        step = np.diff(df[c].to_numpy().astype(np.int64))
        if (step[tie] < 0).any():
            return False
        tie &= step == 0
    return True


def _percentiles(hist: pl.DataFrame, keys: list[str], qs=(0.5, 0.95, 0.99)) -> pl.DataFrame:
    """p50/p95/p99 (ms) per key group from a latency histogram (keys + lat_bucket + n): the lowest
    bucket whose running count reaches q of the group's."""
    names = [f"latency_p{int(q * 100)}_ms" for q in qs]
    if hist.height == 0:
        return pl.DataFrame(schema={**{k: hist.schema[k] for k in keys}, **{name: pl.Float64 for name in names}})
    # one sort, then a binary search per quantile in the running count of the whole table (groups
    # follow each other, so it rises through them): a Polars window query (cum_sum over the keys,
    # then a filter per quantile) took 0.1 s on the 400 k rows of a 10 M-request replay's groups
    cols = [*keys, "lat_bucket"]
    h = hist if _sorted_by(hist, cols) else hist.sort(cols)  # group_sums' tables come sorted
    new = np.zeros(h.height, dtype=bool)
    new[0] = True
    for k in keys:
        v = h[k].to_numpy()
        new[1:] |= v[1:] != v[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], h.height) - 1
    run = np.cumsum(h["n"].to_numpy())
    before = np.where(first > 0, run[first - 1], 0)
    total = run[last] - before
    bucket = h["lat_bucket"].to_numpy()
    # an integer count reaches q * total where it reaches ceil(q * total)
    cols = {name: bucket[np.searchsorted(run, before + np.ceil(q * total), side="left")]
            for q, name in zip(qs, names, strict=True)}
    # the bucket's middle by Polars' power (numpy's differs from it in the last bit for a third of them)
    return pl.DataFrame({**{k: h[k].gather(first) for k in keys}, **cols}).with_columns(
        ((LAT_BASE ** (pl.col(name).cast(pl.Float64) + 0.5)) / 1e6).alias(name) for name in names)


@dataclass
class _Aggregates:
    """Everything accumulated while a replay streams: interval sums, histograms, summary sums.
    Requests and flushes are aggregated once per (interval, volume, RAID group); the per-volume
    and per-group tables are sums over the other key at the end."""

    interval_ns: int  # 0: auto (grows with the run: replay.intervals.auto_interval_ns)
    warmup_requests: int
    ssd_slots: int = 0  # 0: no SSD cache
    tiering: bool = False  # FAST VP: keep the relocation records
    flash_free_full: int = 0  # all-flash: the space GC can free (0: not an all-flash array)
    mcx: bool = False  # MCx: throttle and cache-full wait records per RAID group
    cacheless: bool = False  # no page, stall, back-end or dirty outcomes (``ArrayModel.cacheless``)
    req: IntervalAggregator = field(init=False)
    promo: IntervalAggregator | None = field(init=False, default=None)
    ssd_fine: IntervalAggregator | None = field(init=False, default=None)
    ssd_fine_flush: IntervalAggregator | None = field(init=False, default=None)
    hist: IntervalAggregator = field(init=False)
    flush: IntervalAggregator = field(init=False)
    stalls: IntervalAggregator = field(init=False)
    lat_hist: np.ndarray = field(default_factory=lambda: np.zeros(4096, dtype=np.int64))
    sums: dict = field(default_factory=dict)
    flash: IntervalAggregator | None = field(init=False, default=None)
    cliff: dict = field(default_factory=dict)  # all-flash: writes before / after the first GC wait
    mech: dict = field(default_factory=dict)  # the running mechanisms' results (RESULTS): name -> Results

    def __post_init__(self) -> None:
        self.auto = self.interval_ns == 0
        if self.auto:
            self.interval_ns = AUTO_INTERVALS_NS[0]
        n = self.interval_ns
        on = bool(self.ssd_slots)
        self.req = IntervalAggregator(n, by=["volume", "rg"], sums={**_req_sums(), **(_SSD_REQ_SUMS if on else {})},
                                      ratios={}, maxes={**_REQ_MAXES, **(_SSD_REQ_MAXES if on else {})})
        if on:
            fine = min(n, SSD_FINE_NS)
            self.promo = IntervalAggregator(n, by=["volume"], sums=_PROMO_SUMS, ratios={}, maxes=_PROMO_MAXES)
            self.ssd_fine = IntervalAggregator(fine, sums=_SSD_REQ_SUMS, ratios={})
            self.ssd_fine_flush = IntervalAggregator(fine, sums=_SSD_FLUSH_SUMS, ratios={})
        self.hist = IntervalAggregator(n, by=["volume", "rg", "lat_bucket"], sums={"n": pl.len().cast(pl.Int64)},
                                       ratios={})
        self.flush = IntervalAggregator(n, by=["volume", "rg"], sums={**_FLUSH_SUMS, **(_SSD_FLUSH_SUMS if on else {})},
                                        ratios={},
                                        maxes={"rg_dirty_flush_max": pl.col("rg_dirty_pages").max()})
        self.stalls = IntervalAggregator(n, sums=_STALL_SUMS, ratios={})
        self.throttles = IntervalAggregator(n, by=["rg"], sums=_THROTTLE_SUMS, ratios={},
                                            mins=_THROTTLE_MINS) if self.mcx else None
        self.full_waits = IntervalAggregator(n, by=["rg"], sums=_FULL_WAIT_SUMS, ratios={}) if self.mcx else None
        self.moves = tier_tables.TierRecords() if self.tiering else None
        if self.flash_free_full:
            used = pl.lit(self.flash_free_full, dtype=pl.Int64) - pl.col("flash_free_bytes")
            self.flash = IntervalAggregator(n, sums=_FLASH_SUMS, ratios={}, maxes={"flash_used_max": used.max()})
            none = np.zeros(0, dtype=np.int64)
            self.cliff = {"req": None, "ns": None, "first_ns": None, "last_ns": 0, "pre_writes": 0,
                          "pre_bytes": 0, "post_writes": 0, "post_bytes": 0, "pending_done": none,
                          "pending_size": none}
        self.sums = {"requests": 0, "bytes": 0, "latency_sum_ns": 0, "latency_max_ns": 0, "first_ns": None,
                     "last_ns": 0, "read_pages": 0, "read_hit_pages": 0, "write_pages": 0, "write_hit_pages": 0,
                     "stall_sum_ns": 0, "stalled_requests": 0, "throttle_sum_ns": 0, "throttled_requests": 0,
                     "backend_ios": 0}
        self._pending_write_ios: list[tuple[np.ndarray, np.ndarray]] = []
        self.stall_spans = np.zeros((0, 2), dtype=np.int64)  # the time forced flushes ran: (start, end) ns
        self.ts_resolution_ns = 0  # the step every timestamp difference is a multiple of (0: one instant)
        self.ts_at_one_instant_max = 0  # the most requests sharing one timestamp
        self._ts_last: tuple[int, int] | None = None  # the last timestamp and its requests so far
        self._done_grouped = False  # this segment's request tables summed in compiled code
        self._seg = None  # ... and those tables (sums, maxima, latency buckets and counts)

    def _fit(self, out: dict[str, np.ndarray], records: dict[str, np.ndarray]) -> None:
        """Auto interval: grow it (merging what was summed) before a segment runs past
        ``AUTO_MAX_INTERVALS`` of the current one."""
        span = int(out["done_ns"].max()) if len(out["done_ns"]) else 0
        for cols in records.values():
            if len(cols["ts_ns"]):
                span = max(span, int(cols["ts_ns"].max()))
        n = auto_interval_ns(span, self.interval_ns)
        if n == self.interval_ns:
            return
        self.interval_ns = n
        for agg in (self.req, self.promo, self.hist, self.flush, self.stalls, self.flash, self.throttles,
                    self.full_waits):
            if agg is not None:
                agg.coarsen(n)
        for agg in (self.ssd_fine, self.ssd_fine_flush):
            if agg is not None:
                agg.coarsen(min(n, SSD_FINE_NS))
        for results in self.mech.values():
            results.coarsen(n)

    def add(self, segment: Segment, out: dict[str, np.ndarray], records: dict[str, np.ndarray],
            tally: RequestTally | None = None) -> None:
        """One replayed segment: its outcomes, its records and (``tally``) the request tables its
        kernel summed."""
        if self.auto:
            self._fit(out, records)
        self._note_timestamps(segment.ts_ns)
        frame = None
        grouped = self._grouped(segment, out, tally)
        flash_done = False
        if self.flash is not None:
            flash_done = self._flash_sums(segment, out, grouped)
        if not grouped or (self.flash is not None and not flash_done):
            frame = outcome_frame(segment, out).with_columns(
                ts_ns=pl.col("arrival_ns"), latency_ns=pl.col("done_ns") - pl.col("arrival_ns"))
            frame = frame.with_columns(lat_bucket=_lat_bucket(pl.col("latency_ns")))
        self._count_write_ios(records["flush"])
        # the flush log, the largest, summed in compiled code; the other logs (and the flush log
        # when its keys do not pack) by Polars
        compiled = set()
        fl = records.get("flush")
        if fl is not None and len(fl["ts_ns"]) and COMPILED_SUMS:
            compiled = self._grouped_flushes(fl)
        logs = {kind: pl.DataFrame(cols) for kind, cols in records.items() if len(cols["ts_ns"])}
        logs = {kind: df.sort("ts_ns") if kind in SORTED_LOGS or self.mech else df for kind, df in logs.items()}
        work = [(a, frame) for a in (self.req, self.hist, self.ssd_fine, self.flash)
                if a is not None and frame is not None and not (self._done_grouped if a is not self.flash else flash_done)]
        for kind, agg in (("flush", self.flush), ("forced_flush", self.stalls), ("throttle", self.throttles),
                          ("cache_full_wait", self.full_waits), ("ssd_promotion", self.promo),
                          ("flush", self.ssd_fine_flush)):
            if agg is not None and kind in logs and id(agg) not in compiled:
                work.append((agg, logs[kind]))
        add_all(work)
        stalls = logs.get("forced_flush")
        if stalls is not None:
            start = stalls["ts_ns"].to_numpy()
            spans = np.concatenate([self.stall_spans, np.stack([start, start + stalls["stall_ns"].to_numpy()], axis=1)])
            self.stall_spans = np.stack(physics.union_spans(spans), axis=1)
        if self.moves is not None and "relocation" in logs:
            self.moves.add(logs["relocation"])
        if self.mech:
            requests = {**out, "ts_ns": out["arrival_ns"], "op": segment.op, "size_bytes": segment.size_bytes}
            for results in self.mech.values():
                results.add(requests, logs)
        # run summary over the requests after the warm-up
        skip = max(0, self.warmup_requests - segment.first_request)
        if skip >= segment.n_requests:
            return
        if skip == 0 and self._seg is not None:
            self._sum_grouped(out)
            return
        lat = out["done_ns"][skip:] - out["arrival_ns"][skip:]
        s = self.sums
        s["requests"] += lat.size
        s["bytes"] += int(segment.size_bytes[skip:].sum())
        s["latency_sum_ns"] += int(lat.sum())
        s["latency_max_ns"] = max(s["latency_max_ns"], int(lat.max()))
        if s["first_ns"] is None:
            s["first_ns"] = int(out["arrival_ns"][skip])
        s["last_ns"] = max(s["last_ns"], int(out["done_ns"][skip:].max()))
        for k in ("read_pages", "read_hit_pages", "write_pages", "write_hit_pages"):
            s[k] += int(out[k][skip:].sum())
        for sum_key, n_key, col in (("stall_sum_ns", "stalled_requests", "stall_ns"),
                                    ("throttle_sum_ns", "throttled_requests", "throttle_ns")):
            delay = out[col][skip:]
            s[sum_key] += int(delay.sum())
            s[n_key] += int(np.count_nonzero(delay))
        s["backend_ios"] += int(out["backend_ios"][skip:].sum())
        if self._pending_write_ios:  # flushes seen before the warm-up ended: count those after it
            for ts, ios in self._pending_write_ios:
                s["backend_ios"] += int(ios[ts >= s["first_ns"]].sum())
            self._pending_write_ios = []
        b = (np.log(np.maximum(lat, 1)) / LOG_BASE).astype(np.int64)
        top = int(b.max()) + 1
        if top > self.lat_hist.size:
            self.lat_hist = np.concatenate([self.lat_hist, np.zeros(top - self.lat_hist.size, dtype=np.int64)])
        self.lat_hist += np.bincount(b, minlength=self.lat_hist.size)

    def _sum_grouped(self, out: dict[str, np.ndarray]) -> None:
        """The run summary's sums of a segment wholly after the warm-up, from its request table and
        latency histogram (the same integers as the per-request sums of ``add``)."""
        rs, rm, b, counts = self._seg
        s = self.sums
        tot = rs.sum(axis=0)
        col = {c: int(tot[i]) for i, c in enumerate(groupby.REQUEST_SUMS)}
        s["requests"] += col["requests"]
        s["bytes"] += col["bytes"]
        s["latency_sum_ns"] += col["latency_sum_ns"]
        s["latency_max_ns"] = max(s["latency_max_ns"], int(rm[:, 0].max()))
        if s["first_ns"] is None:
            s["first_ns"] = int(out["arrival_ns"][0])
        s["last_ns"] = max(s["last_ns"], int(out["done_ns"].max()))
        for k in ("read_pages", "read_hit_pages", "write_pages", "write_hit_pages", "stall_sum_ns", "stalled_requests",
                  "throttle_sum_ns", "throttled_requests"):
            s[k] += col[k]
        s["backend_ios"] += col["backend_read_ios"]
        if self._pending_write_ios:  # flushes seen before the warm-up ended: count those after it
            for ts, ios in self._pending_write_ios:
                s["backend_ios"] += int(ios[ts >= s["first_ns"]].sum())
            self._pending_write_ios = []
        top = int(b.max()) + 1
        if top > self.lat_hist.size:
            self.lat_hist = np.concatenate([self.lat_hist, np.zeros(top - self.lat_hist.size, dtype=np.int64)])
        np.add.at(self.lat_hist, b, counts)

    def _grouped(self, segment: Segment, out: dict[str, np.ndarray], tally: RequestTally | None = None) -> bool:
        """The request, latency-histogram and fine SSD tables of one segment from the request tables
        its kernel summed (``tally``, ``replay.tally``): the same rows as the Polars group-by of
        ``add``; False (nothing added) without them."""
        self._done_grouped = False
        self._seg = None
        arr = out["arrival_ns"]
        if arr.size == 0 or tally is None:
            return False
        n = self.req.interval_ns
        ssd = self.ssd_fine is not None
        if list(self.req.sums) != [*groupby.REQUEST_SUMS, *(groupby.SSD_SUMS if ssd else ())] or list(
                self.req.maxes) != [*groupby.REQUEST_MAXES, *(["ssd_dirty_max"] if ssd else [])]:
            raise AssertionError("replay: the compiled request sums differ from the Polars ones")
        vol, rg = segment.volume, out["rg"]
        counted_ns, rk, rs, rm, group, bucket = tally.tables(segment.n_requests)
        if n % counted_ns:
            raise AssertionError(f"replay: the tally counted {counted_ns} ns intervals, the run {n} ns")
        if counted_ns != n:  # the automatic interval grew after the kernel ran (``_fit``)
            rk = np.column_stack([rk[:, 0] // (n // counted_ns), rk[:, 1:]])
        gi, b, counts = groupby.latency_hist(group, bucket, rk.shape[0])
        self._seg = (rs, rm, b, counts)
        hk = rk[gi]
        self.hist.add_part(pl.DataFrame({
            "interval_start_ns": hk[:, 0] * n, "volume": hk[:, 1].astype(vol.dtype), "rg": hk[:, 2].astype(rg.dtype),
            "lat_bucket": b.astype(np.int32), "n": counts}))
        part = {"interval_start_ns": rk[:, 0] * n, "volume": rk[:, 1].astype(vol.dtype), "rg": rk[:, 2].astype(rg.dtype)}
        part.update((c, rs[:, i]) for i, c in enumerate(self.req.sums))
        part.update((c, rm[:, i]) for i, c in enumerate(self.req.maxes))
        self.req.add_part(pl.DataFrame(part))
        if ssd:
            self.ssd_fine.add_arrays(arr, {c: out[c] for c in _SSD_REQ_SUMS})
        self._done_grouped = True
        return True

    def _grouped_flushes(self, fl: dict[str, np.ndarray]) -> set[int]:
        """The flush table (and the fine SSD flush sums) of one segment's flush records by
        ``replay.groupby``; the ids of the aggregators done."""
        done = set()
        n = self.flush.interval_ns
        packed = groupby.pack_keys([fl["ts_ns"] // n, fl["volume"], fl["rg"]])
        if packed is not None:
            key, layout = packed
            gid, gkeys = groupby.group_ids(key)
            src = {"flush_pages": "pages", "flush_bytes": "bytes", "backend_write_ios": "ios",
                   "backend_write_busy_ns": "busy_ns", "age_sum_ns": "age_ns", "ssd_flush_hits": "ssd_hits",
                   "ssd_flush_misses": "ssd_misses"}
            sums = {c: fl[src[c]] for c in self.flush.sums if c != "flush_ops"}
            self.flush.add_part(self.flush.compiled_part(gid, sums, {"rg_dirty_flush_max": fl["rg_dirty_pages"]},
                                                         packed=(gkeys, layout),
                                                         dtypes=[fl["volume"].dtype, fl["rg"].dtype]))
            done.add(id(self.flush))
        if self.ssd_fine_flush is not None:
            self.ssd_fine_flush.add_arrays(fl["ts_ns"], {"ssd_flush_hits": fl["ssd_hits"],
                                                          "ssd_flush_misses": fl["ssd_misses"]})
            done.add(id(self.ssd_fine_flush))
        return done

    def _note_timestamps(self, ts: np.ndarray) -> None:
        """The trace's clock (in time order): the resolution its timestamps share (the gcd of their
        differences) and the most requests at one instant, across segments."""
        if ts.size == 0:
            return
        has = self._ts_last is not None
        last_ts, last_run = self._ts_last if has else (0, 0)
        g, best, run = groupby.timestamp_stats(np.ascontiguousarray(ts, dtype=np.int64), has, last_ts, last_run,
                                               self.ts_resolution_ns)
        self.ts_resolution_ns = int(g)
        self.ts_at_one_instant_max = max(self.ts_at_one_instant_max, int(best))
        self._ts_last = (int(ts[-1]), int(run))

    def _note_timestamps_numpy(self, ts: np.ndarray) -> None:
        """:meth:`_note_timestamps` in numpy (the reference the tests compare it with)."""
        if ts.size == 0:
            return
        d = np.diff(ts)
        step = d[d > 0]
        if self._ts_last is not None and ts[0] > self._ts_last[0]:
            step = np.append(step, ts[0] - self._ts_last[0])
        if step.size:
            self.ts_resolution_ns = int(np.gcd.reduce(np.append(step, self.ts_resolution_ns)))
        starts = np.flatnonzero(np.concatenate(([1], d)))
        runs = np.diff(np.append(starts, ts.size))
        if self._ts_last is not None and ts[0] == self._ts_last[0]:
            runs[0] += self._ts_last[1]
        self.ts_at_one_instant_max = max(self.ts_at_one_instant_max, int(runs.max()))
        self._ts_last = (int(ts[-1]), int(runs[-1]))

    def _flash_sums(self, segment: Segment, out: dict[str, np.ndarray], grouped: bool) -> bool:
        """All-flash: one compiled pass (``replay.mech.flash.sums.segment_sums``) for the writes
        about the cliff (:meth:`_split_at_cliff`) and, when ``grouped``, the interval sums
        (``_FLASH_SUMS``); returns whether those were added (else Polars sums them)."""
        cols = [out[c] for c in ("arrival_ns", "done_ns", "flash_gc_bytes", "throttle_ns", "flash_free_bytes")]
        c = self.cliff
        n = self.flash.interval_ns
        w, *split = flash_sums.segment_sums(*cols[:2], segment.op, segment.size_bytes, *cols[2:], np.int64(n),
                                           c["ns"] is None)
        self._split_at_cliff(segment, out, *split)
        if not grouped:
            return False
        part = {"interval_start_ns": w[:, 0] * n, "flash_host_write_bytes": w[:, 1], "flash_gc_bytes": w[:, 2],
                "flash_gc_wait_ns": w[:, 3], "flash_gc_waits": w[:, 4], "flash_used_max": self.flash_free_full - w[:, 5]}
        self.flash.add_part(pl.DataFrame({k: part[k] for k in ("interval_start_ns", *self.flash.sums, *self.flash.maxes)}))
        return True

    def _split_at_cliff(self, segment: Segment, out: dict[str, np.ndarray], cut: int, bound: int, pre_w: int,
                        pre_b: int, late: np.ndarray, post_w: int, post_b: int) -> None:
        """All-flash, over all requests (the warm-up included: the cliff may come during it): the
        writes *completed* before the cliff (the arrival of the first write that waited for GC)
        and the writes *issued* from that one on, which GC admits at its rate (the writes in
        flight at the cliff had their space already: counted in neither). Until the cliff is
        found, a write done before the latest arrival so far is surely done before it (the cliff
        comes at or after that arrival); the others wait in ``pending`` (about those in flight).
        The segment's counts: ``segment_sums``."""
        c = self.cliff
        arrival, done = out["arrival_ns"], out["done_ns"]
        if c["first_ns"] is None:
            c["first_ns"] = int(arrival[0])
        c["last_ns"] = max(c["last_ns"], int(done.max()))
        if c["ns"] is None:
            if cut < segment.n_requests:
                c["req"] = segment.first_request + int(cut)
                c["ns"] = int(arrival[cut])
            old_done, old_size = c["pending_done"], c["pending_size"]
            old_pre = old_done < bound
            c["pre_writes"] += int(pre_w) + int(np.count_nonzero(old_pre))
            c["pre_bytes"] += int(pre_b) + int(old_size[old_pre].sum())
            c["pending_done"] = np.concatenate([old_done[~old_pre], done[late]])
            c["pending_size"] = np.concatenate([old_size[~old_pre], segment.size_bytes[late].astype(np.int64)])
        c["post_writes"] += int(post_w)
        c["post_bytes"] += int(post_b)

    def _count_write_ios(self, flushes: dict[str, np.ndarray]) -> None:
        """Back-end write I/Os of flushes issued after the measured window began."""
        ts, ios = flushes["ts_ns"], flushes["ios"]
        if self.sums["first_ns"] is None:
            self._pending_write_ios.append((ts, ios))
        else:
            self.sums["backend_ios"] += int(ios[ts >= self.sums["first_ns"]].sum())

    def latency_table(self) -> pl.DataFrame:
        """The measured requests' response-time histogram (the one the summary's percentiles come
        from): one row per non-empty 1 %-wide bucket, its bounds in ms and its request count."""
        b = np.flatnonzero(self.lat_hist)
        return pl.DataFrame({"lat_bucket": b.astype(np.int32),
                             "latency_lo_ms": LAT_BASE ** b.astype(np.float64) / 1e6,
                             "latency_hi_ms": LAT_BASE ** (b + 1.0) / 1e6,
                             "requests": self.lat_hist[b]})

    def percentile_ms(self, q: float) -> float:
        total = self.lat_hist.sum()
        if not total:
            return 0.0
        b = int(np.searchsorted(np.cumsum(self.lat_hist), q * total))
        return LAT_BASE ** (b + 0.5) / 1e6


def _finish_intervals(req: pl.DataFrame, hist: pl.DataFrame, flush: pl.DataFrame, stalls: pl.DataFrame, key: str,
                      interval_ns: int, cache_pages: int, ssd: pl.DataFrame | None = None,
                      ssd_slots: int = 0) -> pl.DataFrame:
    """``ssd``: with an SSD cache, per (interval, volume) promotions and the array's fill."""
    keys = ["interval_start_ns", key]
    on = ssd is not None
    # (interval, volume, rg) rows collapsed onto the keys
    sums = group_sums(req, keys, list(_req_sums()) + (list(_SSD_REQ_SUMS) if on else []),
                      list(_REQ_MAXES) + (list(_SSD_REQ_MAXES) if on else []))
    pct = _percentiles(group_sums(hist, [*keys, "lat_bucket"], ["n"]), keys)
    fl = group_sums(flush, keys, list(_FLUSH_SUMS) + (list(_SSD_FLUSH_SUMS) if on else []), ["rg_dirty_flush_max"])
    sec = interval_ns / 1e9
    df = (sums.join(pct, on=keys, how="left")
          .join(fl, on=keys, how="full", coalesce=True)
          .join(stalls, on="interval_start_ns", how="left"))
    num = [c for c, t in df.schema.items() if t.is_integer() and c not in keys]
    df = df.with_columns(pl.col(num).fill_null(0))
    req_n = pl.col("requests")
    df = df.with_columns(
        iops=req_n / sec,
        mb_per_s=pl.col("bytes") / sec / 1e6,
        read_hit_ratio=pl.when(pl.col("read_pages") > 0).then(pl.col("read_hit_pages") / pl.col("read_pages")),
        write_hit_ratio=pl.when(pl.col("write_pages") > 0).then(pl.col("write_hit_pages") / pl.col("write_pages")),
        latency_mean_ms=pl.when(req_n > 0).then(pl.col("latency_sum_ns") / req_n / 1e6),
        latency_max_ms=pl.col("latency_max_ns") / 1e6,
        stall_delay_sum_ms=pl.col("stall_sum_ns") / 1e6,
        throttle_delay_sum_ms=pl.col("throttle_sum_ns") / 1e6,
        dirty_pct_mean=pl.when(req_n > 0).then(pl.col("dirty_sum") / req_n / cache_pages * 100),
        dirty_pct_max=pl.col("dirty_max") / cache_pages * 100,
        flush_pages_per_s=pl.col("flush_pages") / sec,
        flush_mb_per_s=pl.col("flush_bytes") / sec / 1e6,
        backend_ios=pl.col("backend_read_ios") + pl.col("backend_write_ios"),
        forced_flush_stall_ms=pl.col("forced_flush_stall_ns") / 1e6,
    )
    if on:
        if key == "volume":
            promo = ssd.filter(pl.col("volume").is_not_null()).select(*keys, "ssd_promotions")
        else:  # a promotion belongs to no RAID group of its own: per volume only
            promo = pl.DataFrame(schema={"interval_start_ns": pl.Int64, key: df.schema[key], "ssd_promotions": pl.Int64})
        df = df.join(promo.cast({key: df.schema[key]}), on=keys, how="full", coalesce=True)
        fill = (df.select("interval_start_ns").unique()
                .join(ssd.group_by("interval_start_ns").agg(pl.col("ssd_fill_pct").max()), on="interval_start_ns",
                      how="full", coalesce=True)
                .sort("interval_start_ns").with_columns(pl.col("ssd_fill_pct").forward_fill().fill_null(0.0)))
        df = df.join(fill, on="interval_start_ns", how="left")
        num = [c for c, t in df.schema.items() if t.is_integer() and c not in keys]
        df = df.with_columns(pl.col(num).fill_null(0)).with_columns(
            ssd_write_hits=pl.col("ssd_flush_hits") + pl.col("ssd_through_hits"),
            ssd_write_misses=pl.col("ssd_flush_misses") + pl.col("ssd_through_misses"))
        hits = pl.col("ssd_read_hits") + pl.col("ssd_write_hits")
        reached = hits + pl.col("ssd_read_misses") + pl.col("ssd_write_misses")
        df = df.with_columns(
            *((pl.col(c) / sec).alias(f"{c}_per_s") for c in SSD_EVENTS),
            ssd_hit_ratio=pl.when(reached > 0).then(hits / reached),
            ssd_dirty_pct_max=pl.col("ssd_dirty_max") / ssd_slots * 100,
        ).drop("ssd_dirty_max", "ssd_flush_hits", "ssd_flush_misses", "ssd_through_hits", "ssd_through_misses")
    return df.sort(keys)


def _ssd_intervals(aggs: _Aggregates) -> pl.DataFrame:
    """Per (interval, volume): promotions, and the array's SSD fill at each interval's end (slots in
    use never fall: the running maximum, carried over intervals without promotions)."""
    p = aggs.promo.result()
    fill = (p.group_by("interval_start_ns").agg(pl.col("ssd_used_max").max()).sort("interval_start_ns")
            .with_columns(ssd_fill_pct=pl.col("ssd_used_max").cum_max() / aggs.ssd_slots * 100))
    return p.select("interval_start_ns", "volume", "ssd_promotions").join(
        fill.select("interval_start_ns", "ssd_fill_pct"), on="interval_start_ns", how="full", coalesce=True)


def _flash_intervals(aggs: _Aggregates) -> pl.DataFrame:
    """All-flash, array-wide per interval: free space at its lowest (bytes and % of the space GC
    can free), GC bytes copied and MiB/s, write amplification ((host writes + GC copies) / host
    writes), host write MiB/s, GC waits."""
    sec = aggs.interval_ns / 1e9
    full = aggs.flash_free_full
    host = pl.col("flash_host_write_bytes")
    return aggs.flash.result().select(
        "interval_start_ns",
        flash_free_bytes=pl.lit(full, dtype=pl.Int64) - pl.col("flash_used_max"),
        flash_free_pct=(pl.lit(full, dtype=pl.Int64) - pl.col("flash_used_max")) / full * 100,
        flash_gc_bytes=pl.col("flash_gc_bytes"),
        flash_gc_mib_per_s=pl.col("flash_gc_bytes") / sec / (1 << 20),
        flash_write_amplification=pl.when(host > 0).then((host + pl.col("flash_gc_bytes")) / host),
        flash_host_write_mib_per_s=host / sec / (1 << 20),
        flash_gc_waits=pl.col("flash_gc_waits"),
        flash_gc_wait_sum_ms=pl.col("flash_gc_wait_ns") / 1e6,
    )


def _with_throttles(rg: pl.DataFrame, aggs: _Aggregates) -> pl.DataFrame:
    """MCx: per (interval, RAID group) the throttled ticks and their weakest trigger (ms; the
    admitted rate in pages/s), and the cache-full waits: what explains each throttled request."""
    keys = ["interval_start_ns", "rg"]
    thr = aggs.throttles.result().join(aggs.full_waits.result(), on=keys, how="full", coalesce=True)
    thr = thr.cast({"rg": rg.schema["rg"]}).select(
        *keys, pl.col("throttle_ticks").fill_null(0),
        *((pl.col(f"{k}_ns") / 1e6).alias(f"{k}_ms") for k in ("throttle_past_age_min", "throttle_window_full_min",
                                                               "throttle_drain_min")),
        pl.col("throttle_admit_min_pages_per_s"), pl.col("cache_full_waits").fill_null(0),
        (pl.col("cache_full_wait_ns").fill_null(0) / 1e6).alias("cache_full_wait_sum_ms"))
    out = rg.join(thr, on=keys, how="full", coalesce=True)
    num = [c for c, t in out.schema.items() if t.is_integer() and c not in keys and c not in thr.columns]
    return out.with_columns(pl.col(num).fill_null(0), pl.col("throttle_ticks", "cache_full_waits").fill_null(0))


def _interval_tables(aggs: _Aggregates, model: ArrayModel, volume_names: list[str], trace_id: str, rid: str,
                     hist: pl.DataFrame):
    sc = model.scenario
    cache_pages = sc.dram.write_cache_bytes // sc.dram.page_bytes
    stalls = aggs.stalls.result().select("interval_start_ns", "forced_flushes", "forced_flush_stall_ns")
    n = aggs.interval_ns
    req, flush = aggs.req.result(), aggs.flush.result()
    slots = aggs.ssd_slots
    ssd = _ssd_intervals(aggs) if slots else None
    vol = _finish_intervals(req, hist, flush, stalls, "volume", n, cache_pages, ssd, slots)
    vol = vol.with_columns(pl.col("volume").replace_strict(dict(enumerate(volume_names)), default=None,
                                                          return_dtype=pl.String))
    rg = _finish_intervals(req, hist, flush, stalls, "rg", n, cache_pages, ssd, slots)
    if aggs.flash is not None:
        fl = _flash_intervals(aggs)
        vol = vol.join(fl, on="interval_start_ns", how="left")
        rg = rg.join(fl, on="interval_start_ns", how="left")
    widths = {i: r.width for i, r in enumerate(sc.raid_groups)}
    if aggs.throttles is not None:
        rg = _with_throttles(rg, aggs)
    rg = (rg.filter(pl.col("rg") >= 0)
          .with_columns(
              rg_dirty_pct_max=pl.max_horizontal("rg_dirty_max", "rg_dirty_flush_max") / cache_pages * 100,
              pre_cleaning_age_ms=pl.when(pl.col("flush_ops") > 0).then(
                  pl.col("age_sum_ns") / pl.col("flush_ops") / 1e6) if sc.dram.mode == "mcx" else pl.lit(None),
              utilization=(pl.col("backend_read_busy_ns") + pl.col("backend_write_busy_ns"))
              / (pl.col("rg").replace_strict(widths, return_dtype=pl.Int64) * n))
          .with_columns(pl.col("rg").replace_strict({i: r.name for i, r in enumerate(sc.raid_groups)},
                                                   return_dtype=pl.String)))
    drop_vol = ["latency_sum_ns", "stall_sum_ns", "throttle_sum_ns", "dirty_sum", "rg_dirty_sum", "dirty_max",
                "rg_dirty_max", "latency_max_ns", "forced_flush_stall_ns", "age_sum_ns", "rg_dirty_flush_max"]
    extra = [pl.lit(trace_id).alias("trace_id"), pl.lit(rid).alias("run_id"), pl.lit(sc.name).alias("scenario"),
             (pl.col("interval_start_ns") + n).alias("interval_end_ns")]
    vol = vol.drop(drop_vol).with_columns(extra)
    rg = rg.drop(drop_vol).with_columns(extra)
    return vol, rg


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------
@dataclass
class ReplayResult:
    summary: dict
    volume_intervals: pl.DataFrame
    rg_intervals: pl.DataFrame
    # FAST VP: pipelines.tiering.TIER_TABLES; a mechanism's results module: its TABLES
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)


def _check_scenario(sc: Scenario) -> None:
    if sc.ignored_sections:
        warnings.warn(f"scenario {sc.name}: section(s) {', '.join(sc.ignored_sections)} not yet modelled, "
                      "ignored", stacklevel=3)


def max_end_bytes(df: pl.DataFrame) -> dict[str, int]:
    """Each volume's highest address (offset + size) in canonical requests (``Scenario.with_footprint``)."""
    ends = df.group_by("volume").agg((pl.col("offset") + pl.col("size")).max().alias("end"))
    return dict(zip(ends["volume"].to_list(), ends["end"].to_list(), strict=True))


def replay_frames(frames: Iterable[pl.DataFrame], scenario: Scenario, trace_id: str = "<frames>",
                  total: int | None = None, progress: Progress | None = None, max_requests: int | None = None,
                  prefetch: bool = True, data_version: str = "") -> ReplayResult:
    """Replay canonical request frames (global time order) through ``scenario``; nothing written.
    A frame longer than ``ARRAY_BATCH_ROWS`` is replayed in segments of that many requests, as a
    trace is: a segment's outcome columns take ~170 B a request (a 45 M-request frame in one
    segment peaked at 14 GiB)."""
    builder = SegmentBuilder(scenario.dram.page_bytes)
    segments: Iterable[Segment] = (builder.build(part) for df in _limit(frames, max_requests)
                                   for part in (df.iter_slices(ARRAY_BATCH_ROWS) if df.height > ARRAY_BATCH_ROWS else (df,)))
    if prefetch:
        segments = prefetch_items(segments, depth=1)
    return replay_segments(segments, lambda: list(builder.volumes), scenario, trace_id, total, progress, max_requests,
                         data_version)


def replay_segments(segments: Iterable[Segment], volumes: Callable[[], list[str]], scenario: Scenario,
                  trace_id: str = "<segments>", total: int | None = None, progress: Progress | None = None,
                  max_requests: int | None = None, data_version: str = "") -> ReplayResult:
    """Replay segments at the scenario's page size (``SegmentBuilder`` or a trace's page stream,
    ``pipelines.simulate.TraceSegments``); ``volumes()``: the volume names by dense id seen so far."""
    _check_scenario(scenario)
    model = ArrayModel(scenario)
    state = model.new_state()
    warm = 0
    if scenario.replay.warmup_pct:
        if total is None:
            raise ValueError("warmup_pct needs the trace's request count (total)")
        n_all = min(total, max_requests) if max_requests else total
        warm = int(n_all * scenario.replay.warmup_pct / 100)
    fp = model.kernel_params.flash
    aggs = _Aggregates(scenario.replay.interval_ns, warm, model.kernel_params.ssd_cache.slots, model.tiering.on,
                       int(round(fp.free_full_bytes)) if fp.on else 0, mcx=not fp.on and not scenario.cloud and not scenario.device
                       and scenario.dram.mode == "mcx", cacheless=model.cacheless())
    aggs.mech = {name: RESULTS[name].Results(model, aggs.interval_ns) for name in model.mechanisms() if name in RESULTS}
    tally = RequestTally.for_model(model, state) if COMPILED_SUMS else None
    done = 0
    if progress and total:
        progress(0, total)  # the bar knows the trace's size before the first segment (which may be all of it)
    for segment in segments:
        state.volume_names = volumes()
        if tally is not None:
            tally.start(segment.n_requests, aggs.req.interval_ns, aggs.auto)
        out = model.replay(state, segment, tally)
        aggs.add(segment, out, model.drain_records(state), tally)
        del out  # let the model reuse the outcome buffer (ArrayModel._spare) unless aggs kept it
        done += segment.n_requests
        if progress:
            progress(done, total or done)
    rid = run_id(trace_id, scenario, data_version)
    names = volumes()
    hist = aggs.hist.result()  # merged once: the volume, group and tier tables all use it
    vol, rg = _interval_tables(aggs, model, names, trace_id, rid, hist)
    summary = _summary(model, state, aggs, trace_id, rid)
    summary["windows"] = confidence.windows(hist, vol, aggs.interval_ns, _percentiles)  # the spread over time
    tables = {"latency_hist": aggs.latency_table().with_columns(
        pl.lit(trace_id).alias("trace_id"), pl.lit(rid).alias("run_id"), pl.lit(scenario.name).alias("scenario"))}
    if aggs.moves is not None:
        tier, tier_summary = _tier_tables(model, state, aggs, rg, hist, names)
        summary.update(tier_summary)
        rg = rg.with_columns(tier=pl.col("rg").replace_strict(tier_tables.tier_of_group(model), default=None,
                                                              return_dtype=pl.String))
        extra = {"trace_id": trace_id, "run_id": rid, "scenario": scenario.name}
        tables |= {k: t.with_columns(pl.lit(v).alias(c) for c, v in extra.items()) for k, t in tier.items()}
    for results in aggs.mech.values():
        fields, more = results.finish(model, state)
        summary.update(fields)
        tables |= {k: t.with_columns(pl.lit(trace_id).alias("trace_id"), pl.lit(rid).alias("run_id"),
                                     pl.lit(scenario.name).alias("scenario")) for k, t in more.items()}
    summary["warnings"] = physics.check(scenario, summary, vol, rg, aggs.interval_ns, aggs.stall_spans,
                                        tables.get("cloud_intervals"))
    return ReplayResult(summary, vol, rg, tables)


def _tier_tables(model: ArrayModel, state, aggs: _Aggregates, rg: pl.DataFrame, hist: pl.DataFrame,
                 names: list[str]) -> tuple[dict[str, pl.DataFrame], dict]:
    moves = tier_tables.moves_table(model, aggs.moves.result(), names)
    slices = tier_tables.slices_table(model, state, names)
    intervals = tier_tables.intervals_table(model, rg, hist, moves, aggs.interval_ns, _percentiles)
    tables = {"tier_intervals": intervals, "tier_moves": moves, "tier_slices": slices,
              "tier_windows": tier_tables.windows_table(model, moves)}
    return tables, tier_tables.summary(model, state, intervals, slices)


def _limit(frames: Iterable[pl.DataFrame], n: int | None) -> Iterator[pl.DataFrame]:
    if n is None:
        yield from frames
        return
    left = n
    for df in frames:
        if left <= 0:
            return
        yield df.head(left)
        left -= df.height


def _mean_ms(sum_ns: int, n: int) -> float:
    return sum_ns / n / 1e6 if n else 0.0


def _summary(model: ArrayModel, state, aggs: _Aggregates, trace_id: str, rid: str) -> dict:
    sc = model.scenario
    c = model.counters(state)
    s = aggs.sums
    span_s = (s["last_ns"] - s["first_ns"]) / 1e9 if s["first_ns"] is not None else 0.0
    n = s["requests"]
    sim_s = (c["last_done_ns"] - c["first_arrival_ns"]) / 1e9 if c["requests"] else 0.0
    out = {
        "run_id": rid,
        "trace_id": trace_id,
        "scenario": sc.name,
        "scenario_hash": sc.hash,
        "tiercast_version": package_version(),
        "model_version": array_model_version(),
        "dram_mode": "none" if sc.flash or sc.cloud or sc.device else sc.dram.mode,  # all-flash, cloud, device: no cache
        "mechanisms": model.mechanisms(),
        "mode": sc.replay.mode,
        "outstanding": sc.replay.outstanding if sc.replay.mode == "closed" else None,
        "warmup_requests": aggs.warmup_requests,
        "ts_resolution_ns": aggs.ts_resolution_ns,
        "requests_at_one_instant_max": aggs.ts_at_one_instant_max,
        "requests": c["requests"],
        "measured_requests": n,
        "measured_seconds": span_s,
        "iops": n / span_s if span_s > 0 else 0.0,
        "mb_per_s": s["bytes"] / span_s / 1e6 if span_s > 0 else 0.0,
        "latency_mean_ms": s["latency_sum_ns"] / n / 1e6 if n else 0.0,
        "latency_p50_ms": aggs.percentile_ms(0.50),
        "latency_p95_ms": aggs.percentile_ms(0.95),
        "latency_p99_ms": aggs.percentile_ms(0.99),
        "latency_max_ms": s["latency_max_ns"] / 1e6,
        "read_hit_ratio": s["read_hit_pages"] / s["read_pages"] if s["read_pages"] else 0.0,
        "write_hit_ratio": s["write_hit_pages"] / s["write_pages"] if s["write_pages"] else 0.0,
        "flush_mb_per_s": c["flush_bytes"] / sim_s / 1e6 if sim_s > 0 else 0.0,
        "forced_flush_count": c["forced_flush_count"],
        "forced_flush_stall_ms": c["forced_flush_stall_ns"] / 1e6,
        "stall_delay_sum_ms": s["stall_sum_ns"] / 1e6,
        "stalled_requests": s["stalled_requests"],
        "stall_delay_mean_ms": _mean_ms(s["stall_sum_ns"], s["stalled_requests"]),
        "throttle_delay_sum_ms": s["throttle_sum_ns"] / 1e6,
        "throttled_requests": s["throttled_requests"],
        "throttle_delay_mean_ms": _mean_ms(s["throttle_sum_ns"], s["throttled_requests"]),
        "backend_ios_per_request": s["backend_ios"] / n if n else 0.0,
        "backend_iops_per_drive": s["backend_ios"] / sc.n_drives / span_s if span_s > 0 else 0.0,
        "simulated_seconds": sim_s,
        "dram_cache_bytes": 0 if sc.flash or sc.cloud or sc.device else sc.dram.cache_bytes,
        "dram_write_cache_bytes": 0 if sc.flash or sc.cloud or sc.device else sc.dram.write_cache_bytes,
        "dram_high_watermark_pct": sc.dram.flare.high_watermark_pct if sc.dram.mode == "flare" else None,
        "dram_low_watermark_pct": sc.dram.flare.low_watermark_pct if sc.dram.mode == "flare" else None,
        "ssd_cache_bytes": sc.ssd_cache.usable_bytes(sc.drive_classes) if sc.ssd_cache else 0,
        "not_yet_modelled": ",".join(sc.ignored_sections),
    }
    for k, v in c.items():
        out.setdefault(k, v)
    out["raid_groups"] = model.rg_counters(state)
    if aggs.ssd_fine is not None:
        out.update(_ssd_summary(c, aggs))
    if aggs.flash is not None:
        out.update(_flash_summary(aggs))
    if sc.device:  # the calibration's out-of-sample error travels with every run of its scenario
        out["holdout_iops_error_pct"] = sc.device.holdout_iops_error_pct
        out["holdout_latency_error_pct"] = sc.device.holdout_latency_error_pct
        out["calibration"] = {"holdout_error_pct": sc.device.holdout_error_pct}
    return out


def _flash_summary(aggs: _Aggregates) -> dict:
    """The write cliff: when the first write waited for GC (seconds after the first request; None
    if never), host write IOPS and MiB/s before it (writes completed by then) and after it (writes
    issued from it on, over the time from it to the last completion)."""
    c = aggs.cliff
    first, cliff, last = c["first_ns"], c["ns"], c["last_ns"]
    pre_s = ((cliff if cliff is not None else last) - first) / 1e9 if first is not None else 0.0
    post_s = (last - cliff) / 1e9 if cliff is not None else 0.0

    def rate(n: int, s: float) -> float | None:
        return n / s if s > 0 else None

    mib = 1 << 20
    return {
        "flash_time_to_cliff_s": (cliff - first) / 1e9 if cliff is not None else None,
        "flash_cliff_request": c["req"],
        "flash_pre_cliff_write_iops": rate(c["pre_writes"], pre_s),
        "flash_pre_cliff_write_mib_per_s": rate(c["pre_bytes"] / mib, pre_s),
        "flash_post_cliff_write_iops": rate(c["post_writes"], post_s),
        "flash_post_cliff_write_mib_per_s": rate(c["post_bytes"] / mib, post_s),
    }


def _ssd_summary(c: dict, aggs: _Aggregates) -> dict:
    """Warm-up of the SSD cache: when it was first 50 % / 90 % full (seconds after the first
    request; None if never) and its hit ratios over the last 10 % of the simulated time."""
    first = c["first_arrival_ns"]
    out = {f"ssd_time_to_{p}pct_fill_s": (c[f"ssd_t{p}_ns"] - first) / 1e9 if c[f"ssd_t{p}_ns"] >= 0 else None
           for p in (50, 90)}
    since = first + 0.9 * (c["last_done_ns"] - first)
    t = {}
    for agg in (aggs.ssd_fine, aggs.ssd_fine_flush):
        tail = agg.result().filter(pl.col("interval_start_ns") >= since)
        t.update({k: int(tail[k].sum()) for k in agg.sums})
    hits = t["ssd_read_hits"] + t["ssd_through_hits"] + t["ssd_flush_hits"]
    reached = hits + t["ssd_read_misses"] + t["ssd_through_misses"] + t["ssd_flush_misses"]
    reads = t["ssd_read_hits"] + t["ssd_read_misses"]
    out["ssd_hit_ratio_last10pct"] = hits / reached if reached else None
    out["ssd_read_hit_ratio_last10pct"] = t["ssd_read_hits"] / reads if reads else None
    return out


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """``df`` to ``path`` atomically (a temporary file renamed)."""
    files.write_parquet(df, path)


def run_paths(data_dir: str | Path, rid: str) -> dict[str, Path]:
    root = Path(data_dir) / "results"
    return {
        "summary": root / "array_runs" / rid / "summary.parquet",
        "summary_json": root / "array_runs" / rid / "summary.json",
        "volume_intervals": root / "array_volume_intervals" / f"{rid}.parquet",
        "rg_intervals": root / "array_rg_intervals" / f"{rid}.parquet",
        **{name: root / f"array_{name}" / f"{rid}.parquet"
           for name in (*tier_tables.TIER_TABLES, *(t for r in RESULTS.values() for t in r.TABLES), "latency_hist")},
        "run": root / "array_runs" / rid / "run.json",
    }


def _run_record(scenario: Scenario, started_s: float, finished_s: float) -> dict:
    """When a run ran (for the warehouse's ``runs``) and its scenario's TOML text (when its source
    file still holds exactly that scenario)."""
    src = Path(scenario.source) if scenario.source else None
    text = src.read_text() if src is not None and src.is_file() else None
    if text is not None and loads(text, str(src)).hash != scenario.hash:
        text = None  # changed by --set, or the file was edited since
    started, finished = (datetime.fromtimestamp(s, tz=UTC).isoformat() for s in (started_s, finished_s))
    return {"started_at": started, "finished_at": finished, "wall_seconds": finished_s - started_s,
            "scenario_toml": text, "scenario_source": str(src) if src else None}


def trace_is_timed(trace: TraceRef) -> bool:
    """Whether the trace's requests carry more than one timestamp (manifest, per volume)."""
    vols = [v for v in (trace.manifest.get("volumes") or {}).values() if v.get("first_ts_ns") is not None]
    if not vols:
        return True  # a manifest without per-volume times: trust the trace
    return max(v["last_ts_ns"] for v in vols) > min(v["first_ts_ns"] for v in vols)


def resolve_mode(scenario: Scenario, trace: TraceRef) -> tuple[Scenario, list[dict]]:
    """The replay mode a run of ``trace`` uses: the scenario's (open, the presets' default: the
    trace's own timing; closed at ``outstanding``), except that a trace without timestamps cannot
    be replayed in its own time and goes closed loop at the scenario's ``outstanding``, with a
    caveat saying so. Pools without a ``span_fraction`` take the trace's footprint."""
    scenario = scenario.with_footprint(trace.max_end_bytes())
    if scenario.replay.mode == "open" and not trace_is_timed(trace):
        n = scenario.replay.outstanding
        return scenario.with_replay(mode="closed"), [physics.finding(
            "untimed_trace", physics.CAVEAT, f"the trace has no timestamps: replayed closed loop at {n} outstanding "
                                             "(--outstanding N to choose)")]
    return scenario, []


def replay_trace(trace: TraceRef, data_dir: str | Path | None, scenario: Scenario, *,
                 batch_rows: int = ARRAY_BATCH_ROWS, progress: Progress | None = None,
                 force: bool = False) -> dict:
    """Replay an ingested trace through ``scenario`` (its mode resolved by :func:`resolve_mode`),
    write the outputs (unless ``data_dir`` is None) and return the run summary. A finished run
    with the same run id is returned as is."""
    scenario, notes = resolve_mode(scenario, trace)
    rid = run_id(trace.trace_id, scenario, trace.data_version)
    paths = run_paths(data_dir, rid) if data_dir is not None else None
    if paths and not force and paths["summary_json"].is_file():
        summary = json.loads(paths["summary_json"].read_text())
        summary["already_done"] = True
        return summary
    started = time.time()
    # the trace's page stream at the cache's page size when one is ready (written on a first pass)
    res = replay_with_stream(trace, scenario.dram.page_bytes, lambda segments: replay_segments(
        segments, lambda: segments.volumes, scenario, trace.trace_id, total=segments.total, progress=progress,
        data_version=trace.data_version), batch_rows)
    summary = res.summary
    summary["warnings"] = notes + summary["warnings"]
    if paths:
        # intervals first, summary last: a summary on disk means the run is complete
        write_parquet(res.volume_intervals, paths["volume_intervals"])
        write_parquet(res.rg_intervals, paths["rg_intervals"])
        for name, table in res.tables.items():
            write_parquet(table, paths[name])
        paths["run"].parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(paths["run"], _run_record(scenario, started, time.time()))
        write_parquet(pl.DataFrame([summary], schema_overrides={"warnings": physics.WARNINGS_DTYPE}), paths["summary"])
        summary["results_dir"] = str(paths["summary"].parent)
        write_json_atomic(paths["summary_json"], summary)
    summary["already_done"] = False
    return summary


def sweep_frames(frames_factory: Callable[[], Iterable[pl.DataFrame]], scenario: Scenario,
                 outstanding: list[int], trace_id: str = "<frames>", total: int | None = None,
                 max_requests: int | None = None, warmup_pct: float | None = None,
                 progress: Progress | None = None, data_version: str = "") -> list[dict]:
    """Closed-loop replays at each outstanding-I/O count: the trace supplies the address/op
    sequence, the model the timing. Returns one row per count: outstanding, iops, mb_per_s,
    latency_mean_ms, latency_p95_ms (and more), measured after the warm-up, and each point's physics
    checks (``warnings``)."""
    if not outstanding or not all(1 <= n <= MAX_OUTSTANDING for n in outstanding):
        raise ValueError(f"outstanding I/O counts must be from 1 to {MAX_OUTSTANDING}, got {outstanding}")
    if max_requests is not None and max_requests < 1:
        raise ValueError(f"max_requests must be >= 1, got {max_requests}")
    rows = []
    n_total = min(total, max_requests) if (total and max_requests) else (max_requests or total)
    for k, n_out in enumerate(outstanding):
        changes = {"mode": "closed", "outstanding": int(n_out)}
        if warmup_pct is not None:
            changes["warmup_pct"] = float(warmup_pct)
        sc = scenario.with_replay(**changes)

        def step(done: int, _total: int, k=k) -> None:
            if progress:
                progress(k * (n_total or 0) + done, len(outstanding) * (n_total or done))

        res = replay_frames(frames_factory(), sc, trace_id, total=total, max_requests=max_requests,
                            progress=step, data_version=data_version)
        s = res.summary
        rows.append({
            "outstanding": int(n_out), "iops": s["iops"], "mb_per_s": s["mb_per_s"],
            "latency_mean_ms": s["latency_mean_ms"], "latency_p95_ms": s["latency_p95_ms"],
            "latency_p99_ms": s["latency_p99_ms"], "read_hit_ratio": s["read_hit_ratio"],
            "write_hit_ratio": s["write_hit_ratio"], "throttle_delay_sum_ms": s["throttle_delay_sum_ms"],
            "throttled_requests": s["throttled_requests"], "throttle_delay_mean_ms": s["throttle_delay_mean_ms"],
            "forced_flush_count": s["forced_flush_count"], "backend_ios_per_request": s["backend_ios_per_request"],
            "backend_iops_per_drive": s["backend_iops_per_drive"], "simulated_seconds": s["simulated_seconds"],
            "measured_requests": s["measured_requests"], "run_id": s["run_id"], "model_version": s["model_version"],
            "warnings": s["warnings"],
        })
    return rows


def _sweep_rows(trace: TraceRef, scenario: Scenario, outstanding: list[int], max_requests: int | None,
                warmup_pct: float | None, batch_rows: int, progress: Progress | None = None) -> list[dict]:
    """``sweep_frames`` over an ingested trace (a worker process's task with ``progress`` None)."""
    return sweep_frames(lambda: read_frames(trace, batch_rows), scenario, outstanding, trace.trace_id,
                        total=total_rows(trace), max_requests=max_requests, warmup_pct=warmup_pct,
                        progress=progress, data_version=trace.data_version)


def sweep_trace(trace: TraceRef, data_dir: str | Path | None, scenario: Scenario, outstanding: list[int], *,
                max_requests: int | None = None, warmup_pct: float | None = 20.0,
                batch_rows: int = ARRAY_BATCH_ROWS, progress: Progress | None = None, jobs: int = 1) -> list[dict]:
    """``sweep_frames`` over an ingested trace; writes ``sweep_path(data_dir, sweep_id)`` (unless
    ``data_dir`` is None). Each row carries its ``sweep_id``: hash of (trace, scenario, counts,
    request limit, warm-up, model version). ``jobs`` > 1: the queue depths replay in that many
    worker processes (``pipelines.workers``; same rows, progress counted in queue depths)."""
    scenario = scenario.with_footprint(trace.max_end_bytes())
    if jobs > 1 and len(outstanding) > 1:
        parts = run_all(_sweep_rows, [(trace, scenario, [n], max_requests, warmup_pct, batch_rows) for n in outstanding],
                        jobs, progress)
        rows = [r for part in parts for r in part]
    else:
        rows = _sweep_rows(trace, scenario, outstanding, max_requests, warmup_pct, batch_rows, progress)
    blob = json.dumps([trace.trace_id, trace.data_version, scenario.hash, outstanding, max_requests, warmup_pct, array_model_version()])
    sid = hashlib.sha256(blob.encode()).hexdigest()[:16]
    for r in rows:
        r["sweep_id"] = sid
    if data_dir is not None and rows:
        df = pl.DataFrame(rows, schema_overrides={"warnings": physics.WARNINGS_DTYPE}).with_columns(
            pl.lit(trace.trace_id).alias("trace_id"), pl.lit(scenario.name).alias("scenario"))
        write_parquet(df, sweep_path(data_dir, sid))
    return rows


def sweep_path(data_dir: str | Path, sweep_id: str) -> Path:
    """Where ``sweep_trace`` writes the rows of sweep ``sweep_id``."""
    return Path(data_dir) / "results" / "array_sweeps" / f"{sweep_id}.parquet"
