"""The generic reader: a TOML mapping instead of code, validated on load, for CSV and Parquet."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from traces.errors import TraceFormatError
from traces.generic import GenericReader

FIX = Path(__file__).parent / "fixtures"
INGEST_PAGE = Path(__file__).parent.parent / "docs" / "guide" / "ingest.md"


def mapping(tmp_path: Path, text: str, name: str = "m.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def ingest(path, data_dir, spec: str, **opts):
    r = ingest_file(path, data_dir, fmt="generic", options={"mapping": spec, **opts}, validate="off")
    assert r.rows_read == r.rows_accepted + r.rows_rejected
    t = find_trace(data_dir, r.trace_id)
    return r, t, t.scan().collect().sort("src_line")


def test_the_documented_example_mapping(data_dir):
    r, t, rows = ingest(FIX / "generic_example.csv", data_dir, str(FIX / "generic_example.toml"))
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("generic", 4, 3, 1)
    assert r.lines_skipped == {"header": 1, "comment": 1}
    # 1622505600000000 us since 1970 = 2021-06-01 00:00:00 UTC (clock = "unix")
    assert t.manifest["start_time"] == "2021-06-01T00:00:00+00:00"
    assert rows.rows() == [
        # lba 2048 * 512 = 1048576; 0.412 ms = 412000 ns
        (0, "lun7", "read", 1_048_576, 8192, 412_000, 3),
        # trim ("U"), 12 ms; 1000 us after the first request
        (1_000_000, "lun9", "trim", 0, 1_048_576, 12_000_000, 5),
        # "r" matches "R" (case-insensitive); 16 * 512 = 8192; 0.000001 ms = 1 ns
        (2_000_000, "lun7", "read", 8192, 4096, 1, 6),
    ]
    # line 4: 134217720 * 512 + 8192 = 68719480832 > 64 GiB = 68719476736
    rej = t.rejects()
    assert rej["src_line"].to_list() == [4]
    assert rej["reason"][0] == "request end 68719480832 is beyond the volume capacity 68719476736 bytes"
    assert t.manifest["volumes"]["lun7"]["capacity_bytes"] == 64 << 30


def test_the_ingest_page_ships_the_example_mapping():
    text = INGEST_PAGE.read_text()
    block = re.search(r"```toml\n(# A storage array's per-I/O export.*?)```", text, re.S)
    assert block, "docs/guide/ingest.md has no toml example"
    assert block.group(1) == (FIX / "generic_example.toml").read_text()


def test_positions_whitespace_constants_filetime(tmp_path, data_dir):
    spec = mapping(
        tmp_path,
        """
[file]
separator = "whitespace"
[columns]
ts = 1
offset = 3
size = 4
latency = 2
[constants]
volume = "ssd0"
op = "write"
[units]
ts = "filetime"
offset = "bytes"
size = "sectors"
latency = "100ns"
""",
    )
    src = tmp_path / "w.txt"
    # position 5 and later are ignored; FILETIME 128166372003061629 = 2007-02-22 17:00:00.306 UTC
    src.write_text("128166372003061629  41286 4096 8 junk more\n128166372003061639 7 0 1\n")
    r, t, rows = ingest(src, data_dir, spec)
    assert (r.rows_accepted, r.rows_rejected) == (2, 0)
    assert t.manifest["start_time"] == "2007-02-22T17:00:00.306163+00:00"
    # 10 ticks = 1000 ns; 8 sectors = 4096 bytes; 41286 ticks of 100 ns = 4128600 ns
    assert rows.rows() == [
        (0, "ssd0", "write", 4096, 4096, 4_128_600, 1),
        (1000, "ssd0", "write", 0, 512, 700, 2),
    ]


def test_block_size_unit_and_case_sensitive_ops(tmp_path, data_dir):
    spec = mapping(
        tmp_path,
        """
[file]
separator = "|"
[columns]
ts = 1
volume = 2
op = 3
offset = 4
size = 5
[units]
ts = "s"
offset = 4096
size = 4096
[ops]
r = "read"
R = "trim"
w = "write"
""",
    )
    src = tmp_path / "p.txt"
    src.write_text("0.5|a|r|3|1\n0.75|a|R|3|2\n1.000000001|a|w|0|1\n2|a|W|0|1\n")
    r, t, rows = ingest(src, data_dir, spec)
    # "r" and "R" mean different ops here, so values are matched case-sensitively: "W" is unknown
    assert rows.select("ts_ns", "op", "offset", "size").rows() == [
        (0, "read", 12_288, 4096),
        (250_000_000, "trim", 12_288, 8192),
        (500_000_001, "write", 0, 4096),
    ]
    assert t.rejects()["reason"].to_list() == ["unknown c3 'W' (expected R or r or w)"]


def test_parquet_input_with_typed_columns(tmp_path, data_dir):
    spec = mapping(
        tmp_path,
        """
[columns]
ts = "when"
volume = "disk"
op = "kind"
offset = "lba"
size = "nbytes"
latency = "service"
[units]
ts = "ns"
offset = "sectors"
size = "bytes"
latency = "us"
[ops]
0 = "read"
1 = "write"
""",
    )
    t0 = datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)
    df = pl.DataFrame(
        {
            "when": [t0, t0.replace(microsecond=5)],
            "disk": ["d1", "d1"],
            "kind": [0, 1],
            "lba": ["8", "abc"],
            "nbytes": [4096, 512],
            "service": [timedelta(microseconds=250), timedelta(microseconds=3)],
        }
    )
    src = tmp_path / "io.parquet"
    df.write_parquet(src)
    r, t, rows = ingest(src, data_dir, spec)
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (2, 1, 1)
    # a Parquet timestamp column is absolute time; a duration column is exact ns
    assert t.manifest["start_time"] == "2024-03-01T12:00:00+00:00"
    assert rows.rows() == [(0, "d1", "read", 4096, 4096, 250_000, 1)]
    rej = t.rejects()
    assert rej["reason"].to_list() == ["field 'lba' is not an integer: 'abc'"]
    assert '"lba": "abc"' in rej["raw"][0]


def test_mapping_identity_is_its_content(tmp_path, data_dir):
    a = tmp_path / "a"
    a.mkdir()
    shutil.copy(FIX / "generic_example.toml", a / "m.toml")
    r1 = ingest_file(
        FIX / "generic_example.csv",
        data_dir,
        fmt="generic",
        options={"mapping": str(a / "m.toml")},
        validate="off",
    )
    r2 = ingest_file(
        FIX / "generic_example.csv",
        data_dir,
        fmt="generic",
        options={"mapping": str(FIX / "generic_example.toml")},
        validate="off",
    )
    assert r2.trace_id == r1.trace_id  # same mapping content elsewhere: the same trace
    (a / "m.toml").write_text((a / "m.toml").read_text().replace('latency = "ms"', 'latency = "us"'))
    r3 = ingest_file(
        FIX / "generic_example.csv",
        data_dir,
        fmt="generic",
        options={"mapping": str(a / "m.toml")},
        validate="off",
    )
    assert r3.trace_id != r1.trace_id


BASE = """
[file]
header = true
[columns]
ts = "t"
volume = "v"
op = "o"
offset = "off"
size = "len"
[units]
ts = "ns"
offset = "bytes"
size = "bytes"
[ops]
R = "read"
"""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            BASE + "[colums]\nts = 1\n",
            "unknown key 'colums' (known tables: file, columns, units, constants, ops, capacities)",
        ),
        (
            BASE.replace('size = "bytes"', 'size = "bytes"\ntz = "UTC"'),
            "unknown key units.tz (known: ts, clock, offset, size, latency)",
        ),
        (BASE.replace('size = "len"\n', ""), "columns.size is required"),
        (BASE + '[constants]\nvolume = "x"\n', "give exactly one of columns.volume and constants.volume"),
        (BASE.replace('offset = "bytes"\n', ""), "units.offset is required (no unit is guessed)"),
        (
            BASE.replace('ts = "ns"', 'ts = "minutes"'),
            "units.ts must be one of s, ms, us, ns, 100ns, filetime; got 'minutes'",
        ),
        (
            BASE.replace('R = "read"', 'E = "erase"'),
            "ops.E must be one of read, write, trim, flush, got 'erase'",
        ),
        (
            BASE.replace("header = true", 'header = false\ntype = "csv"'),
            "columns ts, volume, op, offset, size are given by name",
        ),
        (BASE.replace('[ops]\nR = "read"\n', ""), "[ops] is required with columns.op"),
        (BASE.replace('ts = "t"', "ts = 0"), "columns.ts must be a column name or a 1-based position, got 0"),
        (
            BASE.replace("header = true", 'header = true\nseparator = "::"'),
            "file.separator must be one character",
        ),
        (BASE + '[capacities]\nv1 = "lots"\n', "capacities.v1: not a size: 'lots'"),
        (
            BASE.replace('ts = "ns"', 'ts = "filetime"\nclock = "relative"'),
            "units.ts = filetime is an absolute clock",
        ),
        (
            BASE.replace('size = "bytes"', "size = -1"),
            "units.size must be bytes, sectors or a whole number of bytes",
        ),
        ("latency = 3\n" + BASE, "unknown key 'latency'"),
        ("[file\nheader = true", "not valid TOML"),
    ],
)
def test_mapping_validation_errors(text, problem, tmp_path):
    spec = mapping(tmp_path, text)
    with pytest.raises(ValueError) as e:
        GenericReader(mapping=spec)
    assert str(e.value).startswith(f"generic mapping {spec}: ")
    assert problem in str(e.value)


def test_mapping_file_and_option_errors(tmp_path):
    with pytest.raises(ValueError, match="generic: -o mapping=spec.toml is required"):
        GenericReader()
    with pytest.raises(ValueError, match="generic mapping nope.toml: cannot read"):
        GenericReader(mapping="nope.toml")


def test_column_missing_from_header(tmp_path, data_dir):
    spec = mapping(tmp_path, BASE)
    src = tmp_path / "x.csv"
    src.write_text("t,v,o,offset,len\n1,a,R,0,512\n")
    with pytest.raises(
        TraceFormatError,
        match=r"x.csv:1: mapping column 'off' \(for offset\) is not in the header: t, v, o, offset, len",
    ):
        ingest_file(src, data_dir, fmt="generic", options={"mapping": spec}, validate="off")
