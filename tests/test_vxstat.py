"""vxstat and vxdmpadm readers: the real vxstat samples, fixtures in the documented layouts
(-o alldgs -i N with DG and date lines, -svd, -p, -T; vxdmpadm [-q] iostat show), rates,
and malformed inputs."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from conftest import shared_path

from traces.errors import TraceFormatError
from traces.measured import read_all
from traces.registry import detect
from traces.source import Source
from traces.vxdmp import VxdmpReader
from traces.vxstat import VxstatReader

HDR = ("                      OPERATIONS          BLOCKS           AVG TIME(ms)\n"
       "TYP NAME              READ     WRITE      READ     WRITE   READ  WRITE\n\n")

# the layout of 'vxstat -o alldgs -i 10' (DbxTune's capture), with our own numbers
ALLDGS = HDR + """Tue Mar 02 09:00:00 2021
DG datadg
vol data01          1000000    200000   8000000   1600000   2.50   4.00
vol data02             5000      1000     40000      8000   1.00   2.00

DG logdg
vol redo01              100    900000       800   7200000   0.50   0.75


Tue Mar 02 09:00:10 2021
DG datadg
vol data01              500       100      4000       800   3.00   5.00
vol data02                0         0         0         0   0.00   0.00

DG logdg
vol redo01                0      2000         0     16000   0.00   0.80


Tue Mar 02 09:00:20 2021
DG datadg
vol data01              250        50      2000       400   2.00   6.00
vol data02               10         0        80         0   1.50   0.00

DG logdg
vol redo01                0      1000         0      8000   0.00   0.90
"""

# 'vxstat -g datadg -svd -p -T -i 5': volumes, plexes, subdisks and disks, times in us
SVD = ("                      OPERATIONS          BLOCKS           AVG TIME(us)\n"
       "TYP NAME              READ     WRITE      READ     WRITE   READ  WRITE\n\n"
       "Tue Mar 02 09:00:00 2021\n"
       "vol data01             1000       200      8000      1600   2500.0   4000.0\n"
       "pl  data01-01          1000       200      8000      1600   2400.0   3900.0\n"
       "sd  disk01-01           600       120      4800       960   2300.0   3800.0\n"
       "dm  disk01              600       120      4800       960   2200.0   3700.0\n\n"
       "Tue Mar 02 09:00:05 2021\n"
       "vol data01               50        10       400        80   1500.0   2500.0\n"
       "pl  data01-01            50        10       400        80   1400.0   2400.0\n"
       "sd  disk01-01            30         6       240        48   1300.0   2300.0\n"
       "dm  disk01               30         6       240        48   1200.0   2200.0\n")


def _read(text: str, tmp_path, cls=VxstatReader, name="vx.txt", **opts):
    p = tmp_path / name
    p.write_text(text)
    return read_all(cls(**opts), p)


def test_real_samples_exact_rows_and_values():
    d = read_all(VxstatReader(), shared_path("vxstat", "dbxtune_quoted_sco_vxstat_d.txt")).tables["vxstat"]
    assert d.height == 4 and d.get_column("typ").unique().to_list() == ["dm"]
    # line 5: 'dm  disk03    55249   60043    780779  731979    35.3    61.2 '
    row = d.filter(pl.col("src_line") == 5).row(0, named=True)
    assert (row["name"], row["reads"], row["writes"]) == ("disk03", 55249, 60043)
    assert row["read_kb"] == 780779 / 2 and row["write_kb"] == 731979 / 2  # 512 B blocks
    assert (row["r_avg_ms"], row["w_avg_ms"]) == (35.3, 61.2)
    assert row["cumulative"] and row["r_per_s"] is None and row["ts"] is None  # totals since boot, no rate
    v = read_all(VxstatReader(), shared_path("vxstat", "dbxtune_quoted_sco_vxstat_vol.txt")).tables["vxstat"]
    assert v.height == 6 and v.get_column("name").to_list() == ["archive", "home", "local", "rootvol", "src", "swapvol"]
    # line 8 (last, no trailing space): 'vol  swapvol  22751  32364    182001   258905     25.3   323.2'
    row = v.filter(pl.col("src_line") == 8).row(0, named=True)
    assert (row["reads"], row["w_avg_ms"], row["write_kb"]) == (22751, 323.2, 258905 / 2)


def test_real_samples_are_detected():
    for f in ("dbxtune_quoted_sco_vxstat_d.txt", "dbxtune_quoted_sco_vxstat_vol.txt"):
        assert detect(Source(shared_path("vxstat", f))) == "vxstat"


def test_alldgs_intervals_dg_lines_and_rates(tmp_path):
    r = VxstatReader(tz="Europe/Stockholm")
    p = tmp_path / "alldgs.txt"
    p.write_text(ALLDGS)
    out = read_all(r, p)
    df = out.tables["vxstat"]
    assert df.height == 9 and out.rejects == {}
    assert df.group_by("report").len().sort("report").get_column("len").to_list() == [3, 3, 3]
    assert df.filter(pl.col("cumulative")).get_column("report").unique().to_list() == [0]
    redo = df.filter(pl.col("name") == "redo01").sort("report")
    assert redo.get_column("dg").to_list() == ["logdg"] * 3
    # report 1: 2000 writes and 16000 blocks in the 10 s between the date lines
    r1 = redo.row(1, named=True)
    assert r1["interval_s"] == 10.0 and r1["w_per_s"] == 200.0 and r1["wkb_per_s"] == 16000 / 2 / 10
    assert r1["ts"] == datetime(2021, 3, 2, 8, 0, 10, tzinfo=UTC)  # CET = UTC+1
    assert redo.row(0, named=True)["w_per_s"] is None  # the cumulative first report has no rate
    assert out.skipped == {"header": 2, "date": 3, "disk group": 6, "blank": 8}
    assert r.metadata["reports"] == 3


def test_svd_plexes_and_microseconds(tmp_path):
    out = _read(SVD, tmp_path, dg="datadg")
    df = out.tables["vxstat"]
    assert df.get_column("typ").to_list() == ["vol", "pl", "sd", "dm"] * 2
    sd = df.filter((pl.col("typ") == "sd") & (pl.col("report") == 1)).row(0, named=True)
    assert sd["r_avg_ms"] == pytest.approx(1.3) and sd["w_avg_ms"] == pytest.approx(2.3)  # AVG TIME(us) -> ms
    assert sd["r_per_s"] == 6.0 and sd["dg"] == "datadg" and sd["interval_s"] == 5.0


def test_interval_option_and_per_second_values(tmp_path):
    # no date lines: without interval_s the rates stay null (and the reader says why)
    text = HDR + "vol a 10 20 80 160 1.0 2.0\n"
    one = _read(text, tmp_path)
    assert one.tables["vxstat"]["cumulative"][0]
    # -S prints per-second values: counts are rebuilt from the interval
    per_s = _read(SVD.replace("AVG TIME(us)", "AVG TIME(ms)"), tmp_path, per_second="true", interval_s=5)
    row = per_s.tables["vxstat"].filter((pl.col("report") == 1) & (pl.col("typ") == "vol")).row(0, named=True)
    assert row["r_per_s"] == 50.0 and row["reads"] == 250 and row["read_kb"] == 400 / 2 * 5


def test_small_blocks_give_identical_rows(tmp_path):
    p = tmp_path / "alldgs.txt"
    p.write_text(ALLDGS * 3)
    whole = read_all(VxstatReader(), p).tables["vxstat"]
    small = VxstatReader()
    small.block_bytes_read = 200
    parts = read_all(small, p).tables["vxstat"]
    assert whole.height == 27 and whole.sort("src_line").equals(parts.sort("src_line"))
    assert whole.get_column("report").max() == 8


# -- vxstat: malformed inputs ---------------------------------------------------------------------
VX_ROW = "vol data02             5000      1000     40000      8000   1.00   2.00"


@pytest.mark.parametrize(
    "bad,reason",
    [
        ("vol data02             5000      1000     40000      8000   1.00", "expected TYP NAME and 6 values, found 7"),
        ("vol data02             5000      1000     40000      8000   1.00   2.00  9", "found 9 fields"),
        ("vol data02             5x00      1000     40000      8000   1.00   2.00", "READ ops is not a whole number: '5x00'"),
        ("vol data02             5000      1000     40000      8000   1.00   fast", "WRITE avg time is not a number"),
        ("vol data02             5000     -1000     40000      8000   1.00   2.00", "negative WRITE ops: -1000"),
        ("vol data02             5000      1000     40000      8000  -1.00   2.00", "negative READ avg time"),
        ("xyz data02             5000      1000     40000      8000   1.00   2.00", "unknown object type 'xyz'"),
        ("vol data02             5000      1000     4.5e4      8000   1.00   2.00", "READ blocks is not a whole number"),
        ("garbage", "expected TYP NAME and 6 values, found 1"),
    ],
)
def test_vxstat_malformed_rows_rejected(tmp_path, bad, reason):
    out = _read(ALLDGS.replace(VX_ROW, bad, 1), tmp_path)
    rej = out.rejects["vxstat"]
    assert rej.height == 1 and rej["src_line"][0] == 7 and reason in rej["reason"][0], rej["reason"][0]
    assert out.tables["vxstat"].height + rej.height == 9


def test_vxstat_malformed_whole_file_errors(tmp_path):
    with pytest.raises(TraceFormatError, match="no vxstat header"):
        _read("vol a 1 2 3 4 1.0 2.0\n", tmp_path)
    mixed = SVD + "\n" + ALLDGS
    with pytest.raises(TraceFormatError, match=r"vx.txt:\d+: vxstat reports mix AVG TIME units"):
        _read(mixed, tmp_path)
    with pytest.raises(ValueError, match="interval_s must be > 0"):
        VxstatReader(interval_s=0)
    with pytest.raises(ValueError, match="unknown time zone"):
        _read(ALLDGS, tmp_path, tz="Mars/Olympus")


def test_vxstat_invalid_date_keeps_rows_without_time(tmp_path):
    r = VxstatReader()
    p = tmp_path / "d.txt"
    p.write_text(ALLDGS.replace("Tue Mar 02 09:00:10 2021", "Tue Feb 30 09:00:10 2021"))
    df = read_all(r, p).tables["vxstat"]
    assert df.height == 9 and df.filter(pl.col("report") == 1).get_column("ts").null_count() == 3
    assert any("not valid dates" in w for w in r.warnings)


# -- vxdmpadm -------------------------------------------------------------------------------------
DMP = """                   cpu usage = 7952us    per cpu memory = 8192b
                   OPERATIONS            BLOCKS           AVG TIME(ms)
PATHNAME         READS    WRITES     READS    WRITES     READS    WRITES
c2t0d15          1088       0        57049      0        0.009542 0.000000
c5t4d15          5493      12        43944     96        0.411069 1.250000

                   cpu usage = 8001us    per cpu memory = 8192b
                   OPERATIONS            BLOCKS           AVG TIME(ms)
PATHNAME         READS    WRITES     READS    WRITES     READS    WRITES
c2t0d15            50       0          400      0        0.010000 0.000000
c5t4d15           100      10          800     80        0.400000 1.000000
"""

# VxVM 4.1 guide's layout: KBYTES instead of BLOCKS, one report
DMP_41 = """cpu usage = 11294us per cpu memory = 32768b
OPERATIONS KBYTES AVG TIME(ms)
PATHNAME READS WRITES READS WRITES READS WRITES
c2t0d15 0 0 0 0 0.000000 0.000000
c5t4d15 5493 0 5493 0 0.411069 0.000000
"""

# -q: queued and pending I/Os per DMP node
DMP_Q = """                   cpu usage = 338us    per cpu memory = 102400b
                       QUEUED I/Os         PENDING I/Os
DMPNODENAME           READS   WRITES
emc_clariion0_352         3        1         7
emc_clariion0_353         0        0         0
"""


def test_vxdmp_blocks_intervals_and_rates(tmp_path):
    out = _read(DMP, tmp_path, cls=VxdmpReader, interval_s=5)
    df = out.tables["vxdmp"]
    assert df.height == 4 and out.rejects == {}
    c5 = df.filter(pl.col("name") == "c5t4d15").sort("report")
    assert c5.get_column("cumulative").to_list() == [True, False]
    r1 = c5.row(1, named=True)
    assert (r1["reads"], r1["writes"], r1["read_kb"], r1["r_avg_ms"]) == (100, 10, 400.0, 0.4)
    assert (r1["r_per_s"], r1["wkb_per_s"], r1["cpu_usage_us"], r1["group_by"]) == (20.0, 8.0, 8001, "pathname")
    assert c5.row(0, named=True)["r_per_s"] is None
    assert detect(Source(tmp_path / "vx.txt")) == "vxdmp"


def test_vxdmp_41_kbytes_and_queue_layout(tmp_path):
    df = _read(DMP_41, tmp_path, cls=VxdmpReader).tables["vxdmp"]
    row = df.filter(pl.col("name") == "c5t4d15").row(0, named=True)
    assert row["read_kb"] == 5493.0 and row["per_cpu_memory_bytes"] == 32768 and row["cumulative"]
    q = _read(DMP_Q, tmp_path, cls=VxdmpReader).tables["vxdmp"]
    row = q.row(0, named=True)
    assert (row["name"], row["queued_reads"], row["queued_writes"], row["pending_ios"]) == ("emc_clariion0_352", 3, 1, 7)
    assert row["group_by"] == "dmpnodename" and row["reads"] is None


DMP_ROW = "c5t4d15          5493      12        43944     96        0.411069 1.250000"


@pytest.mark.parametrize(
    "bad,reason",
    [
        ("c5t4d15          5493      12        43944     96        0.411069", "expected a name and 6 values"),
        ("c5t4d15          5493      12        43944     96        0.411069 1.25 7", "found 8 fields"),
        ("c5t4d15          54x3      12        43944     96        0.411069 1.250000", "reads is not a whole number"),
        ("c5t4d15          5493      12        43944     96        0.41.1 1.250000", "r_avg_ms is not a number"),
        ("c5t4d15          5493     -12        43944     96        0.411069 1.250000", "negative writes: -12"),
        ("c5t4d15          5493      12        43944     96        -0.4 1.250000", "negative r_avg_ms"),
    ],
)
def test_vxdmp_malformed_rows_rejected(tmp_path, bad, reason):
    out = _read(DMP.replace(DMP_ROW, bad), tmp_path, cls=VxdmpReader)
    rej = out.rejects["vxdmp"]
    assert rej.height == 1 and rej["src_line"][0] == 5 and reason in rej["reason"][0], rej["reason"][0]
    assert out.tables["vxdmp"].height == 3


def test_vxdmp_malformed_structure(tmp_path):
    # a data line before any header is rejected, not guessed
    out = _read("c2t0d15 1 2 3 4 0.1 0.2\n" + DMP, tmp_path, cls=VxdmpReader)
    assert out.rejects["vxdmp"]["reason"][0] == "data line before the vxdmpadm iostat header"
    with pytest.raises(TraceFormatError, match="has no OPERATIONS or QUEUED"):
        _read(DMP.replace("OPERATIONS            BLOCKS", "BLOCKS"), tmp_path, cls=VxdmpReader)
    with pytest.raises(ValueError, match="unknown option"):
        VxdmpReader(tz="UTC")
    r = VxdmpReader()
    (tmp_path / "ok.txt").write_text(DMP)
    read_all(r, tmp_path / "ok.txt")
    assert any("no timestamps" in w for w in r.warnings)
