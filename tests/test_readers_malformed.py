"""Malformed inputs, parametrized over every reader family: each one either lands in the
rejects with its line and a reason, or fails the whole file with a TraceFormatError naming
the file (and the line when there is one). Always: rows read = accepted + rejected.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from traces.errors import TraceFormatError
from traces.vscsi import RECORD

T0 = 128166372003061629  # FILETIME of 2007-02-22 17:00:00.306 UTC (FORMATS.md)

GENERIC_MAPPING = """
[file]
separator = ";"
header = true
[columns]
ts = "t_ms"
volume = "vol"
op = "kind"
offset = "blk"
size = "len"
[units]
ts = "ms"
offset = 4096
size = "bytes"
[ops]
rd = "read"
wr = "write"
"""


class Family:
    """How to write one line of a text format: ``line(i, off, size, op)`` with ``i`` the time
    step (0, 1, 2, ... increasing), plus what the format calls its fields."""

    def __init__(self, fmt, line, header, *, wrong_columns, offset_field, size_word="size", options=None):
        self.fmt, self.line, self.header = fmt, line, header
        self.wrong_columns = wrong_columns  # (bad line, reason regex)
        self.offset_field = offset_field
        self.options = options or {}

    def good(self) -> list[str]:
        return [self.line(1, "8", "8", "r"), self.line(2, "16", "8", "w"), self.line(3, "24", "16", "r")]


def _blk(i, off, size, op):
    return f"  8,0    1  {i + 1:>7}  {i}.{i:09d}     0  C   {'R' if op == 'r' else 'W'} {off} + {size} [0]"


FAMILIES = {
    "msr": Family(
        "msr",
        lambda i, off, size, op: f"{T0 + 10 * i},usr,0,{'Read' if op == 'r' else 'Write'},{off},{size},10",
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        wrong_columns=(f"{T0 + 40},usr,0,Read,0,512", "expected 7 fields, found 6"),
        offset_field="Offset",
    ),
    "alibaba": Family(
        "alibaba",
        lambda i, off, size, op: f"9,{op.upper()},{off},{size},{1577808144000000 + i}",
        "device_id,opcode,offset,length,timestamp",
        wrong_columns=("9,R,0,512", "expected 5 fields, found 4"),
        offset_field="offset",
    ),
    "tencent": Family(
        "tencent",
        lambda i, off, size, op: f"{1538323199 + i},{off},{size},{0 if op == 'r' else 1},7",
        "Timestamp,Offset,Size,IOType,VolumeID",
        wrong_columns=("1538323209,0,8,0,7,extra", "expected 5 fields, found 6"),
        offset_field="Offset",
    ),
    "fiu": Family(
        "fiu",
        lambda i, off, size, op: (
            f"{1000 + i} 42 nfsd {off} {size} {op.upper()} 8 0 d41d8cd98f00b204e9800998ecf8427e"
        ),
        "ts pid process lba size rw major minor md5",
        wrong_columns=("1009 42 nfsd 0 8 R 8", "expected 8 to 9 fields, found 7"),
        offset_field="lba",
    ),
    "spc": Family(
        "spc",
        lambda i, off, size, op: f"0,{off},{size},{op},{i}.000100",
        "ASU,LBA,Size,Opcode,Timestamp",
        wrong_columns=("0,8,512,r", "expected 5 fields, found 4"),
        offset_field="LBA",
    ),
    "disksim": Family(
        "disksim",
        lambda i, off, size, op: f"{i}.5 0 {off} {size} {1 if op == 'r' else 0}",
        "time dev lba size type",
        wrong_columns=("9.5 0 8 8", "expected 5 fields, found 4"),
        offset_field="lba",
    ),
    "blkparse": Family(
        "blkparse",
        _blk,
        None,  # blkparse prints no header; its "header only" analogue is a summary block only
        wrong_columns=("  8,0    1  9  9.000000000", "not a blkparse event line"),
        offset_field="sector",
    ),
    "generic": Family(
        "generic",
        lambda i, off, size, op: f"{i}.25;disk0;{'rd' if op == 'r' else 'wr'};{off};{int(size) * 512}",
        "t_ms;vol;kind;blk;len",
        wrong_columns=("9.25;disk0;rd;8", "expected 5 fields, found 4"),
        offset_field="blk",
    ),
}

TEXT = sorted(FAMILIES)


def _write(tmp_path: Path, fam: Family, lines: list[str] | bytes, name="trace.txt", header=True) -> Path:
    if isinstance(lines, bytes):
        data = lines
    else:
        head = [fam.header] if (header and fam.fmt == "generic") else []
        data = ("\n".join(head + lines) + "\n").encode()
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _opts(fam: Family, tmp_path: Path, **extra) -> dict:
    opts = dict(fam.options, **extra)
    if fam.fmt == "generic":
        m = tmp_path / "mapping.toml"
        m.write_text(GENERIC_MAPPING)
        opts["mapping"] = str(m)
    return opts


def _ingest(tmp_path, fam, path, **extra):
    data_dir = tmp_path / "data"
    r = ingest_file(path, data_dir, fmt=fam.fmt, options=_opts(fam, tmp_path, **extra), validate="off")
    assert r.rows_read == r.rows_accepted + r.rows_rejected
    return r, find_trace(data_dir, r.trace_id)


def _bad_line(fam: Family, case: str) -> tuple[str | bytes, str]:
    """One malformed line (after three good ones) and the reason it must be rejected with."""
    ln = fam.line
    if case == "wrong_columns":
        return fam.wrong_columns
    if case == "non_numeric":
        field = "sector" if fam.fmt == "blkparse" else fam.offset_field
        if fam.fmt == "blkparse":
            return ln(4, "abc", "8", "r"), "cannot read 'sector \\+ nsectors"
        return ln(4, "abc", "8", "r"), f"field '{field}' is not an integer: 'abc'"
    if case == "negative_size":
        if fam.fmt == "blkparse":  # "sector + -8" is not blkparse syntax at all
            return ln(4, "0", "-8", "r"), "cannot read 'sector \\+ nsectors"
        size = {"msr": -8, "alibaba": -8, "spc": -8, "generic": -4096}.get(fam.fmt, -4096)
        return ln(4, "0", "-8", "r"), f"size must be > 0, got {size}"
    if case == "nul_byte":
        return ln(4, "1\x006", "8", "r"), "line contains NUL bytes"
    if case == "invalid_utf8":
        return ln(4, "16", "8", "r").encode().replace(b"16", b"1\xff6", 1), "line is not valid UTF-8 text"
    if case == "very_long_line":
        long = "9" * 100_000
        if fam.fmt == "blkparse":
            return ln(4, long, "8", "r"), "sector 9{40} is out of range"
        return ln(4, long, "8", "r"), f"field '{fam.offset_field}' is not an integer: '9{{40}}'"
    raise AssertionError(case)


LINE_CASES = ["wrong_columns", "non_numeric", "negative_size", "nul_byte", "invalid_utf8", "very_long_line"]


@pytest.mark.parametrize("case", LINE_CASES)
@pytest.mark.parametrize("family", TEXT)
def test_bad_line_is_rejected_with_reason(family, case, tmp_path):
    fam = FAMILIES[family]
    bad, reason = _bad_line(fam, case)
    good = [g.encode() for g in fam.good()]
    head = [fam.header.encode()] if fam.fmt == "generic" else []
    bad_b = bad if isinstance(bad, bytes) else bad.encode()
    data = b"\n".join(head + good + [bad_b]) + b"\n"
    p = _write(tmp_path, fam, data)
    r, t = _ingest(tmp_path, fam, p)
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (4, 3, 1)
    rej = t.rejects()
    assert rej["src_line"].to_list() == [4 + len(head)]
    assert re.search(reason, rej["reason"][0]), rej["reason"][0]
    if case == "very_long_line":
        # raw text keeps the first 4096 bytes and says how much was cut
        assert rej["raw"][0] == bad[:4096] + f"...[{len(bad_b) - 4096} more bytes]"
    else:
        assert rej["raw"][0] == bad_b.decode("utf-8", errors="backslashreplace")




@pytest.mark.parametrize(
    "family", TEXT
)
def test_time_going_backwards_sort_or_reject(family, tmp_path):
    fam = FAMILIES[family]
    # the third line is older than the second on the same volume
    lines = [fam.line(1, "8", "8", "r"), fam.line(3, "16", "8", "w"), fam.line(2, "24", "8", "r")]
    p = _write(tmp_path, fam, lines)
    r, t = _ingest(tmp_path, fam, p)
    assert (r.rows_read, r.rows_accepted, r.rows_rejected, r.sorted_rows) == (3, 3, 0, 1)
    first = 2 if fam.fmt == "generic" else 1  # generic files have a header line
    assert t.scan().collect()["src_line"].to_list() == [first, first + 2, first + 1]
    r2, t2 = _ingest(tmp_path, fam, p, order="reject")
    assert (r2.rows_read, r2.rows_accepted, r2.rows_rejected, r2.sorted_rows) == (3, 2, 1, 0)
    assert t2.rejects()["reason"].to_list() == ["timestamp goes backwards within its volume"]


@pytest.mark.parametrize("family", TEXT)
def test_crlf_reads_like_lf(family, tmp_path):
    fam = FAMILIES[family]
    lf = _write(tmp_path, fam, fam.good(), name="lf.txt")
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(lf.read_bytes().replace(b"\n", b"\r\n"))
    r1, t1 = _ingest(tmp_path, fam, lf)
    r2, t2 = _ingest(tmp_path, fam, crlf)
    assert (r2.rows_read, r2.rows_accepted, r2.rows_rejected) == (3, 3, 0)
    assert t2.scan().collect().equals(t1.scan().collect())


@pytest.mark.parametrize("family", TEXT)
def test_truncated_gzip_fails_naming_the_file(family, tmp_path):
    fam = FAMILIES[family]
    lines = [fam.line(i, str(8 * i), "8", "r") for i in range(1, 2000)]
    raw = _write(tmp_path, fam, lines).read_bytes()
    p = tmp_path / "cut.gz"
    p.write_bytes(gzip.compress(raw)[:-100])
    with pytest.raises(TraceFormatError, match=r"cut.gz: truncated gzip data: the file ends at byte [0-9,]+ inside the member"):
        _ingest(tmp_path, fam, p)
    assert not list((tmp_path / "data" / "traces").glob("[0-9a-f]*"))


@pytest.mark.parametrize("family", TEXT)
def test_empty_file(family, tmp_path):
    fam = FAMILIES[family]
    p = tmp_path / "empty.txt"
    p.write_bytes(b"")
    with pytest.raises(TraceFormatError, match=r"empty.txt: file contains no requests \(empty\)"):
        _ingest(tmp_path, fam, p)


@pytest.mark.parametrize("family", TEXT)
def test_header_only(family, tmp_path):
    fam = FAMILIES[family]
    p = tmp_path / "head.txt"
    if fam.fmt == "blkparse":
        p.write_text("CPU0 (8,0):\n Reads Queued:   0,   0KiB\nEvents (8,0): 0 entries\n")
        with pytest.raises(
            TraceFormatError, match=r"head.txt: file contains no requests \(\{'summary': 3\}\)"
        ):
            _ingest(tmp_path, fam, p)
        return
    p.write_text(fam.header + "\n")
    with pytest.raises(TraceFormatError, match=r"head.txt: file has only a header"):
        _ingest(tmp_path, fam, p)


@pytest.mark.parametrize("family", TEXT)
def test_binary_garbage(family, tmp_path):
    fam = FAMILIES[family]
    p = tmp_path / "garbage.bin"
    p.write_bytes(np.random.default_rng(7).bytes(20_000))
    with pytest.raises(
        TraceFormatError, match=rf"garbage.bin(:\d+)?: (no line could be read as {fam.fmt}|mapping)"
    ):
        _ingest(tmp_path, fam, p)
    with pytest.raises(TraceFormatError, match=r"garbage.bin:1: unknown format"):
        ingest_file(p, tmp_path / "data2", validate="off")


# -- the binary family: CloudPhysics vSCSI -------------------------------------------------------

GOOD_VSCSI = [
    (1, 4096, 1, 0x28, 0x0100, 8, 1_000),
    (2, 4096, 1, 0x2A, 0x0100, 16, 2_000),
    (3, 512, 1, 0x28, 0x0100, 24, 3_000),
]
VSCSI_BAD = {
    "zero_length": ((4, 0, 1, 0x28, 0x0100, 8, 4_000), "size must be > 0, got 0"),
    "bad_version": ((4, 512, 1, 0x28, 0x0300, 8, 4_000), "record version 0x0300 is not vSCSI v1"),
    "lbn_overflow": ((4, 512, 1, 0x28, 0x0100, 2**63, 4_000), "lbn 9223372036854775808 is out of range"),
    "lbn_bytes_overflow": (
        (4, 512, 1, 0x28, 0x0100, 2**62, 4_000),
        r"lbn \(blocks\) 4611686018427387904 is out of range",
    ),
    "ts_overflow": (
        (4, 512, 1, 0x28, 0x0100, 8, 2**62),
        r"timestamp \(µs\) 4611686018427387904 is out of range",
    ),
    "len_too_big": ((4, 2**31, 1, 0x2A, 0x0100, 8, 4_000), "size 2147483648 bytes exceeds 2 GiB - 1"),
}


def _vscsi(tmp_path, records, name="t.vscsi", **opts):
    p = tmp_path / name
    p.write_bytes(np.array(records, dtype=RECORD).tobytes())
    return p


@pytest.mark.parametrize("case", sorted(VSCSI_BAD))
def test_vscsi_bad_record_is_rejected(case, tmp_path):
    rec, reason = VSCSI_BAD[case]
    p = _vscsi(tmp_path, [*GOOD_VSCSI, rec])
    r = ingest_file(p, tmp_path / "data", fmt="vscsi", validate="off")
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (4, 3, 1)
    rej = find_trace(tmp_path / "data", r.trace_id).rejects()
    assert rej["src_line"].to_list() == [4]
    assert re.search(reason, rej["reason"][0]), rej["reason"][0]
    assert rej["raw"][0] == np.array([rec], dtype=RECORD).tobytes().hex()


def test_vscsi_backwards_sort_or_reject(tmp_path):
    p = _vscsi(tmp_path, [*GOOD_VSCSI, (4, 512, 1, 0x28, 0x0100, 8, 1_500)])
    r = ingest_file(p, tmp_path / "data", validate="off")
    assert (r.format, r.rows_read, r.rows_accepted, r.sorted_rows) == ("vscsi", 4, 4, 1)
    r2 = ingest_file(p, tmp_path / "data", validate="off", options={"order": "reject"})
    assert (r2.rows_read, r2.rows_accepted, r2.rows_rejected) == (4, 3, 1)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"", r"t.vscsi: file contains no requests \(empty\)"),
        (
            np.array(GOOD_VSCSI, RECORD).tobytes()[:-1],
            r"t.vscsi:3: truncated record 3: the file ends 31 bytes",
        ),
        (
            np.array(GOOD_VSCSI, RECORD).tobytes() + b"\n",
            r"t.vscsi:4: truncated record 4: the file ends 1 bytes",
        ),
        (
            gzip.compress(np.array(GOOD_VSCSI * 400, RECORD).tobytes())[:-50],
            r"t.vscsi: truncated gzip data",
        ),
        (
            np.random.default_rng(3).bytes(32 * 100),
            r"t.vscsi:1: not a vSCSI v1 trace: record 1 has version 0x[0-9a-f]{4}, expected 0x0100 \(file starts with binary data",
        ),
        (
            (b"0,303567,3584,w,0.000000\n" * 4)[:96],
            r"t.vscsi:1: not a vSCSI v1 trace: record 1 has version 0x2c77, expected 0x0100 \(file starts with '0,303567,3584,w,0.000000'\)",
        ),
    ],
    ids=["empty", "short-last-record", "trailing-newline", "truncated-gzip", "garbage", "text-file"],
)
def test_vscsi_file_errors(content, error, tmp_path):
    p = tmp_path / "t.vscsi"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError, match=error):
        ingest_file(p, tmp_path / "data", fmt="vscsi", validate="off")
    assert not list((tmp_path / "data" / "traces").glob("[0-9a-f]*"))
