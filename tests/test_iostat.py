"""iostat reader: every real sample, jc as an independent oracle, text vs JSON of the same
run, timestamps in locale variants, block boundaries, and malformed inputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jc
import polars as pl
import pytest
from conftest import shared_path

from traces.errors import TraceFormatError
from traces.iostat import _DEVICE_COLUMNS, IostatReader
from traces.measured import read_all

D, DB, C, CB = "iostat_device", "iostat_device_boot", "iostat_cpu", "iostat_cpu_boot"

# rows per table for every real sample (device rows cross-checked against jc below)
COUNTS = [
    ("json-sysstat/expected.iostat-g-JSON", {D: 6, DB: 6}),
    ("json-sysstat/expected.iostat-x-p-ALL-JSON", {C: 1, CB: 1, D: 21, DB: 22}),
    ("text-jc/centos-7.7_iostat-1.out", {C: 2, CB: 1, D: 6, DB: 3}),
    ("text-jc/centos-7.7_iostat-m.out", {CB: 1, DB: 3}),
    ("text-jc/centos-7.7_iostat-mx.out", {CB: 1, DB: 3}),
    ("text-jc/centos-7.7_iostat-x.out", {CB: 1, DB: 3}),
    ("text-jc/centos-7.7_iostat.out", {CB: 1, DB: 3}),
    ("text-jc/ubuntu-18.04_iostat-1.out", {C: 2, CB: 1, D: 40, DB: 20}),
    ("text-jc/ubuntu-18.04_iostat-m.out", {CB: 1, DB: 20}),
    ("text-jc/ubuntu-18.04_iostat-mx.out", {CB: 1, DB: 20}),
    ("text-jc/ubuntu-18.04_iostat-x.out", {CB: 1, DB: 20}),
    ("text-jc/ubuntu-18.04_iostat.out", {CB: 1, DB: 20}),
    ("text-jc/ubuntu-20.10_iostat-m.out", {CB: 1, DB: 14}),
    ("text-jc/ubuntu-20.10_iostat-mx.out", {CB: 1, DB: 14}),
    ("text-jc/ubuntu-20.10_iostat-x.out", {CB: 1, DB: 14}),
    ("text-jc/ubuntu-20.10_iostat.out", {CB: 1, DB: 14}),
    ("text-sysstat/expected.iostat", {C: 2, CB: 1, D: 11, DB: 5}),
    ("text-sysstat/expected.iostat+f-alt-list-ms", {CB: 1, DB: 15}),
    ("text-sysstat/expected.iostat+f-alt-pALL-ms", {C: 1, CB: 1, D: 23, DB: 24}),
    ("text-sysstat/expected.iostat-ALL", {C: 2, CB: 1, D: 18, DB: 10}),
    ("text-sysstat/expected.iostat-Gz", {C: 1, CB: 1, D: 3, DB: 17}),
    ("text-sysstat/expected.iostat-N-list1", {CB: 1, DB: 2}),
    ("text-sysstat/expected.iostat-alt-pALL", {C: 1, CB: 1, D: 21, DB: 22}),
    ("text-sysstat/expected.iostat-compact", {C: 1, CB: 1, D: 5, DB: 5}),
    ("text-sysstat/expected.iostat-dec", {C: 1, CB: 1, D: 5, DB: 5}),
    ("text-sysstat/expected.iostat-f-alt-ALL-ms", {C: 1, CB: 1, D: 2, DB: 4}),
    ("text-sysstat/expected.iostat-f-alt-pALL", {C: 1, CB: 1, D: 21, DB: 22}),
    ("text-sysstat/expected.iostat-g", {D: 6, DB: 6}),
    ("text-sysstat/expected.iostat-gALL", {C: 1, CB: 1, D: 10, DB: 11}),
    ("text-sysstat/expected.iostat-gp", {C: 1, CB: 1, D: 14, DB: 14}),
    ("text-sysstat/expected.iostat-gpy", {C: 2, CB: 1, D: 16, DB: 14}),
    ("text-sysstat/expected.iostat-human", {CB: 1, DB: 5}),
    ("text-sysstat/expected.iostat-jLABEL", {DB: 22}),
    ("text-sysstat/expected.iostat-jPARTUUID", {DB: 22}),
    ("text-sysstat/expected.iostat-jUUID-list", {D: 1, DB: 1}),
    ("text-sysstat/expected.iostat-kz", {C: 1, CB: 1, D: 3, DB: 17}),
    ("text-sysstat/expected.iostat-mz", {C: 1, CB: 1, D: 3, DB: 17}),
    ("text-sysstat/expected.iostat-p-cciss", {C: 1, CB: 1, D: 3, DB: 3}),
    ("text-sysstat/expected.iostat-pretty", {D: 21, DB: 22}),
    ("text-sysstat/expected.iostat-s-0", {CB: 1, DB: 5}),
    ("text-sysstat/expected.iostat-s-ALL-p-ALL", {C: 1, CB: 1, D: 21, DB: 22}),
    ("text-sysstat/expected.iostat-s-list-p", {C: 1, CB: 1, D: 21, DB: 22}),
    ("text-sysstat/expected.iostat-sp-0", {CB: 1, DB: 17}),
    ("text-sysstat/expected.iostat-x-0", {CB: 1, DB: 5}),
    ("text-sysstat/expected.iostat-x-ALL-flush", {C: 2, CB: 1, D: 13, DB: 9}),
    ("text-sysstat/expected.iostat-x-list", {DB: 4}),
    ("text-sysstat/expected.iostat-x-p-sda", {C: 1, CB: 1, D: 13, DB: 13}),
    ("text-sysstat/expected.iostat-xs", {C: 2, CB: 1, D: 11, DB: 5}),
    ("text-sysstat/expected.iostat-xs-list-part", {C: 2, CB: 1, D: 4, DB: 2}),
    ("text-sysstat/expected.iostat-xs-sdb", {D: 2, DB: 1}),
    ("text-sysstat/expected2.iostat+f-alt-list-ms", {CB: 1, DB: 3}),
    ("text-sysstat/expected2.iostat-gpALL", {C: 1, CB: 1, D: 23, DB: 24}),
]


def _read(path, **opts):
    return read_all(IostatReader(**opts), path)


def _row(df: pl.DataFrame, **where) -> dict:
    sel = df
    for k, v in where.items():
        sel = sel.filter(pl.col(k) == v)
    assert sel.height == 1, (where, sel)
    return sel.row(0, named=True)


@pytest.mark.parametrize("name,counts", COUNTS, ids=[c[0].split("/")[1] for c in COUNTS])
def test_every_sample_exact_counts(name, counts):
    out = _read(shared_path("iostat", *name.split("/")))
    assert {t: df.height for t, df in out.tables.items()} == counts
    assert out.rejects == {}
    for t, df in out.tables.items():
        assert df.get_column("since_boot").all() == t.endswith("_boot")


def test_pbench_minus_y_timestamps_and_units():
    """pbench ran 'iostat -N -t -y -x -m 3' (sysstat 10, old layout): no since-boot report."""
    p = shared_path("iostat", "text-pbench", "pbench_iostat-2_rhel7_sysstat10.txt")
    r = IostatReader(first_report="interval", tz="America/New_York")
    out = read_all(r, p)
    assert {t: df.height for t, df in out.tables.items()} == {D: 252, C: 21}
    dev = out.tables[D]
    assert dev.get_column("report").n_unique() == 21
    # line 35: 'dm-4  0.00 0.00 0.33 9.00 0.02 0.05 16.29 0.00 0.29 0.00 0.30 0.07 0.07', report 2 at 16:46:07
    row = _row(dev, src_line=35)
    assert row["device"] == "dm-4" and row["report"] == 1
    assert row["r_per_s"] == 0.33 and row["w_per_s"] == 9.0
    assert row["rkb_per_s"] == pytest.approx(0.02 * 1024) and row["wkb_per_s"] == pytest.approx(0.05 * 1024)
    assert row["avgrq_sz_kb"] == pytest.approx(16.29 / 2)  # avgrq-sz is in 512 B sectors
    assert row["svctm_ms"] == 0.07 and row["util_pct"] == 0.07 and row["rareq_sz_kb"] is None
    # 03/24/15 16:46:07 EDT (UTC-4 after the 2015-03-08 DST switch)
    assert row["ts"] == datetime(2015, 3, 24, 20, 46, 7, tzinfo=UTC)
    assert r.metadata["date_order"] == "mdy" and r.metadata["cpus"] == 16
    assert r.metadata["hosts"] == ["a.foo.example.com"]
    cpu = _row(out.tables[C], report=0)
    assert (cpu["user_pct"], cpu["system_pct"], cpu["idle_pct"]) == (1.19, 4.40, 94.41)
    # without the option the first report is (wrongly, for -y) taken as since-boot, and said so
    assert read_all(IostatReader(), p).tables[DB].height == 12


def test_hand_checked_cells():
    cases = [
        # file, table, where, column, expected
        ("text-jc/centos-7.7_iostat-1.out", DB, {"src_line": 7}, "kb_read", 203305.0),
        ("text-jc/centos-7.7_iostat-m.out", DB, {"device": "sda"}, "kb_read", 198 * 1024.0),
        ("text-jc/centos-7.7_iostat-mx.out", DB, {"device": "sda"}, "avgrq_sz_kb", 52.51 / 2),
        ("text-jc/centos-7.7_iostat-x.out", DB, {"device": "sda"}, "await_ms", 0.88),
        ("text-jc/ubuntu-18.04_iostat-x.out", DB, {"device": "sda"}, "wareq_sz_kb", 185.52),
        ("text-jc/ubuntu-18.04_iostat-x.out", DB, {"device": "sda"}, "svctm_ms", 0.78),
        ("text-jc/ubuntu-20.10_iostat-mx.out", DB, {"device": "sda"}, "rkb_per_s", 0.10 * 1024),
        ("text-jc/ubuntu-20.10_iostat-mx.out", DB, {"device": "sda"}, "wrqm_pct", 61.04),
        ("text-sysstat/expected.iostat-human", DB, {"device": "sda"}, "kb_read", 1.5 * 1024 * 1024),  # '1.5G'
        ("text-sysstat/expected.iostat-human", DB, {"device": "sda"}, "kb_wrtn", 400.9 * 1024),  # '400.9M'
        ("text-sysstat/expected.iostat-pretty", DB, {"device": "sda12"}, "kb_wrtn", 267480.0),
        ("text-sysstat/expected.iostat-compact", D, {"device": "sdr"}, "w_await_ms", 40.00),
        ("text-sysstat/expected.iostat-jUUID-list", DB, {}, "areq_sz_kb", 39.51),
        ("text-sysstat/expected.iostat-x-ALL-flush", D, {"device": "sdd", "report": 1}, "f_await_ms", 60.31),
        ("text-sysstat/expected.iostat-s-0", DB, {"device": "sdq"}, "kb_wd", 181305.0),
        ("text-sysstat/expected.iostat-xs", DB, {"device": "sda"}, "kb_per_s", 279.22),
        ("text-sysstat/expected.iostat-Gz", DB, {"device": "sda"}, "kb_read", 1024.0 * 1024),
        ("text-sysstat/expected.iostat-p-cciss", D, {"device": "cciss/c0d0p2"}, "tps", 32402.95),
        ("text-sysstat/expected.iostat-dec", DB, {"device": "sdq"}, "dkb_per_s", 25.2),
        ("text-sysstat/expected.iostat-g", DB, {"device": "disks"}, "tps", 8.60),
        ("json-sysstat/expected.iostat-x-p-ALL-JSON", DB, {"device": "sda4"}, "r_await_ms", 258.80),
        ("json-sysstat/expected.iostat-x-p-ALL-JSON", D, {"device": "sdr"}, "util_pct", 6.42),
    ]
    for name, table, where, col, expected in cases:
        df = _read(shared_path("iostat", *name.split("/"))).tables[table]
        got = _row(df, **where)[col] if where else df.row(0, named=True)[col]
        assert got == pytest.approx(expected, abs=1e-9), (name, where, col)
    g = _read(shared_path("iostat", "text-sysstat", "expected.iostat-g")).tables[DB]
    assert g.filter(pl.col("is_group")).get_column("device").to_list() == ["disks", "other"]
    human_cpu = _read(shared_path("iostat", "text-sysstat", "expected.iostat-human")).tables[CB].row(0, named=True)
    assert (human_cpu["user_pct"], human_cpu["idle_pct"]) == (1.5, 56.0)  # '1.5%' ... '56.0%'


# jc does not parse device-name-last layouts (--pretty, --compact, -j) and keeps --human
# suffixes ('222.1k') as text; -t files are covered by the test after this one
_JC_UNPARSED = {"expected.iostat-human", "expected.iostat-pretty", "expected.iostat-compact", "expected.iostat-jLABEL",
                "expected.iostat-jPARTUUID", "expected.iostat-jUUID-list", "pbench_iostat-2_rhel7_sysstat10.txt"}
_JC_FILES = [c[0] for c in COUNTS if c[0].startswith("text-") and c[0].split("/")[1] not in _JC_UNPARSED]


@pytest.mark.parametrize("name", _JC_FILES, ids=lambda n: n.split("/")[1])
def test_jc_oracle_device_first_layouts(name):
    """Where jc parses a layout (device name first, no -t, no --human), every device and CPU
    value must equal jc's, converted to the column's unit with the header's scale."""
    p = shared_path("iostat", *name.split("/"))
    text = p.read_text()
    headers = [ln.split() for ln in text.splitlines() if ln.startswith("Device")]
    ref = jc.parse("iostat", text, quiet=True)
    out = _read(p)
    mine = pl.concat([out.tables[t] for t in (D, DB) if t in out.tables], how="vertical").sort("src_line")
    ref_dev = [r for r in ref if r["type"] == "device"]
    assert len(ref_dev) == mine.height
    hdr_iter = iter(headers)
    tokens = None
    for ref_row, my_row in zip(ref_dev, mine.iter_rows(named=True), strict=True):
        keys = [k for k in ref_row if k not in ("device", "type")]
        if tokens is None or len(tokens) != len(keys):
            tokens = next(hdr_iter)[1:]
            while len(tokens) != len(keys):
                tokens = next(hdr_iter)[1:]
        assert ref_row["device"] == my_row["device"]
        for key, tok in zip(keys, tokens, strict=True):
            col, scale, _ = _DEVICE_COLUMNS[tok]
            # jc leaves the columns it does not know as strings
            assert my_row[col] == pytest.approx(float(ref_row[key]) * scale), (name, my_row["src_line"], tok)
    ref_cpu = [r for r in ref if r["type"] == "cpu"]
    mine_cpu = pl.concat([out.tables[t] for t in (C, CB) if t in out.tables]).sort("src_line") \
        if ref_cpu else pl.DataFrame()
    assert len(ref_cpu) == mine_cpu.height
    for ref_row, my_row in zip(ref_cpu, mine_cpu.iter_rows(named=True), strict=True):
        assert my_row["user_pct"] == ref_row["percent_user"] and my_row["idle_pct"] == ref_row["percent_idle"]


def test_jc_loses_timestamps_which_is_why_it_is_not_the_parser():
    p = shared_path("iostat", "text-pbench", "pbench_iostat-2_rhel7_sysstat10.txt")
    ref = jc.parse("iostat", p.read_text(), quiet=True)
    fake = [r for r in ref if r.get("device") == "03/24/15"]
    assert len(fake) == 20  # every timestamp line after the first became a "device"
    assert not any("time" in k for r in ref for k in r)


def test_text_and_json_of_the_same_run_agree():
    # sysstat's tests run 'iostat -d -g disks sda sdb -g other sdc sdd 1 2' (kB) and the same
    # with '-o JSON -dm' (MB): same rows, values equal within the MB printout's rounding
    text = _read(shared_path("iostat", "text-sysstat", "expected.iostat-g")).tables
    js = _read(shared_path("iostat", "json-sysstat", "expected.iostat-g-JSON")).tables
    for t in (D, DB):
        a, b = text[t].sort("src_line"), js[t].sort("src_line")
        assert a.select("report", "device", "is_group", "tps").equals(b.select("report", "device", "is_group", "tps"))
        assert (a["rkb_per_s"] - b["rkb_per_s"]).abs().max() <= 0.005 * 1024  # MB/s printed with 2 decimals
        assert (a["kb_read"] - b["kb_read"]).abs().max() < 1024  # MB totals are truncated
        assert (b["kb_read"] % 1024).max() == 0
    # '-x -p ALL 1 2' as JSON and '-x -p sda 1 2' as text: the sda rows are identical
    text = _read(shared_path("iostat", "text-sysstat", "expected.iostat-x-p-sda")).tables
    js = _read(shared_path("iostat", "json-sysstat", "expected.iostat-x-p-ALL-JSON")).tables
    value_cols = [c for c in text[D].columns if c.endswith(("_per_s", "_ms", "_pct", "_kb")) or c == "aqu_sz"]
    for t in (D, DB, C, CB):
        a = text[t]
        b = js[t].filter(pl.col("device").str.starts_with("sda")) if "device" in js[t].columns else js[t]
        key = ["report", "device"] if "device" in a.columns else ["report"]
        cols = value_cols if t.startswith("iostat_device") else ["user_pct", "nice_pct", "idle_pct"]
        assert a.sort(key).select(key + cols).equals(b.sort(key).select(key + cols)), t


def test_json_sysstat_layout_lines_and_cpu():
    p = shared_path("iostat", "json-sysstat", "expected.iostat-x-p-ALL-JSON")
    out = _read(p)
    cpu = out.tables[CB].row(0, named=True)
    assert (cpu["user_pct"], cpu["nice_pct"], cpu["idle_pct"]) == (1.49, 39.91, 56.00)
    sda = _row(out.tables[DB], device="sda")
    lines = p.read_text().splitlines()
    assert '"disk_device": "sda"' in lines[sda["src_line"] - 1]
    assert sda["rrqm_pct"] == 5.38 and sda["rrqm_per_s"] == 0.39  # JSON "rrqm" is %rrqm, "rrqm/s" per second


BANNER = "Linux 5.4.0 (host1) \t{date} \t_x86_64_\t(4 CPU)\n\n"
SECTION = "Device            r/s     w/s     rkB/s     wkB/s  %util\nsda              {r}    2.00     40.00     8.00   3.00\n\n"


def _log(tmp_path, stamps, date, name="log.txt"):
    body = BANNER.format(date=date) + "".join(f"{s}\n" + SECTION.format(r=f"{i + 1}.00") for i, s in enumerate(stamps))
    p = tmp_path / name
    p.write_text(body)
    return p


@pytest.mark.parametrize(
    "stamps,date,opts,expected,order",
    [
        (["03/24/2015 04:46:04 PM", "03/24/2015 04:46:05 PM"], "03/24/2015", {}, datetime(2015, 3, 24, 16, 46, 5), "mdy"),
        (["24/03/15 16:46:04", "24/03/15 16:46:05"], "24/03/15", {}, datetime(2015, 3, 24, 16, 46, 5), "dmy"),
        (["24.03.2015 16:46:04", "24.03.2015 16:46:05"], "24.03.2015", {}, datetime(2015, 3, 24, 16, 46, 5), "dmy"),
        (["2015-03-24T16:46:04+0100", "2015-03-24T16:46:05+0100"], "2015-03-24", {},
         datetime(2015, 3, 24, 15, 46, 5), "ymd"),
        (["03/04/15 12:00:00 AM", "03/04/15 12:00:01 AM"], "03/04/15", {"date_order": "dmy"},
         datetime(2015, 4, 3, 0, 0, 1), "dmy"),
    ],
)
def test_timestamp_locales(tmp_path, stamps, date, opts, expected, order):
    r = IostatReader(**opts)
    out = read_all(r, _log(tmp_path, stamps, date))
    assert out.tables[DB].get_column("ts").to_list() == [datetime(*expected.timetuple()[:5], expected.second - 1,
                                                                  tzinfo=UTC)]
    assert out.tables[D].get_column("ts").to_list() == [expected.replace(tzinfo=UTC)]
    assert r.metadata.get("date_order", order) == order


def test_ambiguous_dates_are_read_month_first_and_said(tmp_path):
    r = IostatReader()
    out = read_all(r, _log(tmp_path, ["03/04/15 10:00:00", "03/04/15 10:00:05"], "03/04/15"))
    assert out.tables[D]["ts"][0] == datetime(2015, 3, 4, 10, 0, 5, tzinfo=UTC)
    assert any("ambiguous" in w for w in r.warnings) and any("no zone" in w for w in r.warnings)


def test_no_timestamps_keep_report_index_and_null_ts():
    out = _read(shared_path("iostat", "text-sysstat", "expected.iostat"))
    assert out.tables[D].get_column("ts").null_count() == out.tables[D].height
    assert out.tables[D].get_column("report").unique().sort().to_list() == [1, 2]


def test_small_blocks_give_identical_tables():
    """The report state (section, header, timestamp, run) carries across block boundaries."""
    for name in ("text-pbench/pbench_iostat-2_rhel7_sysstat10.txt", "text-sysstat/expected.iostat-x-ALL-flush",
                 "text-sysstat/expected.iostat-pretty"):
        p = shared_path("iostat", *name.split("/"))
        whole = _read(p)
        small = IostatReader()
        small.block_bytes = 300
        parts = read_all(small, p)
        assert set(whole.tables) == set(parts.tables)
        for t in whole.tables:
            assert whole.tables[t].sort("src_line").equals(parts.tables[t].sort("src_line")), (name, t)


def test_crlf_and_gzip_give_identical_tables(tmp_path):
    import gzip

    src = shared_path("iostat", "text-pbench", "pbench_iostat-2_rhel7_sysstat10.txt")
    ref = _read(src, first_report="interval")
    crlf = tmp_path / "crlf.txt.gz"
    crlf.write_bytes(gzip.compress(src.read_bytes().replace(b"\n", b"\r\n")))
    out = _read(crlf, first_report="interval")
    for t in ref.tables:
        assert ref.tables[t].equals(out.tables[t]), t


def test_concatenated_runs_each_have_a_since_boot_report(tmp_path):
    a = shared_path("iostat", "text-jc", "centos-7.7_iostat-1.out").read_text()
    b = shared_path("iostat", "text-jc", "ubuntu-18.04_iostat-x.out").read_text()
    p = tmp_path / "two.txt"
    p.write_text(a + b)
    out = _read(p)
    assert out.tables[DB].get_column("run").unique().sort().to_list() == [0, 1]
    assert out.tables[DB].height == 3 + 20 and out.tables[D].height == 6
    assert out.tables[DB].filter(pl.col("run") == 1).get_column("host").unique().to_list() == ["kbrazil-ubuntu"]


# -- malformed inputs: each a clear error, or rejected rows with line and reason --------------------
GOOD = ("Linux 5.4.0 (h) \t01/02/21 \t_x86_64_\t(2 CPU)\n\n"
        "avg-cpu:  %user   %nice %system %iowait  %steal   %idle\n"
        "           1.00    0.00    2.00    0.50    0.00   96.50\n\n"
        "Device             tps    kB_read/s    kB_wrtn/s    kB_read    kB_wrtn\n"
        "sda               1.00         2.00         3.00         40         50\n"
        "sdb               1.00         2.00         3.00         40         50\n\n")


def _bad(tmp_path, text: str | bytes, **opts):
    p = tmp_path / "bad.txt"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return read_all(IostatReader(**opts), p)


@pytest.mark.parametrize(
    "mutate,table,line,reason,total",
    [
        (lambda t: t.replace("sdb               1.00", "sdb               x.00"), DB, 8, "column 'tps' is not a number", 3),
        (lambda t: t.replace("sdb               1.00         2.00", "sdb               1.00"), DB, 8,
         "expected a device name and 5 values", 3),
        (lambda t: t.replace("sdb               1.00", "sdb              -1.00"), DB, 8, "negative value in 'tps'", 3),
        # a line before any report cannot be since-boot data: it is counted with the interval rows
        (lambda t: t.replace("\n\navg-cpu", "\nstray words here\n\navg-cpu", 1), D, 2, "outside any report section", 4),
        (lambda t: t.replace("96.50\n", "96.50\n 1 2 3\n"), CB, 5, "unexpected line in the avg-cpu section", 4),
        (lambda t: t.replace("96.50", "96.50  7.00"), CB, 4, "expected 6 avg-cpu values, found 7", 3),
        (lambda t: t[: t.index("sdb") + 25], DB, 8, "expected a device name and 5 values", 3),  # truncated file
    ],
    ids=["not-a-number", "missing-fields", "negative", "stray-line", "extra-cpu-line", "cpu-fields", "truncated"],
)
def test_malformed_rows_are_rejected_with_line_and_reason(tmp_path, mutate, table, line, reason, total):
    out = _bad(tmp_path, mutate(GOOD))
    rej = out.rejects[table]
    assert rej.height == 1
    assert rej["src_line"][0] == line and reason in rej["reason"][0]
    kept = sum(df.height for df in out.tables.values())
    assert kept + sum(r.height for r in out.rejects.values()) == total  # every data line accounted for


def test_malformed_nan_is_rejected(tmp_path):
    out = _bad(tmp_path, GOOD.replace("sdb               1.00         2.00", "sdb               1.00         -nan"))
    assert out.rejects[DB]["src_line"].to_list() == [8]
    assert out.rejects[DB]["reason"][0] == "column 'kB_read/s' is not a number: '-nan'"


def test_device_names_with_spaces(tmp_path):
    """-j LABEL can print labels with blanks: they are kept whole (device-first and -last)."""
    out = _bad(tmp_path, GOOD.replace("sdb  ", "My Disk  ", 1))
    assert out.tables[DB].get_column("device").to_list() == ["sda", "My Disk"]
    assert out.tables[DB].get_column("kb_wrtn").to_list() == [50.0, 50.0]
    pretty = shared_path("iostat", "text-sysstat", "expected.iostat-jLABEL").read_text().replace(" HP_RECOVERY",
                                                                                               " HP RECOVERY")
    p = tmp_path / "label.txt"
    p.write_text(pretty)
    dev = read_all(IostatReader(), p).tables[DB]
    assert dev.height == 22 and "HP RECOVERY" in dev.get_column("device").to_list()
    assert dev.filter(pl.col("device") == "HP RECOVERY")["kb_read"].to_list() == [2100.0]


def test_malformed_non_utf8_line_is_rejected(tmp_path):
    out = _bad(tmp_path, GOOD.encode().replace(b"sdb  ", b"s\xffb  "))
    assert out.rejects[DB]["src_line"].to_list() == [8]
    assert out.tables[DB].get_column("device").to_list() == ["sda"]


def test_malformed_unknown_column_is_an_error_naming_line_and_column(tmp_path):
    with pytest.raises(TraceFormatError, match=r"bad.txt:6: unknown iostat device column\(s\) 'frob/s'"):
        _bad(tmp_path, GOOD.replace("kB_wrtn/s", "frob/s"))


def test_malformed_invalid_timestamp_rejects_its_report(tmp_path):
    text = GOOD.replace("avg-cpu:", "13/45/21 10:00:00\navg-cpu:", 1)
    out = _bad(tmp_path, text)
    assert out.tables == {}
    assert {t: r.height for t, r in out.rejects.items()} == {DB: 2, CB: 1}
    assert "timestamp line is not a valid date" in out.rejects[DB]["reason"][0]


def test_json_streamed_and_whole_document_paths_agree(tmp_path):
    """sysstat's layout (one disk per line) is streamed; the same document reformatted (here by
    json.dumps(indent=2), as jq would) is read whole: identical tables apart from line numbers."""
    src = shared_path("iostat", "json-sysstat", "expected.iostat-x-p-ALL-JSON")
    r1 = IostatReader()
    streamed = read_all(r1, src)
    p = tmp_path / "pretty.json"
    p.write_text(json.dumps(json.loads(src.read_text()), indent=2))
    r2 = IostatReader()
    whole = read_all(r2, p)
    assert (r1.metadata["layout"], r2.metadata["layout"]) == ("json (streamed)", "json")
    for t in streamed.tables:
        assert streamed.tables[t].drop("src_line").equals(whole.tables[t].drop("src_line")), t


def test_json_capture_cut_short_keeps_its_rows(tmp_path):
    """A live 'iostat -o JSON' killed mid-run leaves an unterminated document: the streamed
    reader keeps every complete line, and a half-written disk line is rejected."""
    text = shared_path("iostat", "json-sysstat", "expected.iostat-x-p-ALL-JSON").read_text()
    cut = text[: text.rindex('{"disk_device": "sdq"') + 40]  # inside the second report's sdq line
    p = tmp_path / "cut.json"
    p.write_text(cut)
    out = read_all(IostatReader(), p)
    second = cut[cut.rindex('"disk": ['):]
    assert out.tables[DB].height == 22 and out.tables[D].height == second.count('"disk_device"') - 1 == 18
    assert "invalid JSON object" in out.rejects[D]["reason"][0]


def test_malformed_json_errors(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"sysstat": {"hosts": [\n{"nodename": "h", "statistics": [\n{"disk": [\n{"disk_device": \n"sda",,}]}]}]}}')
    with pytest.raises(TraceFormatError, match=r"bad.json:5: invalid iostat JSON"):
        read_all(IostatReader(), p)
    p.write_text('{"sysstat": {"machines": []}}')
    with pytest.raises(TraceFormatError, match=r"no sysstat.hosts"):
        read_all(IostatReader(), p)
    doc = {"sysstat": {"hosts": [{"nodename": "h", "statistics": [{"disk": [
        {"disk_device": "sda", "r/s": "fast", "util": 1.0}, {"disk_device": "sdb", "r/s": 1.0, "util": 2.0},
        {"disk_device": "sdc", "r/s": 1.0, "blorp": 2.0}]}]}]}}
    p.write_text(json.dumps(doc["sysstat"]["hosts"][0]["statistics"][0]["disk"][0]) and json.dumps(
        {"sysstat": {"hosts": [{"nodename": "h", "statistics": [{"disk": doc["sysstat"]["hosts"][0]["statistics"][0]
                                                                 ["disk"][:2]}]}]}}, indent=1))
    out = read_all(IostatReader(), p)
    assert out.tables[DB].get_column("device").to_list() == ["sdb"]
    assert "'r/s' is not a number: 'fast'" in out.rejects[DB]["reason"][0]
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="unknown iostat JSON device column"):
        read_all(IostatReader(), p)


def test_bad_options_are_errors():
    with pytest.raises(ValueError, match="unknown option"):
        IostatReader(interval=5)
    with pytest.raises(ValueError, match="first_report must be one of"):
        IostatReader(first_report="maybe")
