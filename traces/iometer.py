"""IOMeter results CSV (``results.csv``) into one row per target per result block.

Layout (IOMeter's ManagerList::SaveResults): marker lines start with an apostrophe
(``'Test Type``, ``'Version``, ``'Time Stamp``, ``'Access specifications``, ``'End Test``); each
``'Results`` marker is followed by a header line ``'Target Type,Target Name,Access Specification
Name,# Managers,...`` and one row per target (ALL, MANAGER, PROCESSOR, WORKER, DISK). Columns
are read by their header name, so the 2006 layout (``MBps``) and the 1.1 layout (``MBps
(Binary)`` and ``MBps (Decimal)``, ~56 columns) both work; absent columns stay null.
Throughput becomes bytes/s: decimal MB x 10^6, binary MB and the bare ``MBps`` of older
releases (defined as 1,048,576 bytes in the IOMeter user's guide) x 2^20.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import UTC, datetime

import polars as pl

from traces.measured import MeasuredBatch, MeasuredReader, reject_frame
from traces.source import Source

MIB = float(1 << 20)
#: header name -> (column, kind, scale)
COLUMNS: dict[str, tuple[str, type, float]] = {
    "Target Type": ("target_type", str, 1), "Target Name": ("target_name", str, 1),
    "Access Specification Name": ("access_spec", str, 1),
    "# Managers": ("managers", int, 1), "# Workers": ("workers", int, 1), "# Disks": ("disks", int, 1),
    "IOps": ("iops", float, 1), "Read IOps": ("read_iops", float, 1), "Write IOps": ("write_iops", float, 1),
    "MBps": ("bytes_per_s", float, MIB), "Read MBps": ("read_bytes_per_s", float, MIB),
    "Write MBps": ("write_bytes_per_s", float, MIB),
    "MBps (Binary)": ("bytes_per_s", float, MIB), "Read MBps (Binary)": ("read_bytes_per_s", float, MIB),
    "Write MBps (Binary)": ("write_bytes_per_s", float, MIB),
    "MiBps (Binary)": ("bytes_per_s", float, MIB), "Read MiBps (Binary)": ("read_bytes_per_s", float, MIB),
    "Write MiBps (Binary)": ("write_bytes_per_s", float, MIB),
    "MBps (Decimal)": ("bytes_per_s", float, 1e6), "Read MBps (Decimal)": ("read_bytes_per_s", float, 1e6),
    "Write MBps (Decimal)": ("write_bytes_per_s", float, 1e6),
    "Average Response Time": ("avg_response_ms", float, 1),
    "Average Read Response Time": ("avg_read_response_ms", float, 1),
    "Average Write Response Time": ("avg_write_response_ms", float, 1),
    "Maximum Response Time": ("max_response_ms", float, 1),
    "Read I/Os": ("read_ios", int, 1), "Write I/Os": ("write_ios", int, 1),
    "Bytes Read": ("bytes_read", int, 1), "Bytes Written": ("bytes_written", int, 1),
    "Errors": ("errors", int, 1), "Queue Depth": ("queue_depth", int, 1),
    "% CPU Utilization": ("cpu_util_pct", float, 1),
}
#: when a file carries both, the decimal MB columns are the ones kept (exact to the byte)
_PREFER = ("(Decimal)",)


class IometerReader(MeasuredReader):
    name = "iometer"
    description = "IOMeter results CSV ('Results blocks)"
    tool = "IOMeter"
    tables = ("iometer",)
    option_help = {}

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        text = head.decode("utf-8", errors="replace")
        return "'Target Type,Target Name" in text or bool(re.match(r"\ufeff?'Test Type", text))

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        text = b"".join(source.iter_bytes()).decode("utf-8", errors="replace").lstrip("\ufeff")
        batch = MeasuredBatch()
        rows, bad = [], []
        block = -1
        header: list[str] | None = None
        stamp = None
        expect = None  # the marker whose value line comes next
        for no, line in enumerate(text.splitlines(), start=1):
            s = line.strip()
            if not s:
                batch.skipped["blank"] += 1
                continue
            if s.startswith("'"):
                batch.skipped["marker"] += 1
                if s.startswith("'Target Type"):
                    header = next(csv.reader([s[1:]]))
                    continue
                header = None  # rows follow their header only until the next marker
                expect = s[1:].split(",")[0]
                if expect == "Results":
                    block += 1
                continue
            if expect == "Version":
                self.metadata.setdefault("tool_version", s)
            if expect == "Time Stamp":
                stamp = _stamp(s)
            if header is None:
                batch.skipped["setting"] += 1
                continue
            fields = next(csv.reader([line]))
            if len(fields) < len(header):
                bad.append((no, line, f"expected {len(header)} fields, found {len(fields)}"))
                continue
            row, problem = {"result_block": block, "test_time": stamp, "src_line": no}, None
            decimal_seen = set()
            for name, value in zip(header, fields, strict=False):
                spec = COLUMNS.get(name.strip())
                if spec is None:
                    continue
                col, kind, scale = spec
                if col in decimal_seen:
                    continue
                value = value.strip()
                if kind is str:
                    row[col] = value
                    continue
                if value == "":
                    continue
                try:
                    x = float(value)
                except ValueError:
                    problem = problem or f"'{name.strip()}' is not a number: '{value[:30]}'"
                    continue
                if x < 0:
                    problem = problem or f"negative '{name.strip()}': {value}"
                row[col] = int(x) if kind is int else x * scale
                if name.strip().endswith(_PREFER):
                    decimal_seen.add(col)
            if problem:
                bad.append((no, line, problem))
            else:
                rows.append(row)
        if rows:
            batch.add("iometer", rows=pl.DataFrame(rows, infer_schema_length=None))
        if bad:
            batch.add("iometer", rejects=reject_frame([b[0] for b in bad], [b[1] for b in bad], [b[2] for b in bad]))
        self.metadata["result_blocks"] = block + 1
        yield batch


def _stamp(text: str) -> datetime | None:
    """IOMeter's 'Time Stamp' ('2004-04-19 16:38:43:343'): local time, kept as printed (UTC)."""
    m = re.match(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?::(\d{1,3}))?", text)
    if not m:
        return None
    y, mo, d, h, mi, s, ms = m.groups()
    return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int(ms or 0) * 1000, tzinfo=UTC)
