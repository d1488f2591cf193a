"""The Polars streaming path of ingest and the contract that gates publication.

The streaming path must write exactly the dataset the block path writes, and hand every file it
cannot take whole to the block path; every contract rule is counted on every row before a
dataset is published; the GX suite runs once for many traces (``tiercast validate``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import pipelines.ingest as ing
import pipelines.ingest_streaming as streaming
import schemas.trace_suite as suite
from pipelines.catalog import find_trace, list_traces, traces_root
from pipelines.contract import pending_traces, validate_datasets
from pipelines.ingest import ingest_file
from traces.errors import TraceFormatError
from traces.msr import MsrReader
from traces.source import Source

T0 = 128166372003061629  # 2007-02-22 17:00:00.306 UTC as FILETIME (FORMATS.md)
HEADER = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"


def msr_lines(n: int, seed: int = 0, size: int | None = None) -> list[str]:
    rng = np.random.default_rng(seed)
    ts = T0 + np.cumsum(rng.integers(0, 50, n))
    hosts = rng.choice(["usr", "proj", "web"], n)
    disks = rng.integers(0, 2, n)
    ops = np.where(rng.random(n) < 0.6, "Read", "Write")
    sizes = rng.integers(1, 16, n) * 512 if size is None else np.full(n, size)
    return [f"{t},{h},{d},{o},{512 * int(x)},{s},{int(r)}" for t, h, d, o, x, s, r in
            zip(ts, hosts, disks, ops, rng.integers(0, 1 << 20, n), sizes, rng.integers(1, 10_000, n), strict=True)]


def write(path: Path, lines: list[str], eol: str = "\n") -> Path:
    path.write_bytes((eol.join(lines) + eol).encode())
    return path


@pytest.fixture
def spy(monkeypatch):
    """Records what the streaming path returned for each ingest (None: it gave the file up)."""
    calls = []
    real = ing.stream_csv

    def wrapped(*a, **kw):
        calls.append(real(*a, **kw))
        return calls[-1]

    monkeypatch.setattr(ing, "stream_csv", wrapped)
    return calls


def block_path_only(monkeypatch) -> None:
    monkeypatch.setattr(ing, "stream_csv", lambda *a, **kw: None)


def dataset(data_dir: Path, trace_id: str) -> tuple[dict, list[str], object]:
    t = find_trace(data_dir, trace_id)
    man = {k: v for k, v in t.manifest.items() if k not in ("ingested_at", "ingest_seconds", "validation")}
    parts = sorted(str(p.relative_to(t.path)) for p in t.path.glob("volume=*/*.parquet"))
    return man, parts, t.scan().collect()


@pytest.mark.parametrize("header, eol", [(False, "\n"), (True, "\n"), (True, "\r\n")])
def test_streaming_path_writes_the_block_paths_dataset(tmp_path, spy, monkeypatch, header, eol):
    monkeypatch.setattr(ing, "FLUSH_ROWS_PER_VOLUME", 300)  # several parts per volume
    src = write(tmp_path / "usr.csv", [HEADER] * header + msr_lines(3000), eol)
    fast = ingest_file(src, tmp_path / "fast", validate="auto")
    assert spy[0] is not None and spy[0].rows_read == 3000  # the streaming path kept it
    block_path_only(monkeypatch)
    slow = ingest_file(src, tmp_path / "slow", validate="auto")
    assert fast.trace_id == slow.trace_id and fast.rows_accepted == slow.rows_accepted == 3000
    f_man, f_parts, f_rows = dataset(tmp_path / "fast", fast.trace_id)
    s_man, s_parts, s_rows = dataset(tmp_path / "slow", slow.trace_id)
    assert f_man == s_man and f_parts == s_parts and f_rows.equals(s_rows)
    assert f_man["lines_skipped"] == ({"header": 1} if header else {})
    assert len(f_parts) == 6 * 2  # 6 volumes of ~500 rows, parts of at most 300 rows
    assert f_rows["src_line"].min() == 1 + header and f_rows["src_line"].max() == 3000 + header
    for p in (tmp_path / "fast", tmp_path / "slow"):
        t = find_trace(p, fast.trace_id)
        assert (t.path / "rejects").is_dir() and not t.reject_files
        v = json.loads((t.path / "validation.json").read_text())
        assert v["mode"] == "exact" and v["success"] and v["rows_validated"] == 3000 and v["gx"] == "pending"


@pytest.mark.parametrize("problem, line", [
    ("bad field", f"{T0 + 5},usr,0,Read,abc,512,1"),
    ("unknown op", f"{T0 + 5},usr,0,Trim,0,512,1"),
    ("failed check", f"{T0 + 5},usr,0,Read,0,-512,1"),
    ("missing field", f"{T0 + 5},usr,0,Read,0,512"),
    ("blank line", ""),
    ("comment", "# a comment"),
    ("NUL byte", f"{T0 + 5},us\x00r,0,Read,0,512,1"),
])
def test_a_file_the_streaming_path_cannot_take_whole_goes_to_the_block_path(tmp_path, spy, monkeypatch, problem, line):
    lines = msr_lines(200)
    lines.insert(100, line)
    src = write(tmp_path / "t.csv", lines)
    got = ingest_file(src, tmp_path / "fast", validate="auto")
    assert len(spy) == 1  # tried, then given up: the rows below come from the block path
    block_path_only(monkeypatch)
    want = ingest_file(src, tmp_path / "slow", validate="auto")
    assert got.summary() | {"path": ""} == want.summary() | {"path": ""}
    skipped = problem in ("blank line", "comment")
    assert (got.rows_read, got.rows_accepted, got.rows_rejected) == ((200, 200, 0) if skipped else (201, 200, 1))
    assert got.lines_skipped == ({"blank": 1} if problem == "blank line" else {"comment": 1} if skipped else {})
    assert traces_root(tmp_path / "fast").joinpath(got.trace_id).is_dir()
    assert not list(traces_root(tmp_path / "fast").glob(".tmp-*"))


@pytest.mark.parametrize("order", ["sort", "reject"])
def test_time_going_back_on_the_streaming_path(tmp_path, spy, monkeypatch, order):
    lines = msr_lines(500)
    lines[200], lines[201] = lines[201], lines[200]
    lines[300] = lines[300].replace(lines[300].split(",")[0], str(T0 - 1000))  # before the first request
    src = write(tmp_path / "t.csv", lines)
    got = ingest_file(src, tmp_path / "fast", options={"order": order})
    block_path_only(monkeypatch)
    want = ingest_file(src, tmp_path / "slow", options={"order": order})
    assert len(spy) == 1  # tried; under --order reject given up (rejects with reasons are the block path's)
    assert got.summary() | {"path": ""} == want.summary() | {"path": ""}
    assert dataset(tmp_path / "fast", got.trace_id)[2].equals(dataset(tmp_path / "slow", want.trace_id)[2])
    if order == "sort":
        assert got.sorted_rows >= 1 and got.rows_rejected == 0
        man = find_trace(tmp_path / "fast", got.trace_id).manifest
        assert min(v["first_ts_ns"] for v in man["volumes"].values()) == 0
    else:
        assert got.rows_rejected >= 1 and got.sorted_rows == 0


def test_streamed_counts_equal_the_counts_read_back_from_the_parts(tmp_path, spy):
    lines = msr_lines(3000)
    src = write(tmp_path / "t.csv", lines)
    got = ingest_file(src, tmp_path / "data")
    path = find_trace(tmp_path / "data", got.trace_id).path
    streamed, read_back = suite.exact_check(path, {}, spy[0].row_counts), suite.exact_check(path, {})
    assert streamed == read_back
    counts, stats = streamed
    assert counts["rows"] == 3000 and not any(v for k, v in counts.items() if k != "rows")
    volumes = {"_".join(ln.split(",")[1:3]) for ln in lines}
    assert set(stats) == set(got.volumes) == volumes and len(volumes) == 6  # 3 hosts x 2 disks
    assert sum(s["reads"] + s["writes"] for s in stats.values()) == 3000


@pytest.mark.parametrize("late", [
    "{t},data,0,Write,4096,512,7",  # a host the head did not show
    "{t},usr,7,Write,4096,512,7",  # a disk number beyond the head's
    "{t},usr,-1,Write,4096,512,7",  # outside the lookup table
])
def test_volumes_the_head_did_not_show_are_named_by_a_second_query(tmp_path, spy, monkeypatch, late):
    lines = msr_lines(2000)
    lines[1500] = late.format(t=lines[1500].split(",")[0])
    monkeypatch.setattr(streaming, "HEAD_BYTES", 40_000)  # ~1000 lines: the late volume is past it
    head = Source(write(tmp_path / "t.csv", lines)).head(streaming.HEAD_BYTES)
    assert late.split(",")[1] + "," + late.split(",")[2] not in head.decode()
    queries = []
    real = streaming._write
    monkeypatch.setattr(streaming, "_write", lambda *a: queries.append(a[-1]) or real(*a))
    got = ingest_file(tmp_path / "t.csv", tmp_path / "fast")
    assert spy[0] is not None and [q is None for q in queries] == [False, True]  # lookup, then names per row
    assert queries[0].texts == ["proj", "usr", "web"] and queries[0].numbers == 2
    block_path_only(monkeypatch)
    want = ingest_file(tmp_path / "t.csv", tmp_path / "slow")
    late_volume = "_".join(late.split(",")[1:3])
    assert got.volumes == want.volumes and got.volumes[late_volume] == 1 and len(got.volumes) == 7
    (f_man, f_parts, f_rows), (s_man, s_parts, s_rows) = (dataset(tmp_path / d, got.trace_id) for d in ("fast", "slow"))
    assert f_man == s_man and f_parts == s_parts and f_rows.equals(s_rows)


def test_the_head_lookup_names_volumes_as_the_format_does(tmp_path):
    """The lookup table is the reader's own volume expression over texts x numbers."""
    lines = msr_lines(500)
    src = Source(write(tmp_path / "t.csv", [HEADER, *lines]))
    reader = MsrReader()
    lookup = streaming._volume_lookup(src, reader, 1, reader.canonical_exprs()[0]["volume"])
    assert lookup.texts == ["proj", "usr", "web"] and lookup.numbers == 2
    assert lookup.names.to_list() == ["proj_0", "proj_1", "usr_0", "usr_1", "web_0", "web_1"]
    df = pl.DataFrame({"Hostname": ["web", "usr", "tmp", None, "web"], "DiskNumber": [1, 0, 0, 0, 2]})
    assert df.select(lookup.expr("Hostname", "DiskNumber")).to_series().to_list() == ["web_1", "usr_0", *["\n"] * 3]
    wide = Source(write(tmp_path / "wide.csv", [*lines, f"{T0 + 10**9},usr,{streaming.MAX_NAMES},Read,0,512,1"]))
    assert streaming._volume_lookup(wide, reader, 0, reader.canonical_exprs()[0]["volume"]) is None  # table too big


@pytest.mark.parametrize("content", [b"", b"a\nb", b"a\nb\n", b"ab\x00c\nd\n", b"a\r\nb\r\n", b"\n\n\nxyz\x00"])
@pytest.mark.parametrize("compressed", [False, True])
def test_line_count_nul_and_sha256_across_read_buffers(tmp_path, monkeypatch, content, compressed):
    import gzip
    import hashlib

    import traces.source

    monkeypatch.setattr(traces.source, "READ_BYTES", 3)  # lines, CRLFs and NULs across buffers
    raw = gzip.compress(content) if compressed else content
    (tmp_path / "f").write_bytes(raw)
    src = traces.source.Source(tmp_path / "f")
    got = src.count_lines()
    assert got.lines == content.count(b"\n") + (bool(content) and not content.endswith(b"\n"))
    assert got.has_nul == (b"\x00" in content)
    assert src.sha256 == hashlib.sha256(raw).hexdigest()


def stricter(monkeypatch) -> suite.Rule:
    """A contract rule the readers' row checks know nothing about: at most 4 KiB per request."""
    rule = suite.Rule("size_above_4k", "between", "size", {"max_value": 4096})
    monkeypatch.setattr(suite, "RULES", (*suite.RULES, rule))
    return rule


@pytest.mark.parametrize("path", ["streaming", "block"])
def test_rows_passing_the_row_checks_but_breaking_a_contract_rule_are_never_published(tmp_path, monkeypatch, path):
    stricter(monkeypatch)
    if path == "block":
        block_path_only(monkeypatch)
    lines = msr_lines(1000, size=4096)
    lines[700] = lines[700].replace(",4096,", ",8192,")
    src = write(tmp_path / "t.csv", lines)
    data = tmp_path / "data"
    with pytest.raises(TraceFormatError, match=r"accepted rows fail the trace contract: exact checks: "
                                               r"\{'size_above_4k': 1\}"):
        ingest_file(src, data)
    assert list_traces(data) == [] and not list(traces_root(data).glob(".tmp-*"))
    # without the contract (--validate off) the same file is published
    assert ingest_file(src, data, validate="off").rows_accepted == 1000


def test_every_gx_expectation_is_a_rule_counted_exactly(monkeypatch):
    class FakeGX:
        class expectations:  # noqa: N801 - stands in for the module
            def __getattr__(self, name):
                return lambda **kw: (name, kw["column"])

        expectations = expectations()

    rule = stricter(monkeypatch)
    built = suite.expectations(FakeGX)
    assert len(built) == len(suite.RULES) and ("ExpectColumnValuesToBeBetween", "size") in built
    assert rule in suite.RULES and len({r.key for r in suite.RULES}) == len(suite.RULES)


def test_validate_runs_gx_once_over_every_pending_trace_and_withdraws_failures(tmp_path, monkeypatch):
    data = tmp_path / "data"
    ids = [ingest_file(write(tmp_path / f"{i}.csv", msr_lines(300, seed=i, size=4096 * (1 + i))), data).trace_id
           for i in range(3)]
    assert sorted(pending_traces(data)) == sorted(ids)
    res = CliRunner().invoke(__import__("pipelines.cli", fromlist=["app"]).app,
                             ["validate", "--data-dir", str(data), "--json", ids[0][:8]])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"valid": [ids[0]], "invalid": []}
    man = find_trace(data, ids[0]).manifest
    assert man["validation"] == {"success": True, "mode": "full", "rows_validated": 300, "gx": "passed"}
    assert sorted(pending_traces(data)) == sorted(ids[1:])
    # a contract tightened after ingest: GX (batch) fails the 8 KiB and 12 KiB traces
    stricter(monkeypatch)
    checked = validate_datasets(data, [("trace", i) for i in pending_traces(data)], data / "quarantine")
    assert checked["valid"] == [] and sorted(i for _, i, _ in checked["invalid"]) == sorted(ids[1:])
    assert "expect_column_values_to_be_between({'column': 'size', 'max_value': 4096" in checked["invalid"][0][2]
    assert [t.trace_id for t in list_traces(data)] == [ids[0]] and pending_traces(data) == []
    held = data / "quarantine" / "datasets"
    assert sorted(p.name for p in held.iterdir()) == sorted(ids[1:])
    assert json.loads((held / ids[1] / "validation.json").read_text())["success"] is False
