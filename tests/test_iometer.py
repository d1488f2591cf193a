"""IOMeter results CSV: both header generations (bare MBps; Binary + Decimal), result blocks,
units, detection and malformed rows. No public sample was available: the fixtures follow
IOMeter's SaveResults layout with our own numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from traces.iometer import IometerReader
from traces.measured import read_all
from traces.registry import detect
from traces.source import Source

OLD_HDR = ("'Target Type,Target Name,Access Specification Name,# Managers,# Workers,# Disks,IOps,Read IOps,"
           "Write IOps,MBps,Read MBps,Write MBps,Transactions per Second,Connections per Second,Average Response Time,"
           "Average Read Response Time,Average Write Response Time,Average Transaction Time,Average Connection Time,"
           "Maximum Response Time,Maximum Read Response Time,Maximum Write Response Time,Maximum Transaction Time,"
           "Maximum Connection Time,Errors,Read Errors,Write Errors,Bytes Read,Bytes Written,Read I/Os,Write I/Os,"
           "Connections,Transactions per Connection,Total Raw Read Response Time,Total Raw Write Response Time,"
           "Total Raw Transaction Time,Total Raw Connection Time,Maximum Raw Read Response Time,"
           "Maximum Raw Write Response Time,Maximum Raw Transaction Time,Maximum Raw Connection Time,"
           "Total Raw Run Time,Starting Sector,Maximum Size,Queue Depth,% CPU Utilization,% User Time,"
           "% Privileged Time,% DPC Time,% Interrupt Time,Processor Speed,Interrupts per Second,CPU Effectiveness,"
           "Packets/Second,Packet Errors,Segments Retransmitted/Second")
N_OLD = OLD_HDR.count(",") + 1  # 56 columns


def _row(kind, name, spec, iops, r_iops, w_iops, mbps, resp, r_ios, w_ios, qd, cpu):
    vals = {"Target Type": kind, "Target Name": name, "Access Specification Name": spec, "# Managers": 1,
            "# Workers": 1, "# Disks": 1, "IOps": iops, "Read IOps": r_iops, "Write IOps": w_iops, "MBps": mbps,
            "Read MBps": mbps * r_iops / iops, "Write MBps": mbps * w_iops / iops, "Average Response Time": resp,
            "Maximum Response Time": resp * 20, "Read I/Os": r_ios, "Write I/Os": w_ios,
            "Bytes Read": r_ios * 8192, "Bytes Written": w_ios * 8192, "Errors": 0, "Queue Depth": qd,
            "% CPU Utilization": cpu}
    names = OLD_HDR[1:].split(",")
    return ",".join(str(vals.get(n, 0)) for n in names)


OLD = "\n".join([
    "'Test Type,Test Description", "0,", "'Version", "2006.07.27", "'Time Stamp", "2007-03-01 10:15:02:125",
    "'Access specifications", "'Access specification name,default assignment", "8K 67% read,0",
    "'size,% of size,% reads,% random,delay,burst,align,reply", "8192,100,67,100,0,1,0,0",
    "'End access specifications", "'Results", OLD_HDR,
    _row("ALL", "All", "8K 67% read", 2000.0, 1340.0, 660.0, 15.625, 8.0, 1_206_000, 594_000, 16, 12.5),
    _row("MANAGER", "host1", "8K 67% read", 2000.0, 1340.0, 660.0, 15.625, 8.0, 1_206_000, 594_000, 16, 12.5),
    _row("DISK", "E:", "8K 67% read", 2000.0, 1340.0, 660.0, 15.625, 8.0, 1_206_000, 594_000, 16, 0),
    "'End Test", ""])


def _read(tmp_path, text, name="results.csv"):
    p = tmp_path / name
    p.write_text(text)
    r = IometerReader()
    return r, read_all(r, p), p


def test_old_layout_units_and_blocks(tmp_path):
    r, out, p = _read(tmp_path, OLD)
    df = out.tables["iometer"]
    assert df.height == 3 and df["target_type"].to_list() == ["ALL", "MANAGER", "DISK"]
    disk = df.filter(pl.col("target_type") == "DISK").row(0, named=True)
    assert disk["target_name"] == "E:" and disk["access_spec"] == "8K 67% read"
    assert disk["iops"] == 2000.0 and disk["bytes_per_s"] == 15.625 * 2**20  # bare MBps is binary
    assert (disk["read_ios"], disk["bytes_written"], disk["queue_depth"]) == (1_206_000, 594_000 * 8192, 16)
    assert disk["avg_response_ms"] == 8.0 and disk["max_response_ms"] == 160.0
    assert disk["test_time"] == datetime(2007, 3, 1, 10, 15, 2, 125000, tzinfo=UTC)
    assert disk["src_line"] == 17 and disk["result_block"] == 0
    assert r.metadata["tool_version"] == "2006.07.27" and r.metadata["result_blocks"] == 1
    assert detect(Source(p)) == "iometer"
    assert out.skipped["marker"] == 10


def test_new_layout_prefers_decimal_megabytes(tmp_path):
    hdr = OLD_HDR.replace("MBps,Read MBps,Write MBps",
                          "MBps (Binary),Read MBps (Binary),Write MBps (Binary),MBps (Decimal),Read MBps (Decimal),"
                          "Write MBps (Decimal)")
    names = hdr[1:].split(",")
    vals = {"Target Type": "DISK", "Target Name": "nvme0", "Access Specification Name": "4K read", "IOps": 1000,
            "MBps (Binary)": 3.90625, "MBps (Decimal)": 4.096, "Read MBps (Decimal)": 4.096}
    row = ",".join(str(vals.get(n, 0)) for n in names)
    two_blocks = "'Results\n" + hdr + "\n" + row + "\n'End Test\n'Results\n" + hdr + "\n" + row + "\n"
    _, out, _ = _read(tmp_path, two_blocks)
    df = out.tables["iometer"]
    assert df["result_block"].to_list() == [0, 1]
    assert df["bytes_per_s"].to_list() == [4_096_000.0, 4_096_000.0] and df["read_bytes_per_s"][0] == 4_096_000.0


@pytest.mark.parametrize(
    "mutate,reason",
    [
        (lambda r: r.replace("2000.0", "lots", 1), "'IOps' is not a number: 'lots'"),
        (lambda r: ",".join(r.split(",")[:20]), f"expected {N_OLD} fields, found 20"),
        (lambda r: r.replace(",16,", ",-16,", 1), "negative 'Queue Depth': -16"),
    ],
)
def test_malformed_rows_rejected(tmp_path, mutate, reason):
    lines = OLD.split("\n")
    lines[16] = mutate(lines[16])  # the DISK row, line 17
    _, out, _ = _read(tmp_path, "\n".join(lines))
    assert out.tables["iometer"].height == 2
    rej = out.rejects["iometer"]
    assert rej["src_line"].to_list() == [17] and reason in rej["reason"][0]
