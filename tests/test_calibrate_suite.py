"""Issue 32: a device (``[device]``) calibrated from a short fio suite predicts workloads the suite did
not run. The kernel against closed forms, the fit against a device whose parameters are known, the
suite's refusals, and (serial) the whole thing live on this machine's disk."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest
from conftest import require
from typer.testing import CliRunner

from pipelines import calibrate_suite as suite
from pipelines.capture import missing_tools
from pipelines.device_calibration import Workload, fit, holdout, predict, scenario_toml
from replay.scenario import loads

MIB = 1 << 20
#: a device whose every parameter the suite identifies (write cache left out: it only shows when filled)
TRUE = {"host_us": 20.0, "write_host_us": 30.0, "read_latency_us": 40.0, "read_mib_per_s": 1200.0,
        "write_latency_us": 60.0, "write_mib_per_s": 900.0, "parallelism": 12, "parallel_exponent": 0.4,
        "write_parallel_exponent": 0.25, "max_mib_per_s": 1500.0, "write_cache_bytes": 0,
        "read_gain_at_2": 1.2}  # the law gives 2 ** 0.4 = 1.32


def _w(label, rw, bs, depth, read_share, params=TRUE, host=None):
    """A workload 'measured' on the device ``params`` (the model itself), as workload_of builds one."""
    w = Workload(capture_id=label, label=label, rw=rw, bs_bytes=bs, iodepth=depth, read_share=read_share,
                 sequential=rw in ("read", "write"), iops=1.0, lat_mean_ms=1.0, read_lat_mean_ms=None,
                 write_lat_mean_ms=None, read_iops=read_share, write_iops=1 - read_share, mb_per_s=0.0,
                 write_bytes=0 if read_share == 1 else 10 * MIB)
    m = predict(params, w, n=40_000)
    w.iops, w.lat_mean_ms = m["iops"], m["lat_mean_ms"]
    w.read_iops, w.write_iops = m["iops"] * read_share, m["iops"] * (1 - read_share)
    w.read_lat_mean_ms = m["lat_mean_ms"] if read_share else None
    w.write_lat_mean_ms = m["lat_mean_ms"] if read_share < 1 else None
    w.mb_per_s = m["iops"] * bs / 1e6
    if depth == 1 and host is not None:
        w.host_us = host
    return w


def _suite(params=TRUE):
    return [_w("randread-4k-qd1", "randread", 4096, 1, 1.0, params, params["host_us"]),
            _w("randwrite-4k-qd1", "randwrite", 4096, 1, 0.0, params, params["write_host_us"]),
            _w("randread-32k-qd1", "randread", 32 << 10, 1, 1.0, params, params["host_us"]),
            _w("read-128k-qd1", "read", 128 << 10, 1, 1.0, params, params["host_us"]),
            _w("write-128k-qd1", "write", 128 << 10, 1, 0.0, params, params["write_host_us"]),
            _w("randread-4k-qd2", "randread", 4096, 2, 1.0, params),
            _w("randread-4k-qd4", "randread", 4096, 4, 1.0, params),
            _w("randread-4k-qd32", "randread", 4096, 32, 1.0, params),
            _w("randread-32k-qd8", "randread", 32 << 10, 8, 1.0, params),
            _w("randwrite-4k-qd32", "randwrite", 4096, 32, 0.0, params),
            _w("read-128k-qd16", "read", 128 << 10, 16, 1.0, params),
            _w("randrw50-4k-qd16", "randrw", 4096, 16, 0.5, params)]


# ---- the kernel against closed forms ------------------------------------------------------
def _device(**kw):
    return {**{k: v for k, v in TRUE.items() if k not in ("write_host_us", "write_parallel_exponent",
                                                          "read_gain_at_2")},
            "max_mib_per_s": 0.0, **kw}


def test_device_at_depth_one_is_host_plus_latency_plus_transfer():
    p = _device()
    for rw, bs, share, host, lat, rate in (("randread", 4096, 1.0, 20.0, 40.0, 1200.0),
                                           ("write", 64 << 10, 0.0, 20.0, 60.0, 900.0)):
        m = predict(p, _w("x", rw, bs, 1, share, p), n=40_000)
        expect_ms = (host + lat + bs / (rate * MIB) * 1e6) / 1e3
        assert m["lat_mean_ms"] == pytest.approx(expect_ms, rel=1e-4)
        assert m["iops"] == pytest.approx(1e3 / expect_ms, rel=1e-3)


def test_device_with_ideal_channels_serves_q_at_once():
    """Exponent 1, N >= Q, no host time: a closed loop of Q keeps Q in the device, served Q times
    faster: Q / S IOPS, and each request's response is S (Little's law)."""
    p = _device(host_us=0.0, parallel_exponent=1.0, parallelism=64)
    s_ms = (40.0 + 4096 / (1200.0 * MIB) * 1e6) / 1e3
    for q in (2, 8, 32):
        m = predict(p, _w("x", "randread", 4096, q, 1.0, p), n=40_000)
        assert m["iops"] == pytest.approx(q / s_ms * 1e3, rel=2e-3)
        assert m["lat_mean_ms"] == pytest.approx(s_ms, rel=2e-3)
    # transfers on one link (overlap 0): only the fixed latency is shared, S = L / Q + transfer
    x_ms = 4096 / (1200.0 * MIB) * 1e3
    m = predict(dict(p, transfer_overlap=0.0), _w("x", "randread", 4096, 8, 1.0, p), n=40_000)
    assert m["iops"] == pytest.approx(1e3 / (0.040 / 8 + x_ms), rel=5e-3)
    # beyond N the gain stops: Q = 64 on N = 16 runs at 16 / S
    m = predict(dict(p, parallelism=16), _w("x", "randread", 4096, 64, 1.0, p), n=40_000)
    assert m["iops"] == pytest.approx(16 / s_ms * 1e3, rel=5e-3)  # service times rounded to whole ns
    # read_gain_at_2 replaces g(2) only: Q = 2 at 1.5 / S, Q = 8 still at 8 / S; writes keep the law
    m = predict(dict(p, read_gain_at_2=1.5), _w("x", "randread", 4096, 2, 1.0, p), n=40_000)
    assert m["iops"] == pytest.approx(1.5 / s_ms * 1e3, rel=2e-3)
    m = predict(dict(p, read_gain_at_2=1.5), _w("x", "randread", 4096, 8, 1.0, p), n=40_000)
    assert m["iops"] == pytest.approx(8 / s_ms * 1e3, rel=2e-3)
    w_ms = (60.0 + 4096 / (900.0 * MIB) * 1e6) / 1e3
    m = predict(dict(p, read_gain_at_2=1.5), _w("x", "randwrite", 4096, 2, 0.0, p), n=40_000)
    assert m["iops"] == pytest.approx(2 / w_ms * 1e3, rel=2e-3)
    # a knee at 2 (the law: 2 ** 0.5 = 1.41 from two requests on) under a g(2) of 1.8: deeper queues
    # gain 1.8 too, never less than two requests
    m = predict(dict(p, parallelism=2, parallel_exponent=0.5, read_gain_at_2=1.8), _w("x", "randread", 4096, 8, 1.0, p),
                n=40_000)
    assert m["iops"] == pytest.approx(1.8 / s_ms * 1e3, rel=2e-3)


def test_the_fit_builds_the_scenario_the_written_file_gives():
    """predict's scenario (parsed once per depth, its [device] replaced) is the one calibrate writes,
    and a value out of range is refused as in the file."""
    from pipelines.device_calibration import _scenario

    p = dict(TRUE, read_size_exponent=0.8, drain_latency_us=12.5, write_cache_bytes=1 << 30)
    assert _scenario(p, 4) == loads(scenario_toml(p, outstanding=4), "<device fit>")
    with pytest.raises(ValueError, match="parallel_exponent"):
        _scenario(dict(p, parallel_exponent=1.5), 4)


def test_read_transfer_below_128k_follows_the_size_exponent():
    """With read_size_exponent 0.5 a 32 KiB read transfers for half a 128 KiB one's time (not a quarter),
    a 256 KiB read for twice it (size / rate from 128 KiB up); writes keep size / rate."""
    p = _device(host_us=0.0, read_latency_us=40.0, read_mib_per_s=1000.0, read_size_exponent=0.5)
    ref_us = (128 << 10) / (1000.0 * MIB) * 1e6  # 125 us
    for bs, xfer_us in ((32 << 10, ref_us / 2), (128 << 10, ref_us), (256 << 10, 2 * ref_us)):
        m = predict(p, _w("x", "randread", bs, 1, 1.0, p), n=2000)
        assert m["lat_mean_ms"] * 1e3 == pytest.approx(40.0 + xfer_us, rel=1e-3), bs
    w = predict(p, _w("x", "randwrite", 32 << 10, 1, 0.0, p), n=2000)
    assert w["lat_mean_ms"] * 1e3 == pytest.approx(TRUE["write_latency_us"] + (32 << 10) / (900.0 * MIB) * 1e6,
                                                   rel=1e-3)


def test_fit_finds_the_size_curve_from_three_read_sizes():
    """Reads at 4, 32 and 128 KiB at depth 1 on a device with a concave size curve (exponent 0.8): the fit
    recovers the exponent, rate and fixed latency; a line through 4 and 128 KiB would put 32 KiB reads
    too fast."""
    true = dict(TRUE, read_size_exponent=0.8)
    f = fit(_suite(true))
    assert f.params["read_size_exponent"] == pytest.approx(0.8, abs=0.02)
    assert f.params["read_mib_per_s"] == pytest.approx(1200.0, rel=0.03)
    assert f.params["read_latency_us"] == pytest.approx(40.0, rel=0.03)
    assert "curve" in f.sources["read_size_exponent"]
    line = fit([w for w in _suite(true) if w.label != "randread-32k-qd1"])
    mid = _w("x", "randread", 32 << 10, 1, 1.0, true)
    assert predict(line.params, mid)["iops"] > 1.04 * mid.iops
    assert predict(f.params, mid)["iops"] == pytest.approx(mid.iops, rel=0.01)


def test_device_throughput_cap_and_write_cache():
    p = _device(host_us=0.0, parallel_exponent=1.0, max_mib_per_s=500.0)
    m = predict(p, _w("x", "read", 1 << 20, 16, 1.0, p), n=40_000)
    assert m["iops"] * 1.0 == pytest.approx(500.0, rel=2e-3)  # 1 MiB requests at 500 MiB/s
    # a write cache of 64 MiB draining at 100 MiB/s in front of 4 MiB/ms writes: the first ~64 MiB go
    # at the write speed, then every write waits for the drain
    sc = loads(scenario_toml(_device(host_us=0.0, write_latency_us=10.0, write_mib_per_s=4000.0,
                                     parallel_exponent=0.0, write_cache_bytes=64 * MIB, drain_mib_per_s=100.0),
                             outstanding=1), "<t>")
    from pipelines.replay import replay_frames

    n = 2000  # 2000 x 1 MiB
    df = pl.DataFrame({"ts_ns": list(range(n)), "volume": ["d"] * n, "op": pl.Series([1] * n, dtype=pl.UInt8),
                       "offset": [i << 20 for i in range(n)], "size": [1 << 20] * n})
    s = replay_frames([df], sc).summary
    # a write takes 10 us + 1 MiB at 4000 MiB/s = 260 us: the cache fills 64 MiB / (1 - 100 x 0.26 ms)
    # = 65.7 writes in, and from then on every write waits for 1 MiB of drain (10 ms)
    fill = 64 / (1 - 100 * 0.26e-3)
    assert n - fill - 2 <= s["device_cache_waits"] <= n - fill + 1
    assert s["iops"] == pytest.approx(n / ((n - fill) / 100 + fill * 0.26e-3), rel=0.01)


def _alternating(n: int, first_op: int = 1) -> pl.DataFrame:
    """n 4 KiB requests alternating write, read (``first_op`` 1) or all of op ``first_op``."""
    ops = [(first_op + i) % 2 if first_op == 1 else first_op for i in range(n)]
    return pl.DataFrame({"ts_ns": list(range(n)), "volume": ["d"] * n, "op": pl.Series(ops, dtype=pl.UInt8),
                         "offset": [(i * 7919 % n) << 12 for i in range(n)], "size": [4096] * n})


def test_reads_wait_behind_the_drain_of_the_writes_the_cache_took():
    """A write acknowledged from the cache in 10 us leaves 30 us of media work (``drain_latency_us``),
    which the next read waits behind: at depth 1 a write/read pair takes 10 + 30 + 40 us, not 10 + 40;
    writes alone still go at 10 us (the drain is not their wait); without the knob nothing changes."""
    from pipelines.replay import replay_frames

    def run(df, **kw):
        p = _device(host_us=0.0, read_latency_us=40.0, write_latency_us=10.0, read_mib_per_s=1e6,
                    write_mib_per_s=1e6, parallel_exponent=0.0, write_cache_bytes=1 << 30, **kw)
        return replay_frames([df], loads(scenario_toml(p, outstanding=1), "<t>")).summary

    n = 2000
    s = run(_alternating(n), drain_latency_us=30.0)
    assert s["iops"] == pytest.approx(2 / 80e-6, rel=2e-3)
    assert s["latency_mean_ms"] == pytest.approx((0.010 + 0.070) / 2, rel=2e-3)  # reads 30 + 40 us
    assert s["device_cache_waits"] == 0
    assert run(_alternating(n), drain_latency_us=0.0)["iops"] == pytest.approx(2 / 50e-6, rel=2e-3)
    assert run(_alternating(n, first_op=1).with_columns(op=pl.lit(1, pl.UInt8)),
               drain_latency_us=30.0)["iops"] == pytest.approx(1 / 10e-6, rel=2e-3)


def test_fit_takes_the_drain_cost_from_the_read_write_mix():
    """A device whose cached writes cost the reads 40 us of media time each: the writes alone do not
    show it, the suite's 50/50 mix at QD16 does, and the fit recovers it; without the mix it says so."""
    true = dict(TRUE, write_latency_us=15.0, write_mib_per_s=3000.0, write_host_us=20.0,
                write_cache_bytes=1 << 30, drain_latency_us=40.0)
    ws = _suite(true)
    for w in ws:
        w.write_bytes = 1 << 30 if w.write_bytes else 0
    f = fit(ws)
    assert f.params["write_cache_bytes"] == 1 << 30
    assert f.params["drain_latency_us"] == pytest.approx(40.0, rel=0.1)
    assert "randrw" in f.sources["drain_latency_us"]
    mix = next(r for r in f.fitted if r["workload"] == "randrw50-4k-qd16")
    assert abs(mix["iops_error_pct"]) < 3
    g = fit([w for w in ws if w.label != "randrw50-4k-qd16"])
    miss = {m["parameter"]: m for m in g.not_identified}
    assert miss["drain_latency_us"]["default"] == 0.0 and "no deep read/write mix" in miss["drain_latency_us"]["why"]


def test_the_cap_bounds_the_media_not_the_writes_the_cache_takes():
    """A 500 MiB/s cap bounds reads and uncached writes (1 MiB each: 500 IOPS); a write the cache takes
    moves no media data, so it goes at its own service (10 us + 1 MiB at 4000 MiB/s = 260 us), as a
    virtual disk's 128 KiB writes at QD1 ran above the reads' bandwidth (1.4 against 1.2-1.3 GiB/s)."""
    p = _device(host_us=0.0, parallel_exponent=1.0, max_mib_per_s=500.0, write_latency_us=10.0,
                write_mib_per_s=4000.0)
    big_write = _w("x", "write", 1 << 20, 1, 0.0, p)
    assert predict(p, big_write, n=500)["iops"] == pytest.approx(500.0, rel=2e-3)
    cached = dict(p, write_cache_bytes=1 << 30)
    assert predict(cached, big_write, n=500)["iops"] == pytest.approx(1e6 / 260.0, rel=2e-3)
    assert predict(cached, _w("x", "read", 1 << 20, 1, 1.0, p), n=500)["iops"] == pytest.approx(500.0, rel=2e-3)


#: a calibrated device behind a gp3 volume's buckets, as a user composes it: the device.toml calibrate
#: writes, with the volume added by --set (3,000 IOPS included)
GP3 = ("cloud.provider=aws", "cloud.volume_type=gp3", "cloud.size_bytes=500GiB")


def _reads(n: int) -> pl.DataFrame:
    return pl.DataFrame({"ts_ns": list(range(n)), "volume": ["d"] * n, "op": pl.Series([0] * n, dtype=pl.UInt8),
                         "offset": [(i * 7919 % n) << 12 for i in range(n)], "size": [4096] * n})


def test_a_cloud_volume_is_the_device_behind_token_buckets():
    """Issue 32 item 4: [cloud] in front of a [device]. 16 outstanding 4 KiB reads on a one-channel
    device of 100 us: alone 16 / (100 us + transfer) ~ 9,700 IOPS; behind gp3's 3,000 IOPS the buckets
    set the rate, the device never queues (a request every 333 us, served in 103 us) and the latency is
    Little's 16 / 3,000 s. A slow device (1 ms) under the same buckets sets the rate itself: 1,000 IOPS,
    16 ms, no token waits once the first burst (16 requests at once, and their successors' first few ms)
    has passed."""
    from pipelines.replay import replay_frames

    n = 20_000
    fast = scenario_toml(_device(host_us=0.0, read_latency_us=100.0, parallelism=1), outstanding=16)
    alone = replay_frames([_reads(n)], loads(fast, "<t>")).summary
    x_us = 4096 / (1200.0 * MIB) * 1e6
    assert alone["iops"] == pytest.approx(1e6 / (100.0 + x_us), rel=5e-3)
    assert "cloud_throttled" not in alone
    sc = loads(fast, "device.toml", overrides=GP3)
    assert sc.features() == ["closed_loop", "cloud:aws:gp3", "device:1-way"]
    s = replay_frames([_reads(n)], sc).summary
    assert s["iops"] == pytest.approx(3000.0, rel=5e-3)
    assert s["latency_mean_ms"] == pytest.approx(16 / 3000 * 1e3, rel=0.01)  # Little's law
    assert s["cloud_throttled"] > 0.9 * n and s["cloud_ios"] == n
    assert s["device_reads"] == n and n <= s["device_queue_sum"] <= n + 16  # alone but in the first burst
    slow = loads(scenario_toml(_device(host_us=0.0, read_latency_us=1000.0, parallelism=1), outstanding=16),
                 "device.toml", overrides=GP3)
    s = replay_frames([_reads(n)], slow).summary
    assert s["iops"] == pytest.approx(1000.0, rel=5e-3)
    assert s["latency_mean_ms"] == pytest.approx(16.0, rel=0.01)
    assert s["cloud_throttled"] <= 32 and s["device_queue_sum"] / n == pytest.approx(16, rel=0.01)


def test_device_section_errors_name_file_line_and_rule():
    bad = scenario_toml(dict(TRUE, parallel_exponent=1.5), outstanding=1)
    with pytest.raises(ValueError, match=r"dev.toml.*line \d+.*parallel_exponent.*<= 1"):
        loads(bad, "dev.toml")
    with pytest.raises(ValueError, match=r"read_mib_per_s.*> 0"):
        loads(scenario_toml(dict(TRUE, read_mib_per_s=0.0), outstanding=1), "dev.toml")


def test_runs_of_a_calibrated_scenario_report_its_holdout_error():
    from pipelines.replay import replay_frames

    sc = loads(scenario_toml(dict(TRUE, holdout_iops_error_pct=7.5, holdout_latency_error_pct=9.25), outstanding=4),
               "<t>")
    n = 1000
    df = pl.DataFrame({"ts_ns": list(range(n)), "volume": ["d"] * n, "op": pl.Series([0] * n, dtype=pl.UInt8),
                       "offset": [i << 12 for i in range(n)], "size": [4096] * n})
    s = replay_frames([df], sc).summary
    assert s["calibration"] == {"holdout_error_pct": {"iops": 7.5, "latency": 9.25}}
    assert s["holdout_iops_error_pct"] == 7.5 and s["mechanisms"] == ["host", "device"]
    assert s["dram_mode"] == "none" and s["warnings"] == []


# ---- the fit ---------------------------------------------------------------------------------
def test_fit_recovers_a_known_device_and_says_what_it_could_not_identify():
    f = fit(_suite())
    p = f.params
    for k in ("host_us", "write_host_us", "read_latency_us", "write_latency_us", "read_mib_per_s",
              "write_mib_per_s"):
        assert p[k] == pytest.approx(TRUE[k], rel=0.02), k
    assert p["parallel_exponent"] == pytest.approx(0.4, abs=0.01) and p["parallelism"] == 12
    assert p["write_parallel_exponent"] == pytest.approx(0.25, abs=0.01)
    assert p["read_gain_at_2"] == pytest.approx(1.2, abs=0.02) and "randread-4k-qd2" in f.sources["read_gain_at_2"]
    assert p["max_mib_per_s"] == pytest.approx(1500.0, rel=0.03)
    assert p["write_cache_bytes"] == 0  # writes are slower than reads here
    names = {m["parameter"]: m for m in f.not_identified}
    assert set(names) == {"write_cache_bytes"}
    assert "knee" in f.sources["parallelism"]
    assert p["transfer_overlap"] >= 0.9 and f.sources["transfer_overlap"].startswith("the overlap")
    # with small reads at one depth the knee is not placed: the default, said so
    g = fit([w for w in _suite() if w.label not in ("randread-4k-qd2", "randread-4k-qd4")])
    miss = {m["parameter"]: m for m in g.not_identified}
    assert miss["parallelism"]["default"] == 32 and "one depth only (32)" in miss["parallelism"]["why"]
    assert all(abs(r["iops_error_pct"]) < 2 and abs(r["lat_error_pct"]) < 2 for r in f.fitted)


def test_fit_tells_a_transfer_on_one_link_from_a_parallel_one_under_a_cap():
    """A device whose transfers queue on one link (an SSD's host interface, a virtio ring), one whose
    transfers overlap half-way, and one whose transfers overlap under a throughput cap reach similar
    deep sequential bandwidths; the 32 KiB run at depth 8 tells them apart, and without it the fit
    says it could not."""
    link = dict(TRUE, transfer_overlap=0.0, max_mib_per_s=0.0)
    f = fit(_suite(link))
    assert f.params["transfer_overlap"] <= 0.1
    assert f.params["parallel_exponent"] == pytest.approx(0.4, abs=0.02)
    assert all(abs(r["iops_error_pct"]) < 3 for r in f.fitted)
    half = fit(_suite(dict(TRUE, transfer_overlap=0.5, max_mib_per_s=0.0)))
    assert half.params["transfer_overlap"] == pytest.approx(0.5, abs=0.15)
    assert all(abs(r["iops_error_pct"]) < 3 for r in half.fitted)
    g = fit([w for w in _suite(link) if w.label != "randread-32k-qd8"])
    miss = {m["parameter"]: m for m in g.not_identified}
    assert miss["transfer_overlap"]["default"] == 1.0 and "cannot be told apart" in miss["transfer_overlap"]["why"]


def test_fit_finds_a_write_cache_when_writes_are_faster():
    fast = dict(TRUE, write_latency_us=15.0, write_mib_per_s=3000.0, write_host_us=20.0)
    f = fit(_suite(fast))
    assert f.params["write_cache_bytes"] == 10 * MIB  # the most a write run wrote, without filling it
    assert "writes faster than reads" in f.sources["write_cache_bytes"]
    assert any(m["parameter"] == "drain_mib_per_s" for m in f.not_identified)


@pytest.fixture(scope="module")
def suite_holdout():
    ws = _suite()
    return ws, holdout(ws)


def test_holdout_names_the_parameters_a_capture_alone_identifies(suite_holdout):
    h = suite_holdout[1]
    rows = {r["workload"]: r for r in h["captures"]}
    assert rows["read-128k-qd16"]["lost"] == ["max_mib_per_s"]
    # g(2) needs depth 2 and two deeper depths; without QD32, QD2 and QD4 place a knee of at most 4
    assert rows["randread-4k-qd2"]["lost"] == rows["randread-4k-qd4"]["lost"] == ["read_gain_at_2"]
    assert "read_gain_at_2" in rows["randread-4k-qd32"]["lost"]
    assert rows["randread-32k-qd8"]["lost"] == ["transfer_overlap"]
    assert rows["randread-32k-qd1"]["lost"] == ["read_size_exponent"]  # two read sizes make a line
    assert rows["randrw50-4k-qd16"]["lost"] == []  # spanned by the rest: predicted from them
    assert abs(rows["randrw50-4k-qd16"]["iops_error_pct"]) < 3
    assert h["covered_captures"] >= 1 and h["covered_mean_abs_iops_error_pct"] < 3
    assert h["mean_abs_iops_error_pct"] == pytest.approx(
        sum(abs(r["iops_error_pct"]) for r in h["captures"]) / len(h["captures"]))
    with pytest.raises(ValueError, match="at least 2 captures"):
        holdout(_suite()[:1])


def test_holdout_reports_progress_and_reuses_the_full_fit():
    """--holdout counts its fits (one per capture left out) and, given the fit on all captures,
    does not make it again: the same result."""
    sub = [w for w in _suite() if w.iodepth == 1]
    calls = []
    h = holdout(sub, full_fit=fit(sub), progress=lambda done, n: calls.append((done, n)))
    assert calls == [(i, len(sub)) for i in range(len(sub) + 1)]
    assert h == holdout(sub)


def test_a_calibration_is_kept_and_loaded_into_the_warehouse(data_dir, suite_holdout):
    import duckdb

    from pipelines.device_store import list_calibrations, store_calibration
    from pipelines.load import load

    ws, h = suite_holdout
    f = fit(ws)
    f.holdout = h
    path = store_calibration(data_dir, f)
    assert path.name == f.calibration_id and f.calibration_id.startswith("cal-")
    assert sorted(p.name for p in path.iterdir()) == ["calibration.parquet", "holdout.parquet", "manifest.json"]
    assert [c["calibration_id"] for c in list_calibrations(data_dir)] == [f.calibration_id]
    store_calibration(data_dir, f)  # the same captures again: replaced, not a second one
    assert len(list_calibrations(data_dir)) == 1
    load(data_dir)
    con = duckdb.connect(str(data_dir / "tiercast.duckdb"), read_only=True)
    [c] = con.sql("SELECT * FROM device_calibrations").pl().iter_rows(named=True)
    assert c["calibration_id"] == f.calibration_id and c["n_captures"] == len(ws) == 12
    assert c["parallel_exponent"] == pytest.approx(f.params["parallel_exponent"])
    assert c["holdout_mean_abs_iops_error_pct"] == pytest.approx(f.holdout["mean_abs_iops_error_pct"])
    assert c["not_identified"] == "write_cache_bytes"
    rows = con.sql("SELECT * FROM device_calibration_holdout ORDER BY capture_id").pl()
    assert rows.height == 12 and rows.filter(pl.col("workload") == "read-128k-qd16")["holdout_lost"].item() == \
        "max_mib_per_s"
    by = {r["capture_id"]: r for r in f.holdout["captures"]}
    for r in rows.iter_rows(named=True):
        assert r["iops_holdout_error_pct"] == pytest.approx(by[r["capture_id"]]["iops_error_pct"])


# ---- the suite's refusals --------------------------------------------------------------------
def test_suite_refuses_a_block_device_with_a_file_system(monkeypatch, tmp_path):
    dev = tmp_path / "sdz"
    dev.write_text("")
    monkeypatch.setattr(suite, "is_block_device", lambda p: p == dev)
    monkeypatch.setattr(suite, "filesystem_on", lambda d: "ext4")
    with pytest.raises(ValueError, match=r"sdz is a block device holding a file system \(ext4\).*--i-know"):
        suite.resolve_target(dev, 64 * MIB, i_know=False)
    assert suite.resolve_target(dev, 64 * MIB, i_know=True) == (dev, True, False)
    monkeypatch.setattr(suite, "filesystem_on", lambda d: None)
    assert suite.resolve_target(dev, 64 * MIB, i_know=False) == (dev, True, False)
    assert suite.resolve_target(tmp_path, 64 * MIB, False) == (tmp_path / suite.SUITE_FILE, False, True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        suite.resolve_target(tmp_path / "no" / "f", 64 * MIB, False)


def test_suite_options_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="--job-seconds must be at least 3"):
        suite.run_suite(tmp_path, tmp_path, job_seconds=2, fio="no-such-fio")
    with pytest.raises(ValueError, match="--size must be at least 16 MiB"):
        suite.run_suite(tmp_path, tmp_path, size_bytes=1 << 20, fio="no-such-fio")
    with pytest.raises(LookupError, match="apt-get install fio sysstat"):
        suite.run_suite(tmp_path, tmp_path, fio="no-such-fio")
    from pipelines.cli import app

    r = CliRunner().invoke(app, ["calibrate-suite", "--target", str(tmp_path), "--job-seconds", "2"])
    assert r.exit_code == 2 and "--job-seconds" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_suite_default_fits_two_minutes():
    """12 jobs of 7 s plus ~2 s each for iostat's last report, ingest and the file's layout (10 jobs of
    8 s took 100.4 s here): under 2 minutes."""
    assert len(suite.JOBS) * (suite.DEFAULT_JOB_S + 2) <= 120
    kinds = {(rw, depth > 1) for _, rw, _, depth, _ in suite.JOBS}
    assert {("randread", False), ("randread", True), ("randwrite", False), ("randwrite", True),
            ("read", False), ("write", False), ("randrw", True)} <= kinds
    assert all(int(bs.rstrip("k")) >= 128 for _, rw, bs, _, _ in suite.JOBS if rw in ("read", "write"))


# ---- live: this machine's disk ----------------------------------------------------------------
MISSING = missing_tools()
#: workloads the suite does not run: (name, rw, bs, iodepth, rwmixread)
HELD_OUT = (("randread-4k-qd8", "randread", "4k", 8, None), ("randread-16k-qd2", "randread", "16k", 2, None),
            ("randrw70-4k-qd4", "randrw", "4k", 4, 70), ("read-64k-qd1", "read", "64k", 1, None))
#: the issue's bar, held on each held-out workload: IOPS within 15 % of fio's, mean latency within 20 %
IOPS_TOL, LAT_TOL = 0.15, 0.20
#: The same fio job on this 2-core VM moves from run to run by more than the bar at times (64 KiB QD1
#: reads: 10,014 and 6,867 IOPS in one CI run; 16 KiB QD2 reads 14,060 in one run of this test and
#: 22,105 in the next, 2026-11-27), and the host's other tenants slow it for seconds at a time (a 70/30
#: mix at QD4 at 16,000 IOPS for 1.5 s, then 35,000, inside one 3 s job). So each held-out workload
#: runs before, between and after the suite's two rounds, and the median run is the reference. When
#: those runs themselves disagree by more than the IOPS bar (``spread``), fio cannot tell a 15 % error
#: from its own noise: the workload runs ``EXTRA_RUNS`` more times (a rule on fio's runs alone, never
#: on the model's error), the reference is the median of five and the spread that of their middle
#: three. A workload still spread wider than the bar (or beyond ``MAX_RERUN``) is held to ``EACH_TOL``
#: (it fails a calibration as poor as one QD1 capture's: -75 % IOPS at QD8, -47 % for the mix) and the
#: table says so.
NOISY_SPREAD = 1 + IOPS_TOL
EXTRA_RUNS = 2
#: at most this many workloads re-run (the widest spread first): ~15 s more, the test within 3 minutes
MAX_RERUN = 2
EACH_TOL = 0.40
#: the issue's bar on the mean |error| of the four as well, whatever their spread
MEAN_IOPS_TOL, MEAN_LAT_TOL = IOPS_TOL, LAT_TOL
JOB_S = 3  # the suite's (calibrate-suite's least: two whole iostat intervals in a depth-1 job)
HELD_OUT_JOB_S = 2  # 12 held-out runs, each compared as the median of three: 12 s less, and the test in 3 minutes
SUITE_ROUNDS = 2  # each held-out workload runs before, between and after them: SUITE_ROUNDS + 1 times


def median_run(runs: list) -> object:
    """The run of the middle IOPS (of an odd number of runs): its IOPS and latency belong together."""
    return sorted(runs, key=lambda w: w.iops)[len(runs) // 2]


def spread(runs: list) -> float:
    """Fastest / slowest IOPS of the runs, the extremes of five or more left out (one each side)."""
    iops = sorted(w.iops for w in runs)
    if len(iops) >= 5:
        iops = iops[1:-1]
    return iops[-1] / iops[0]


class _Run:
    def __init__(self, iops):
        self.iops = iops


def test_median_run_ignores_one_disturbed_run():
    runs = [_Run(35_000), _Run(16_000), _Run(36_000)]
    assert median_run(runs).iops == 35_000


def test_spread_of_three_runs_and_of_the_middle_three_of_five():
    three = [_Run(10_380), _Run(9_396), _Run(12_229)]  # 64 KiB QD1 reads in one run of this test
    assert spread(three) == pytest.approx(12_229 / 9_396) and spread(three) > NOISY_SPREAD
    five = three + [_Run(10_500), _Run(10_900)]
    assert spread(five) == pytest.approx(10_900 / 10_380) and spread(five) <= NOISY_SPREAD
    assert median_run(five).iops == 10_500


@pytest.mark.serial  # device throughput is load sensitive: nothing else may share the disk
def test_suite_calibration_predicts_workloads_it_did_not_run(blockdir, data_dir, tmp_path):
    """calibrate-suite (3 s jobs, 64 MiB), calibrate from its captures, then four workloads outside
    the suite captured and replayed (their own fio traces, closed loop at their iodepth) through the
    scenario: IOPS within 15 % of fio's and mean latency within 20 % on each workload whose fio runs
    agree within 15 % (``spread``; the others within 40 %), and 15 / 20 % on the mean |error| of the
    four; the table is printed for the record. It takes 157-172 s here (two workloads re-run at most;
    the issue asks 3 minutes at most; no timed assertion: the note has the figure).

    The other developers' and tests' load on this 2-core VM moves its disk: the same 3 s fio job run
    back to back varies by up to +-20 %, deep queues more (README). So the suite runs twice and the four
    held-out workloads before, between and after (each compared as its median run, replayed from that
    run's trace; the load drifts through calibration and held-out runs alike). The fit sees the suite's
    captures only."""
    require(not MISSING, f"needs {' and '.join(MISSING)}: sudo apt-get install fio sysstat (.ci/run does)")
    from pipelines.calibrate_suite import job_text
    from pipelines.capture import capture
    from pipelines.catalog import find_trace
    from pipelines.cli import app
    from pipelines.device_calibration import workload_of
    from pipelines.replay import replay_frames
    from pipelines.simulate import read_frames
    from replay.scenario import load

    t0 = time.monotonic()
    target = blockdir / "held-out.dat"
    caps, held, suite_s = [], {j[0]: [] for j in HELD_OUT}, 0.0
    measured = {j[0]: [] for j in HELD_OUT}

    def held_out_round(jobs=HELD_OUT):
        for job in jobs:
            jf = tmp_path / f"{job[0]}.fio"
            jf.write_text(job_text(*job, str(target), 64 * MIB, HELD_OUT_JOB_S, False))
            c = capture(jf, data_dir, validate="off")
            assert c.fio_returncode == 0, c.warnings
            held[job[0]].append(c)
            measured[job[0]].append(workload_of(data_dir, c.capture_id, with_host=False))

    held_out_round()
    for _ in range(SUITE_ROUNDS):
        t1 = time.monotonic()
        r = CliRunner().invoke(app, ["calibrate-suite", "--target", str(blockdir), "--job-seconds", str(JOB_S),
                                     "--size", "64MiB", "--data-dir", str(data_dir), "--json"])
        assert r.exit_code == 0, r.output
        s = json.loads(r.stdout)
        assert [j["job"] for j in s["jobs"]] == [j[0] for j in suite.JOBS] and s["size_bytes"] == 64 * MIB
        assert not (blockdir / suite.SUITE_FILE).exists()  # the suite removes the file it made
        caps += s["captures"]
        suite_s += time.monotonic() - t1
        held_out_round()
    noisy = sorted((job for job in HELD_OUT if spread(measured[job[0]]) > NOISY_SPREAD),
                   key=lambda job: -spread(measured[job[0]]))[:MAX_RERUN]
    for _ in range(EXTRA_RUNS):
        held_out_round(noisy)
    target.unlink(missing_ok=True)

    scen = tmp_path / "device.toml"
    r = CliRunner().invoke(app, ["calibrate", *(a for c in caps for a in ("--measured", c)),
                                 "--scenario-out", str(scen), "--data-dir", str(data_dir), "--json"])
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)
    assert [w["capture_id"] for w in cal["workloads"]] == caps  # the suite's captures, no held-out one
    text = scen.read_text()
    assert all(f"# not identified: {m['parameter']} = default" in text for m in cal["not_identified"])
    sc = load(scen)

    rows = []
    for name, runs in held.items():
        ws = measured[name]
        mid = median_run(ws)
        trace = find_trace(data_dir, next(iter(runs[ws.index(mid)].traces.values())))
        run = replay_frames(read_frames(trace), sc.with_replay(outstanding=ws[0].iodepth), trace.trace_id).summary
        rows.append((name, mid.iops, run["iops"], mid.lat_mean_ms, run["latency_mean_ms"], [w.iops for w in ws],
                     spread(ws)))
    table = "\n".join(f"{n:18s} IOPS fio {fi:9,.0f} model {mi:9,.0f} ({100 * (mi / fi - 1):+5.1f} %)  latency "
                      f"fio {fl * 1e3:7.1f} us model {ml * 1e3:7.1f} us ({100 * (ml / fl - 1):+5.1f} %)  held to "
                      + ("15 / 20 %" if sp <= NOISY_SPREAD else f"40 % (fio runs spread {sp:.2f}x)") + "  runs "
                      + " / ".join(f"{x:,.0f}" for x in each) for n, fi, mi, fl, ml, each, sp in rows)
    fitted = {k: v for k, v in cal["params"].items() if not k.startswith("_")}
    print(f"\n{json.dumps(fitted)}\nsuite {suite_s:.0f} s (two rounds), test {time.monotonic() - t0:.0f} s\n{table}")
    for n, fi, mi, fl, ml, _, sp in rows:
        iops_tol, lat_tol = (IOPS_TOL, LAT_TOL) if sp <= NOISY_SPREAD else (EACH_TOL, EACH_TOL)
        assert abs(mi / fi - 1) <= iops_tol and abs(ml / fl - 1) <= lat_tol, f"{n}\n{table}"
    assert sum(abs(mi / fi - 1) for _, fi, mi, _, _, _, _ in rows) / len(rows) <= MEAN_IOPS_TOL, table
    assert sum(abs(ml / fl - 1) for _, _, _, fl, ml, _, _ in rows) / len(rows) <= MEAN_LAT_TOL, table
