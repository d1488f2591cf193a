"""Ingest of measured logs: the same guarantees as trace ingest (atomic dataset, manifest,
rejects with line and reason, read = accepted + rejected per table, same file twice is a
no-op), format detection and routing in ``tiercast ingest``, ``tiercast measured``, and the
Great Expectations contract."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import shared_path
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest_logs import (
    find_measured,
    ingest_log_file,
    list_measured,
    measured_format,
    measured_root,
)
from traces.errors import TraceFormatError

PBENCH = ("iostat", "text-pbench", "pbench_iostat-2_rhel7_sysstat10.txt")


def _manifest(r) -> dict:
    return json.loads((Path(r.path) / "manifest.json").read_text())


def test_iostat_dataset_layout_and_manifest(data_dir):
    r = ingest_log_file(shared_path(*PBENCH), data_dir, options={"first_report": "interval", "tz": "UTC"},
                        validate="off")
    assert r.format == "iostat" and not r.already_ingested
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (273, 273, 0)
    root = Path(r.path)
    assert root.parent == measured_root(data_dir)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet")) == [
        "iostat_cpu/part-00000.parquet", "iostat_device/part-00000.parquet"]
    m = _manifest(r)
    assert m["hosts"] == ["a.foo.example.com"] and m["intervals"] == 21
    assert m["devices"] == sorted([f"dm-{i}" for i in range(7)] + ["sda", "sdb", "sdc", "sdd", "sde"])
    dev = m["tables"]["iostat_device"]
    assert (dev["rows_read"], dev["rows_accepted"], dev["rows_rejected"]) == (252, 252, 0)
    assert (dev["first"], dev["last"]) == ("2015-03-24T16:46:04+00:00", "2015-03-24T16:47:04+00:00")
    assert "svctm_ms" in dev["columns_present"] and "rareq_sz_kb" not in dev["columns_present"]
    assert m["reader_metadata"]["layouts"] == {"sysstat<=10 extended": 252}
    assert m["lines_skipped"] == {"banner": 1, "blank": 43, "header": 42, "timestamp": 21}
    # Parquet columns carry their units; DuckDB queries the dataset in place
    import pyarrow.parquet as pq

    schema = pq.read_schema(root / "iostat_device" / "part-00000.parquet")
    assert schema.field("avgrq_sz_kb").metadata[b"unit"].startswith(b"mean request size, KiB")
    busiest = duckdb.sql(
        f"SELECT DISTINCT device FROM read_parquet('{root}/iostat_device/*.parquet') "
        f"WHERE w_per_s = (SELECT max(w_per_s) FROM read_parquet('{root}/iostat_device/*.parquet')) ORDER BY 1"
    ).fetchall()
    assert busiest == [("dm-4",), ("dm-6",)]  # w/s 22.67 (awk '{print $1, $5}' on the raw file agrees)


def test_same_file_twice_is_a_noop_and_options_make_a_new_dataset(data_dir):
    p = shared_path(*PBENCH)
    a = ingest_log_file(p, data_dir, options={"first_report": "interval"}, validate="off")
    b = ingest_log_file(p, data_dir, options={"first_report": "interval"}, validate="off")
    assert b.already_ingested and b.dataset_id == a.dataset_id
    c = ingest_log_file(p, data_dir, validate="off")  # since-boot first report: other tables, other id
    assert c.dataset_id != a.dataset_id and set(c.tables) == {"iostat_device", "iostat_device_boot", "iostat_cpu",
                                                             "iostat_cpu_boot"}
    assert [m.dataset_id for m in list_measured(data_dir)] == sorted([a.dataset_id, c.dataset_id])
    assert find_measured(data_dir, a.dataset_id[:6]).dataset_id == a.dataset_id
    # a copy of the same content elsewhere maps to the same dataset (content id), still a no-op
    copy = data_dir.parent / "copy.txt"
    copy.write_bytes(p.read_bytes())
    d = ingest_log_file(copy, data_dir, options={"first_report": "interval"}, validate="off")
    assert d.already_ingested and d.dataset_id == a.dataset_id


def test_rejects_are_kept_with_line_raw_and_reason(data_dir, tmp_path):
    text = shared_path("iostat", "text-jc", "centos-7.7_iostat-1.out").read_text()
    lines = text.splitlines(keepends=True)
    lines[7] = "dm-0              0.25         x.39         1.04     170325      40464\n"  # line 8
    lines[23] = "dm-0              0.00\n"  # line 24
    p = tmp_path / "bad.out"
    p.write_text("".join(lines))
    r = ingest_log_file(p, data_dir, validate="off")
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (12, 10, 2)
    assert r.tables["iostat_device_boot"] == {"rows_read": 3, "rows_accepted": 2, "rows_rejected": 1}
    assert r.tables["iostat_device"] == {"rows_read": 6, "rows_accepted": 5, "rows_rejected": 1}
    ref = find_measured(data_dir, r.dataset_id)
    boot = ref.rejects("iostat_device_boot").row(0, named=True)
    assert boot["src_line"] == 8 and boot["raw"] == lines[7].rstrip("\n")
    assert boot["reason"] == "column 'kB_read/s' is not a number: 'x.39'"
    assert "expected a device name and 5 values" in ref.rejects("iostat_device")["reason"][0]
    for t, s in _manifest(r)["tables"].items():
        assert s["rows_read"] == s["rows_accepted"] + s["rows_rejected"], t
        assert ref.scan(t).collect().height == s["rows_accepted"]


def test_failures_leave_nothing_behind(data_dir, tmp_path):
    bad = tmp_path / "unknown.out"
    bad.write_text("Linux 5.4 (h) \t01/02/21 \t_x86_64_\t(2 CPU)\n\nDevice  tps  frob/s\nsda  1.0  2.0\n")
    with pytest.raises(TraceFormatError, match=r"unknown.out:3: unknown iostat device column"):
        ingest_log_file(bad, data_dir, validate="off")
    empty = tmp_path / "empty.out"
    empty.write_text("Linux 5.4 (h) \t01/02/21 \t_x86_64_\t(2 CPU)\n\n")
    with pytest.raises(TraceFormatError, match="no iostat data rows found"):
        ingest_log_file(empty, data_dir, fmt="iostat", validate="off")
    allbad = tmp_path / "allbad.out"
    allbad.write_text("Device  tps  kB_read/s\nsda  one  two\n")
    with pytest.raises(TraceFormatError, match=r"allbad.out:2: no line could be read as iostat: column 'tps'"):
        ingest_log_file(allbad, data_dir, fmt="iostat", validate="off")
    with pytest.raises(ValueError, match="is a trace format, not a measured log"):
        ingest_log_file(allbad, data_dir, fmt="msr", validate="off")
    assert list(measured_root(data_dir).iterdir()) == []  # no dataset, no staging directory


@pytest.mark.parametrize(
    "parts,fmt,opts,tables",
    [
        (("vxstat", "dbxtune_quoted_sco_vxstat_d.txt"), "vxstat", {}, {"vxstat": 4}),
        (("fio", "json", "fio-3.33_write-64-1.json"), "fio-json", {}, {"fio_job": 2, "fio_lat_bucket": 32}),
        (("fio", "terse", "fio-2.1.2_terse_v3.out"), "fio-terse", {},
         {"fio_job": 24, "fio_percentile": 408, "fio_lat_bucket": 264, "fio_disk_util": 12}),
        (("fio", "logs", "fio-2.18_randread-4k-01-01_lat.1.log"), "fio-log", {"fio_version": "2.18"}, {"fio_log": 20}),
        (("fio", "logs", "pkb_fio-2.17_clat_hist.1.log"), "fio-log", {}, {"fio_hist": 9}),
        (("iostat", "json-sysstat", "expected.iostat-g-JSON"), "iostat", {},
         {"iostat_device": 6, "iostat_device_boot": 6}),
    ],
)
def test_every_family_detected_and_ingested(data_dir, parts, fmt, opts, tables):
    p = shared_path(*parts)
    assert measured_format(p, None) == fmt
    r = ingest_log_file(p, data_dir, options=opts, validate="off")
    assert r.format == fmt and {t: s["rows_accepted"] for t, s in r.tables.items()} == tables
    m = _manifest(r)
    assert m["rows_read"] == m["rows_accepted"] + m["rows_rejected"]
    if fmt == "fio-json":
        assert m["tool_version"] == "fio-3.33" and "failed with error 22" in m["warnings"][0]


runner = CliRunner()


def test_cli_routes_measured_logs_forces_formats_and_lists(tmp_path):
    dd = tmp_path / "dd"
    res = runner.invoke(app, ["ingest", "--data-dir", str(dd), "--validate", "off", "--json",
                              str(shared_path("vxstat", "dbxtune_quoted_sco_vxstat_vol.txt")),
                              str(shared_path("fio", "json", "fio-2.18_randread-01-01.json"))])
    assert res.exit_code == 0, res.output
    objs = [json.loads(ln) for ln in res.stdout.strip().splitlines()]
    assert [(o["format"], o["rows_accepted"]) for o in objs] == [("vxstat", 6), ("fio-json", 63)]
    # forced format and reader options
    res = runner.invoke(app, ["ingest", "--data-dir", str(dd), "--validate", "off", "--format", "iostat",
                              "-o", "first_report=interval", "-o", "tz=America/New_York", str(shared_path(*PBENCH))])
    assert res.exit_code == 0, res.output
    assert "ingested as measured" in res.stdout and "iostat_device 252" in res.stdout
    res = runner.invoke(app, ["measured", "--data-dir", str(dd), "--json"])
    listed = json.loads(res.stdout)
    assert sorted(x["format"] for x in listed) == ["fio-json", "iostat", "vxstat"]
    io = next(x for x in listed if x["format"] == "iostat")
    assert io["hosts"] == ["a.foo.example.com"] and io["intervals"] == 21 and io["first"] == "2015-03-24T20:46:04+00:00"
    res = runner.invoke(app, ["measured", "--data-dir", str(dd)])
    assert res.exit_code == 0 and "pbench_iostat" in res.stdout
    # a per-I/O fio log forced as a trace goes to the trace pipeline
    log = tmp_path / "run_lat.3.log"
    log.write_text("1, 250, 0, 4096, 0\n2, 300, 1, 4096, 4096\n")
    res = runner.invoke(app, ["ingest", "--data-dir", str(dd), "--validate", "off", "--json", "--format", "fio-trace",
                              "-o", "fio_version=2.18", str(log)])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout.strip().splitlines()[-1])
    assert obj["format"] == "fio-trace" and obj["volumes"] == {"job3": 2}
    # an unknown option is an error, not ignored
    res = runner.invoke(app, ["ingest", "--data-dir", str(dd), "--validate", "off", "--format", "vxstat",
                              "-o", "colour=blue", str(shared_path("vxstat", "dbxtune_quoted_sco_vxstat_d.txt"))])
    assert res.exit_code != 0 and "unknown option(s) colour" in str(res.exception)


def test_gx_contract_runs_and_catches_what_routing_lets_through(data_dir, tmp_path):
    """The suites run at ingest (GX imported once for both ingests); a CPU percentage above 100
    is well-formed for the parser but breaks the contract, so nothing is published."""
    r = ingest_log_file(shared_path("fio", "json", "fio-3.1_PM883_randread-1-1.json"), data_dir, validate="full")
    m = _manifest(r)
    assert m["validation"]["success"] is True
    assert set(m["validation"]["tables"]) == {"fio_job", "fio_percentile", "fio_lat_bucket", "fio_disk_util"}
    report = json.loads((Path(r.path) / "validation.json").read_text())
    assert report["tables"]["fio_job"]["rows_validated"] == 2
    text = shared_path("iostat", "text-jc", "centos-7.7_iostat.out").read_text().replace("99.70", "199.70")
    bad = tmp_path / "cpu.out"
    bad.write_text(text)
    with pytest.raises(TraceFormatError, match=r"fail the measured-log contract: iostat_cpu_boot: "
                                               r"expect_column_values_to_be_between\(\{'column': 'idle_pct'"):
        ingest_log_file(bad, data_dir, validate="full")
    assert [x.dataset_id for x in list_measured(data_dir)] == [r.dataset_id]
    assert pl.read_parquet(Path(r.path) / "fio_job" / "part-00000.parquet").height == 2
