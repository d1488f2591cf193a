"""Property tests: any canonical table, written out in a format (values drawn on that format's
grid: 100 ns FILETIME ticks, µs, whole seconds, 512-byte sectors, ...) and read back by the
reader, comes back exactly. Writers here are independent of the readers: plain f-strings and
numpy records built from the format descriptions in FORMATS.md."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traces.registry import reader_class
from traces.source import Source
from traces.vscsi import RECORD

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILETIME_EPOCH_TICKS = 116_444_736_000_000_000
INT32_MAX = 2**31 - 1
SECTORS_MAX = INT32_MAX // 512


def read_back(fmt: str, data: bytes, **options) -> tuple[list[tuple], int, Counter]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "trace"
        p.write_bytes(data)
        reader = reader_class(fmt)(**options)
        batches = list(reader.batches(Source(p)))
    rows = pl.concat([c.rows for c in batches])
    rejected = sum(c.rejects.height for c in batches)
    skipped = sum((c.skipped for c in batches), Counter())
    cols = ["ts_raw_ns", "volume", "op", "offset", "size", "latency_ns"]
    return [tuple(r) for r in rows.select(cols).iter_rows()], rejected, skipped


def sorted_ints(lo: int, hi: int, min_size: int = 1, max_size: int = 20):
    return st.lists(st.integers(lo, hi), min_size=min_size, max_size=max_size).map(sorted)


def per_row(n: int, strategy) -> st.SearchStrategy:
    return st.lists(strategy, min_size=n, max_size=n)


@st.composite
def rows_of(draw, ts_strategy, **columns):
    """n rows: sorted timestamps plus one drawn value per row for every other column."""
    ts = draw(ts_strategy)
    n = len(ts)
    out = {"ts": ts}
    for name, strat in columns.items():
        out[name] = draw(per_row(n, strat))
    return [dict(zip(out, vals, strict=True)) for vals in zip(*out.values(), strict=True)]


def text(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@SETTINGS
@given(
    rows_of(
        sorted_ints(128_000_000_000_000_000, 129_000_000_000_000_000),  # FILETIME ticks, 2006-2009
        host=st.sampled_from(["usr", "proj", "src1", "web"]),
        disk=st.integers(0, 3),
        read=st.booleans(),
        offset=st.integers(0, 2**44),
        size=st.integers(1, INT32_MAX),
        resp=st.integers(0, 10**9),  # 100 ns ticks
    )
)
def test_msr_roundtrip(rows):
    lines = [
        f"{r['ts']},{r['host']},{r['disk']},{'Read' if r['read'] else 'Write'},{r['offset']},{r['size']},{r['resp']}"
        for r in rows
    ]
    got, rejected, _ = read_back("msr", text(lines))
    assert rejected == 0
    assert got == [
        (
            (r["ts"] - FILETIME_EPOCH_TICKS) * 100,
            f"{r['host']}_{r['disk']}",
            "read" if r["read"] else "write",
            r["offset"],
            r["size"],
            r["resp"] * 100,
        )
        for r in rows
    ]


@SETTINGS
@given(
    rows_of(
        sorted_ints(1_500_000_000_000_000, 1_700_000_000_000_000),  # µs since 1970
        dev=st.integers(0, 999),
        read=st.booleans(),
        offset=st.integers(0, 2**44),
        size=st.integers(1, INT32_MAX),
    )
)
def test_alibaba_roundtrip(rows):
    lines = [f"{r['dev']},{'R' if r['read'] else 'W'},{r['offset']},{r['size']},{r['ts']}" for r in rows]
    got, rejected, _ = read_back("alibaba", text(lines))
    assert rejected == 0
    assert got == [
        (r["ts"] * 1000, str(r["dev"]), "read" if r["read"] else "write", r["offset"], r["size"], None)
        for r in rows
    ]


@SETTINGS
@given(
    rows_of(
        sorted_ints(1_500_000_000, 1_700_000_000),  # Unix seconds
        vol=st.integers(0, 5000),
        read=st.booleans(),
        offset=st.integers(0, 2**40),  # sectors
        size=st.integers(1, SECTORS_MAX),
    )
)
def test_tencent_roundtrip(rows):
    lines = [f"{r['ts']},{r['offset']},{r['size']},{0 if r['read'] else 1},{r['vol']}" for r in rows]
    got, rejected, _ = read_back("tencent", text(lines))
    assert rejected == 0
    assert got == [
        (
            r["ts"] * 10**9,
            str(r["vol"]),
            "read" if r["read"] else "write",
            r["offset"] * 512,
            r["size"] * 512,
            None,
        )
        for r in rows
    ]


@SETTINGS
@given(
    rows_of(
        sorted_ints(0, 10**15),  # ns
        pid=st.integers(0, 99999),
        proc=st.sampled_from(["nfsd", "kjournald", "syslogd", "java", "flush-8:0"]),
        lba=st.integers(0, 2**40),
        size=st.integers(1, SECTORS_MAX),
        read=st.booleans(),
        major=st.integers(0, 255),
        minor=st.integers(0, 255),
        md5=st.one_of(st.none(), st.binary(min_size=16, max_size=16).map(bytes.hex)),
    )
)
def test_fiu_roundtrip(rows):
    lines = [
        f"{r['ts']} {r['pid']} {r['proc']} {r['lba']} {r['size']} {'R' if r['read'] else 'W'} {r['major']} "
        f"{r['minor']}" + (f" {r['md5']}" if r["md5"] else "")
        for r in rows
    ]
    got, rejected, _ = read_back("fiu", text(lines))
    assert rejected == 0
    assert got == [
        (
            r["ts"],
            f"{r['major']},{r['minor']}",
            "read" if r["read"] else "write",
            r["lba"] * 512,
            r["size"] * 512,
            None,
        )
        for r in rows
    ]


def decimal_text(ns: int, digits: int, unit_ns: int) -> str:
    """``ns`` in a unit of ``unit_ns`` ns as decimal text with ``digits`` decimals."""
    whole, frac = divmod(ns, unit_ns)
    return f"{whole}.{frac:0{digits}d}" if digits else str(whole)


@SETTINGS
@given(
    rows_of(
        sorted_ints(0, 10**14),  # ns, written as seconds with 9 decimals (or 6 when on a µs grid)
        asu=st.integers(0, 23),
        op=st.sampled_from(["r", "w", "R", "W"]),
        lba=st.integers(0, 2**40),
        size=st.integers(1, INT32_MAX),
        extra=st.booleans(),
    )
)
def test_spc_roundtrip(rows):
    def ts_text(ns: int) -> str:
        return decimal_text(ns // 1000, 6, 10**6) if ns % 1000 == 0 else decimal_text(ns, 9, 10**9)

    lines = [
        f"{r['asu']},{r['lba']},{r['size']},{r['op']},{ts_text(r['ts'])}" + (",host7" if r["extra"] else "")
        for r in rows
    ]
    got, rejected, _ = read_back("spc", text(lines))
    assert rejected == 0
    assert got == [
        (r["ts"], str(r["asu"]), "read" if r["op"] in "rR" else "write", r["lba"] * 512, r["size"], None)
        for r in rows
    ]


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**12),  # dispatch time, ns
            st.integers(1, 10**9),  # latency, ns (< 30 s: always paired)
            st.sampled_from(["read", "write", "trim", "flush"]),
            st.integers(1, 1024),  # sectors
            st.sampled_from(["8,0", "8,16", "253,1"]),
        ),
        min_size=1,
        max_size=20,
    ),
    st.data(),
)
def test_blkparse_roundtrip(reqs, data):
    # distinct sectors so that each completion has exactly one dispatch to pair with
    sectors = data.draw(st.lists(st.integers(0, 2**40), min_size=len(reqs), max_size=len(reqs), unique=True))
    rwbs = {"read": "R", "write": "WS", "trim": "DS"}
    events = []  # (time, order, line)
    expected = []
    for (d, lat, op, n, dev), sector in zip(reqs, sectors, strict=True):
        c = d + lat
        if op == "flush":
            what_d, what_c = "FN [jbd2]", "FN [0]"
            expected.append((c, dev, "flush", 0, 0, None))
        else:
            what_d, what_c = f"{rwbs[op]} {sector} + {n} [dd]", f"{rwbs[op]} {sector} + {n} [0]"
            expected.append((c, dev, op, sector * 512, n * 512, lat))
        for t, act, what in ((d, "D", what_d), (c, "C", what_c)):
            events.append(
                (
                    t,
                    act,
                    f"{dev:>5} {1:>3} {len(events):>8} {t // 10**9:>5}.{t % 10**9:09d} {77:>5}  {act} {what}",
                )
            )
    events.sort(key=lambda e: (e[0], e[1] == "C"))
    got, rejected, skipped = read_back("blkparse", text([e[2] for e in events]))
    assert rejected == 0
    assert skipped == Counter(other_event=len(reqs))
    # the reader keeps file order; requests completing at the same ns may come in any order
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert [g[0] for g in got] == sorted(e[0] for e in expected)


@SETTINGS
@given(
    rows_of(
        sorted_ints(0, 10**13),  # ns
        dev=st.integers(0, 63),
        lba=st.integers(0, 2**40),
        size=st.integers(1, SECTORS_MAX),
        read=st.booleans(),
    ),
    st.sampled_from(["mqsim-ns", "disksim-ms"]),
)
def test_disksim_roundtrip(rows, flavour):
    def t(ns: int) -> str:
        return str(ns) if flavour == "mqsim-ns" else decimal_text(ns, 6, 10**6)

    lines = [f"{t(r['ts'])} {r['dev']} {r['lba']} {r['size']} {1 if r['read'] else 0}" for r in rows]
    got, rejected, _ = read_back("disksim", text(lines))
    assert rejected == 0
    assert got == [
        (r["ts"], str(r["dev"]), "read" if r["read"] else "write", r["lba"] * 512, r["size"] * 512, None)
        for r in rows
    ]


@SETTINGS
@given(
    rows_of(
        sorted_ints(0, 2**50),  # µs
        cmd=st.sampled_from([0x28, 0xA8, 0x88, 0x2A, 0xAA, 0x8A]),
        lbn=st.integers(0, 2**50),
        size=st.integers(1, INT32_MAX),
    )
)
def test_vscsi_roundtrip(rows):
    recs = np.array(
        [(i, r["size"], 1, r["cmd"], 0x0100, r["lbn"], r["ts"]) for i, r in enumerate(rows)], dtype=RECORD
    )
    got, rejected, _ = read_back("vscsi", recs.tobytes())
    assert rejected == 0
    assert got == [
        (
            r["ts"] * 1000,
            "vscsi",
            "read" if r["cmd"] in (0x28, 0xA8, 0x88) else "write",
            r["lbn"] * 512,
            r["size"],
            None,
        )
        for r in rows
    ]


GENERIC_MAPPING = """
[file]
separator = ","
header = true
[columns]
ts = "t_us"
volume = "lun"
op = "dir"
offset = "blk"
size = "sectors"
latency = "lat_ms"
[units]
ts = "us"
offset = 4096
size = "sectors"
latency = "ms"
[ops]
R = "read"
W = "write"
T = "trim"
F = "flush"
"""


@SETTINGS
@given(
    rows_of(
        sorted_ints(0, 10**15),  # ns, written as µs with 3 decimals
        lun=st.sampled_from(["lun0", "lun1", "db-data"]),
        op=st.sampled_from(["read", "write", "trim"]),
        blk=st.integers(0, 2**40),  # 4 KiB blocks
        sectors=st.integers(1, SECTORS_MAX),
        lat=st.one_of(st.none(), st.integers(0, 10**12)),  # ns, written as ms with 6 decimals
    )
)
def test_generic_roundtrip(rows):
    code = {"read": "R", "write": "W", "trim": "T"}
    lines = ["t_us,lun,dir,blk,sectors,lat_ms"] + [
        f"{decimal_text(r['ts'], 3, 1000)},{r['lun']},{code[r['op']]},{r['blk']},{r['sectors']},"
        + ("" if r["lat"] is None else decimal_text(r["lat"], 6, 10**6))
        for r in rows
    ]
    with tempfile.TemporaryDirectory() as d:
        m = Path(d) / "m.toml"
        m.write_text(GENERIC_MAPPING)
        got, rejected, skipped = read_back("generic", text(lines), mapping=str(m))
    assert rejected == 0 and skipped == Counter(header=1)
    assert got == [(r["ts"], r["lun"], r["op"], r["blk"] * 4096, r["sectors"] * 512, r["lat"]) for r in rows]
