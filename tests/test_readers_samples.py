"""Every block-trace reader against the real samples in ../shared/data/traces and against
hand-written fixtures (tests/fixtures) for the formats without a public sample.

Expected values are decoded by hand from the raw lines (the arithmetic is in the comments),
never copied from the reader's output.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import shared_path

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from traces import blkparse as blkparse_mod
from traces.errors import TraceFormatError
from traces.registry import reader_class
from traces.source import Source
from traces.vscsi import RECORD, VscsiReader

FIX = Path(__file__).parent / "fixtures"
BLKPARSE = ("traces", "blkparse", "mbpar_blktrace_first20000.txt")
DISKSIM = ("traces", "disksim", "tpcc-small.trace")
VSCSI = ("traces", "vscsi", "cloudPhysicsIO.vscsi")
BLOCK_FORMATS = (
    "tiercast-parquet",
    "msr",
    "alibaba",
    "tencent",
    "spc",
    "blkparse",
    "fiu",
    "disksim",
    "vscsi",
)


def read_all(reader, path) -> tuple[pl.DataFrame, pl.DataFrame, Counter]:
    """Accepted rows, rejects and skipped-line counts of a whole file, straight from batches()."""
    rows, rejects, skipped = [], [], Counter()
    for ch in reader.batches(Source(path)):
        rows.append(ch.rows)
        rejects.append(ch.rejects)
        skipped.update(ch.skipped)
    return pl.concat(rows), pl.concat(rejects), skipped


def ingest(path, data_dir, **kw):
    r = ingest_file(path, data_dir, validate=kw.pop("validate", "off"), **kw)
    assert r.rows_read == r.rows_accepted + r.rows_rejected
    t = find_trace(data_dir, r.trace_id)
    return r, t, t.scan().collect().sort("src_line")


# -- blkparse (real sample: 20,000 lines of MBPAR's blktrace.txt, device 8,16) ------------------


def test_blkparse_sample_completions(data_dir):
    r, t, rows = ingest(shared_path(*BLKPARSE), data_dir)
    # counted with awk over column 6 (action): C 57, D 88, A 6175, m 944, P 54 + U 42 + UT 2 = 98;
    # other events = Q 6175 + G 288 + I 288 + M 5731 + F 156 + D 88 = 12726
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("blkparse", 57, 57, 0)
    assert r.lines_skipped == {"remap": 6175, "message": 944, "plug": 98, "other_event": 12726}
    assert 57 + 6175 + 944 + 98 + 12726 == 20000
    assert r.volumes == {"8,16": 57}
    first, last = rows.row(0, named=True), rows.row(-1, named=True)
    # line 33: "8,16 5 15 0.000356669 0 C R 1444645666 + 256 [0]"
    # offset 1444645666 * 512 = 739658580992; size 256 * 512 = 131072; first accepted row -> ts 0;
    # its dispatch, line 20 "... 0.000031865 18615 D R 1444645666 + 256 [java]": 356669 - 31865 = 324804 ns
    assert first == {
        "ts_ns": 0,
        "volume": "8,16",
        "op": "read",
        "offset": 739_658_580_992,
        "size": 131_072,
        "latency_ns": 324_804,
        "src_line": 33,
    }
    # line 19229: "8,16 5 3416 4.345005389 0 C W 2030315850 + 1024 [0]"
    # 2030315850 * 512 = 1039521715200; 1024 * 512 = 524288; ts 4345005389 - 356669 = 4344648720;
    # dispatch line 4595 at 4.320526440: 4345005389 - 4320526440 = 24478949 ns
    assert last == {
        "ts_ns": 4_344_648_720,
        "volume": "8,16",
        "op": "write",
        "offset": 1_039_521_715_200,
        "size": 524_288,
        "latency_ns": 24_478_949,
        "src_line": 19229,
    }
    # line 804 "C WS 1950885322 [0]": the empty barrier's completion, no sectors -> a flush of 0 bytes
    flush = rows.filter(pl.col("op") == "flush")
    assert flush.select("src_line", "offset", "size", "latency_ns").rows() == [
        (804, 1950885322 * 512, 0, None)
    ]
    # C lines by RWBS: R 37, W 16, WS 4 (one of them the flush)
    assert dict(rows.group_by("op").len().iter_rows()) == {"read": 37, "write": 19, "flush": 1}
    meta = t.manifest["reader_metadata"]
    assert meta["events_by_action"] == {
        "A": 6175,
        "C": 57,
        "D": 88,
        "F": 156,
        "G": 288,
        "I": 288,
        "M": 5731,
        "P": 54,
        "Q": 6175,
        "U": 42,
        "UT": 2,
        "m": 944,
    }
    assert t.manifest["start_time"] is None  # blktrace times count from the trace start


def _oracle_latencies(path: Path) -> dict[int, int | None]:
    """Independent pairing in plain Python: each C takes the latest earlier D of the same
    (device, sector, nsectors) within 30 s, unless an earlier C already took that D."""
    pat = re.compile(r"^\s*(\d+,\d+)\s+\d+\s+\d+\s+(\d+)\.(\d+)\s+\d+\s+([CD])\s+\S+\s+(\d+) \+ (\d+)")
    ds: dict[tuple, list[int]] = {}
    used: set[tuple] = set()
    out: dict[int, int | None] = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = pat.match(line)
        if not m:
            continue
        dev, s, frac, act, sector, nsec = m.groups()
        ts = int(s) * 10**9 + int(frac.ljust(9, "0"))
        key = (dev, int(sector), int(nsec))
        if act == "D":
            ds.setdefault(key, []).append(ts)
            continue
        times = ds.get(key, [])
        i = bisect.bisect_right(times, ts) - 1
        if i >= 0 and ts - times[i] <= 30 * 10**9 and (key, times[i]) not in used:
            used.add((key, times[i]))
            out[n] = ts - times[i]
        else:
            out[n] = None
    return out


def test_blkparse_latency_pairing_matches_oracle(data_dir):
    path = shared_path(*BLKPARSE)
    rows, _, _ = read_all(reader_class("blkparse")(), path)
    got = dict(zip(rows["src_line"].to_list(), rows["latency_ns"].to_list(), strict=True))
    want = _oracle_latencies(path)
    assert len(want) == 56  # every C with "sector + n": 57 C lines minus the empty flush
    assert {k: got[k] for k in want} == want
    assert sum(v is not None for v in want.values()) == 56


def test_blkparse_same_result_in_small_batches(monkeypatch):
    """Batch boundaries (summary state, pending dispatches for pairing) change nothing."""
    path = shared_path(*BLKPARSE)
    whole = read_all(reader_class("blkparse")(), path)
    orig = Source.iter_bytes
    monkeypatch.setattr(Source, "iter_bytes", lambda self, size=0: orig(self, 50_000))
    monkeypatch.setattr(blkparse_mod, "BLOCK_BYTES", 40_000)
    reader = reader_class("blkparse")()
    batches = list(reader.batches(Source(path)))
    assert len(batches) > 20
    rows = pl.concat([c.rows for c in batches])
    assert rows.equals(whole[0])
    assert sum((c.skipped for c in batches), Counter()) == whole[2]


def test_blkparse_sample_dispatches(data_dir):
    r, t, rows = ingest(shared_path(*BLKPARSE), data_dir, options={"events": "D"})
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (88, 88, 0)
    # the 57 C events are now "other events": 12726 - 88 + 57 = 12695
    assert r.lines_skipped == {"remap": 6175, "message": 944, "plug": 98, "other_event": 12695}
    # D lines by RWBS: R 37, W 48, WS 3
    assert dict(rows.group_by("op").len().iter_rows()) == {"read": 37, "write": 51}
    assert rows["latency_ns"].null_count() == 88
    # line 20 "0.000031865 18615 D R 1444645666 + 256 [java]" is the first; line 19290
    # "4.345076381 0 D W 2030331298 + 1024 [swapper]" the last: 2030331298 * 512 = 1039529624576
    assert rows.row(0) == (0, "8,16", "read", 739_658_580_992, 131_072, None, 20)
    assert rows.row(-1) == (4_345_076_381 - 31_865, "8,16", "write", 1_039_529_624_576, 524_288, None, 19290)
    c = ingest_file(shared_path(*BLKPARSE), data_dir, validate="off")
    assert c.trace_id != r.trace_id  # events=D is another trace


def test_blkparse_flags_fixture():
    """RWBS flags, pure flushes, discards, passthrough (N), errors, two devices, banner and summary."""
    path = FIX / "blkparse_flags.txt"
    reader = reader_class("blkparse")()
    rows, rejects, skipped = read_all(reader, path)
    assert rejects.height == 0
    # 29 lines = 6 C records + banner 1 + Q/D events 9 + the passthrough "C N" 1 + message 1
    # + plug/unplug 2 + the summary block's 9 lines (its blank line included)
    assert skipped == Counter(banner=1, other_event=9, non_data=1, message=1, plug=2, summary=9)
    assert rows.height + sum(skipped.values()) == 29
    assert rows.select("ts_raw_ns", "volume", "op", "offset", "size", "latency_ns", "src_line").rows() == [
        # C WS 2048 + 8: 2048*512 = 1048576, 8*512 = 4096; D at 0.000001000 -> 101000 - 1000
        (101_000, "8,16", "write", 1_048_576, 4096, 100_000, 4),
        # C FN [0]: flush, no sector -> offset 0, size 0, nothing to pair
        (701_000, "8,16", "flush", 0, 0, None, 7),
        # C DS 4096 + 2048: discard -> trim; 4096*512 = 2097152, 2048*512 = 1048576
        (1_500_000, "8,16", "trim", 2_097_152, 1_048_576, 500_000, 9),
        # C WFS 8192 + 16: write with FUA; 8192*512 = 4194304, 16*512 = 8192
        (2_400_000, "8,16", "write", 4_194_304, 8192, 400_000, 11),
        # C RA 100 + 256 [-5]: read-ahead that failed with EIO, still a request; 100*512 = 51200
        (3_900_000, "8,16", "read", 51_200, 131_072, 900_000, 13),
        # second device: C R 64 + 8 on 8,32
        (5_200_000, "8,32", "read", 32_768, 4096, 200_000, 17),
    ]
    assert reader.metadata["completions_with_error"] == 1
    d_rows, _, d_skipped = read_all(reader_class("blkparse")(events="D"), path)
    assert d_rows["op"].to_list() == ["write", "flush", "trim", "write", "read", "read"]
    assert d_rows["ts_raw_ns"].to_list() == [1_000, 201_000, 1_000_000, 2_000_000, 3_000_000, 5_000_000]
    assert d_skipped == skipped


def test_blkparse_latency_none_option():
    rows, _, _ = read_all(reader_class("blkparse")(latency="none"), FIX / "blkparse_flags.txt")
    assert rows["latency_ns"].null_count() == rows.height == 6


# -- DiskSim / MQSim ASCII (real sample: MQSim's tpcc-small.trace) -------------------------------


def test_disksim_sample_mqsim_nanoseconds(data_dir):
    r, t, rows = ingest(shared_path(*DISKSIM), data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected, r.lines_skipped) == (
        "disksim",
        6999,
        6999,
        0,
        {},
    )
    # awk '{c[$5]++}': type 1 (read) 4381, type 0 (write) 2618; devices 0..15
    assert dict(rows.group_by("op").len().iter_rows()) == {"read": 4381, "write": 2618}
    assert sorted(r.volumes, key=int) == [str(i) for i in range(16)]
    assert r.volumes["8"] == 150 and sum(r.volumes.values()) == 6999
    # integer times -> MQSim nanoseconds (its workload.xml: Time_Unit=NANOSECOND)
    assert t.manifest["reader_metadata"]["time_unit"] == "ns"
    # line 1 "938513000 4 264719034 16 0": 264719034 * 512 = 135536145408, 16 * 512 = 8192, write
    assert rows.row(0) == (0, "4", "write", 135_536_145_408, 8192, None, 1)
    # line 6999 "1075002000 7 160057354 16 0": ts 1075002000 - 938513000 = 136489000 ns
    assert rows.row(-1) == (136_489_000, "7", "write", 81_949_365_248, 8192, None, 6999)
    # awk '{s+=$4}' = 116638 sectors
    assert rows["size"].cast(pl.Int64).sum() == 116_638 * 512


def test_disksim_time_unit_option(data_dir):
    rows, _, _ = read_all(reader_class("disksim")(time_unit="ms"), shared_path(*DISKSIM))
    assert rows["ts_raw_ns"][0] == 938_513_000 * 1_000_000
    ns = ingest_file(shared_path(*DISKSIM), data_dir, validate="off")
    ms = ingest_file(shared_path(*DISKSIM), data_dir, validate="off", options={"time_unit": "ms"})
    assert ms.trace_id != ns.trace_id
    with pytest.raises(ValueError, match="time_unit must be auto, ns, us, ms, s; got 'min'"):
        reader_class("disksim")(time_unit="min")


def test_disksim_fixture_diskSim_milliseconds():
    reader = reader_class("disksim")()
    rows, rejects, _ = read_all(reader, FIX / "disksim_ms.trace")
    assert rejects.height == 0
    assert reader.metadata["time_unit"] == "ms"
    # "0.512500" ms = 512500 ns; "1.000001" ms = 1000001 ns (exact, no float); "2.25" ms = 2250000 ns
    assert rows["ts_raw_ns"].to_list() == [0, 512_500, 1_000_001, 2_250_000]
    # "1.000001 1 99 1 1": 99 * 512 = 50688, one sector, read
    assert rows.row(2) == (1_000_001, "1", "read", 50_688, 512, None, 3)


# -- CloudPhysics vSCSI v1 (real sample: libCacheSim's cloudPhysicsIO.vscsi) ---------------------


def test_vscsi_sample(data_dir):
    r, t, rows = ingest(shared_path(*VSCSI), data_dir)
    # 3643904 bytes / 32 = 113872 records; only READ(10) 0x28 and WRITE(10) 0x2a occur
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected, r.lines_skipped) == (
        "vscsi",
        113_872,
        113_872,
        0,
        {},
    )
    assert dict(rows.group_by("op").len().iter_rows()) == {"read": 46_974, "write": 66_898}
    assert r.volumes == {"vscsi": 113_872}
    # record 1 (bytes 0-31): sn 2147483892, len 512, nSG 1, cmd 0x2a, ver 0x0100, lbn 42932745,
    # ts 5633898368802 us; offset 42932745 * 512 = 21981565440
    assert rows.row(0) == (0, "vscsi", "write", 21_981_565_440, 512, None, 1)
    # record 113872: len 512, cmd 0x2a, lbn 42936150 -> 21983308800, ts 5641098458687 us:
    # (5641098458687 - 5633898368802) * 1000 = 7200089885000 ns, just over 2 hours
    assert rows.row(-1) == (7_200_089_885_000, "vscsi", "write", 21_983_308_800, 512, None, 113_872)
    assert t.manifest["volumes"]["vscsi"]["span_ns"] == 7_200_089_885_000


def test_vscsi_truncated_record_is_an_error(tmp_path, data_dir):
    src = tmp_path / "cut.vscsi"
    src.write_bytes(shared_path(*VSCSI).read_bytes()[:-7])
    with pytest.raises(
        TraceFormatError, match=r"cut.vscsi:113872: truncated record 113872: the file ends 25 bytes"
    ):
        ingest_file(src, data_dir, validate="off")
    assert not any((data_dir / "traces").glob("[0-9a-f]*"))


def _vscsi_records(rows: list[tuple]) -> bytes:
    return np.array(rows, dtype=RECORD).tobytes()


def test_vscsi_non_data_commands_and_versions(tmp_path, data_dir):
    recs = [
        # sn, len, nSG, cmd, ver, lbn, ts(us)
        (1, 4096, 1, 0x28, 0x0100, 8, 1_000_000),
        (2, 0, 0, 0x00, 0x0100, 0, 1_000_010),  # TEST UNIT READY: skipped
        (3, 36, 1, 0x12, 0x0100, 0, 1_000_020),  # INQUIRY: skipped
        (4, 8192, 2, 0x8A, 0x0100, 2**40, 1_000_030),  # WRITE(16)
        (5, 512, 1, 0xA8, 0x0200, 16, 1_000_040),  # not v1: rejected
        (6, 0, 0, 0x12, 0x0100, 0, 1_000_050),
        (7, 512, 1, 0x88, 0x0100, 1, 1_000_060),  # READ(16)
    ]
    src = tmp_path / "ops.vscsi.gz"
    src.write_bytes(gzip.compress(_vscsi_records(recs)))
    r, t, rows = ingest(src, data_dir, fmt="vscsi", options={"volume": "vm1-scsi0:0"})
    assert (r.rows_read, r.rows_accepted, r.rows_rejected) == (4, 3, 1)
    assert r.lines_skipped == {"scsi_0x00": 1, "scsi_0x12": 2}
    # 2**40 blocks * 512 = 562949953421312 bytes; ts (1000030 - 1000000) us = 30000 ns
    assert rows.rows() == [
        (0, "vm1-scsi0:0", "read", 4096, 4096, None, 1),
        (30_000, "vm1-scsi0:0", "write", 562_949_953_421_312, 8192, None, 4),
        (60_000, "vm1-scsi0:0", "read", 512, 512, None, 7),
    ]
    rej = t.rejects()
    assert rej["src_line"].to_list() == [5]
    assert rej["reason"].to_list() == ["record version 0x0200 is not vSCSI v1 (0x0100)"]
    assert rej["raw"][0] == _vscsi_records([recs[4]]).hex()


# -- formats without a public sample: fixtures written from FORMATS.md ----------------------------


def test_msr_fixture(data_dir):
    r, t, rows = ingest(FIX / "msr_usr.csv", data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("msr", 4, 4, 0)
    assert r.volumes == {"usr_0": 3, "usr_1": 1}
    # FILETIME 128166372003061629 (FORMATS.md) = 2007-02-22 17:00:00.3061629 UTC:
    # (128166372003061629 - 116444736000000000) * 100 ns = 1172163600306162900 ns since 1970
    assert t.manifest["start_time"] == "2007-02-22T17:00:00.306163+00:00"
    assert t.manifest["ts_origin_raw_ns"] == 1_172_163_600_306_162_900
    # ResponseTime 41286 ticks * 100 = 4128600 ns
    assert rows.row(0) == (0, "usr_0", "read", 7_014_609_920, 24_576, 4_128_600, 1)
    # last: (128166372016382155 - 128166372003061629) * 100 = 1332052600 ns; 12345 ticks = 1234500 ns
    assert rows.row(-1) == (1_332_052_600, "usr_0", "write", 0, 4096, 1_234_500, 4)


def test_alibaba_fixture_with_device_sizes_beside(data_dir):
    r, t, rows = ingest(FIX / "alibaba" / "io_traces.csv", data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("alibaba", 5, 4, 1)
    # line 4: 10737414144 + 8192 = 10737422336 > device 419's 10737418240 bytes (device_size.csv)
    rej = t.rejects()
    assert rej.rows() == [
        (
            4,
            "419,W,10737414144,8192,1577808144361000",
            "request end 10737422336 is beyond the volume capacity 10737418240 bytes",
        ),
    ]
    # 1577808144360179 us since 1970 = 2019-12-31 16:02:24.360179 UTC (1577836800 is 2020-01-01)
    assert t.manifest["start_time"] == "2019-12-31T16:02:24.360179+00:00"
    assert rows.row(0) == (0, "419", "write", 8_792_731_648, 16_384, None, 1)
    # line 5: 1577808145000000 - 1577808144360179 = 639821 us = 639821000 ns
    assert rows.row(-1) == (639_821_000, "7", "read", 1_073_737_728, 4096, None, 5)
    meta = t.manifest["reader_metadata"]["device_sizes"]
    assert (Path(meta["path"]).name, meta["how"], meta["devices"]) == (
        "device_size.csv",
        "found next to the trace",
        2,
    )
    assert t.manifest["volumes"]["7"]["capacity_bytes"] == 1_073_741_824


def test_alibaba_device_sizes_option(tmp_path, data_dir):
    trace = tmp_path / "io.csv"
    shutil.copy(FIX / "alibaba" / "io_traces.csv", trace)
    # no device_size.csv beside it: no capacities, every line accepted
    r = ingest_file(trace, data_dir, validate="off")
    assert (r.rows_accepted, r.rows_rejected) == (5, 0)
    sizes = tmp_path / "sizes.csv"
    sizes.write_text("419,10737418240\n7,4096\n")
    r2 = ingest_file(trace, data_dir, validate="off", options={"device_sizes": str(sizes)})
    assert r2.trace_id != r.trace_id
    # device 7 holds 4096 bytes now: lines 3 (0 + 65536) and 5 (1073737728 + 4096) go too, with 4
    assert (r2.rows_accepted, r2.rows_rejected) == (2, 3)
    with pytest.raises(ValueError, match="device_sizes file 'nope.csv' does not exist"):
        ingest_file(trace, data_dir, options={"device_sizes": "nope.csv"})
    sizes.write_text("419,10737418240\n7,-1\n")
    with pytest.raises(TraceFormatError, match=r"sizes.csv:2: capacity must be a positive whole number"):
        reader_class("alibaba")(device_sizes=str(sizes))


def test_tencent_fixture(data_dir):
    r, t, rows = ingest(FIX / "tencent_cbs.csv", data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("tencent", 4, 4, 0)
    assert r.volumes == {"1576": 3, "33": 1}
    # FORMATS.md's "1538323199,105352008,584,1,1576": 2018-09-30 15:59:59 UTC, write,
    # 105352008 * 512 = 53940228096, 584 * 512 = 299008
    assert t.manifest["start_time"] == "2018-09-30T15:59:59+00:00"
    assert rows.row(0) == (0, "1576", "write", 53_940_228_096, 299_008, None, 1)
    # "1538323200,2048,16,0,33": read, 2048 * 512 = 1048576, 8192 bytes, 1 s later
    assert rows.filter(pl.col("volume") == "33").row(0) == (
        1_000_000_000,
        "33",
        "read",
        1_048_576,
        8192,
        None,
        3,
    )
    assert rows.row(-1) == (2_000_000_000, "1576", "write", 105_352_600 * 512, 4096, None, 4)


def test_fiu_fixture(data_dir):
    r, t, rows = ingest(FIX / "fiu_homes.txt", data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("fiu", 4, 4, 0)
    # volume = "major,minor"; line 3 has no md5 field
    assert r.volumes == {"6,0": 3, "6,1": 1}
    # line 1: lba 508907520 * 512 = 260560650240, 8 blocks = 4096 bytes, W
    assert rows.row(0) == (0, "6,0", "write", 260_560_650_240, 4096, None, 1)
    # line 3: 89966055672125 - 89966028165895 = 27506230 ns; 1205032 * 512 = 616976384; 16 blocks
    assert rows.row(2) == (27_506_230, "6,1", "read", 616_976_384, 8192, None, 3)
    # line 4: lower-case "r" is a read; 77128 * 512 = 39489536
    assert rows.row(3) == (73_838_636, "6,0", "read", 39_489_536, 4096, None, 4)
    assert t.manifest["start_time"] is None


def test_spc_fixture(data_dir):
    r, t, rows = ingest(FIX / "spc_financial.spc", data_dir)
    assert (r.format, r.rows_read, r.rows_accepted, r.rows_rejected) == ("spc", 6, 6, 0)
    assert r.volumes == {"0": 3, "1": 2, "2": 1}
    # FORMATS.md's "0,303567,3584,w,0.000000": ASU 0, 303567 * 512 = 155426304, 3584 bytes
    assert rows.row(0) == (0, "0", "write", 155_426_304, 3584, None, 1)
    # "0.026214" s = 26214000 ns; "W" upper case is a write
    assert rows.row(2) == (26_214_000, "0", "write", 303_574 * 512, 3584, None, 3)
    # "1.000001" s = 1000001000 ns exactly (as a float, 1.000001 * 1e9 = 1000000999.9999999)
    assert rows["ts_ns"][4] == 1_000_001_000
    # "12.345678901" s with a trailing optional field: 12345678901 ns; 20941264 * 512 = 10721927168
    assert rows.row(-1) == (12_345_678_901, "1", "read", 10_721_927_168, 8192, None, 6)


def test_validate_auto_on_readers_output(data_dir):
    """The GX contract passes on real reader output, flush rows (size 0) included."""
    r = ingest_file(shared_path(*BLKPARSE), data_dir, validate="auto")
    m = json.loads((Path(r.path) / "manifest.json").read_text())
    assert m["validation"]["success"] is True
    assert m["validation"]["rows_validated"] == 57
    a = ingest_file(FIX / "alibaba" / "io_traces.csv", data_dir, validate="auto")
    assert json.loads((Path(a.path) / "manifest.json").read_text())["validation"]["success"] is True


# -- options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
def test_unknown_option_names_format_and_accepted_options(fmt):
    cls = reader_class(fmt)
    with pytest.raises(ValueError) as e:
        cls(colour="blue")
    msg = str(e.value)
    assert f"format {fmt!r} has no option 'colour'" in msg
    assert "accepted options: order" in msg
    for opt in cls.option_help:
        assert opt in msg


def test_bad_option_values():
    with pytest.raises(ValueError, match="events must be C or D, got 'Q'"):
        reader_class("blkparse")(events="Q")
    with pytest.raises(ValueError, match="latency must be pair or none"):
        reader_class("blkparse")(latency="guess")
    with pytest.raises(ValueError, match="volume must not be empty"):
        VscsiReader(volume=" ")
    with pytest.raises(ValueError, match="order must be one of"):
        reader_class("fiu")(order="shuffle")
    with pytest.raises(ValueError, match="format 'msr': capacities cannot be given as text"):
        reader_class("msr")(capacities="usr_0=1GiB")
