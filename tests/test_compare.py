"""compare-measured on a constructed capture (hand-written iostat and fio JSON and a fio latency
log, ingested by the real readers) and a hand-built replay run, with every error worked out
below; plus calibration from that capture (host stack time from fio)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.calibrate import calibrate, iostat_phase_ns
from pipelines.capture import captures_root
from pipelines.catalog import write_json_atomic
from pipelines.cli import app
from pipelines.compare import compare_and_save, compare_measured, fio_job_start_ns
from pipelines.ingest import ingest_file
from pipelines.ingest_logs import ingest_log_file
from pipelines.load import load, query
from pipelines.replay import run_paths
from pipelines.report import write_report
from replay.scenario import loads

MIDNIGHT = datetime(2026, 1, 1, tzinfo=UTC)
MS = int(MIDNIGHT.timestamp() * 1000)
CAPTURE_ID = "20260101T000000Z-c0ffee"
RUN_ID = "feedc0de00000001"

# iostat of sdz, one report per second at whole seconds + 0.25 s (started_at .250):
# (r/s, r_await ms, aqu-sz); rkB/s = 4 x r/s. sdy stays idle.
SDZ = [(0, 0.0, 0.0), (1200, 2.00, 2.46), (2500, 2.60, 6.50), (5000, 5.00, 25.00), (100, 1.00, 0.10), (0, 0.0, 0.0)]


def _disk(name: str, r: float, r_await: float, aqu: float) -> str:
    return (f'{{"disk_device": "{name}", "r/s": {r:.2f}, "w/s": 0.00, "d/s": 0.00, "f/s": 0.00, "rkB/s": {4 * r:.2f}, '
            f'"wkB/s": 0.00, "dkB/s": 0.00, "rrqm/s": 0.00, "wrqm/s": 0.00, "drqm/s": 0.00, "rrqm": 0.00, '
            f'"wrqm": 0.00, "drqm": 0.00, "r_await": {r_await:.2f}, "w_await": 0.00, "d_await": 0.00, '
            f'"f_await": 0.00, "rareq-sz": {4.0 if r else 0.0:.2f}, "wareq-sz": 0.00, "dareq-sz": 0.00, '
            f'"aqu-sz": {aqu:.2f}, "util": {min(100.0, aqu * 100):.2f}}}')


def iostat_json(reports: list[tuple]) -> str:
    """sysstat 12's -o JSON layout (one disk per line), reports at 00:00:01, :02, ..."""
    stats = []
    for i, (r, aw, q) in enumerate(reports):
        ts = (MIDNIGHT + timedelta(seconds=i + 1)).strftime("%Y-%m-%dT%H:%M:%S+0000")
        stats.append('\t\t\t\t{\n'
                     f'\t\t\t\t\t"timestamp": "{ts}",\n'
                     '\t\t\t\t\t"avg-cpu":  {"user": 1.00, "nice": 0.00, "system": 1.00, "iowait": 0.00, '
                     '"steal": 0.00, "idle": 98.00},\n'
                     '\t\t\t\t\t"disk": [\n'
                     f'\t\t\t\t\t\t{_disk("sdy", 0, 0, 0)},\n\t\t\t\t\t\t{_disk("sdz", r, aw, q)}\n'
                     '\t\t\t\t\t]\n\t\t\t\t}')
    return ('{"sysstat": {\n\t"hosts": [\n\t\t{\n\t\t\t"nodename": "h", "sysname": "Linux", "release": "6.1", '
            '"machine": "x86_64", "number-of-cpus": 2, "date": "2026-01-01",\n\t\t\t"statistics": [\n\n'
            + ",\n".join(stats) + "\n\t\t\t]\n\t\t}\n\t]\n}}\n")


def _lat(mean_ns: float) -> dict:
    return {"min": 1000, "max": 9_000_000, "mean": mean_ns, "stddev": 1.0, "N": 8000}


def fio_doc(extra_job: dict | None = None) -> dict:
    """fio 3.33 JSON: one random-read job of 8000 I/Os at 2000 IO/s, 8.192 MB/s, mean latency
    2 ms; the report written at 00:00:04.749, 4000 ms after the job's epoch (00:00:00.749)."""
    rd = {"io_bytes": 8000 * 4096, "io_kbytes": 32000, "bw_bytes": 8_192_000, "bw": 8000, "iops": 2000.0,
          "runtime": 4000, "total_ios": 8000, "short_ios": 0, "drop_ios": 0,
          "slat_ns": _lat(0.0), "clat_ns": _lat(1_990_000.0), "lat_ns": _lat(2_000_000.0)}
    wr = {**{k: 0 for k in rd if not k.endswith("_ns")}, "slat_ns": _lat(0), "clat_ns": _lat(0), "lat_ns": _lat(0)}
    job = {"jobname": "rr", "groupid": 0, "error": 0, "job_runtime": 4000, "elapsed": 5,
           "job options": {"rw": "randread", "bs": "4k", "iodepth": "4", "ioengine": "libaio", "direct": "1"},
           "read": rd, "write": wr, **(extra_job or {})}
    return {"fio version": "fio-3.33", "timestamp": (MS + 4749) // 1000, "timestamp_ms": MS + 4749,
            "time": "Thu Jan  1 00:00:04 2026", "jobs": [job]}


# fio's per-I/O log (ns, with prio): the first I/O completes at 2 ms after 1 ms, so trace time 0
# is fio time 1 ms: the trace starts at 00:00:00.749 + 0.001 = 00:00:00.750.
LAT_LOG = "2, 1000000, 0, 4096, 0, 0\n3, 500000, 0, 4096, 4096, 0\n4, 500000, 0, 4096, 8192, 0\n"
TRACE_START = MIDNIGHT + timedelta(milliseconds=750)


def make_capture(data_dir: Path, reports=SDZ, doc: dict | None = None) -> dict:
    raw = captures_root(data_dir) / CAPTURE_ID / "raw"
    raw.mkdir(parents=True)
    (raw / "iostat.json").write_text(iostat_json(reports))
    (raw / "fio.json").write_text(json.dumps(doc or fio_doc()))
    (raw / "fio_lat.1.log").write_text(LAT_LOG)
    io = ingest_log_file(raw / "iostat.json", data_dir, fmt="iostat", options={"first_report": "interval"},
                         validate="off")
    fio = ingest_log_file(raw / "fio.json", data_dir, fmt="fio-json", validate="off")
    tr = ingest_file(raw / "fio_lat.1.log", data_dir, fmt="fio-trace", options={"fio_version": "fio-3.33"},
                     validate="off")
    man = {"capture_id": CAPTURE_ID, "started_at": (MIDNIGHT + timedelta(milliseconds=250)).isoformat(),
           "ended_at": (MIDNIGHT + timedelta(seconds=7)).isoformat(), "iostat_interval_s": 1, "devices": ["sdz"],
           "datasets": {"iostat": io.dataset_id, "fio": fio.dataset_id}, "traces": {"fio_lat.1.log": tr.trace_id},
           "versions": {"fio": "fio-3.33", "iostat": "sysstat version 12.6.1"}, "warnings": []}
    write_json_atomic(raw.parent / "capture.json", man)
    return man


def make_run(data_dir: Path, trace_id: str, run_id: str = RUN_ID) -> None:
    """A closed-loop run: model interval k (1 s from trace start) has 1000 (k + 1) requests of
    4 KiB at a mean latency of k + 1 ms; active from 0 to 4 s; 2500 IO/s, 10.24 MB/s, 2.5 ms."""
    p = run_paths(data_dir, run_id)
    vol = pl.DataFrame({"interval_start_ns": [k * 10**9 for k in range(4)],
                        "interval_end_ns": [(k + 1) * 10**9 for k in range(4)], "volume": ["job1"] * 4,
                        "requests": [1000 * (k + 1) for k in range(4)],
                        "bytes": [4096 * 1000 * (k + 1) for k in range(4)],
                        "latency_mean_ms": [float(k + 1) for k in range(4)], "run_id": [run_id] * 4})
    p["volume_intervals"].parent.mkdir(parents=True, exist_ok=True)
    vol.write_parquet(p["volume_intervals"])
    p["summary_json"].parent.mkdir(parents=True)
    write_json_atomic(p["summary_json"], {
        "run_id": run_id, "trace_id": trace_id, "scenario": "hand", "mode": "closed", "outstanding": 4,
        "first_arrival_ns": 0, "last_done_ns": 4 * 10**9, "iops": 2500.0, "mb_per_s": 10.24,
        "latency_mean_ms": 2.5})


@pytest.fixture
def pair(data_dir):
    cap = make_capture(data_dir)
    make_run(data_dir, cap["traces"]["fio_lat.1.log"])
    return cap


def by_end(r: dict) -> dict:
    return {i["interval_end"][11:23]: i for i in r["intervals"] if i["device"] == "sdz"}


def test_alignment_and_per_interval_errors(pair, data_dir):
    """Measured interval m covers [m + 0.25 - 1, m + 0.25) s after midnight; model interval k
    covers [0.75 + k, 1.75 + k). Interval 00:00:02.250 gets half of k=0 and half of k=1:
    500 + 1000 = 1500 requests at (500 x 1 + 1000 x 2) / 1500 = 1.6667 ms. Measured 1200 IO/s
    (> 1000: latency from aqu-sz 2.46 x 1000 / 1200 = 2.05 ms, not the printed 2.00): +25 %,
    -18.70 %. Ignoring the 0.25 s phase would give 750 + 500 = 1250 requests instead."""
    r = compare_measured(data_dir, RUN_ID[:6], CAPTURE_ID[:10])
    a = r["alignment"]
    assert a["trace_start"] == "2026-01-01T00:00:00.750+00:00" and a["anchor"] == "fio timestamp_ms - job_runtime"
    assert a["trace_start_ns"] == int(TRACE_START.timestamp()) * 10**9 + 750_000_000
    assert a["ts_origin_raw_ns"] == 1_000_000 and a["iostat_phase_ns"] == 250_000_000
    iv = by_end(r)
    assert list(iv) == ["00:00:01.250", "00:00:02.250", "00:00:03.250", "00:00:04.250", "00:00:05.250",
                        "00:00:06.250"]
    assert [iv[k]["coverage"] for k in iv] == [0.5, 1.0, 1.0, 1.0, 0.5, 0.0]
    assert [iv[k]["model_iops"] for k in iv] == pytest.approx([500, 1500, 2500, 3500, 2000, 0])
    m2, m3, m4 = iv["00:00:02.250"], iv["00:00:03.250"], iv["00:00:04.250"]
    assert m2["model_latency_mean_ms"] == pytest.approx(2500 / 1500)
    assert m2["measured_latency_mean_ms"] == pytest.approx(2.05)
    assert m2["iops_error_pct"] == pytest.approx(25.0)
    assert m2["latency_mean_ms_error_pct"] == pytest.approx(100 * (2500 / 1500 - 2.05) / 2.05)
    assert m2["model_mb_per_s"] == pytest.approx(1500 * 4096 / 1e6)
    assert m2["measured_mb_per_s"] == pytest.approx(1200 * 4 * 1024 / 1e6)
    assert (m3["iops_error_pct"], m3["latency_mean_ms_error_pct"]) == pytest.approx((0.0, 0.0))
    assert m4["iops_error_pct"] == pytest.approx(-30.0)
    assert m4["latency_mean_ms_error_pct"] == pytest.approx(100 * (12500 / 3500 - 5.0) / 5.0)
    assert [iv[k]["scored"] for k in iv] == [False, True, True, True, False, False]


def test_overall_errors_over_scored_intervals(pair, data_dir):
    """Scored: the three whole intervals. IOPS errors +25, 0, -30: MAPE 18.33, bias -1.67,
    means 2500 vs 2900 (-13.79 %). Latency -18.70, 0, -28.57: I/O-weighted 21500 / 7500 =
    2.8667 ms vs (2460 + 6500 + 25000) / 8700 = 3.9034 ms."""
    d = compare_measured(data_dir, RUN_ID, CAPTURE_ID)["devices"]["sdz"]
    assert d["volumes"] == ["job1"] and (d["intervals"], d["scored_intervals"]) == (6, 3)
    assert (d["model_only_intervals"], d["idle_intervals"]) == (0, 0)
    assert d["measured_ios_unscored"] == pytest.approx(100) and d["model_requests_unscored"] == pytest.approx(2500)
    io = d["iops"]
    assert io["mape_pct"] == pytest.approx(55 / 3) and io["bias_pct"] == pytest.approx(-5 / 3)
    assert (io["model_mean"], io["measured_mean"]) == pytest.approx((2500, 2900))
    assert io["total_error_pct"] == pytest.approx(100 * (2500 - 2900) / 2900)
    assert d["mb_per_s"]["mape_pct"] == pytest.approx(55 / 3)
    e2, e4 = 100 * (2500 / 1500 - 2.05) / 2.05, 100 * (12500 / 3500 - 5.0) / 5.0
    lat = d["latency_mean_ms"]
    assert lat["mape_pct"] == pytest.approx(-(e2 + e4) / 3) and lat["bias_pct"] == pytest.approx((e2 + e4) / 3)
    assert (lat["model_mean"], lat["measured_mean"]) == pytest.approx((21500 / 7500, 33960 / 8700))


def test_intervals_without_io_and_partial_coverage(pair, data_dir):
    """min_coverage 0.5 scores the half-covered edges too: 00:00:01.250 has no measured I/O
    (model 500: not a percentage, counted as model-only), 00:00:05.250 measured 100 IO/s at
    1 ms against the model's 2000 at 4 ms: +1900 %, +300 %."""
    r = compare_measured(data_dir, RUN_ID, CAPTURE_ID, min_coverage=0.5)
    iv, d = by_end(r), r["devices"]["sdz"]
    assert iv["00:00:01.250"]["scored"] and iv["00:00:01.250"]["iops_error_pct"] is None
    assert iv["00:00:01.250"]["latency_mean_ms_error_pct"] is None
    assert iv["00:00:05.250"]["iops_error_pct"] == pytest.approx(1900.0)
    assert iv["00:00:05.250"]["latency_mean_ms_error_pct"] == pytest.approx(300.0)
    assert (d["scored_intervals"], d["model_only_intervals"], d["iops"]["scored_intervals"]) == (5, 1, 4)
    assert d["iops"]["bias_pct"] == pytest.approx((25 + 0 - 30 + 1900) / 4)


def test_against_fio_totals(pair, data_dir):
    f = compare_measured(data_dir, RUN_ID, CAPTURE_ID)["fio"]
    assert (f["iops"]["fio"], f["mb_per_s"]["fio"], f["latency_mean_ms"]["fio"]) == pytest.approx((2000, 8.192, 2.0))
    assert [f[m]["error_pct"] for m in ("iops", "mb_per_s", "latency_mean_ms")] == pytest.approx([25.0] * 3)


def test_device_mapping(pair, data_dir):
    r = compare_measured(data_dir, RUN_ID, CAPTURE_ID, devices=["job*=sdy"])
    d = r["devices"]["sdy"]
    assert list(r["devices"]) == ["sdy"] and d["iops"]["scored_intervals"] == 0 and d["model_only_intervals"] == 3
    with pytest.raises(LookupError, match="device 'sdq' is not in the capture's iostat rows; devices present: sdy, sdz"):
        compare_measured(data_dir, RUN_ID, CAPTURE_ID, devices=["sdq"])
    with pytest.raises(LookupError, match="no volume of the run matches 'vol9'; volumes: job1"):
        compare_measured(data_dir, RUN_ID, CAPTURE_ID, devices=["vol9=sdz"])
    with pytest.raises(ValueError, match="min-coverage"):
        compare_measured(data_dir, RUN_ID, CAPTURE_ID, min_coverage=0)


def test_errors_name_what_is_missing(pair, data_dir, tmp_path):
    with pytest.raises(LookupError, match="no replay run 'ffff'"):
        compare_measured(data_dir, "ffff", CAPTURE_ID)
    with pytest.raises(LookupError, match="no capture 'nope'"):
        compare_measured(data_dir, RUN_ID, "nope")
    # a run of a trace that is not the capture's and has no absolute clock: nothing to align by
    other = tmp_path / "other_lat.1.log"
    other.write_text("5, 1000, 1, 4096, 0, 0\n")
    t = ingest_file(other, data_dir, fmt="fio-trace", options={"fio_version": "fio-3.33"}, validate="off")
    make_run(data_dir, t.trace_id, run_id="feedc0de00000002")
    with pytest.raises(ValueError, match=f"trace {t.trace_id} is not one of capture {CAPTURE_ID}'s traces"):
        compare_measured(data_dir, "feedc0de00000002", CAPTURE_ID)


def test_fio_job_start_anchor(tmp_path):
    """fio >= 3.36 writes the job's epoch as job_start (ms, CLOCK_REALTIME): used as is."""
    p = tmp_path / "fio.json"
    p.write_text("fio: some text before\n" + json.dumps(fio_doc({"job_start": MS + 700})))
    assert fio_job_start_ns(p, 1) == ((MS + 700) * 10**6, "fio job_start")
    p.write_text(json.dumps(fio_doc()))
    assert fio_job_start_ns(p, 1) == ((MS + 749) * 10**6, "fio timestamp_ms - job_runtime")
    with pytest.raises(ValueError, match="has 1 job"):
        fio_job_start_ns(p, 2)


def test_cli_compare_measured(pair, data_dir):
    r = CliRunner().invoke(app, ["compare-measured", RUN_ID, CAPTURE_ID, "--data-dir", str(data_dir), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["devices"]["sdz"]["iops"]["mape_pct"] == pytest.approx(55 / 3)
    t = CliRunner().invoke(app, ["compare-measured", RUN_ID, CAPTURE_ID, "--data-dir", str(data_dir)])
    assert t.exit_code == 0, t.output
    text = " ".join(t.stdout.split())  # the console wraps long lines
    assert "trace starts 2026-01-01T00:00:00.750+00:00 (fio timestamp_ms - job_runtime)" in text
    assert "whole seconds + 0.250 s" in text and "vs fio: IOPS model 2,500.0000 fio 2,000.0000 (25.0 %)" in text
    assert "sdz IOPS 3 18.3 -1.7 -13.8" in text
    prose = ("run ", "trace starts", "* not scored", "vs fio", "note:", "comparison ")
    tables = [ln for ln in t.stdout.splitlines() if not ln.startswith(prose)]
    assert len(tables) >= 8 and max(map(len, tables)) <= 80  # an 80-column terminal: IOPS and latency, no MB/s
    head = next(ln for ln in tables if ln.startswith("interval end"))
    assert "IOPS model" in head and "ms err %" in head and "MB/s" not in head
    w = CliRunner().invoke(app, ["compare-measured", RUN_ID, CAPTURE_ID, "--data-dir", str(data_dir), "--wide"])
    head = next(ln for ln in w.stdout.splitlines() if ln.startswith("interval end"))
    assert "MB/s model" in head and "cover" in head


def test_calibrate_from_capture_separates_host_time(pair, data_dir):
    """fio ran from 00:00:00.749 to 00:00:04.749: the whole iostat intervals inside are those
    ending at :02.25, :03.25, :04.25, all queued (aqu-sz 2.46 and up). With every interval,
    only 00:00:05.250 has aqu-sz <= 1 (100 IO/s at 1 ms): S = 1 ms; fio saw 2 ms per I/O, so
    the host stack took 1000 us; fio's iodepth 4 becomes the scenario's closed loop."""
    with pytest.raises(ValueError, match=r"no low-queue-depth interval: all 3 intervals .* \(lowest 2.46\)"):
        calibrate(data_dir, CAPTURE_ID[:12])
    w = calibrate(data_dir, CAPTURE_ID, max_queue=30)
    assert w.window == {"kind": "fio job", "start": "2026-01-01T00:00:00.749+00:00",
                        "end": "2026-01-01T00:00:04.749+00:00", "anchor": "fio timestamp_ms - job_runtime",
                        "intervals": 3, "intervals_outside": 3}
    assert w.service_ms == pytest.approx((2460 + 6500 + 25000) / 8700) and w.basis == "read"
    assert w.host_overhead_us is None and "not above the device service time" in w.host_note
    c = calibrate(data_dir, CAPTURE_ID, window="all")
    assert c.device == "sdz" and c.source["kind"] == "capture" and c.source["tool_version"] == "sysstat version 12.6.1"
    assert (c.intervals, c.intervals_with_io, c.low_queue_intervals) == (6, 4, 1)
    assert c.service_ms == pytest.approx(1.0) and c.host_overhead_us == pytest.approx(1000.0)
    assert c.outstanding == 4 and c.fio["read_ios"] == 8000
    sc = loads(c.scenario_toml, "dev.toml")
    assert sc.controller.overhead_us == pytest.approx(1000.0)
    assert (sc.replay.mode, sc.replay.outstanding) == ("closed", 4)
    with pytest.raises(ValueError, match="--window job needs a capture"):
        calibrate(data_dir, c.source["iostat_dataset"], "sdz", window="job")


def test_iostat_phase_across_a_whole_second():
    """Started at .250: the first report (stamped 00:00:01) was taken at 1.250. Started at .999
    with a few ms of start-up: the first sample fell at 1.003 + 1 s and is stamped 00:00:02 -
    the phase is then -0.001 s, not +0.999 (which would put every interval a second late)."""
    s = int(MIDNIGHT.timestamp()) * 10**9
    assert iostat_phase_ns({"started_at": "2026-01-01T00:00:00.250000+00:00"}, s + 10**9) == 250_000_000
    late = {"started_at": "2026-01-01T00:00:00.999000+00:00", "iostat_interval_s": 1}
    assert iostat_phase_ns(late, s + 2 * 10**9) == -1_000_000
    assert iostat_phase_ns(late, s + 1 * 10**9) == 999_000_000


# --- the comparison kept, loaded and drawn ------------------------------------------------------


def make_loadable(data_dir: Path, trace_id: str) -> None:
    """:func:`make_run`'s run given what the warehouse needs of a run (its identity, a summary row)."""
    p = run_paths(data_dir, RUN_ID)
    pl.read_parquet(p["volume_intervals"]).with_columns(trace_id=pl.lit(trace_id), scenario=pl.lit("hand")).write_parquet(
        p["volume_intervals"])
    s = json.loads(p["summary_json"].read_text())
    write_json_atomic(p["summary_json"], {**s, "scenario_hash": "0" * 16, "model_version": "hand", "requests": 10_000})
    pl.DataFrame([{k: s[k] for k in ("run_id", "mode", "outstanding", "iops", "mb_per_s", "latency_mean_ms")}]
                 ).write_parquet(p["summary"])


def test_compare_measured_is_kept_and_loaded_as_printed(pair, data_dir):
    """What ``compare-measured --json`` printed is what the warehouse holds: per interval, and the
    hand-worked overall errors above (IOPS MAPE 55 / 3 %, bias -5 / 3 %; +25 % against fio)."""
    r = CliRunner().invoke(app, ["compare-measured", RUN_ID, CAPTURE_ID, "--data-dir", str(data_dir), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    saved = Path(doc["saved"])
    assert saved == data_dir / "results" / "model_vs_measured" / doc["comparison_id"]
    assert sorted(f.name for f in saved.iterdir()) == ["comparison.parquet", "intervals.parquet", "manifest.json",
                                                       "summary.parquet"]
    load(data_dir)
    con = duckdb.connect(str(data_dir / "tiercast.duckdb"), read_only=True)
    [c] = con.sql("SELECT * FROM measured_comparisons").pl().iter_rows(named=True)
    assert (c["comparison_id"], c["run_id"], c["capture_id"]) == (doc["comparison_id"], RUN_ID, CAPTURE_ID)
    assert (c["measured_dataset_id"], c["fio_dataset_id"]) == (pair["datasets"]["iostat"], pair["datasets"]["fio"])
    assert (c["interval_s"], c["min_coverage"], c["trace_start"]) == (1.0, 1.0, TRACE_START)
    rows = con.sql("SELECT * EXCLUDE (comparison_id) FROM model_vs_measured ORDER BY device, interval_end").pl()
    assert rows.height == len(doc["intervals"]) == 6
    for stored, printed in zip(rows.iter_rows(named=True), doc["intervals"], strict=True):
        assert stored["interval_end"] == datetime.fromisoformat(printed["interval_end"])
        for k, v in printed.items():
            if k != "interval_end":
                assert stored[k] == (pytest.approx(v) if isinstance(v, float) else v), k
    assert rows["measured_util_pct"].to_list() == [0.0, 100.0, 100.0, 100.0, 10.0, 0.0]  # iostat's %util
    s = {(src, m): row for src, m, *row in con.execute(
        "SELECT source, metric, scored_intervals, mape_pct, bias_pct, total_error_pct, model_mean, measured_mean "
        "FROM model_vs_measured_summary").fetchall()}
    assert s[("iostat", "iops")] == pytest.approx([3, 55 / 3, -5 / 3, 100 * (2500 - 2900) / 2900, 2500, 2900])
    assert s[("iostat", "mb_per_s")][1] == pytest.approx(55 / 3)
    assert s[("fio", "iops")][3:] == pytest.approx([25.0, 2500, 2000])
    con.close()
    # the same comparison again replaces it (one directory, nothing staged left); another
    # coverage rule is another comparison beside it
    again = compare_and_save(data_dir, RUN_ID, CAPTURE_ID)
    assert again["comparison_id"] == doc["comparison_id"]
    other = compare_and_save(data_dir, RUN_ID, CAPTURE_ID, min_coverage=0.5)
    assert other["comparison_id"] != doc["comparison_id"]
    assert sorted(p.name for p in saved.parent.iterdir()) == sorted([doc["comparison_id"], other["comparison_id"]])
    load(data_dir)
    n = query(data_dir, "SELECT comparison_id, count(*) n FROM model_vs_measured GROUP BY 1")
    assert dict(n.iter_rows()) == {doc["comparison_id"]: 6, other["comparison_id"]: 6}


def test_report_draws_model_vs_measured(pair, data_dir, tmp_path):
    """The chart's series are the warehouse rows; the caption says the errors worked out above."""
    from test_report import figures_of

    make_loadable(data_dir, pair["traces"]["fio_lat.1.log"])
    cid = compare_and_save(data_dir, RUN_ID, CAPTURE_ID)["comparison_id"]
    out = write_report(data_dir, tmp_path / "r.html", run_ids=[RUN_ID])
    fig = figures_of(out)["model_vs_measured"]
    con = duckdb.connect(str(data_dir / "tiercast.duckdb"), read_only=True)
    rows = con.sql("SELECT * FROM model_vs_measured WHERE comparison_id = ? ORDER BY interval_end", params=[cid]).pl()
    con.close()
    for col in ("model_iops", "measured_iops", "model_mb_per_s", "measured_mb_per_s", "model_latency_mean_ms",
                "measured_latency_mean_ms", "measured_util_pct"):
        [tr] = [t for t in fig["data"] if t["meta"] == [cid, "sdz", col]]
        assert tr["x"] == pytest.approx((rows["start_since_trace_ns"] / 1e9).to_list())
        assert tr["y"] == pytest.approx(rows[col].to_list(), nan_ok=True)
    assert tr["x"][0] == pytest.approx(-0.5)  # the first interval starts 00:00:00.250, the trace 00:00:00.750
    text = out.read_text()
    assert (f"hand vs iostat of capture {CAPTURE_ID} on sdz (3 scored intervals of 1 s): IOPS MAPE 18.3 % bias -1.7 %"
            in text) and "against fio&#x27;s totals IOPS +25.0 %" in text
    table = pl.read_csv(tmp_path / "r_tables" / "model_vs_measured.csv")
    assert table.filter((pl.col("source") == "iostat") & (pl.col("metric") == "iops"))["mape_pct"][0] == pytest.approx(
        55 / 3)
