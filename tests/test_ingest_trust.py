"""Ingest integrity (issue 8): truncated compressed input, reader versions and --force, paths
that need quoting in SQL, misleading errors, stale staging directories, smaller invariants."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import shared_path

from pipelines.catalog import find_by_prefix, list_traces, traces_root
from pipelines.dataset import CorruptIndexError, package_version, reader_version
from pipelines.ingest import ingest_file
from pipelines.ingest_logs import ingest_log_file, list_measured, measured_root
from traces.errors import TraceFormatError

ROOT = Path(__file__).resolve().parent.parent
T0 = 128166372003061629  # FILETIME of 2007-02-22 17:00:00.306 UTC (FORMATS.md)
ROWS = 100_000


def msr_text(rows: int = ROWS) -> bytes:
    """``rows`` valid MSR lines on two volumes, 10 µs apart."""
    return "".join(
        f"{T0 + 100 * i},usr,{i % 2},{'Read' if i % 3 else 'Write'},{4096 * (i % 5000)},4096,{i % 900 + 1}\n"
        for i in range(rows)
    ).encode()


def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from pipelines.cli import main; main()", *args, "--data-dir", str(data_dir)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "300"},
    )


def assert_nothing_published(data_dir: Path) -> None:
    assert list_traces(data_dir) == []
    assert not list(traces_root(data_dir).glob(".tmp-*"))


# -- misleading errors ------------------------------------------------------------------


def test_directory_given_as_a_trace_says_it_is_a_directory(tmp_path, data_dir):
    with pytest.raises(TraceFormatError, match=rf"^{tmp_path}: is a directory, not a trace file$"):
        ingest_file(tmp_path, data_dir)
    p = cli("ingest", str(tmp_path), data_dir=data_dir)
    assert p.returncode == 2 and f"{tmp_path}: is a directory, not a trace file" in p.stderr


JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(range(256)) * 4


@pytest.mark.parametrize(
    "content, expected",
    [
        (JPEG, r""
         + r"x:1: not a vSCSI v1 trace: only 1 of the first 32 records have version 0x0100 "
           r"\(file starts with binary data \[ff d8 ff e0 00 10 4a 46 49 46 00 01 01 00 00 01 \.\.\.\]\)"),
        (b"".join(f"{T0 + i},usr,0,Read,0,4096,1\n".encode() for i in range(4)),
         r"x:1: not a vSCSI v1 trace: record 1 has version 0x3631, expected 0x0100 "
         rf"\(file starts with '{T0},usr,0,Read,0,4096,1'\)"),
        (b"short\n", r"x: not a vSCSI trace: the file has 6 bytes, less than one 32-byte record"),
    ],
    ids=["jpeg", "msr-csv", "shorter-than-a-record"],
)
def test_non_vscsi_file_forced_as_vscsi_says_so(tmp_path, data_dir, content, expected):
    src = tmp_path / "x"
    src.write_bytes(content)
    with pytest.raises(TraceFormatError, match=expected) as e:
        ingest_file(src, data_dir, fmt="vscsi", validate="off")
    assert "truncated record" not in str(e.value)
    assert_nothing_published(data_dir)


ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00>\x00\x01\x00\x00\x00" + bytes(200)


def test_binary_first_line_is_shown_as_a_bounded_hex_excerpt(tmp_path, data_dir):
    src = tmp_path / "a.out"
    src.write_bytes(ELF)
    with pytest.raises(TraceFormatError) as e:
        ingest_file(src, data_dir)
    msg = str(e.value)
    assert msg.startswith(f"{src}:1: unknown format (the file starts with binary data "
                          "[7f 45 4c 46 02 01 01 00 00 00 00 00 00 00 00 00 ...], which matches none of:")
    assert "b'" not in msg and "\\x" not in msg


def test_long_text_first_line_is_cut_in_the_message(tmp_path, data_dir):
    src = tmp_path / "notes.txt"
    src.write_text("lorem ipsum " * 1000 + "\n")
    with pytest.raises(TraceFormatError) as e:
        ingest_file(src, data_dir)
    # 60 characters of the line, then "..."
    assert f"(the file starts with {'lorem ipsum ' * 5}...', which".replace("with l", "with 'l") in str(e.value)
    assert len(str(e.value)) < 500


def test_msr_bad_first_line_is_line_1_not_a_header(tmp_path, data_dir):
    good = f"{T0 + 10},usr,0,Read,0,512,1\n"
    src = tmp_path / "bad1.csv"
    src.write_text(f"xx,usr,0,Read,0,512,1\n{T0},usr,0,Read,zz,512,1\n")
    with pytest.raises(TraceFormatError, match=r"bad1.csv:1: no line could be read as msr: field 'Timestamp' is not "
                                               r"an integer: 'xx' \(and 1 more rejected\)"):
        ingest_file(src, data_dir, fmt="msr", validate="off")
    # a binary first line is a rejected record (line 1), not a header silently skipped
    src = tmp_path / "elf.csv"
    src.write_bytes(ELF[:24] + b"\n" + good.encode())
    r = ingest_file(src, data_dir, fmt="msr", validate="off")
    assert (r.rows_read, r.rows_accepted, r.rows_rejected, r.lines_skipped) == (2, 1, 1, {})
    # a real header is still skipped and counted
    src = tmp_path / "hdr.csv"
    src.write_text("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n" + good)
    r = ingest_file(src, data_dir, fmt="msr", validate="off")
    assert (r.rows_read, r.rows_accepted, r.lines_skipped) == (1, 1, {"header": 1})


def test_unknown_validate_mode_is_refused_with_the_allowed_values(tmp_path, data_dir):
    src = tmp_path / "usr.csv"
    src.write_text(f"{T0},usr,0,Read,0,512,1\n")
    p = cli("ingest", str(src), "--validate", "bogus", data_dir=data_dir)
    assert p.returncode == 2
    assert "Invalid value for '--validate': must be one of auto, full, sample, off; got 'bogus'" in p.stderr
    with pytest.raises(ValueError, match=r"--validate must be one of auto, full, sample, off; got 'Full'"):
        ingest_file(src, data_dir, validate="Full")
    with pytest.raises(ValueError, match=r"--validate must be one of auto, full, sample, off; got 'no'"):
        ingest_log_file(src, data_dir, validate="no")
    assert_nothing_published(data_dir)


# -- paths in SQL -------------------------------------------------------------------------


def test_data_dir_with_quotes_spaces_and_non_ascii(tmp_path):
    """Ingest with a re-sort (DuckDB), traces, load (views over Parquet) and sql over requests,
    in a data directory DuckDB would misparse if paths were pasted into SQL unquoted."""
    from pipelines.catalog import find_trace

    dd = tmp_path / "o'brien's data é"
    lines = [f"{T0 + t},usr,{i % 2},Read,{512 * i},512,1" for i, t in enumerate([50, 40, 60, 30, 70, 80])]
    src = tmp_path / "o'brien trace é.csv"
    src.write_text("\n".join(lines) + "\n")
    p = cli("ingest", str(src), "--json", "--validate", "off", data_dir=dd)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert (got["rows_accepted"], got["sorted_rows"]) == (6, 1)
    ordered = pl.concat(find_trace(dd, got["trace_id"]).iter_ordered(columns=["src_line"]))
    assert ordered["src_line"].to_list() == [4, 2, 1, 3, 5, 6]
    p = cli("traces", "--json", data_dir=dd)
    assert p.returncode == 0 and json.loads(p.stdout)[0]["trace_id"] == got["trace_id"]
    p = cli("load", data_dir=dd)
    assert p.returncode == 0, p.stderr
    p = cli("sql", "select r.trace_id, count(*) n, min(src_line) first_line, any_value(t.reader_version) reader_version "
            "from requests r join traces t using (trace_id) group by all",
            "--json", data_dir=dd)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [{"trace_id": got["trace_id"], "n": 6, "first_line": 1,
                                     "reader_version": reader_version()}]


# -- reader versions and --force ------------------------------------------------------------


def small_msr(tmp_path: Path, name: str = "usr.csv") -> Path:
    src = tmp_path / name
    src.write_bytes(msr_text(50))
    return src


def make_stale(data_dir: Path, trace_id: str) -> None:
    """What an ingest by an older reader looks like: another reader_version in the manifest."""
    m = traces_root(data_dir) / trace_id / "manifest.json"
    man = json.loads(m.read_text())
    man["reader_version"] = "0123456789abcdef"
    m.write_text(json.dumps(man))


def test_manifest_records_the_reader_version(tmp_path, data_dir):
    r = ingest_file(small_msr(tmp_path), data_dir, validate="off")
    man = json.loads((Path(r.path) / "manifest.json").read_text())
    assert man["reader_version"] == r.reader_version == reader_version()
    assert len(r.reader_version) == 16 and int(r.reader_version, 16) >= 0
    assert man["tiercast_version"] == package_version()


def test_reader_version_changes_when_a_reader_changes(monkeypatch):
    import replay.version as rv

    before = reader_version()
    real = rv._read
    monkeypatch.setattr(rv, "_read", lambda path: real(path) + (b"# fix\n" if path.name == "msr.py" else b""))
    rv.clear_cache()
    try:
        assert reader_version() != before
    finally:
        monkeypatch.undo()
        rv.clear_cache()
    assert reader_version() == before


def test_older_reader_version_is_not_already_ingested(tmp_path, data_dir):
    src = small_msr(tmp_path)
    first = ingest_file(src, data_dir, validate="off")
    make_stale(data_dir, first.trace_id)
    again = ingest_file(src, data_dir, validate="off")
    assert not again.already_ingested and again.trace_id == first.trace_id
    assert again.reader_version == reader_version()
    # the same content under another name: the stale dataset with that id is replaced too
    make_stale(data_dir, first.trace_id)
    copy = ingest_file(small_msr(tmp_path, "copy.csv"), data_dir, validate="off")
    assert not copy.already_ingested and copy.reader_version == reader_version()
    assert [t.trace_id for t in list_traces(data_dir)] == [first.trace_id]
    assert not list(traces_root(data_dir).glob(".tmp-*"))
    # current now: a no-op again
    assert ingest_file(src, data_dir, validate="off").already_ingested


def test_force_reingests_and_replaces_the_dataset(tmp_path):
    src = small_msr(tmp_path)
    dd = tmp_path / "dd"
    first = json.loads(cli("ingest", str(src), "--json", "--validate", "off", data_dir=dd).stdout)
    trace_dir = traces_root(dd) / first["trace_id"]
    (trace_dir / "left-by-old-reader").write_text("x")
    p = cli("ingest", str(src), "--json", "--validate", "off", data_dir=dd)
    assert json.loads(p.stdout)["already_ingested"] is True
    p = cli("ingest", str(src), "--json", "--validate", "off", "--force", data_dir=dd)
    assert p.returncode == 0, p.stderr
    forced = json.loads(p.stdout)
    assert forced["already_ingested"] is False and forced["trace_id"] == first["trace_id"]
    assert forced["rows_accepted"] == 50
    assert not (trace_dir / "left-by-old-reader").exists() and (trace_dir / "manifest.json").is_file()
    assert [t.trace_id for t in list_traces(dd)] == [first["trace_id"]]
    assert not list(traces_root(dd).glob(".tmp-*"))


def test_force_on_a_measured_log_replaces_it(tmp_path, data_dir):
    src = shared_path("iostat", "text-jc", "centos-7.7_iostat.out")
    first = ingest_log_file(src, data_dir, validate="off")
    assert ingest_log_file(src, data_dir, validate="off").already_ingested
    forced = ingest_log_file(src, data_dir, validate="off", force=True)
    assert not forced.already_ingested and forced.dataset_id == first.dataset_id
    assert [m.dataset_id for m in list_measured(data_dir)] == [first.dataset_id]
    assert list_measured(data_dir)[0].manifest["reader_version"] == reader_version()


def test_traces_shows_the_reader_version_and_stale_ones(tmp_path):
    dd = tmp_path / "dd"
    a = json.loads(cli("ingest", str(small_msr(tmp_path)), "--json", "--validate", "off", data_dir=dd).stdout)
    other = tmp_path / "other.csv"
    other.write_bytes(msr_text(60))
    b = json.loads(cli("ingest", str(other), "--json", "--validate", "off", data_dir=dd).stdout)
    make_stale(dd, b["trace_id"])
    listed = {t["trace_id"]: t for t in json.loads(cli("traces", "--json", data_dir=dd).stdout)}
    assert (listed[a["trace_id"]]["reader_version"], listed[a["trace_id"]]["current"]) == (reader_version(), True)
    assert (listed[b["trace_id"]]["reader_version"], listed[b["trace_id"]]["current"]) == ("0123456789abcdef", False)
    p = cli("traces", data_dir=dd)
    assert p.returncode == 0 and reader_version() in p.stdout and "0123456789abcdef (stale)" in p.stdout


# -- interrupted ingests ----------------------------------------------------------------------


# -- smaller defects --------------------------------------------------------------------------


def test_corrupt_source_index_fails_naming_the_file(tmp_path):
    src = small_msr(tmp_path)
    dd = tmp_path / "dd"
    assert cli("ingest", str(src), "--validate", "off", data_dir=dd).returncode == 0
    index = traces_root(dd) / "_sources.json"
    index.write_text('{"truncated": ')
    with pytest.raises(CorruptIndexError, match=rf"^{index}: the re-ingest index is corrupt \(.*\); .* delete it"):
        ingest_file(src, dd, validate="off")
    p = cli("ingest", str(src), "--validate", "off", data_dir=dd)
    assert p.returncode != 0 and f"{index}: the re-ingest index is corrupt" in p.stderr
    assert index.read_text() == '{"truncated": '  # not silently replaced
    index.unlink()
    assert ingest_file(src, dd, validate="off").already_ingested


def test_find_by_prefix_one_semantics():
    ids = {"abc123": 1, "abc456": 2, "abd": 3, "ab": 4}
    find = lambda ref: find_by_prefix(ids, ref, "thing", "/data/things", "see `tiercast things`")  # noqa: E731
    assert (find("abc123"), find("abc4"), find("abd"), find("ab")) == (1, 2, 3, 4)  # exact "ab" beats prefixes
    with pytest.raises(LookupError, match=r"^thing 'abc' is ambiguous: it is a prefix of 2 ids \(abc123, abc456\); "
                                          r"give more characters$"):
        find("abc")
    with pytest.raises(LookupError, match=r"^no thing 'zz' in /data/things \(see `tiercast things`\)$"):
        find("zz")
    with pytest.raises(LookupError, match=r"^no thing '' in"):
        find("")


def test_every_id_lookup_uses_the_one_helper(tmp_path, data_dir):
    """Traces, measured datasets, captures and replay runs: same exact / prefix / ambiguous rules."""
    from pipelines.capture import captures_root, find_capture
    from pipelines.catalog import find_trace
    from pipelines.compare import find_run
    from pipelines.ingest_logs import find_measured

    for cid in ("c0ffee01", "c0ffee02"):
        (captures_root(data_dir) / cid).mkdir(parents=True)
        (captures_root(data_dir) / cid / "capture.json").write_text(json.dumps({"capture_id": cid}))
    runs = data_dir / "results" / "array_runs"
    for rid in ("feed01", "feed02"):
        (runs / rid).mkdir(parents=True)
        (runs / rid / "summary.json").write_text(json.dumps({"run_id": rid}))
    a = ingest_file(small_msr(tmp_path), data_dir, validate="off")
    m = ingest_log_file(shared_path("iostat", "text-jc", "centos-7.7_iostat.out"), data_dir, validate="off")
    assert find_trace(data_dir, a.trace_id[:6]).trace_id == a.trace_id
    assert find_measured(data_dir, m.dataset_id[:6]).dataset_id == m.dataset_id
    assert find_capture(data_dir, "c0ffee02")["capture_id"] == "c0ffee02"
    assert find_run(data_dir, "feed01")["run_id"] == "feed01"
    with pytest.raises(LookupError, match=r"capture 'c0ffee' is ambiguous: it is a prefix of 2 ids \(c0ffee01, c0ffee02\)"):
        find_capture(data_dir, "c0ffee")
    with pytest.raises(LookupError, match=r"replay run 'feed' is ambiguous: it is a prefix of 2 ids \(feed01, feed02\)"):
        find_run(data_dir, "feed")
    with pytest.raises(LookupError, match=rf"no ingested trace 'zz' in {traces_root(data_dir)} \(see `tiercast traces`\)"):
        find_trace(data_dir, "zz")
    with pytest.raises(LookupError, match=rf"no measured dataset 'zz' in {measured_root(data_dir)} "
                                          r"\(see `tiercast measured`\)"):
        find_measured(data_dir, "zz")


def test_lost_rows_fail_explicitly_even_under_python_O(tmp_path, data_dir, monkeypatch):
    import pipelines.ingest as ing
    from pipelines.dataset import IngestInvariantError, RejectsWriter

    class LosingRejects(RejectsWriter):
        def close(self) -> None:
            super().close()
            self.count += 1  # as if a rejected row were counted but never read

    monkeypatch.setattr(ing, "RejectsWriter", LosingRejects)
    src = small_msr(tmp_path)
    with pytest.raises(IngestInvariantError, match=rf"^{src}: internal error, rows read 50 != accepted 50 \+ rejected 1; "
                                                   r"nothing was published"):
        ingest_file(src, data_dir, validate="off")
    assert_nothing_published(data_dir)


def test_no_assert_statements_in_ingest_code():
    """Invariants in ingest code are explicit checks: ``python -O`` strips asserts."""
    import ast

    files = [*ROOT.glob("traces/*.py"), *ROOT.glob("pipelines/*.py"), *ROOT.glob("pipelines/cli/*.py")]
    found = [f"{f.relative_to(ROOT)}:{n.lineno}" for f in files for n in ast.walk(ast.parse(f.read_text()))
             if isinstance(n, ast.Assert)]
    assert found == []


def test_streaming_small_blocks_and_bounded_parts_give_the_same_trace(tmp_path, monkeypatch):
    """Blocks of a few KiB and parts of at most 1,000 rows per volume give the same rows, counts
    and sha256 (computed on the same pass) as one block: nothing depends on the whole file
    being in memory."""
    import hashlib

    import pipelines.ingest as ing
    from pipelines.catalog import find_trace
    from traces.msr import MsrReader

    src = tmp_path / "usr.csv.gz"
    src.write_bytes(gzip.compress(msr_text(10_000)))
    whole = ingest_file(src, tmp_path / "whole", validate="off")
    monkeypatch.setattr(MsrReader, "block_bytes", 4096)
    monkeypatch.setattr(ing, "FLUSH_ROWS_PER_VOLUME", 1000)
    small = ingest_file(src, tmp_path / "small", validate="off")
    assert small.sha256 == whole.sha256 == hashlib.sha256(src.read_bytes()).hexdigest()
    assert (small.rows_read, small.volumes) == (whole.rows_read, whole.volumes) == (10_000, {"usr_0": 5000, "usr_1": 5000})
    t = find_trace(tmp_path / "small", small.trace_id)
    rows_per_part = [pl.read_parquet(f).height for f in t.volume_files]
    assert rows_per_part == [1000] * 10
    a = t.scan().collect().sort("src_line")
    b = find_trace(tmp_path / "whole", whole.trace_id).scan().collect().sort("src_line")
    assert a.equals(b)

