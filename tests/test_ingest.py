"""The ingest step's guarantees: counts add up, atomic output, no-op re-ingest, clear failures."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import find_trace, list_traces, traces_root
from pipelines.ingest import ingest_file
from traces import synth
from traces.errors import TraceFormatError

ROOT = Path(__file__).resolve().parent.parent
# 2007-02-22 17:00:00.306 UTC as FILETIME (FORMATS.md)
T0 = 128166372003061629

MSR_LINES = [
    f"{T0},usr,0,Read,7014609920,24576,41286",
    f"{T0 + 10},usr,0,Write,7014609920,4096,100",
    f"{T0 + 20},usr,1,Write,abc,4096,100",
    f"{T0 + 30},usr,1,Trim,0,4096,100",
    f"{T0 + 40},usr,1,Write,0,-4096,100",
    f"{T0 + 50},usr,1,Write,0,4096",
    f"{T0 + 60},usr,1,Read,8192,512,7",
]


def write(path: Path, lines: list[str], gz: bool = False) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_counts_rejects_and_manifest(tmp_path, data_dir):
    src = write(tmp_path / "usr.csv.gz", MSR_LINES, gz=True)
    r = ingest_file(src, data_dir, validate="off")
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("msr", 7, 3, 4)
    assert r.rows_read == r.rows_accepted + r.rows_rejected
    assert r.volumes == {"usr_0": 2, "usr_1": 1}
    t = find_trace(data_dir, r.trace_id)
    rej = t.rejects().sort("src_line")
    assert rej["src_line"].to_list() == [3, 4, 5, 6]
    assert rej["reason"].to_list() == [
        "field 'Offset' is not an integer: 'abc'",
        "unknown Type 'Trim' (expected Read or Write)",
        "size must be > 0, got -4096",
        "expected 7 fields, found 6",
    ]
    assert rej["raw"][0] == MSR_LINES[2]
    rows = t.scan().collect().sort("src_line")
    # ts rebased to the first accepted row; FILETIME ticks are 100 ns; latency 41286 ticks = 4.1286 ms
    assert rows["ts_ns"].to_list() == [0, 1000, 6000]
    assert rows["latency_ns"].to_list() == [4_128_600, 10_000, 700]
    m = t.manifest
    assert m["start_time"].startswith("2007-02-22T17:00:00.306")
    assert m["ts_origin_raw_ns"] == (T0 - 116_444_736_000_000_000) * 100
    assert m["volumes"]["usr_0"]["max_end"] == 7014609920 + 24576
    assert m["volumes"]["usr_1"] == {
        "requests": 1, "reads": 1, "writes": 0, "bytes": 512, "min_offset": 8192, "max_end": 8704,
        "first_ts_ns": 6000, "last_ts_ns": 6000, "span_ns": 0, "capacity_bytes": None,
    }
    assert m["sha256"] == __import__("hashlib").sha256(src.read_bytes()).hexdigest()


def test_same_file_twice_is_a_noop(tmp_path, data_dir):
    src = write(tmp_path / "usr.csv", MSR_LINES)
    first = ingest_file(src, data_dir, validate="off")
    again = ingest_file(src, data_dir, validate="off")
    assert not first.already_ingested and again.already_ingested
    assert again.trace_id == first.trace_id
    # a copy with another name and mtime has the same content: still one trace
    copy = write(tmp_path / "copy.csv", MSR_LINES)
    assert ingest_file(copy, data_dir, validate="off").already_ingested
    assert len(list_traces(data_dir)) == 1
    # other reader options make another trace
    other = ingest_file(src, data_dir, validate="off", options={"order": "reject"})
    assert other.trace_id != first.trace_id


def test_out_of_order_sorted_or_rejected(tmp_path, data_dir):
    lines = [
        f"{T0 + 100},usr,0,Read,0,512,1",
        f"{T0 + 50},usr,0,Read,512,512,1",  # goes backwards within usr_0
        f"{T0 + 60},usr,1,Read,512,512,1",  # another volume: not backwards
        f"{T0 + 200},usr,0,Read,1024,512,1",
    ]
    src = write(tmp_path / "ooo.csv", lines)
    r = ingest_file(src, data_dir, validate="off")
    assert (r.rows_accepted, r.rows_rejected, r.sorted_rows) == (4, 0, 1)
    rows = find_trace(data_dir, r.trace_id).scan().collect()
    u0 = rows.filter(pl.col("volume") == "usr_0")
    assert u0["src_line"].to_list() == [2, 1, 4]
    # rebased to the earliest request, not the first line
    assert rows["ts_ns"].min() == 0 and u0["ts_ns"].to_list() == [0, 5000, 15000]
    r2 = ingest_file(src, data_dir, validate="off", options={"order": "reject"})
    assert (r2.rows_accepted, r2.rows_rejected, r2.sorted_rows) == (3, 1, 0)
    rej = find_trace(data_dir, r2.trace_id).rejects()
    assert rej.row(0) == (2, lines[1], "timestamp goes backwards within its volume")


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "file is empty"),
        (b"\x00\x01\x02garbage\xff" * 50, "unknown format"),
        (gzip.compress(("\n".join(MSR_LINES) + "\n").encode())[:-12], "truncated gzip"),
    ],
    ids=["empty", "binary-garbage", "truncated-gzip"],
)
def test_unreadable_files_fail_cleanly(tmp_path, data_dir, content, problem):
    src = tmp_path / "bad.csv"
    src.write_bytes(content)
    with pytest.raises(TraceFormatError) as e:
        ingest_file(src, data_dir, fmt=None if problem != "truncated gzip" else "msr", validate="off")
    assert str(src) in str(e.value) and problem in str(e.value)
    assert list_traces(data_dir) == []
    assert not [p for p in traces_root(data_dir).glob(".tmp-*")]


def test_nothing_parses_names_first_line(tmp_path, data_dir):
    src = write(tmp_path / "x.csv", [f"{T0},usr,0,Read,zz,512,1", f"{T0},usr,0,Read,yy,512,1"])
    with pytest.raises(TraceFormatError, match=r"x.csv:1: no line could be read as msr: field 'Offset'"):
        ingest_file(src, data_dir, fmt="msr", validate="off")
    assert list_traces(data_dir) == []


def test_crash_mid_ingest_leaves_nothing_and_rerun_matches(tmp_path, data_dir, monkeypatch):
    src = write(tmp_path / "usr.csv", MSR_LINES)
    import pipelines.ingest as ing

    def boom(*a, **k):
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(ing, "write_json_atomic", boom)
    with pytest.raises(KeyboardInterrupt):
        ingest_file(src, data_dir, validate="off")
    assert list_traces(data_dir) == [] and not list(traces_root(data_dir).glob(".tmp-*"))
    monkeypatch.undo()
    r = ingest_file(src, data_dir, validate="off")
    clean = tmp_path / "clean"
    clean.mkdir()
    r2 = ingest_file(src, clean, validate="off")
    a = find_trace(data_dir, r.trace_id).scan().collect()
    b = find_trace(clean, r2.trace_id).scan().collect()
    assert r.trace_id == r2.trace_id and a.equals(b)


def test_synth_roundtrip_and_gx_contract(tmp_path, data_dir):
    w = synth.pattern("database", requests=5000, region_bytes=1 << 30, seed=3)
    p = tmp_path / "db.parquet"
    synth.write(w, p)
    r = ingest_file(p, data_dir, validate="full")
    t = find_trace(data_dir, r.trace_id)
    assert r.format == "tiercast-parquet" and r.rows_accepted == 5000
    assert t.manifest["reader_metadata"]["synth"]["read_pct"] == 67
    v = json.loads((t.path / "validation.json").read_text())
    assert v["success"] and v["mode"] == "full" and v["rows_validated"] == 5000
    assert {e["expectation"] for e in v["expectations"]} >= {
        "expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set",
        "expect_column_values_to_be_between",
    }
    got = t.scan().collect()
    want = synth.generate(w)
    assert got["offset"].to_list() == want["offset"].to_list()
    assert got["ts_ns"].to_list() == want["ts_ns"].to_list()


def test_sample_mode_checks_every_row_exactly(tmp_path, data_dir, monkeypatch):
    import schemas.trace_suite as suite

    monkeypatch.setattr(suite, "SAMPLE_ROWS", 1000)
    w = synth.pattern("randread-4k", requests=20_000, region_bytes=1 << 30)
    p = tmp_path / "rr.parquet"
    synth.write(w, p)
    r = ingest_file(p, data_dir, validate="sample")
    v = json.loads((find_trace(data_dir, r.trace_id).path / "validation.json").read_text())
    # streamed: a bottom-k hash sample of exactly SAMPLE_ROWS rows
    assert v["mode"] == "sample" and v["rows_validated"] == 1000
    assert v["exact_aggregates"]["rows"] == 20_000 and v["exact_aggregates"]["ts_backwards"] == 0


def cli(*args, env_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if env_dir is not None:
        env["TIERCAST_DATA_DIR"] = str(env_dir)
    return subprocess.run(
        [sys.executable, "-c", "from pipelines.cli import main; main()", *args],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )


def test_cli_ingest_json_and_traces(tmp_path):
    src = write(tmp_path / "usr.csv", MSR_LINES)
    dd = tmp_path / "dd"
    p = cli("ingest", str(src), "--json", "--validate", "off", env_dir=dd)
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout.strip().splitlines()[-1])
    assert {k: obj[k] for k in ("format", "rows_read", "rows_accepted", "rows_rejected")} == {
        "format": "msr", "rows_read": 7, "rows_accepted": 3, "rows_rejected": 4,
    }
    assert obj["volumes"] == {"usr_0": 2, "usr_1": 1}
    p = cli("traces", "--json", "--data-dir", str(dd))
    listed = json.loads(p.stdout)
    assert [t["trace_id"] for t in listed] == [obj["trace_id"]]
    bad = tmp_path / "empty.csv"
    bad.write_bytes(b"")
    p = cli("ingest", str(bad), env_dir=dd)
    assert p.returncode == 2 and f"{bad}: file is empty" in p.stderr


def test_sample_mode_after_a_sort_pass_reads_back_from_disk(tmp_path, data_dir, monkeypatch):
    import schemas.trace_suite as suite

    monkeypatch.setattr(suite, "FULL_ROWS", 10)
    lines = [f"{T0 + t},usr,0,Read,{512 * i},512,1" for i, t in enumerate([50, 40, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150])]
    src = write(tmp_path / "ooo.csv", lines)
    r = ingest_file(src, data_dir, validate="sample")
    v = json.loads((find_trace(data_dir, r.trace_id).path / "validation.json").read_text())
    assert r.sorted_rows == 1 and v["success"] and v["mode"] == "sample"
    # the on-disk pass sees the re-sorted data: nothing goes backwards, 12 rows counted
    assert v["exact_aggregates"]["rows"] == 12 and v["exact_aggregates"]["ts_backwards"] == 0


def test_exact_check_counts_every_rule_across_parts(tmp_path):
    from schemas.trace import POLARS_SCHEMA
    from schemas.trace_suite import RULES, exact_check, gx_sample

    def part(volume, idx, rows):
        d = tmp_path / f"volume={volume}"
        d.mkdir(exist_ok=True)
        pl.DataFrame(rows, schema=list(POLARS_SCHEMA.items()), orient="row").write_parquet(d / f"part-{idx:05d}.parquet")

    part("a", 0, [(10, "a", "read", 0, 4096, None, 1)])
    # 'a' goes back from 10 to 5 across the part boundary; that request ends past 8192 and
    # repeats line 2, which volume 'b' holds too
    part("a", 1, [(5, "a", "read", 4096, 8192, -1, 2)])
    part("b", 0, [(20, "b", "write", 0, 0, None, 2), (30, "b", "flush", 0, 0, None, 4)])
    counts, stats = exact_check(tmp_path, {"a": 8192})
    sample = gx_sample(tmp_path, 3)
    assert {k: v for k, v in counts.items() if v} == {
        "rows": 4, "size_not_positive": 1, "latency_negative": 1, "ts_backwards": 1, "beyond_capacity": 1,
        "src_line_duplicates": 1,
    }
    assert set(counts) == {"rows", *(r.key for r in RULES)}
    assert stats["a"] == {"requests": 2, "reads": 2, "writes": 0, "bytes": 12288, "min_offset": 0, "max_end": 12288,
                          "first_ts_ns": 5, "last_ts_ns": 10, "out_of_order": 1}
    assert stats["b"]["writes"] == 1 and stats["b"]["bytes"] == 0
    assert sample.height == 3
