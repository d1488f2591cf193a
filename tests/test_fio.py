"""fio readers: every real sample (JSON 2.x/3.x, terse v3, logs, histogram logs) with exact
counts and hand-checked cells, JSON totals against the logs of the same run, units across
versions, the per-I/O log as a block trace, and malformed inputs."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import shared_path

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from traces.errors import TraceFormatError
from traces.fio import FioJsonReader, FioLogReader, FioTerseReader, FioTraceReader, plat_idx_to_val
from traces.measured import read_all


def _json(name):
    r = FioJsonReader()
    return r, read_all(r, shared_path("fio", "json", name))


def _log(name, **opts):
    r = FioLogReader(**opts)
    return r, read_all(r, shared_path("fio", "logs", name))


def _job(out, dir_="read", **where) -> dict:
    df = out.tables["fio_job"].filter(pl.col("dir") == dir_)
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1
    return df.row(0, named=True)


JSON_COUNTS = [
    ("fio-2.18_randread-01-01.json", {"fio_job": 2, "fio_percentile": 34, "fio_lat_bucket": 22, "fio_disk_util": 5}),
    ("fio-3.14_INTELD3S4610_randread-1-1.json",
     {"fio_job": 2, "fio_percentile": 34, "fio_lat_bucket": 32, "fio_disk_util": 1}),
    ("fio-3.1_PM883_randread-1-1.json", {"fio_job": 2, "fio_percentile": 34, "fio_lat_bucket": 32, "fio_disk_util": 1}),
    ("fio-3.33_write-64-1.json", {"fio_job": 2, "fio_lat_bucket": 32}),
    ("pbench_fio-3.19_fio-result.json",
     {"fio_job": 16, "fio_percentile": 272, "fio_lat_bucket": 256, "fio_disk_util": 1}),
    ("pkb_fio-2.17_hist_job.json", {"fio_job": 4, "fio_percentile": 72, "fio_lat_bucket": 44}),
]


@pytest.mark.parametrize("name,counts", JSON_COUNTS)
def test_json_samples_exact_counts(name, counts):
    _, out = _json(name)
    assert {t: df.height for t, df in out.tables.items()} == counts
    assert out.rejects == {}


def test_json_2x_hand_checked_and_converted():
    r, out = _json("fio-2.18_randread-01-01.json")
    row = _job(out)
    assert r.metadata["tool_version"] == "fio-2.18-59-g618e"
    assert (row["jobname"], row["rw"], row["bs_bytes"], row["iodepth"], row["numjobs"], row["ioengine"]) == (
        "random-io", "randread", 4096, 1, 1, "libaio")
    assert row["total_ios"] == 733 and row["runtime_ms"] == 10016
    assert row["io_bytes"] == 2932 * 1024 == 733 * 4096  # 2.x prints io_bytes in KiB
    assert row["clat_mean_ns"] == pytest.approx(13643.395634 * 1000)  # 2.x latencies in us
    assert row["clat_p99_ns"] == 23168 * 1000 and row["clat_p99_99_ns"] == 25216 * 1000
    assert row["slat_min_ns"] == 8000 and row["lat_max_ns"] == 25318 * 1000
    assert row["bw_bytes_per_s"] == 292 * 1024 and row["bw_mean_bytes_per_s"] == pytest.approx(292.8 * 1024)
    pct = out.tables["fio_percentile"].filter((pl.col("dir") == "read") & (pl.col("pct") == 50.0))
    assert pct["latency_ns"].to_list() == [13888 * 1000]
    # padding entries "0.00": 0 of fio 2.x are not percentiles
    assert out.tables["fio_percentile"]["pct"].min() == 1.0
    assert sorted(out.tables["fio_disk_util"]["name"].to_list())[0] == "md127"


def test_json_3x_hand_checked():
    _, out = _json("fio-3.1_PM883_randread-1-1.json")
    row = _job(out)
    assert row["total_ios"] == 383373 and row["io_bytes"] == 1570295808 == 383373 * 4096
    assert row["clat_mean_ns"] == pytest.approx(142840.671743)  # already ns
    assert row["iops"] == pytest.approx(6389.443509) and row["filename"] == "/dev/sdc"
    _, out = _json("fio-3.14_INTELD3S4610_randread-1-1.json")
    assert _job(out)["bw_bytes_per_s"] == json.loads(
        shared_path("fio", "json", "fio-3.14_INTELD3S4610_randread-1-1.json").read_text())["jobs"][0]["read"]["bw_bytes"]
    _, out = _json("pkb_fio-2.17_hist_job.json")
    w = _job(out, "write", job_index=1)
    assert w["total_ios"] == 24580 and w["io_bytes"] == 24580 * 16384 and w["bs_bytes"] == 16384
    _, out = _json("pbench_fio-3.19_fio-result.json")
    jobs = out.tables["fio_job"]
    assert jobs["iodepth"].unique().to_list() == [64] and jobs["numjobs"].unique().to_list() == [8]
    first = jobs.filter((pl.col("job_index") == 0) & (pl.col("dir") == "write")).row(0, named=True)
    assert first["total_ios"] == 8357485 and first["bs_bytes"] == 4096
    du = out.tables["fio_disk_util"].row(0, named=True)
    assert (du["name"], du["read_ios"], du["util_pct"]) == ("nvme8n1", 19294924, 100.0)


def test_json_failed_job_and_text_before_json_are_reported():
    r, out = _json("fio-3.33_write-64-1.json")
    assert out.tables["fio_job"]["error"].unique().to_list() == [22]
    assert out.tables["fio_job"]["total_ios"].sum() == 0
    assert r.metadata["failed_jobs"] == [{"doc": 0, "job": "1m", "error": 22}]
    assert any("failed with error 22" in w for w in r.warnings)
    assert out.skipped["text"] == 3 and r.metadata["messages"][0] == "fio: time_based requires a runtime/timeout setting"


def test_json_bom_progress_lines_and_concatenated_documents(tmp_path):
    a = shared_path("fio", "json", "fio-2.18_randread-01-01.json").read_text()
    b = shared_path("fio", "json", "fio-3.1_PM883_randread-1-1.json").read_text()
    progress = "Jobs: 1 (f=1): [r(1)][10.0%][r=292KiB/s][eta 00m:09s]\rJobs: 1 (f=1): [r(1)][20.0%][eta 00m:08s]\r"
    p = tmp_path / "both.json"
    p.write_text("\ufeff" + progress + "\n" + a + "\n" + progress + b + "\n")
    r = FioJsonReader()
    out = read_all(r, p)
    jobs = out.tables["fio_job"]
    assert jobs["doc"].unique().sort().to_list() == [0, 1] and r.metadata["documents"] == 2
    assert jobs.filter(pl.col("dir") == "read")["total_ios"].to_list() == [733, 383373]
    assert jobs.filter(pl.col("doc") == 1)["src_line"][0] == a.count("\n") + 3  # 2nd document's first line
    assert out.skipped["text"] == 4


def test_json_client_server_stats(tmp_path):
    """fio --client output keeps jobs under client_stats, one entry per host plus 'All clients'."""
    doc = json.loads(shared_path("fio", "json", "fio-3.1_PM883_randread-1-1.json").read_text())
    job = doc.pop("jobs")[0]
    doc["client_stats"] = [{**job, "hostname": "perf36"}, {**job, "jobname": "All clients", "hostname": "all"}]
    p = tmp_path / "client.json"
    p.write_text("hostname=perf36, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.1, flags=1\n" + json.dumps(doc))
    out = read_all(FioJsonReader(), p)
    reads = out.tables["fio_job"].filter(pl.col("dir") == "read")
    assert reads.select("hostname", "jobname").rows() == [("perf36", job["jobname"]), ("all", "All clients")]
    assert reads["total_ios"].to_list() == [383373, 383373] and out.skipped["text"] == 1


def test_json_plus_bins_3x_and_2x(tmp_path):
    doc = json.loads(shared_path("fio", "json", "fio-3.1_PM883_randread-1-1.json").read_text())
    doc["jobs"][0]["read"]["clat_ns"]["bins"] = {"120832": 5, "142336": 7, "999": 0}
    p = tmp_path / "plus.json"
    p.write_text(json.dumps(doc))
    bins = read_all(FioJsonReader(), p).tables["fio_clat_bins"]
    assert bins.select("latency_ns", "count").rows() == [(120832, 5), (142336, 7)]
    # fio 2.x json+ keys are bin indexes with the FIO_IO_U_PLAT_* layout beside them (values in us)
    doc2 = json.loads(shared_path("fio", "json", "fio-2.18_randread-01-01.json").read_text())
    doc2["jobs"][0]["read"]["clat"]["bins"] = {"FIO_IO_U_PLAT_BITS": 6, "FIO_IO_U_PLAT_VAL": 64,
                                               "FIO_IO_U_PLAT_NR": 1216, "100": 3, "700": 2}
    p.write_text(json.dumps(doc2))
    bins = read_all(FioJsonReader(), p).tables["fio_clat_bins"]
    assert bins.select("latency_ns", "count").rows() == [(100_000, 3), (int(plat_idx_to_val(np.array([700]))[0]) * 1000, 2)]


def test_plat_idx_to_val_matches_fio():
    # stat.c: indexes below 128 are exact; above, base + (k + 0.5) * 2^error_bits, truncated
    vals = plat_idx_to_val(np.array([0, 127, 128, 129, 191, 192, 1215, 1855]))
    assert vals.tolist() == [0, 127, 129, 131, 255, 258, 2**23 + int(63.5 * 2**17), 2**33 + int(63.5 * 2**27)]


def test_terse_v3_sample():
    r = FioTerseReader()
    out = read_all(r, shared_path("fio", "terse", "fio-2.1.2_terse_v3.out"))
    assert {t: df.height for t, df in out.tables.items()} == {
        "fio_job": 24, "fio_percentile": 408, "fio_lat_bucket": 264, "fio_disk_util": 12}
    # line 1: 3;fio-2.1.2;test-multi-file-io-4;0;0;52392;5208;651;10058;2;2593;20.060925;...;50.000000%=796;...
    row = _job(out, job_index=0)
    assert (row["jobname"], row["fio_version"], row["groupid"]) == ("test-multi-file-io-4", "fio-2.1.2", 0)
    assert row["io_bytes"] == 52392 * 1024 and row["bw_bytes_per_s"] == 5208 * 1024 and row["iops"] == 651.0
    assert row["runtime_ms"] == 10058 and row["slat_min_ns"] == 2000 and row["slat_mean_ns"] == pytest.approx(20060.925)
    assert row["clat_p50_ns"] == 796_000 and row["clat_p99_99_ns"] == 514048_000  # terse is in us
    w = _job(out, "write", job_index=0)
    assert w["io_bytes"] == 13080 * 1024 and w["iops"] == 162.0
    du = out.tables["fio_disk_util"].filter(pl.col("src_line") == 1).row(0, named=True)
    assert (du["name"], du["read_ios"], du["in_queue_ms"], du["util_pct"]) == ("vda", 135711, 948549, 99.12)
    assert r.metadata["tool_version"] == "fio-2.1.2"


LOG_COUNTS = [
    ("fio-2.18_randread-4k-01-01_bw.1.log", "2.18", 20), ("fio-2.18_randread-4k-01-01_clat.1.log", "2.18", 20),
    ("fio-2.18_randread-4k-01-01_iops.1.log", "2.18", 20), ("fio-2.18_randread-4k-01-01_lat.1.log", "2.18", 20),
    ("fio-2.18_randread-4k-01-01_slat.1.log", "2.18", 20),
    ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_bw.1.log", "3.1", 239),
    ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_clat.1.log", "3.1", 240),
    ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_iops.1.log", "3.1", 239),
    ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_lat.1.log", "3.1", 240),
    ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_slat.1.log", "3.1", 240),
    ("pbench_fio-3.7_perf36_fio_bw.1.log", "3.7", 15), ("pbench_fio-3.7_perf36_fio_clat.1.log", "3.7", 16),
    ("pbench_fio-3.7_perf36_fio_iops.1.log", "3.7", 15), ("pbench_fio-3.7_perf36_fio_lat.1.log", "3.7", 16),
    ("pbench_fio-3.7_perf36_fio_slat.1.log", "3.7", 15),
]


@pytest.mark.parametrize("name,version,rows", LOG_COUNTS, ids=[c[0] for c in LOG_COUNTS])
def test_log_samples_exact_counts(name, version, rows):
    r, out = _log(name, fio_version=version)
    assert {t: df.height for t, df in out.tables.items()} == {"fio_log": rows} and out.rejects == {}
    df = out.tables["fio_log"]
    assert df["job"].unique().to_list() == [1] and df["bs_bytes"].null_count() == rows  # averaged: bs 0 -> null
    kind = r.metadata["log_kind"]
    filled = {"bw": "bw_kib_per_s", "iops": "iops"}.get(kind, "latency_ns")
    assert df[filled].null_count() == 0
    assert all(df[c].null_count() == rows for c in ("bw_kib_per_s", "iops", "latency_ns") if c != filled)


def test_log_hand_checked_and_units_across_versions():
    # fio-2.18 clat line 1: '507, 13694, 0, 0' (us); fio-3.1 clat line 1: '250, 143284, 0, 0' (ns)
    _, out = _log("fio-2.18_randread-4k-01-01_clat.1.log", fio_version="fio-2.18")
    first = out.tables["fio_log"].row(0, named=True)
    assert (first["time_ms"], first["latency_ns"], first["dir"]) == (507, 13_694_000, "read")
    _, out3 = _log("fio-3.1_PM883_randread-iodepth-1-numjobs-1_clat.1.log", latency_unit="ns")
    assert out3.tables["fio_log"].row(0, named=True)["latency_ns"] == 143284
    # the logs' mean clat agrees with the JSON of the same run, in ns, for 2.x and 3.x alike
    for log, js, opts in (("fio-2.18_randread-4k-01-01_clat.1.log", "fio-2.18_randread-01-01.json", {"fio_version": "2.18"}),
                          ("fio-3.1_PM883_randread-iodepth-1-numjobs-1_clat.1.log", "fio-3.1_PM883_randread-1-1.json",
                           {"fio_version": "3.1"})):
        lat = _log(log, **opts)[1].tables["fio_log"]["latency_ns"].mean()
        ref = _job(_json(js)[1])["clat_mean_ns"]
        assert abs(lat / ref - 1) < 0.01, (log, lat, ref)


@pytest.mark.parametrize(
    "js,prefix,window_s",
    [("fio-2.18_randread-01-01.json", "fio-2.18_randread-4k-01-01", 0.5),  # log_avg_msec=500
     ("fio-3.1_PM883_randread-1-1.json", "fio-3.1_PM883_randread-iodepth-1-numjobs-1", 0.25)],  # 250
)
def test_json_total_io_equals_sum_over_iops_and_bw_logs(js, prefix, window_s):
    """Each log line is the mean rate over log_avg_msec, printed as an integer: the sum of
    rate x window matches the JSON's totals within one window (the partial last window is not
    logged) plus half a unit of rounding per line."""
    job = _job(_json(js)[1])
    iops = _log(f"{prefix}_iops.1.log")[1].tables["fio_log"]
    bw = _log(f"{prefix}_bw.1.log")[1].tables["fio_log"]
    from_log = iops["iops"].sum() * window_s
    tolerance = iops["iops"].max() * window_s + 0.5 * window_s * iops.height
    assert abs(from_log - job["total_ios"]) <= tolerance, (from_log, job["total_ios"], tolerance)
    bytes_log = bw["bw_kib_per_s"].sum() * 1024 * window_s
    tol_b = bw["bw_kib_per_s"].max() * 1024 * window_s + 512 * window_s * bw.height
    assert abs(bytes_log - job["io_bytes"]) <= tol_b
    # and the windows tile the run (fio stamps each window within a couple of ms of its end)
    assert (iops["time_ms"].diff().drop_nulls() - window_s * 1000).abs().max() <= 2


def test_histogram_logs():
    r, out = _log("pkb_fio-2.17_clat_hist.1.log")
    h = out.tables["fio_hist"]
    assert h.height == 9 and r.metadata["bins"] == 1216 and r.metadata["latency_unit"] == "us"
    assert h["counts"].list.len().unique().to_list() == [1216] and h["bs_bytes"].unique().to_list() == [16384]
    line1 = [int(x) for x in shared_path("fio", "logs", "pkb_fio-2.17_clat_hist.1.log").read_text()
             .splitlines()[0].split(", ")]
    assert h.row(0, named=True)["samples"] == sum(line1[3:])
    # the run's p50 from the histogram bins agrees with the JSON's clat p50 of the same run. The
    # log is job 1 of numjobs=2 (group_reporting: the JSON covers both) over 9 of the 10 s, so
    # it holds a little under half of the JSON's I/Os; below 128 us a bin is 1 us wide, and the
    # two medians may differ by a few bins (3 %) between the job and its group
    ref_job = _job(_json("pkb_fio-2.17_hist_job.json")[1], job_index=0)
    assert 0.45 < h["samples"].sum() / ref_job["total_ios"] < 0.5
    total = np.array(h.filter(pl.col("dir") == "read")["counts"].to_list()).sum(axis=0)
    cum = np.cumsum(total)
    p50_us = plat_idx_to_val(np.array([np.searchsorted(cum, cum[-1] * 0.5)]))[0]
    assert p50_us == 94 and ref_job["clat_p50_ns"] == 96_000
    assert abs(p50_us * 1000 / ref_job["clat_p50_ns"] - 1) < 0.03
    # fio 3.7's log holds counts no run can have: the line is rejected, with the reason
    _, bad = _log("pbench_fio-3.7_perf36_fio_clat_hist.1.log")
    assert bad.tables == {} and "sum beyond 2^63" in bad.rejects["fio_hist"]["reason"][0]


# -- per-I/O latency log as a trace -----------------------------------------------------------------
PER_IO = "".join(f"{t}, {lat}, {d}, 4096, {off}, 0\n" for t, lat, d, off in (
    (1, 250000, 0, 0), (1, 180000, 1, 8192), (2, 900000, 0, 4096), (3, 120000, 0, 12288)))


def test_fio_trace_ingests_through_the_trace_pipeline(tmp_path, data_dir):
    p = tmp_path / "run_lat.1.log"
    p.write_text(PER_IO + "4, 100000, 0, 0, 0, 0\n")  # an averaged line (bs 0) is not a request
    r = ingest_file(p, data_dir, fmt="fio-trace", options={"fio_version": "3.19"}, validate="off")
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (5, 4, 1)
    t = find_trace(data_dir, r.trace_id)
    df = t.scan().collect().sort("src_line")
    assert df["volume"].cast(pl.String).unique().to_list() == ["job1"]
    assert df["offset"].to_list() == [0, 8192, 4096, 12288] and df["size"].to_list() == [4096] * 4
    assert df["latency_ns"].to_list() == [250000, 180000, 900000, 120000]
    # arrival = completion (ms) - latency, rebased to the first arrival (line 3: 2 ms - 0.9 ms)
    issue = [1_000_000 - 250000, 1_000_000 - 180000, 2_000_000 - 900000, 3_000_000 - 120000]
    assert df["ts_ns"].to_list() == [x - min(issue) for x in issue]
    assert df["op"].cast(pl.String).to_list() == ["read", "write", "read", "read"]
    assert "averaged log" in t.rejects()["reason"][0]


def test_fio_trace_needs_a_latency_unit_and_offsets(tmp_path):
    with pytest.raises(ValueError, match="pass --option fio_version"):
        FioTraceReader()
    p = tmp_path / "x_lat.2.log"
    p.write_text("1, 5, 0, 4096, 7\n")  # fio >= 3.18: the 5th field is the priority, not an offset
    from traces.base import TraceReader  # noqa: F401 - the reader is a canonical trace reader

    batches = list(FioTraceReader(fio_version="3.19").batches(__import__("traces.source").source.Source(p)))
    assert batches[0].rows.height == 0 and "no offset" in batches[0].rejects["reason"][0]
    us = list(FioTraceReader(fio_version="2.18").batches(__import__("traces.source").source.Source(p)))
    assert us[0].rows["latency_ns"].to_list() == [5000] and us[0].rows["offset"].to_list() == [7]


# -- malformed inputs ------------------------------------------------------------------------------
def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_malformed_json(tmp_path):
    base = json.loads(shared_path("fio", "json", "fio-3.1_PM883_randread-1-1.json").read_text())
    with pytest.raises(TraceFormatError, match=r"bad.json:3: invalid fio JSON"):
        read_all(FioJsonReader(), _write(tmp_path, "bad.json", '{\n  "fio version" : "fio-3.1",\n  "jobs": [}\n'))
    with pytest.raises(TraceFormatError, match="no fio JSON document"):
        read_all(FioJsonReader(), _write(tmp_path, "bad.json", "fio: no such file\n"))
    cases = [
        (lambda d: d.pop("jobs"), "document has no jobs[] array"),
        (lambda d: d["jobs"][0].pop("jobname"), "job 0 has no jobname"),
        (lambda d: [d["jobs"][0].pop(x) for x in ("read", "write", "trim")], "has no read/write/trim section"),
        (lambda d: d["jobs"][0]["read"].pop("clat_ns") and d["jobs"][0]["read"].pop("lat_ns"), "no latency section"),
        (lambda d: d["jobs"][0]["read"].update(total_ios=-5), "read.total_ios is negative: -5"),
        (lambda d: d["jobs"][0]["read"].update(io_bytes="lots", io_kbytes=None) or d["jobs"][0]["read"].pop("io_kbytes"),
         "read.io_bytes missing or not a number: 'lots'"),
    ]
    for mutate, reason in cases:
        doc = json.loads(json.dumps(base))
        mutate(doc)
        out = read_all(FioJsonReader(), _write(tmp_path, "bad.json", json.dumps(doc, indent=1)))
        rej = out.rejects["fio_job"]
        assert reason in rej["reason"][0] and rej["src_line"][0] == 1, (reason, rej)


def test_malformed_terse(tmp_path):
    good = shared_path("fio", "terse", "fio-2.1.2_terse_v3.out").read_text().splitlines()[0]
    f = good.split(";")
    cases = [
        ("2;" + good[2:], "terse version 2 is not supported"),
        (";".join(f[:100]), "has 100 fields, expected at least 121"),
        (";".join(f[:5] + ["lots"] + f[6:]), "field 6 (total KiB) is not a number: 'lots'"),
        (";".join(f[:17] + ["1.0=7"] + f[18:]), "field 18 is not a percentile"),
        (";".join(f[:7] + ["-3"] + f[8:]), "field 8 (iops) is negative"),
    ]
    for text, reason in cases:
        out = read_all(FioTerseReader(), _write(tmp_path, "t.out", good + "\n" + text + "\n"))
        assert out.tables["fio_job"].height == 2
        rej = out.rejects["fio_job"]
        assert rej.height == 1 and rej["src_line"][0] == 2 and reason in rej["reason"][0], rej["reason"][0]


def test_malformed_logs(tmp_path):
    good = "500, 288, 0, 0\n1000, 296, 0, 0\n"
    cases = [
        ("1500, 300, 5, 0\n", "direction 5 is not 0, 1 or 2"),
        ("1500, x, 0, 0\n", "field 'value' is not a number: 'x'"),
        ("1500, 300, 0\n", "expected 4 fields, found 3"),
        ("1500, -3, 0, 0\n", "negative value -3"),
        ("1500, 3\xe9, 0, 0\n", "field 'value' is not a number"),
    ]
    for extra, reason in cases:
        out = read_all(FioLogReader(), _write(tmp_path, "j_bw.1.log", good + extra))
        assert out.tables["fio_log"].height == 2
        rej = out.rejects["fio_log"]
        assert rej.height == 1 and rej["src_line"][0] == 3 and reason in rej["reason"][0], rej["reason"][0]
    with pytest.raises(ValueError, match="do not say which; pass --option fio_version"):
        read_all(FioLogReader(), _write(tmp_path, "j_clat.1.log", good))
    with pytest.raises(TraceFormatError, match="5th field is the offset"):
        read_all(FioLogReader(), _write(tmp_path, "j_bw.1.log", "500, 288, 0, 4096, 0\n"))
    with pytest.raises(TraceFormatError, match="cannot tell the log kind"):
        read_all(FioLogReader(), _write(tmp_path, "mystery.txt", good))
    assert read_all(FioLogReader(log_kind="iops"), tmp_path / "mystery.txt").tables["fio_log"]["iops"].sum() == 584
    with pytest.raises(TraceFormatError, match="fio writes 1216"):
        read_all(FioLogReader(), _write(tmp_path, "h_clat_hist.1.log", "1000, 0, 4096, " + ", ".join(["0"] * 100)))
    hist = "1000, 0, 4096, " + ", ".join(["1"] * 1216) + "\n2000, 0, 4096, 1, 2\n"
    out = read_all(FioLogReader(), _write(tmp_path, "h_clat_hist.1.log", hist))
    assert out.tables["fio_hist"]["samples"].to_list() == [1216]
    assert "found 5 fields" in out.rejects["fio_hist"]["reason"][0]
    with pytest.raises(TraceFormatError, match="contradicts"):
        read_all(FioLogReader(fio_version="3.1"), tmp_path / "h_clat_hist.1.log")
