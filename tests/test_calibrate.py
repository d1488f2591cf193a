"""Calibration from iostat rows: the estimator on synthetic rows with known answers, a real
sysstat 10 sample hand-checked from its text, errors for bad input, and the fragment / device
scenario loaded and replayed by the array model."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.calibrate import build_drive_class, calibrate, estimate, fragment_toml, scenario_toml
from pipelines.cli import app
from pipelines.ingest_logs import ingest_log_file
from pipelines.replay import replay_frames
from replay.scenario import load, loads
from schemas.measured import conform
from schemas.trace import conform as conform_trace

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rows(*specs: dict) -> pl.DataFrame:
    """iostat_device rows, one per spec (1 s apart), every other column null."""
    out = [{"host": "h", "run": 0, "report": i, "since_boot": False, "ts": T0 + timedelta(seconds=i + 1),
            "device": "sdx", "is_group": False, **s} for i, s in enumerate(specs)]
    return conform("iostat_device", pl.DataFrame(out, infer_schema_length=None))


def qd1_read(r: float, await_ms: float, aqu: float, **kw) -> dict:
    return {"r_per_s": r, "w_per_s": 0.0, "r_await_ms": await_ms, "w_await_ms": 0.0, "aqu_sz": aqu,
            "rkb_per_s": 4.0 * r, "wkb_per_s": 0.0, "rareq_sz_kb": 4.0, "util_pct": 50.0, **kw}


# --------------------------------------------------------------------------------------------
# the estimator, hand-worked
# --------------------------------------------------------------------------------------------
def test_io_weighted_mean_over_low_queue_intervals():
    """S = sum(await x IOPS) / sum(IOPS) over intervals with aqu-sz <= 1: (100 x 2 + 200 x 3 +
    300 x 4) / 600 = 3.3333 ms; the queued interval (aqu-sz 5, await 20 ms) stays out, the idle
    one counts as a row but weighs nothing. A plain mean of the awaits would say 3.0."""
    df = rows(qd1_read(100, 2.0, 0.2), qd1_read(200, 3.0, 0.6), qd1_read(300, 4.0, 1.0),
              qd1_read(400, 20.0, 5.0), qd1_read(0, 0.0, 0.0))
    c = estimate(df, "sdx")
    assert c.service_ms == pytest.approx(2000 / 600)
    assert (c.intervals, c.intervals_with_io, c.low_queue_intervals, c.little_intervals) == (5, 4, 3, 0)
    assert c.service_ms_read == pytest.approx(2000 / 600) and c.service_ms_write is None
    assert c.request_kb == 4.0 and c.interval_s == 1.0
    # ssd: planning_iops = 1000 / (S - 4 KiB + 8 KiB of transfer at 2000 MB/s)
    assert c.drive_class["planning_iops"] == pytest.approx(1000 / (2000 / 600 + 4096 / 2e6))
    assert c.max_iops["iops"] == 400 and c.max_iops["aqu_sz"] == 5.0


def test_little_law_replaces_coarse_await_above_1000_iops():
    """5000 IO/s print r_await 0.05 but aqu-sz 0.30: device time 300 ms/s, 0.06 ms per I/O. The
    500 IO/s interval keeps await (0.10 ms x 500 = 50 ms/s). S = 350 / 5500 ms."""
    c = estimate(rows(qd1_read(5000, 0.05, 0.30), qd1_read(500, 0.10, 0.05), qd1_read(800, 0.10, 0.08)), "sdx")
    assert c.service_ms == pytest.approx((300 + 50 + 80) / 6300)
    assert c.little_intervals == 1
    # other I/O in the interval is subtracted at its own await: 10 discards/s at 2 ms = 20 ms/s
    c = estimate(rows(qd1_read(5000, 0.05, 0.30, d_per_s=10.0, d_await_ms=2.0), qd1_read(500, 0.10, 0.05),
                      qd1_read(800, 0.10, 0.08)), "sdx")
    assert c.service_ms == pytest.approx((280 + 50 + 80) / 6300) and c.little_intervals == 1
    # ... unless it is half the device time or more (40 writes at 4 ms = 160 of 300 ms), or its
    # await is not printed: then reads come from r_await (0.05 x 5000 = 250 ms/s)
    for extra in ({"w_per_s": 40.0, "w_await_ms": 4.0}, {"d_per_s": 10.0}):
        c = estimate(rows(qd1_read(5000, 0.05, 0.30, **extra), qd1_read(500, 0.10, 0.05),
                          qd1_read(800, 0.10, 0.08)), "sdx", basis="read")
        assert c.service_ms == pytest.approx((250 + 50 + 80) / 6300) and c.little_intervals == 0


def test_read_write_asymmetry_and_basis():
    """100 reads/s at 1 ms and 50 writes/s at 4 ms: read 1, write 4, all (100 + 200) / 150 = 2,
    write/read 4."""
    mixed = {"r_per_s": 100.0, "w_per_s": 50.0, "r_await_ms": 1.0, "w_await_ms": 4.0, "aqu_sz": 0.3,
             "rkb_per_s": 800.0, "wkb_per_s": 3200.0, "rareq_sz_kb": 8.0, "wareq_sz_kb": 64.0}
    df = rows(mixed, mixed, mixed)
    c = estimate(df, "sdx")
    assert (c.service_ms_read, c.service_ms_write, c.service_ms) == pytest.approx((1.0, 4.0, 2.0))
    assert c.write_read_ratio == pytest.approx(4.0)
    assert c.request_kb == pytest.approx((100 * 8 + 50 * 64) / 150)
    w = estimate(df, "sdx", basis="write")
    assert w.service_ms == pytest.approx(4.0) and w.request_kb == pytest.approx(64.0)


def test_queue_gain_fitted_from_a_saturated_interval():
    """QD1 service 1 ms at 4 KiB; a saturated interval does 2000 IO/s at aqu-sz 8: per I/O
    0.5 ms - transfer against 1 ms - transfer of positioning -> gain 2.004 = 8^beta."""
    x = 4096 / 2e6
    df = rows(qd1_read(500, 1.0, 0.5), qd1_read(600, 1.0, 0.6), qd1_read(2000, 4.0, 8.0, util_pct=100.0))
    c = estimate(df, "sdx")
    assert c.queue_gain_exponent == pytest.approx(math.log((1 - x) / (0.5 - x)) / math.log(8))
    assert c.queue_gain_note.startswith("fitted")
    unsat = estimate(rows(qd1_read(500, 1.0, 0.5), qd1_read(600, 1.0, 0.6), qd1_read(2000, 4.0, 8.0, util_pct=70.0)),
                     "sdx")
    assert unsat.queue_gain_exponent == 0.12 and "not identified" in unsat.queue_gain_note


def test_regression_cross_check_recovers_the_intercept():
    """await = 0.5 + 0.25 x aqu-sz exactly: the weighted line through the intervals meets 0.5 at
    an empty queue (the low-queue estimate also includes some queueing: it says more)."""
    df = rows(*[qd1_read(100 + 50 * i, 0.5 + 0.25 * q, q) for i, q in enumerate((0.1, 0.5, 1.0, 2.0))])
    c = estimate(df, "sdx")
    assert c.service_ms_regression == pytest.approx(0.5)
    assert c.service_ms > 0.5
    flat = estimate(rows(qd1_read(100, 1.0, 0.5), qd1_read(100, 1.0, 0.6), qd1_read(100, 1.0, 0.7)), "sdx")
    assert flat.service_ms_regression is None and "spans only 0.20" in flat.regression_note


def test_hdd_service_split_into_seek_rotation_transfer():
    """8 ms at 8 KiB on a 10k rpm disk at 150 MB/s: half rotation 3 ms, transfer 0.0546 ms, seek
    4.9454 ms; planning IOPS (8 KiB) = 1000 / 8 = 125."""
    df = rows(*[qd1_read(50, 8.0, 0.4, rareq_sz_kb=8.0, rkb_per_s=400.0)] * 3)
    c = estimate(df, "sdx", kind="hdd", rpm=10_000)
    assert c.drive_class["avg_seek_ms"] == pytest.approx(8 - 3 - 8192 / 150e3)
    assert c.drive_class["planning_iops"] == pytest.approx(125.0)
    with pytest.raises(ValueError, match=r"shorter than half a rotation at 7200 rpm \(4.17 ms\)"):
        estimate(rows(*[qd1_read(50, 3.0, 0.2)] * 3), "sdx", kind="hdd", rpm=7200)
    with pytest.raises(ValueError, match="needs --rpm"):
        estimate(df, "sdx", kind="hdd")


@pytest.mark.parametrize("df, kw, message", [
    (rows(qd1_read(100, 1.0, 0.1), qd1_read(100, 1.0, 0.1)), {},
     r"device 'sdx': 2 interval row\(s\) with I/O out of 2; calibration needs at least 3 \(--min-intervals\)"),
    (rows(qd1_read(100, 9.0, 3.2), qd1_read(100, 9.0, 4.0), qd1_read(100, 9.0, 5.0)), {},
     r"no low-queue-depth interval: all 3 intervals with I/O have aqu-sz > 1 \(lowest 3.20\)"),
    (rows(*[{"r_per_s": 10.0, "rkb_per_s": 40.0}] * 3), {}, r"no aqu-sz / avgqu-sz column: calibration needs the extended report \(iostat -x\)"),
    (rows(*[{"r_per_s": 10.0, "aqu_sz": 0.1}] * 3), {}, "no await columns"),
    (rows(*[qd1_read(100, 0.0, 0.0)] * 3), {}, r"service time rounds to 0 ms"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"basis": "write"}, r"no write I/O in the 3 low-queue-depth intervals"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"basis": "trim"}, "basis must be one of all, read, write"),
    (rows(*[qd1_read(1000, 0.01, 0.01)] * 3), {"transfer_mb_per_s": 100.0},
     r"shorter than transferring 4.0 KiB at 100 MB/s: give a larger --transfer-mb-per-s"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"kind": "hdd", "rpm": -1}, "--rpm is for --kind hdd, at least 1000"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"rpm": 7200}, "--rpm is for --kind hdd, at least 1000; got 7200 for ssd"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"max_queue": math.nan}, "--max-queue must be a finite number > 0"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"transfer_mb_per_s": math.inf},
     "--transfer-mb-per-s must be a finite number > 0"),
    (rows(*[qd1_read(100, 1.0, 0.1)] * 3), {"min_intervals": 0}, "--min-intervals must be >= 1, got 0"),
])
def test_bad_input_is_a_clear_error(df, kw, message):
    with pytest.raises(ValueError, match=message):
        estimate(df, "sdx", **kw)


# --------------------------------------------------------------------------------------------
# the fragment and the device scenario are what the array model accepts
# --------------------------------------------------------------------------------------------
def test_fragment_and_device_scenario_load_and_replay():
    """The device scenario validates, its drive class serves a 4 KiB read in the calibrated time,
    and a closed-loop QD1 replay of 4 KiB random reads answers in S (no cache hits, no host
    time without a capture): IOPS = 1 / S."""
    c = estimate(rows(qd1_read(2000, 0.25, 0.5), qd1_read(1800, 0.25, 0.45), qd1_read(1900, 0.25, 0.475)), "sdx")
    c.fragment_toml = fragment_toml(c)
    sc = loads(scenario_toml(c), "device.toml")
    dc = sc.drive_classes["sdx"]
    assert dc.latency_ms + 4096 / (dc.transfer_mb_per_s * 1e3) == pytest.approx(c.service_ms, rel=1e-5)
    assert sc.controller.overhead_us == 0 and sc.replay.mode == "open" and sc.replay.interval_ns == 100_000_000
    n = 4000
    rng = np.random.default_rng(7)
    df = conform_trace(pl.DataFrame({"ts_ns": np.arange(n) * 1_000_000, "volume": ["v"] * n, "op": ["read"] * n,
                                     "offset": rng.integers(0, 1 << 18, n) * 4096, "size": [4096] * n,
                                     "latency_ns": [None] * n, "src_line": np.arange(n)}))
    s = replay_frames([df], sc.with_replay(mode="closed", outstanding=1), total=n).summary
    assert s["latency_mean_ms"] == pytest.approx(c.service_ms, rel=1e-3)
    assert s["iops"] == pytest.approx(1000 / c.service_ms, rel=1e-3)
    assert s["read_hit_ratio"] < 0.01
    # the fragment alone drops into a preset: its RAID group now uses the calibrated class
    preset = load("vnx2-mcx").source
    text = open(preset).read().replace('drive_class = "sas10k"', 'drive_class = "sdx"') + "\n" + c.fragment_toml
    assert loads(text, "with-fragment.toml").drive_classes["sdx"].planning_iops == pytest.approx(
        c.drive_class["planning_iops"], rel=1e-5)


def test_build_drive_class_matches_scenario_formulas():
    for kind, rpm in (("ssd", None), ("hdd", 15_000)):
        d = build_drive_class("d", kind, 6.0, 65536, 200.0, 0.1, rpm)
        body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items())
        sc = loads(f"[drive_classes.d]\n{body}\n[[raid_groups]]\nname='g'\nlevel=0\nwidth=1\ndrive_class='d'\n"
                   "[[pools]]\nname='p'\nraid_groups=['g']\n")
        dc = sc.drive_classes["d"]
        fixed = dc.latency_ms if kind == "ssd" else dc.seek_ms + dc.half_rotation_ms
        assert fixed + 65536 / 200e3 == pytest.approx(6.0)


# --------------------------------------------------------------------------------------------
# real sample: pbench's sysstat 10 iostat -t -x -m -y 3 (RHEL 7)
# --------------------------------------------------------------------------------------------
PBENCH = ("iostat", "text-pbench", "pbench_iostat-2_rhel7_sysstat10.txt")


@pytest.fixture
def pbench(shared, data_dir):
    r = ingest_log_file(shared(*PBENCH), data_dir, options={"first_report": "interval"}, validate="off")
    return r.dataset_id


def test_real_sample_dm6_write_service(pbench, data_dir):
    """dm-6 in the file: 21 reports, 12 with writes (lines 37, 73, 109, 127, 145, 181, 217, 253,
    289, 307, 343, 379), w/s x w_await = 8.33 x 0.36 + 1.67 x 0.20 + 8.00 x 0.04 + 15.67 x 0.11 +
    3.33 x 0.10 (the rest print w_await 0.00) = 5.7095 ms over 72.02 writes/s -> 0.079277 ms;
    every aqu-sz prints 0.00 (low queue); mean request sum(w/s x avgrq-sz / 2) / sum(w/s) =
    722.7595 / 72.02 KiB (avgrq-sz is in sectors: 8.00 except 66.33 at line 181 and 33.70 at
    line 217); busiest: 22.67 w/s at 16:46:22 (line 127); no reads."""
    c = calibrate(data_dir, pbench[:8], "dm-6")
    assert c.source["kind"] == "measured" and c.source["iostat_dataset"] == pbench
    assert (c.intervals, c.intervals_with_io, c.low_queue_intervals) == (21, 12, 12)
    assert c.service_ms == pytest.approx(5.7095 / 72.02)
    assert c.service_ms_write == pytest.approx(5.7095 / 72.02) and c.service_ms_read is None
    assert c.write_ios_per_s_sum == pytest.approx(72.02) and c.request_kb == pytest.approx(722.7595 / 72.02)
    assert c.max_iops["iops"] == pytest.approx(22.67) and c.max_iops["ts"] == "2015-03-24T16:46:22+00:00"
    assert c.interval_s == 3.0 and c.little_intervals == 0
    req_bytes = 722.7595 / 72.02 * 1024
    assert c.drive_class["planning_iops"] == pytest.approx(1000 / (5.7095 / 72.02 - req_bytes / 2e6 + 8192 / 2e6))
    assert c.host_overhead_us is None and "not a capture" in c.host_note
    sc = loads(c.scenario_toml)
    assert sc.replay.interval_ns == 300_000_000 and sc.replay.mode == "open"
    # sda: 15 reports with writes, sum(w/s x w_await) = 6.33 x 0.05 + 13.00 x 0.23 + 2.00 x 0.50
    # = 4.3065 ms over 75.66 writes/s
    sda = calibrate(data_dir, pbench, "sda")
    assert sda.service_ms == pytest.approx(4.3065 / 75.66) and sda.intervals_with_io == 15
    assert sda.max_iops["iops"] == 13.0


def test_real_sample_errors(pbench, data_dir):
    with pytest.raises(LookupError, match=r"device 'sdz' is not in iostat dataset .*; devices present: dm-0, dm-1, "
                                          r"dm-2, dm-3, dm-4, dm-5, dm-6, sda, sdb, sdc, sdd, sde"):
        calibrate(data_dir, pbench, "sdz")
    # dm-4's 0.33 reads/s always print r_await 0.00: below iostat's resolution
    with pytest.raises(ValueError, match="read service time rounds to 0 ms"):
        calibrate(data_dir, pbench, "dm-4", basis="read")
    with pytest.raises(ValueError, match=r"'sdb'.*0 interval row\(s\) with I/O out of 21"):
        calibrate(data_dir, pbench, "sdb")
    with pytest.raises(ValueError, match="name the device with --device"):
        calibrate(data_dir, pbench)
    with pytest.raises(LookupError, match=r"'nope' is neither a capture .* iostat datasets: " + pbench):
        calibrate(data_dir, "nope", "sda")


def test_cli_calibrate(pbench, data_dir, tmp_path):
    frag, scen = tmp_path / "frag.toml", tmp_path / "dev.toml"
    r = CliRunner().invoke(app, ["calibrate", "--measured", pbench, "--device", "dm-6", "--name", "pbench_dm6",
                                 "--out", str(frag), "--scenario-out", str(scen), "--data-dir", str(data_dir)])
    assert r.exit_code == 0, r.output
    assert "[drive_classes.pbench_dm6]" in r.stdout and frag.read_text() in r.stdout
    assert "service 0.0793 ms (all) over 12 of 12 intervals" in r.stderr
    assert loads(scen.read_text(), str(scen)).drive_classes["pbench_dm6"].kind == "ssd"
    j = CliRunner().invoke(app, ["calibrate", "--measured", pbench, "--device", "dm-6", "--json",
                                 "--data-dir", str(data_dir)])
    assert json.loads(j.stdout)["service_ms"] == pytest.approx(5.7095 / 72.02)
    bad = CliRunner().invoke(app, ["calibrate", "--measured", pbench, "--device", "sdz", "--data-dir", str(data_dir)])
    assert bad.exit_code != 0 and "devices present" in str(bad.exception)


@pytest.mark.parametrize("args, message", [
    (["--kind", "hdd", "--rpm", "-1"], "Invalid value for '--rpm': must be an integer >= 1000, got -1"),
    (["--kind", "hdd", "--rpm", "0"], "Invalid value for '--rpm': must be an integer >= 1000, got 0"),
    (["--kind", "hdd", "--rpm", "999"], "Invalid value for '--rpm': must be an integer >= 1000, got 999"),
    (["--rpm", "7200"], "Invalid value for '--rpm': only with --kind hdd"),
    (["--kind", "hdd"], "Invalid value for '--rpm': --kind hdd needs it"),
    (["--kind", "tape"], "Invalid value for '--kind': must be one of ssd, hdd; got 'tape'"),
    (["--min-intervals", "0"], "Invalid value for '--min-intervals': must be an integer >= 1, got 0"),
    (["--min-intervals", "-1"], "Invalid value for '--min-intervals': must be an integer >= 1, got -1"),
    (["--max-queue", "0"], "Invalid value for '--max-queue': must be a number > 0, got 0"),
    (["--max-queue", "-0.5"], "Invalid value for '--max-queue': must be a number > 0, got -0.5"),
    (["--max-queue", "nan"], "Invalid value for '--max-queue': must be a finite number > 0, got nan"),
    (["--max-queue", "inf"], "Invalid value for '--max-queue': must be a finite number > 0, got inf"),
    (["--transfer-mb-per-s", "0"], "Invalid value for '--transfer-mb-per-s': must be a number > 0, got 0"),
    (["--transfer-mb-per-s", "-150"], "Invalid value for '--transfer-mb-per-s': must be a number > 0, got -150"),
    (["--transfer-mb-per-s", "inf"], "Invalid value for '--transfer-mb-per-s': must be a finite number > 0, got inf"),
    (["--transfer-mb-per-s", "nan"], "Invalid value for '--transfer-mb-per-s': must be a finite number > 0, got nan"),
    (["--basis", "trim"], "Invalid value for '--basis': must be one of auto, all, read, write; got 'trim'"),
    (["--window", "fio"], "Invalid value for '--window': must be one of auto, job, all; got 'fio'"),
])
def test_cli_calibrate_refuses_bad_option_values_before_any_work(args, message, tmp_path):
    """Refused when the options are read: the dataset id is never looked up (there is none), the
    data directory is not created, nothing is written; exit 2, one line naming the option."""
    frag, data = tmp_path / "frag.toml", tmp_path / "data"
    r = CliRunner().invoke(app, ["calibrate", "--measured", "nope", "--out", str(frag), "--data-dir", str(data),
                                 *args], handle_errors=True)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), r.stderr
    assert list(tmp_path.iterdir()) == []
