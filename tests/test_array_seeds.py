"""The seed articles' numbers, reproduced by the presets (closed-loop IOMeter-style workloads).

Seed 000: 15 SAS 10k drives (planning 150 IOPS each) in three RAID 5 4+1 groups, IOMeter's
database pattern (8 KB, 67 % read, 100 % random) over a 15 GB test file, ~4 GB of SP cache:
2250 = X * 0.67 + 4 * X * 0.33 gives X ~ 1130 host IOPS with the drives at their planning rate;
the article saw 1.5-2x that at peak and response times above 10 ms from 24 streams on; a 2 GB
file fits in the cache and runs far faster.

Seed 002: one RAID 5 4+1 group of 10k drives, 1 worker with 16 outstanding 100 % random 8 KB
unaligned writes: FLARE ~513 IOPS, MCx ~900.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from pipelines.replay import replay_frames, sweep_frames
from replay.array import RECORD_KINDS
from replay.backend import planning_host_iops
from replay.scenario import load
from traces import synth

PLANNING = planning_host_iops(150, 15, 0.67, 4)  # 1130.65


@pytest.fixture(scope="module")
def seed000_curve():
    df = synth.generate(synth.pattern("database", requests=1_000_000, region_bytes=15 << 30, seed=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the preset carries FAST Cache (off): not yet modelled
        rows = sweep_frames(lambda: [df], load("vnx5400"), [3, 6, 12, 24, 96, 192], "seed000",
                            total=df.height, warmup_pct=50)
    return {r["outstanding"]: r for r in rows}


def test_seed000_planning_rate_gives_the_planning_host_iops(seed000_curve):
    """Interpolate the queue depth where each drive does 150 back-end IOPS; host IOPS there is
    within 15 % of 2250 / (0.67 + 4 x 0.33)."""
    ns = sorted(seed000_curve)
    per_drive = [seed000_curve[n]["backend_iops_per_drive"] for n in ns]
    iops = [seed000_curve[n]["iops"] for n in ns]
    assert per_drive[0] < 150 < max(per_drive)
    k = next(i for i in range(1, len(ns)) if per_drive[i] >= 150)
    f = (150 - per_drive[k - 1]) / (per_drive[k] - per_drive[k - 1])
    x = iops[k - 1] + f * (iops[k] - iops[k - 1])
    assert abs(x / PLANNING - 1) <= 0.15, (x, list(zip(ns, per_drive, iops, strict=True)))
    # the arithmetic behind it: back-end I/Os per host I/O = 0.67 x read misses + 4 x 0.33 x
    # writes not coalesced, a little less where two dirty pages of a 64 KB unit are adjacent and
    # go to disk in one read-modify-write
    r = seed000_curve[ns[k]]
    expect = 0.67 * (1 - r["read_hit_ratio"]) + 4 * 0.33 * (1 - r["write_hit_ratio"])
    assert 0.95 * expect <= r["backend_ios_per_request"] <= expect


def test_seed000_deep_queues_give_one_and_a_half_to_two_times_and_slow_responses(seed000_curve):
    for n in (96, 192):
        assert 1.5 * PLANNING <= seed000_curve[n]["iops"] <= 2.0 * PLANNING, (n, seed000_curve[n]["iops"])
    for n in (24, 96, 192):
        assert seed000_curve[n]["latency_mean_ms"] > 10.0, (n, seed000_curve[n]["latency_mean_ms"])
    # Little's law ties the two: N = IOPS x response time
    r = seed000_curve[192]
    assert r["iops"] * r["latency_mean_ms"] / 1000 == pytest.approx(192, rel=0.02)


def test_seed000_a_2gb_hot_set_runs_from_cache():
    # 1.6 M requests over 262,144 pages: after the first 75 % (the warm-up) 99 % of them are cached
    df = synth.generate(synth.pattern("database", requests=1_600_000, region_bytes=2 << 30, seed=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sweep_frames(lambda: [df], load("vnx5400"), [192], "seed000-2g", total=df.height, warmup_pct=75)[0]
    assert r["read_hit_ratio"] > 0.98
    # writes are acknowledged from the cache; most land on a page still dirty (MCx flushes a page
    # at most 120 s after it was dirtied, and each page is rewritten every ~30 s here)
    assert r["write_hit_ratio"] > 0.6 and r["throttle_delay_sum_ms"] / r["measured_requests"] < 0.1
    assert r["iops"] > 10 * PLANNING  # controller-bound, not spindle-bound
    assert r["latency_mean_ms"] < 10


def test_seed002_mcx_sustains_about_900_where_flare_gets_513():
    """Random 8 KB writes at 512-byte alignment over the whole LUN, 16 outstanding. Sustained
    FLARE IOPS are taken over whole forced-flush cycles (from the second forced flush to the
    last), MCx after its cache has filled (second half of the run)."""
    df = synth.generate(synth.pattern("randwrite-8k", requests=1_200_000, region_bytes=1 << 40, align_bytes=512,
                                      seed=1))
    sustained = {}
    for name in ("vnx1-flare", "vnx2-mcx"):
        sc = load(name).with_replay(mode="closed", outstanding=16, interval_ns=10**9)
        res = replay_frames([df], sc, name)
        iv = res.volume_intervals.sort("interval_start_ns")
        t = iv["interval_start_ns"].to_numpy()
        n = iv["requests"].to_numpy()
        if name == "vnx1-flare":
            stalls = res.rg_intervals.filter(pl.col("forced_flushes") > 0)["interval_start_ns"].unique().sort()
            assert res.summary["forced_flush_count"] >= 4  # it lives in forced-flush cycles
            lo, hi = stalls[1], stalls[-1]
        else:
            assert res.summary["forced_flush_count"] == 0 and res.summary["throttle_delay_sum_ms"] > 0
            lo, hi = t[len(t) // 2], t[-1]
        sel = (t >= lo) & (t < hi)
        sustained[name] = n[sel].sum() / (sel.sum())  # requests per 1 s interval
    ratio = sustained["vnx2-mcx"] / sustained["vnx1-flare"]
    assert abs(ratio / (900 / 513) - 1) <= 0.15, sustained
    assert RECORD_KINDS.index("forced_flush") == 3
    assert np.isfinite(ratio)
