"""Physics checks (pipelines/physics.py): each check on hand-made outputs that break it and that
keep it, then every preset on every real trace in ../shared/data/traces with the trace's own
timing, where no check may find a model error, and the CloudPhysics answers must be believable
(issue 25: the MCx presets used to predict seconds of latency there at 16 IOPS).
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from pipelines import physics
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from pipelines.replay import replay_trace
from replay.scenario import load, preset_names
from tests.conftest import shared_path

TRACES = {
    "cloudphysics": ("traces", "vscsi", "cloudPhysicsIO.vscsi"),
    "tpcc": ("traces", "disksim", "tpcc-small.trace"),
    "blkparse": ("traces", "blkparse", "mbpar_blktrace_first20000.txt"),
}
SEC = 10**9


def checks(findings: list[dict]) -> list[str]:
    return [f["check"] for f in findings]


def rg_row(**over) -> dict:
    """One RAID group interval of a quiet group: 100 requests at 0.5 ms, 8 ms drive operations, its
    drives 0.2 % busy (600 ms of work on a 5-drive group in a minute)."""
    row = {"interval_start_ns": 0, "rg": "rg0", "requests": 100, "latency_mean_ms": 0.5, "stall_delay_sum_ms": 0.0,
           "throttled_requests": 0, "stalled_requests": 0, "utilization": 0.002, "backend_read_ios": 10,
           "backend_write_ios": 0, "backend_read_busy_ns": 80_000_000, "backend_write_busy_ns": 0,
           "throttle_ticks": 0, "cache_full_waits": 0, "throttle_past_age_min_ms": None,
           "throttle_window_full_min_ms": None, "throttle_drain_min_ms": None}
    return {**row, **over}


def vol_frame(requests: int = 100, start_ns: int = 0) -> pl.DataFrame:
    return pl.DataFrame({"interval_start_ns": [start_ns], "requests": [requests], "bytes": [requests * 8192]})


# ---- each check, broken and kept --------------------------------------------------------------
def test_latency_far_above_service_on_idle_drives_is_a_model_error():
    sc = load("vnx2-mcx")
    idle = pl.DataFrame([rg_row(latency_mean_ms=4000.0)])
    found = physics.latency_vs_utilisation(sc, idle, vol_frame(), 60 * SEC)
    assert checks(found) == ["latency_vs_utilisation"] and found[0]["severity"] == physics.MODEL_ERROR
    assert "rg0" in found[0]["message"] and "4,000.0 ms against 8.00 ms service, 600.0 ms of work" in found[0]["message"]
    # the same latency on busy drives is queueing, not an error
    assert physics.latency_vs_utilisation(sc, pl.DataFrame([rg_row(latency_mean_ms=4000.0, utilization=0.9)]),
                                          vol_frame(), 60 * SEC) == []
    # ... and so is a burst shorter than the interval: 120 ms waits in a second the drives were 15 % busy
    # (750 ms of work: eighty 64 KiB reads at once on the CloudPhysics trace)
    burst = pl.DataFrame([rg_row(latency_mean_ms=120.0, utilization=0.15)])
    assert physics.latency_vs_utilisation(sc, burst, vol_frame(), SEC) == []
    assert checks(physics.latency_vs_utilisation(sc, burst.with_columns(utilization=pl.lit(0.01)), vol_frame(),
                                                 SEC)) == ["latency_vs_utilisation"]
    # busy in the interval before counts (work is booked where it was issued)
    two = pl.DataFrame([rg_row(utilization=0.95), rg_row(interval_start_ns=60 * SEC, latency_mean_ms=4000.0)])
    assert physics.latency_vs_utilisation(sc, two, vol_frame(), 60 * SEC) == []
    # forced-flush stalls are array-wide and checked on their own
    stalled = pl.DataFrame([rg_row(latency_mean_ms=4000.0, stall_delay_sum_ms=100 * 3999.5)])
    assert physics.latency_vs_utilisation(sc, stalled, vol_frame(), 60 * SEC) == []
    # a saturated storage processor explains it too: 2 M requests x 30 us in 60 s
    assert physics.latency_vs_utilisation(sc, pl.DataFrame([rg_row(latency_mean_ms=4000.0)]),
                                          vol_frame(2_000_000), 60 * SEC) == []


def test_nominal_service_time_from_the_drive_class():
    # 10k SAS from its manual: average seek 3.8 + half a rotation 3.0 + 8 KiB at the 113 MB/s mean rate + 0.2 overhead
    assert physics.nominal_service_ms(load("vnx2-mcx"), "sas10k") == pytest.approx(3.8 + 3.0 + 8192 / 113e3 + 0.2,
                                                                                   rel=1e-4)
    # a class with planning IOPS only: seek derived so that the three make the planning 150 IOPS
    sc = load("vnx2-mcx", ["drive_classes.sas10k.transfer_mb_per_s=150.0"])
    planning = replace(sc.drive_classes["sas10k"], avg_seek_ms=None, full_stroke_ms=None, transfer_inner_mb_per_s=None,
                       command_overhead_ms=0.0)
    sc = replace(sc, drive_classes={**sc.drive_classes, "sas10k": planning})
    assert physics.nominal_service_ms(sc, "sas10k") == pytest.approx(1000 / 150, rel=1e-6)
    # SSD: its latency plus the transfer
    sc = load("vnx5400-fastcache")
    dc = sc.drive_classes["ssd_emlc100"]
    assert physics.nominal_service_ms(sc, "ssd_emlc100") == pytest.approx(dc.latency_ms + 8192 / 400e6 * 1e3)


def test_throttled_writes_need_a_throttled_tick_at_or_before_them():
    sc = load("vnx2-mcx")
    lonely = pl.DataFrame([rg_row(throttled_requests=5)])
    assert checks(physics.throttle_trigger(sc, lonely, 60 * SEC)) == ["throttle_trigger"]
    good = {"throttle_past_age_min_ms": 10.0, "throttle_window_full_min_ms": 100.0, "throttle_drain_min_ms": 2500.0}
    ticked_before = pl.DataFrame([rg_row(throttle_ticks=3, **good),
                                  rg_row(interval_start_ns=60 * SEC, throttled_requests=5)])
    assert physics.throttle_trigger(sc, ticked_before, 60 * SEC) == []
    full_wait = pl.DataFrame([rg_row(throttled_requests=5, cache_full_waits=2)])
    assert physics.throttle_trigger(sc, full_wait, 60 * SEC) == []


@pytest.mark.parametrize("weak", [{"throttle_past_age_min_ms": -1.0}, {"throttle_window_full_min_ms": 50.0},
                                  {"throttle_drain_min_ms": 1500.0}])
def test_a_throttled_tick_below_its_trigger_is_a_model_error(weak):
    """seed 002: pages past the pre-cleaning age, the flush window full 90 % of the 100 ms tick,
    more than 2 s to drain."""
    good = {"throttle_past_age_min_ms": 10.0, "throttle_window_full_min_ms": 95.0, "throttle_drain_min_ms": 2500.0}
    df = pl.DataFrame([rg_row(throttled_requests=5, throttle_ticks=2, **{**good, **weak})])
    found = physics.throttle_trigger(load("vnx2-mcx"), df, 60 * SEC)
    assert checks(found) == ["throttle_trigger"] and "below the trigger" in found[0]["message"]
    assert physics.throttle_trigger(load("vnx2-mcx"), df.with_columns(**{k: pl.lit(v) for k, v in good.items()}),
                                    60 * SEC) == []


def test_writes_held_back_need_busy_drives_while_they_wait():
    """MCx throttles a group flushing at its maximum rate: writes held 9 s on average from 1,790 s
    while the drives were 35 % busy (the CloudPhysics burst before F_max rose at once) is an error;
    the same hold on saturated drives is not, nor a hold shorter than the interval."""
    sc = load("vnx5400")
    util = [0.62, 0.31, 0.13, 0.46, 0.52, 0.61, 0.56, 0.55, 0.26, 0.12, 0.0]
    rows = [rg_row(rg="rg1", interval_start_ns=(1789 + k) * SEC, utilization=u) for k, u in enumerate(util)]
    rows[1] = {**rows[1], "throttled_requests": 825, "throttle_delay_sum_ms": 825 * 8937.0}
    found = physics.throttle_vs_utilisation(sc, pl.DataFrame(rows), SEC)
    assert checks(found) == ["throttle_vs_utilisation"] and found[0]["severity"] == physics.MODEL_ERROR
    assert "rg1 at 1,790.0 s, writes held 8,937 ms on average, drives 35% busy" in found[0]["message"]
    saturated = pl.DataFrame([{**r, "utilization": 0.97} for r in rows])
    assert physics.throttle_vs_utilisation(sc, saturated, SEC) == []
    short = pl.DataFrame([{**r, "throttle_delay_sum_ms": 825 * 400.0} if r["throttled_requests"] else r
                          for r in rows])
    assert physics.throttle_vs_utilisation(sc, short, SEC) == []
    assert physics.throttle_vs_utilisation(load("vnx1-flare"), pl.DataFrame(rows), SEC) == []  # FLARE stalls


def test_stalled_requests_only_during_a_forced_flush():
    df = pl.DataFrame([rg_row(stalled_requests=3, interval_start_ns=60 * SEC)])
    assert checks(physics.stall_trigger(df, 60 * SEC, [])) == ["stall_trigger"]
    assert checks(physics.stall_trigger(df, 60 * SEC, [(0, 59 * SEC)])) == ["stall_trigger"]
    assert physics.stall_trigger(df, 60 * SEC, [(50 * SEC, 61 * SEC)]) == []


def test_gc_waits_only_without_free_space():
    vol = pl.DataFrame({"interval_start_ns": [0, SEC], "flash_gc_waits": [0, 4], "flash_free_pct": [50.0, 30.0]})
    assert checks(physics.gc_trigger(vol)) == ["gc_trigger"]
    assert physics.gc_trigger(vol.with_columns(flash_free_pct=pl.lit(0.2))) == []


def test_littles_law_in_closed_loop():
    run = {"mode": "closed", "outstanding": 16, "iops": 1000.0, "latency_mean_ms": 16.0, "measured_requests": 100_000}
    assert physics.littles_law(run) == []
    found = physics.littles_law({**run, "latency_mean_ms": 10.0})
    assert checks(found) == ["littles_law"] and "10.0 I/Os in flight" in found[0]["message"]
    assert physics.littles_law({**run, "mode": "open", "latency_mean_ms": 1.0}) == []


def test_mass_balance_of_the_write_cache():
    run = {"dram_mode": "mcx", "write_pages": 100, "write_hit_pages": 30, "write_through_pages": 5, "flush_pages": 50,
           "dirty_pages": 10, "trimmed_dirty_pages": 5}
    assert physics.mass_balance(run) == []
    found = physics.mass_balance({**run, "flush_pages": 51})
    assert checks(found) == ["mass_balance"] and "host page writes 100 != " in found[0]["message"]


def test_coarse_timestamps_are_a_caveat_in_open_loop_only():
    fine = {"mode": "open", "ts_resolution_ns": 1000, "requests_at_one_instant_max": 3}
    assert physics.coarse_timestamps(fine) == []
    secs = physics.coarse_timestamps({**fine, "ts_resolution_ns": SEC})
    assert checks(secs) == ["coarse_timestamps"] and secs[0]["severity"] == physics.CAVEAT
    assert "step by 1,000 ms" in secs[0]["message"]
    burst = physics.coarse_timestamps({**fine, "requests_at_one_instant_max": 2500})
    assert "up to 2,500 requests arrive at one instant" in burst[0]["message"]
    assert physics.coarse_timestamps({**fine, "mode": "closed", "ts_resolution_ns": SEC}) == []


def test_a_fast_vp_window_that_never_opens_is_a_caveat():
    sc = load("vnx5400-fastvp")
    found = physics.fast_vp_window(sc, {"tier_windows": 0, "simulated_seconds": 7200.0,
                                        "tiers": [{"tier": "extreme_performance", "request_share": 0.04}]})
    assert checks(found) == ["fast_vp_window"] and "2.0 h" in found[0]["message"] and "4% of the I/O" in found[0]["message"]
    assert physics.fast_vp_window(sc, {"tier_windows": 1}) == []
    assert physics.fast_vp_window(load("vnx5400"), {"tier_windows": 0}) == []


# ---- every preset on every real trace ---------------------------------------------------------
@pytest.fixture(scope="module")
def real_traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    return d, {name: find_trace(d, ingest_file(shared_path(*parts), d).trace_id) for name, parts in TRACES.items()}


@pytest.fixture(scope="module")
def real_runs(real_traces):
    """(trace, preset) -> run summary, every preset on every real trace, trace timing."""
    d, traces = real_traces
    return {(t, p): replay_trace(trace, None, load(p)) for t, trace in traces.items() for p in preset_names()}


def test_every_preset_on_every_real_trace_passes_the_physics_checks(real_runs):
    errors = {k: physics.model_errors(s["warnings"]) for k, s in real_runs.items()}
    assert not {k: v for k, v in errors.items() if v}
    assert all(s["mode"] == "open" and s["outstanding"] is None for s in real_runs.values())
    # the checks ran: FAST VP's daily window never opens in these traces (2 h at most)
    assert all("fast_vp_window" in checks(s["warnings"]) for (t, p), s in real_runs.items() if p == "vnx5400-fastvp")


def test_cloudphysics_answers_are_believable_on_every_preset(real_runs):
    """113,872 requests over 2 h (16 IOPS), with bursts of sequential 68 KiB writes at ~120 MB/s
    that fit any of the caches: every preset keeps the mean within 20 ms and p99 within 1 s, and
    no MCx preset throttles (before the fix: 4-6 s mean, 150-200 s p99, up to 656,000 s of
    throttle delay)."""
    for p in preset_names():
        s = real_runs[("cloudphysics", p)]
        if p == "aws-st1":  # an HDD volume (issue 28): 500 IOPS, a random I/O costs 1 MiB of throughput credit.
            # AWS documents st1 as unsuited to small random I/O; its slow answer (~180 ms mean) is its limits at
            # work: nearly all of it is waiting for tokens, the rest is its service time
            assert s["throttle_delay_sum_ms"] / s["requests"] >= 0.95 * s["latency_mean_ms"] > 20
            assert s["requests"] == 113_872
            continue
        assert s["latency_mean_ms"] <= 20 and s["latency_p99_ms"] <= 1000, (p, s["latency_mean_ms"], s["latency_p99_ms"])
        assert s["requests"] == 113_872
        if s["dram_mode"] == "mcx":
            assert s["throttled_requests"] == 0, p


def test_small_write_caches_on_cloudphysics_at_one_second_intervals(real_traces):
    """The bursts at 1,789 s (148 MB of sequential 68 KiB writes in a second) into every preset's
    DRAM cache cut to 256 MiB and 512 MiB, judged per second: no model error at either size, and
    the MCx arrays at 512 MiB neither throttle nor leave p99 above 50 ms: a 4+1 RAID 5 of 10k
    drives writes full stripes at ~450 MB/s. Before F_max rose at once, vnx5400 held those writes
    back for 6.5 s (p99) with its drives a third busy, and the second-by-second check found it."""
    d, traces = real_traces
    for p in preset_names():
        sc = load(p)
        if sc.cloud or sc.flash or sc.dram.mode == "none":
            continue
        for size in ("256MiB", "512MiB"):
            over = [f'dram.cache_bytes="{size}"', 'replay.interval="1s"']
            if sc.dram.mode == "flare":
                over.append('dram.flare.read_cache_bytes="64MiB"')
            s = replay_trace(traces["cloudphysics"], None, load(p, over))
            assert physics.model_errors(s["warnings"]) == [], (p, size)
            if size == "512MiB" and sc.dram.mode == "mcx" and not sc.ssd_cache and not sc.tiering:
                assert s["throttled_requests"] == 0 and s["latency_p99_ms"] < 50, (p, s["latency_p99_ms"])


def test_closed_loop_on_a_real_trace_keeps_littles_law(real_traces):
    """N = X R on real address sequences (the check's tolerance: 5 % plus the final drain)."""
    d, traces = real_traces
    for p in ("vnx2-mcx", "vnx1-flare", "xs5224d-qcache-rw", "violin6232"):
        s = replay_trace(traces["cloudphysics"], None, load(p).with_replay(mode="closed", outstanding=16))
        assert s["mode"] == "closed" and s["outstanding"] == 16
        assert physics.model_errors(s["warnings"]) == [], p
        assert s["iops"] * s["latency_mean_ms"] / 1e3 == pytest.approx(16, rel=0.05), p


def test_flare_write_aside_on_every_real_trace(real_traces, real_runs):
    """Every FLARE preset with write-aside at 64 KiB on every real trace: the physics checks pass
    (the mass balance counts the pages written aside and the dirty pages they superseded), the
    CloudPhysics bursts of 68 KiB writes go past the cache, and no write is faster for it: the mean
    latency only rises (a write-aside waits for the drives, a cached write for the mirror hop)."""
    d, traces = real_traces
    flare = [p for p in preset_names() if load(p).dram.mode == "flare"]
    assert flare
    for p in flare:
        for t, trace in traces.items():
            s = replay_trace(trace, None, load(p, ["dram.flare.write_aside_bytes=64KiB"]))
            assert physics.model_errors(s["warnings"]) == [], (p, t)
            assert s["requests"] == real_runs[(t, p)]["requests"]
            assert s["latency_mean_ms"] >= real_runs[(t, p)]["latency_mean_ms"], (p, t)
            if t == "cloudphysics":
                assert s["write_aside_pages"] > 0 and real_runs[(t, p)]["write_aside_pages"] == 0, p


def test_drive_write_caches_on_every_real_trace(real_traces, real_runs):
    """Every preset with HDDs, their write caches enabled (16 MiB), on every real trace: the
    physics checks pass (the mass balance with flushes acknowledged before the platters have
    them), and the host sees what it saw: its writes are acknowledged by the controller's cache
    either way, and at these traces' rates the drives are idle enough that their reads wait no
    longer (mean latency within 2 %)."""
    d, traces = real_traces
    for p in preset_names():
        sc = load(p)
        hdd = [name for name, dc in sc.drive_classes.items() if dc.kind == "hdd"]
        if sc.cloud or sc.flash or not hdd:
            continue
        over = [f"drive_classes.{name}.write_cache_bytes=16MiB" for name in hdd]
        for t, trace in traces.items():
            s = replay_trace(trace, None, load(p, over))
            base = real_runs[(t, p)]
            assert physics.model_errors(s["warnings"]) == [], (p, t)
            assert s["requests"] == base["requests"], (p, t)
            assert s["latency_mean_ms"] == pytest.approx(base["latency_mean_ms"], rel=0.02), (p, t)


def _partial_writes(trace, block: int) -> tuple[int, int]:
    """Writes of an ingested trace that cover part of a ``block``-sized block, and those partial
    blocks (1 or 2 a write), counted from its Parquet by Polars."""
    end = pl.col("offset") + pl.col("size")
    head, tail = pl.col("offset") % block != 0, end % block != 0
    one = head & tail & (pl.col("offset") // block == (end - 1) // block)
    w = trace.scan().filter(pl.col("op") == "write").select(
        k=pl.when(one).then(1).otherwise(head.cast(pl.Int64) + tail.cast(pl.Int64))).collect()
    return int((w["k"] > 0).sum()), int(w["k"].sum())


def test_lun_blocks_on_every_real_trace(real_traces, real_runs):
    """The Violin on every real trace with 512 B LUN blocks (the preset) and 4 KiB ones: the physics
    checks pass; the writes that read a partial block first are exactly the trace's writes that
    cover part of a 1 KiB stripe unit (512 B LUN) or of a 4 KiB block, counted here from the
    trace; and the 4 KiB LUN, which reads more and widens every request to 4 KiB, is never faster.
    (A first version booked a write's transfer on the media server after its read: on tpcc the
    media sat idle behind each booking and the mean grew to 188 ms, flagged as a model error.)"""
    d, traces = real_traces
    for t, trace in traces.items():
        base = real_runs[(t, "violin6232")]
        s = replay_trace(trace, None, load("violin6232", ["flash.lun_block_bytes=4KiB"]))
        assert physics.model_errors(s["warnings"]) == [], t
        assert (base["flash_rmw_writes"], base["flash_rmw_reads"]) == _partial_writes(trace, 1024), t
        assert (s["flash_rmw_writes"], s["flash_rmw_reads"]) == _partial_writes(trace, 4096), t
        assert s["latency_mean_ms"] >= base["latency_mean_ms"], t
        assert s["latency_mean_ms"] < 1.0, t  # an all-flash array at these traces' rates
    cp = real_runs[("cloudphysics", "violin6232")]
    assert cp["flash_rmw_writes"] == 55_934 and cp["flash_writes"] == 66_898  # 84 % of its writes


#: a measured SSD (a calibrated [device]) behind gp3's token buckets: the composition of issue 32 item 4
DEVICE_BEHIND_GP3 = ("device.host_us=10.0", "device.read_latency_us=90.0", "device.write_latency_us=30.0",
                     "device.parallelism=32", "device.parallel_exponent=0.8", "device.transfer_overlap=0.5")


def test_a_device_behind_a_cloud_volume_on_every_real_trace(real_traces, real_runs):
    """``aws-gp3`` with a [device] on every real trace: the physics checks pass, every read and write
    reaches the device, the buckets and the device's queue only add time to the type's draw-free
    service (latency at least host + device latency), and closed loop keeps Little's law with the
    buckets setting the rate (16 outstanding at ~3,000 IOPS)."""
    d, traces = real_traces
    sc = load("aws-gp3", DEVICE_BEHIND_GP3)
    for t, trace in traces.items():
        s = replay_trace(trace, None, sc)
        assert physics.model_errors(s["warnings"]) == [], t
        assert s["requests"] == real_runs[(t, "aws-gp3")]["requests"]
        assert 0 < s["device_reads"] + s["device_writes"] <= s["requests"], t
        assert s["latency_p50_ms"] >= 0.04 and s["cloud_ios"] > 0, t
    s = replay_trace(traces["cloudphysics"], None, sc.with_replay(mode="closed", outstanding=16))
    assert physics.model_errors(s["warnings"]) == []
    assert s["iops"] * s["latency_mean_ms"] / 1e3 == pytest.approx(16, rel=0.05)
    assert s["iops"] <= 3000 * 1.05 and s["cloud_throttled"] > 0


def test_whole_second_timestamps_are_flagged_on_the_replay(tmp_path):
    """A trace rendered with whole-second timestamps (SPC: seconds; 150 requests per second, all
    at the second's instant): the replay's summary names both symptoms, and closed loop does not."""
    lines = [f"0,{(7919 * i) % 100_000 * 8},4096,r,{i // 150}.000000" for i in range(600)]
    src = tmp_path / "coarse.spc"
    src.write_text("\n".join(lines) + "\n")
    d = tmp_path / "data"
    trace = find_trace(d, ingest_file(src, d, validate="off").trace_id)
    s = replay_trace(trace, None, load("vnx5400"))
    assert s["ts_resolution_ns"] == SEC and s["requests_at_one_instant_max"] == 150
    [c] = [f for f in s["warnings"] if f["check"] == "coarse_timestamps"]
    assert "step by 1,000 ms" in c["message"] and "up to 150 requests arrive at one instant" in c["message"]
    closed = replay_trace(trace, None, load("vnx5400").with_replay(mode="closed"))
    assert "coarse_timestamps" not in checks(closed["warnings"]) and closed["mode"] == "closed"


def test_a_trace_without_timestamps_goes_closed_loop_and_says_so(tmp_path):
    src = tmp_path / "flat.spc"
    src.write_text("".join(f"0,{i * 8},4096,r,0.000000\n" for i in range(200)))
    d = tmp_path / "data"
    trace = find_trace(d, ingest_file(src, d, validate="off").trace_id)
    s = replay_trace(trace, None, load("vnx5400"))
    assert (s["mode"], s["outstanding"]) == ("closed", 12)  # the preset's closed-loop depth
    [u] = [f for f in s["warnings"] if f["check"] == "untimed_trace"]
    assert "replayed closed loop at 12 outstanding" in u["message"] and u["severity"] == physics.CAVEAT


def test_forced_flush_spans_are_kept_as_their_union():
    starts, ends = physics.union_spans([(10, 20), (0, 5), (20, 30), (5, 6), (40, 45), (41, 42)])
    assert starts.tolist() == [0, 10, 40] and ends.tolist() == [6, 30, 45]  # touching spans join
    assert [a.tolist() for a in physics.union_spans([])] == [[], []]
    # intervals of 60 s: one inside a span, one a span only touches at its start, one no span reaches
    df = pl.DataFrame([rg_row(stalled_requests=1, interval_start_ns=k * 60 * SEC) for k in (1, 2, 4)])
    found = physics.stall_trigger(df, 60 * SEC, [(0, 70 * SEC), (100 * SEC, 120 * SEC), (300 * SEC, 301 * SEC)])
    assert checks(found) == ["stall_trigger"]
    assert found[0]["message"].startswith("1 interval(s)") and "first at 240.0 s" in found[0]["message"]
