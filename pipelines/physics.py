"""Physics checks on every replay: answers no storage engineer would believe, caught before anyone
acts on them.

A replay can pass every unit test and still predict seconds of latency for a RAID group that is
idle (issue 25: MCx throttling on the CloudPhysics trace). These checks read only a run's outputs
(summary, per-interval tables, forced-flush spans) and the scenario, so they hold the model to
physics it does not share code with. Each finding is a dict ``{"check", "severity", "message"}``:

* ``model_error``: the run contradicts physics or the model's own rules. The test suite fails on
  any of them (every preset replays every real trace in tests/test_physics.py); the product warns.
* ``caveat``: the answer is right for what was replayed, but the input or the question limits it
  (coarse timestamps, a FAST VP window that never opened). Always shown, never an error.

The checks:

``latency_vs_utilisation``
    Per RAID group and interval: a mean response time (forced-flush stalls aside, they are
    array-wide and checked below) above ``LATENCY_FACTOR`` x the group's service time needs a
    server that was busy for at least the mean wait: the work booked on the group's drives (all of
    them together: no single drive did more) or on the storage processor, in that interval and
    the ones before it that the wait reaches back into (work is counted where it was issued), must
    add up to the wait. A burst shorter than the interval can queue on drives that are idle the
    rest of it (the CloudPhysics trace: 80 ms waits behind eighty 64 KiB reads, 15 % busy over
    the second), so the interval's mean utilisation alone proves nothing.
``throttle_trigger`` / ``stall_trigger`` / ``gc_trigger``
    MCx: a throttled write only in or right after an interval with a throttled adaptation tick (or
    while it waited for room in a pool 100 % dirty), and every throttled tick above its trigger
    (seed 002: pages past the pre-cleaning age, flush window full, drain time over
    ``throttle_drain_ms``). FLARE: a stalled request only while a forced flush is in progress.
    All-flash: a write waits for GC only when free space is exhausted.
``throttle_vs_utilisation``
    MCx: writes a throttled group held back for at least an interval on average must find its
    drives busy (``UTILISATION_MAX``) over the time they waited: throttling is for a group that
    flushes at its maximum rate, and a held-back write that sees idle drives is a delay nothing
    served (a shorter hold cannot be judged at the interval's resolution).
``latency_vs_utilisation`` on a cloud volume
    The service time is the volume type's p99 and a request's wait for tokens is left out (it is
    queueing at a limit that is busy by definition).
``token_buckets``
    A cloud volume: no interval grants more accounted I/Os than its peak IOPS allow, and its I/O
    credit balance stays within 0 and the bucket's size.
``littles_law``
    Closed loop: outstanding I/Os = IOPS x mean response time (N = X R), within ``LITTLE_TOLERANCE``
    plus the share of the run the final drain can take (the last N requests complete unreplaced).
``mass_balance``
    DRAM cache: host page writes = coalesced (overwritten in cache) + written through + flushed +
    still dirty + discarded by trims. Exact.
``coarse_timestamps`` (caveat)
    Open loop on a trace whose timestamps step by more than ``COARSE_TS_NS`` or put more than
    ``INSTANT_REQUESTS_MAX`` requests at one instant: bursts are artefacts of the clock, and the
    answer can change tenfold against the fine-grained trace.
``fast_vp_window`` (caveat)
    FAST VP relocates in a scheduled window; a run that never reached one never relocated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from replay.scenario import Scenario

MODEL_ERROR = "model_error"
CAVEAT = "caveat"
#: latency_vs_utilisation: a mean latency above 10x the service time is judged
LATENCY_FACTOR = 10.0
#: throttle_vs_utilisation: a group holding writes back has drives at least this busy
UTILISATION_MAX = 0.5
#: ... judged only on intervals with at least this many requests of the group
MIN_REQUESTS = 10
#: littles_law: relative tolerance beyond the drain share of the run
LITTLE_TOLERANCE = 0.05
#: coarse_timestamps
COARSE_TS_NS = 1_000_000
INSTANT_REQUESTS_MAX = 100
#: a GC wait needs free space below this share of the space GC can free
GC_FREE_PCT_MAX = 1.0


#: the findings of a run as a column (summary.parquet, the warehouse's run_summary.warnings)
WARNINGS_DTYPE = pl.List(pl.Struct({"check": pl.String, "severity": pl.String, "message": pl.String}))


def finding(check: str, severity: str, message: str) -> dict:
    return {"check": check, "severity": severity, "message": message}


def model_errors(findings: Sequence[dict]) -> list[dict]:
    return [f for f in findings if f["severity"] == MODEL_ERROR]


def nominal_service_ms(sc: Scenario, drive_class: str) -> float:
    """One page-sized random operation on a drive of the class, at queue depth 1, over its whole
    stroke (the back end's drive record: seek curve, half a rotation, the zones' mean rate, the
    command overhead)."""
    dc = sc.drive_classes[drive_class]
    if dc.kind == "hdd":
        import numpy as np

        from replay.mech.backend import kernel as be
        from replay.mech.backend import queueing as qk

        x = np.zeros(1, qk.DRIVE)[0]
        be.hdd_record(x, dc, 1.0)
        return (x["pos_rand_ns"] + sc.dram.page_bytes * x["xfer_ns_per_byte"] + x["overhead_ns"]) / 1e6
    return dc.latency_ms + sc.dram.page_bytes / (dc.transfer_mb_per_s * 1e6) * 1e3


def _sp_utilisation(sc: Scenario, vol: pl.DataFrame, interval_s: float) -> dict[int, float]:
    """The storage processor's busy share per interval: per-I/O overhead plus bytes at its rate."""
    c = sc.controller
    per = vol.group_by("interval_start_ns").agg(pl.col("requests").sum(), pl.col("bytes").sum())
    return {int(t): (n * c.overhead_us * 1e-6 + b / (c.bandwidth_mb_per_s * 1e6)) / interval_s
            for t, n, b in per.select("interval_start_ns", "requests", "bytes").iter_rows()}


def latency_vs_utilisation(sc: Scenario, rg: pl.DataFrame, vol: pl.DataFrame, interval_ns: int) -> list[dict]:
    if rg.height == 0 or "utilization" not in rg.columns or sc.device:  # a device's queue is its own: no drives
        return []
    interval_ms = interval_ns / 1e6
    sp = _sp_utilisation(sc, vol, interval_ns / 1e9) if not sc.cloud else {}
    if sc.cloud:  # a cloud volume: its service time's p99; waiting for tokens is queueing at a busy limit
        c = sc.cloud
        nominal = {g.name: max(c.read_latency_p99_ms, c.write_latency_p99_ms) for g in sc.raid_groups}
    else:
        nominal = {g.name: nominal_service_ms(sc, g.drive_class) for g in sc.raid_groups}
    width = {g.name: g.width for g in sc.raid_groups}
    busy_ms = {(r, t): (u or 0.0) * width.get(r, 1) * interval_ms
               for r, t, u in rg.select("rg", "interval_start_ns", "utilization").iter_rows()}
    bad = []
    for r in rg.iter_rows(named=True):
        name, t, n = r["rg"], r["interval_start_ns"], r["requests"] or 0
        if name not in nominal or n < MIN_REQUESTS or r["latency_mean_ms"] is None:
            continue
        ios = (r["backend_read_ios"] or 0) + (r["backend_write_ios"] or 0)
        busy_ns = (r["backend_read_busy_ns"] or 0) + (r["backend_write_busy_ns"] or 0)
        service = max(busy_ns / ios / 1e6 if ios else 0.0, nominal[name])
        latency = r["latency_mean_ms"] - (r["stall_delay_sum_ms"] or 0.0) / n
        if sc.cloud:
            latency -= (r.get("throttle_delay_sum_ms") or 0.0) / n
        if latency <= LATENCY_FACTOR * service:
            continue
        wait = latency - service
        back = [t - k * interval_ns for k in range(math.ceil(wait / interval_ms) + 1)]
        drives = sum(busy_ms.get((name, b), 0.0) for b in back)
        processor = sum(sp.get(b, 0.0) for b in back) * interval_ms
        if max(drives, processor) < wait:
            bad.append((t, name, latency, service, max(drives, processor)))
    if not bad:
        return []
    t, name, latency, service, busy = max(bad, key=lambda b: b[2])
    return [finding("latency_vs_utilisation", MODEL_ERROR,
                    f"{len(bad)} interval(s) with a mean response time over {LATENCY_FACTOR:g}x the service time "
                    f"and a wait longer than all the work its drives and storage processor had; worst: RAID group "
                    f"{name} at {t / 1e9:,.1f} s, {latency:,.1f} ms against {service:.2f} ms service, "
                    f"{busy:,.1f} ms of work")]


def throttle_trigger(sc: Scenario, rg: pl.DataFrame, interval_ns: int) -> list[dict]:
    """MCx: throttled requests only next to throttled ticks (or cache-full waits), and each tick's
    weakest trigger above the thresholds the kernel applies."""
    if sc.flash or sc.cloud or sc.device or sc.dram.mode != "mcx" or "throttle_ticks" not in rg.columns:
        return []
    m = sc.dram.mcx
    ticks = {(r, t) for r, t, k in rg.select("rg", "interval_start_ns", "throttle_ticks").iter_rows() if k}
    out = []
    unexplained = rg.filter(pl.col("throttled_requests") > 0).filter(
        pl.col("cache_full_waits") == 0).select("rg", "interval_start_ns", "throttled_requests")
    missing = [(r, t, n) for r, t, n in unexplained.iter_rows()
               if (r, t) not in ticks and (r, t - interval_ns) not in ticks]
    if missing:
        r, t, n = missing[0]
        out.append(finding("throttle_trigger", MODEL_ERROR,
                           f"{len(missing)} interval(s) with throttled writes but no throttled adaptation tick or "
                           f"cache-full wait; first: RAID group {r} at {t / 1e9:,.1f} s ({n} writes)"))
    thr = rg.filter(pl.col("throttle_ticks") > 0)
    window_ms = m.throttle_saturation_pct / 100 * m.adapt_interval_ms
    weak = thr.filter((pl.col("throttle_past_age_min_ms") < 0) | (pl.col("throttle_window_full_min_ms") < window_ms - 1e-6)
                      | (pl.col("throttle_drain_min_ms") <= m.throttle_drain_ms))
    if weak.height:
        w = weak.row(0, named=True)
        out.append(finding("throttle_trigger", MODEL_ERROR,
                           f"{weak.height} interval(s) throttled below the trigger; first: RAID group {w['rg']} at "
                           f"{w['interval_start_ns'] / 1e9:,.1f} s: oldest page {w['throttle_past_age_min_ms']:.0f} ms "
                           f"past the pre-cleaning age, flush window full {w['throttle_window_full_min_ms']:.0f} of "
                           f"{m.adapt_interval_ms:g} ms, drain {w['throttle_drain_min_ms']:.0f} ms"))
    return out


def throttle_vs_utilisation(sc: Scenario, rg: pl.DataFrame, interval_ns: int) -> list[dict]:
    """MCx: the drives of a group that holds writes back are busy while they wait."""
    if sc.flash or sc.cloud or sc.dram.mode != "mcx" or "throttle_delay_sum_ms" not in rg.columns:
        return []
    util = {(r, t): u or 0.0 for r, t, u in rg.select("rg", "interval_start_ns", "utilization").iter_rows()}
    bad = []
    held = rg.filter(pl.col("throttled_requests") > 0).select("rg", "interval_start_ns", "throttled_requests",
                                                               "throttle_delay_sum_ms")
    for r, t, n, delay_ms in held.iter_rows():
        mean_ns = (delay_ms or 0.0) / n * 1e6
        if mean_ns < interval_ns:
            continue
        spans = math.ceil(mean_ns / interval_ns)
        busy = sum(util.get((r, t + k * interval_ns), 0.0) for k in range(spans + 1)) / (spans + 1)
        if busy < UTILISATION_MAX:
            bad.append((r, t, mean_ns / 1e6, busy))
    if not bad:
        return []
    r, t, mean_ms, busy = max(bad, key=lambda b: b[2])
    return [finding("throttle_vs_utilisation", MODEL_ERROR,
                    f"{len(bad)} interval(s) whose throttled writes were held back while the RAID group's drives "
                    f"were under {UTILISATION_MAX:.0%} busy; worst: {r} at {t / 1e9:,.1f} s, writes held "
                    f"{mean_ms:,.0f} ms on average, drives {busy:.0%} busy over that time")]


def union_spans(spans) -> tuple[np.ndarray, np.ndarray]:
    """The union of closed spans [start, end] (ns) as disjoint spans sorted by start: (starts, ends).
    ``spans``: (start, end) pairs, or an (n, 2) array. A long FLARE run logs millions of forced
    flushes; their union stays as small as the time they cover allows."""
    a = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if not len(a):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    a = a[np.argsort(a[:, 0], kind="stable")]
    reach = np.maximum.accumulate(a[:, 1])
    first = np.ones(len(a), dtype=bool)
    first[1:] = a[1:, 0] > reach[:-1]  # a span that starts after all before it end opens a new one
    last = np.append(np.flatnonzero(first)[1:] - 1, len(a) - 1)
    return a[first, 0], reach[last]


def stall_trigger(rg: pl.DataFrame, interval_ns: int, stall_spans) -> list[dict]:
    """FLARE: every interval with stalled requests overlaps a forced flush."""
    if "stalled_requests" not in rg.columns:
        return []
    stalled = rg.filter(pl.col("stalled_requests") > 0)["interval_start_ns"].unique().sort().to_numpy()
    starts, ends = union_spans(stall_spans)
    # the spans starting before each interval ends; the last of them ends latest (disjoint, sorted)
    before = np.searchsorted(starts, stalled + interval_ns, side="left")
    covered = (before > 0) & (ends[np.maximum(before - 1, 0)] >= stalled) if len(ends) else before > 0
    missing = stalled[~covered].tolist()
    if not missing:
        return []
    return [finding("stall_trigger", MODEL_ERROR, f"{len(missing)} interval(s) with stalled requests and no forced "
                                                  f"flush in progress; first at {missing[0] / 1e9:,.1f} s")]


def gc_trigger(vol: pl.DataFrame) -> list[dict]:
    """All-flash: writes wait for GC only when free space is exhausted."""
    if "flash_gc_waits" not in vol.columns:
        return []
    early = vol.filter((pl.col("flash_gc_waits") > 0) & (pl.col("flash_free_pct") > GC_FREE_PCT_MAX))
    if early.height == 0:
        return []
    r = early.row(0, named=True)
    return [finding("gc_trigger", MODEL_ERROR, f"{early.height} interval(s) with writes waiting for GC while "
                                               f"{r['flash_free_pct']:.1f} % was free; first at "
                                               f"{r['interval_start_ns'] / 1e9:,.1f} s")]


def token_buckets(sc: Scenario, cloud: pl.DataFrame | None, interval_ns: int) -> list[dict]:
    """A cloud volume: no interval grants more accounted I/Os than the volume's peak IOPS allow
    (plus its rate window's and one I/O at the interval's edge), and credits stay within 0 and the
    bucket's size."""
    if not sc.cloud or cloud is None or cloud.height == 0:
        return []
    lim = sc.cloud.limits
    sec = interval_ns / 1e9
    peak = max(lim.iops, lim.burst_iops)
    window = sc.cloud.rate_window_ms / 1e3  # the peak rate's tolerance: that much may pass back to back
    over = cloud.filter(pl.col("accounted_ios") > peak * (sec + window) * (1 + 1e-9) + 1)
    out = []
    if over.height:
        r = over.sort("accounted_ios").row(-1, named=True)
        out.append(finding("token_buckets", MODEL_ERROR, f"{over.height} interval(s) granted more I/Os than the volume's "
                                                         f"{peak:,.0f} IOPS allow; worst at {r['interval_start_ns'] / 1e9:,.1f} s: "
                                                         f"{r['accounted_ios']:,} in {sec:g} s"))
    cap = lim.credit_ios
    bad = cloud.filter((pl.col("credit_ios_min") < 0) | (pl.col("credit_ios_max") > cap + 1))
    if bad.height:
        out.append(finding("token_buckets", MODEL_ERROR, f"{bad.height} interval(s) with an I/O credit balance outside "
                                                         f"0..{cap:,.0f}"))
    return out


def littles_law(summary: dict) -> list[dict]:
    n = summary.get("outstanding")
    x, r_ms, reqs = summary.get("iops") or 0.0, summary.get("latency_mean_ms") or 0.0, summary.get("measured_requests")
    if summary.get("mode") != "closed" or not n or not x or not reqs:
        return []
    in_flight = x * r_ms / 1e3
    tolerance = LITTLE_TOLERANCE + min(1.0, n / reqs)
    if abs(in_flight / n - 1) <= tolerance:
        return []
    return [finding("littles_law", MODEL_ERROR, f"closed loop at {n} outstanding, but IOPS x mean response time = "
                                                f"{x:,.0f} x {r_ms:.3f} ms = {in_flight:,.1f} I/Os in flight")]


def mass_balance(summary: dict) -> list[dict]:
    if summary.get("dram_mode") == "none" or "write_through_pages" not in summary:
        return []
    host = summary["write_pages"]
    parts = {"coalesced": summary["write_hit_pages"], "written through": summary["write_through_pages"],
             "flushed": summary["flush_pages"], "still dirty": summary["dirty_pages"],
             "trimmed": summary["trimmed_dirty_pages"], "written aside": summary.get("write_aside_pages", 0),
             "superseded by write-aside": summary.get("write_aside_superseded_pages", 0)}
    if host == sum(parts.values()):
        return []
    return [finding("mass_balance", MODEL_ERROR, f"host page writes {host:,} != " + " + ".join(
        f"{k} {v:,}" for k, v in parts.items()) + f" = {sum(parts.values()):,}")]


def coarse_timestamps(summary: dict) -> list[dict]:
    if summary.get("mode") != "open":
        return []
    step, instant = summary.get("ts_resolution_ns") or 0, summary.get("requests_at_one_instant_max") or 0
    why = []
    if step > COARSE_TS_NS:
        why.append(f"its timestamps step by {step / 1e6:,.0f} ms")
    if instant > INSTANT_REQUESTS_MAX:
        why.append(f"up to {instant:,} requests arrive at one instant")
    if not why:
        return []
    return [finding("coarse_timestamps", CAVEAT, "trace timing: " + " and ".join(why) + "; bursts may be artefacts of "
                                                 "the clock and the answer can differ widely from a finer-grained "
                                                 "trace (replay closed loop with --outstanding N to compare)")]


def fast_vp_window(sc: Scenario, summary: dict) -> list[dict]:
    tg = sc.tiering
    if tg is None or summary.get("tier_windows", 1):
        return []
    span_h = (summary.get("simulated_seconds") or 0.0) / 3600
    tiers = summary.get("tiers") or []
    flash = next((t["request_share"] for t in tiers if t["tier"] == "extreme_performance"), None)
    share = f"; {flash:.0%} of the I/O reached flash" if flash is not None and math.isfinite(flash) else ""
    return [finding("fast_vp_window", CAVEAT, f"FAST VP relocates in a window from {tg.window_start_h:g} h after the "
                                              f"trace's start; the run lasted {span_h:,.1f} h and no window opened, so "
                                              f"no slice moved{share} (replay a longer trace, or set "
                                              "tiering.window_start_h)")]


def check(sc: Scenario, summary: dict, vol: pl.DataFrame, rg: pl.DataFrame, interval_ns: int,
          stall_spans=(), cloud: pl.DataFrame | None = None) -> list[dict]:
    """Every check on one finished run; the findings in the order of the module docstring
    (``cloud``: a cloud volume's ``cloud_intervals`` table)."""
    return [*latency_vs_utilisation(sc, rg, vol, interval_ns), *throttle_trigger(sc, rg, interval_ns),
            *throttle_vs_utilisation(sc, rg, interval_ns),
            *stall_trigger(rg, interval_ns, stall_spans), *gc_trigger(vol), *token_buckets(sc, cloud, interval_ns),
            *littles_law(summary),
            *mass_balance(summary), *coarse_timestamps(summary), *fast_vp_window(sc, summary)]
