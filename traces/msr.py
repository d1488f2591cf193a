"""MSR Cambridge (SNIA IOTTA) block traces: ``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``.

Timestamp and ResponseTime are Windows FILETIME ticks (100 ns; the clock counts from
1601-01-01 UTC), Offset and Size are bytes. One volume per ``<Hostname>_<DiskNumber>``.
"""

from __future__ import annotations

import polars as pl

from traces.base import Check, op_from_codes
from traces.delimited import DelimitedReader, Field

#: 100 ns ticks between 1601-01-01 and 1970-01-01 (Windows FILETIME epoch to Unix epoch)
FILETIME_UNIX_EPOCH_TICKS = 116_444_736_000_000_000
FILETIME_TICK_NS = 100


class MsrReader(DelimitedReader):
    name = "msr"
    description = "MSR Cambridge CSV (Windows FILETIME, bytes)"
    absolute_clock = True
    fields = (
        Field("Timestamp"),
        Field("Hostname", pl.String),
        Field("DiskNumber"),
        Field("Type", pl.String),
        Field("Offset"),
        Field("Size"),
        Field("ResponseTime"),
    )
    volume_key = ("Hostname", "DiskNumber")
    sniff_pattern = r"^\d{17,19},[^,]*,\d+,[A-Za-z]+,[^,]*,[^,]*(,[^,]*)?\s*$"

    def canonical_exprs(self) -> tuple[dict[str, pl.Expr], list[Check]]:
        op, op_reason = op_from_codes("Type", {"Read": "read", "Write": "write"})
        exprs = {
            "ts_raw_ns": (pl.col("Timestamp") - FILETIME_UNIX_EPOCH_TICKS) * FILETIME_TICK_NS,
            "volume": pl.concat_str(pl.col("Hostname"), pl.col("DiskNumber").cast(pl.String), separator="_"),
            "op": op,
            "offset": pl.col("Offset"),
            "size": pl.col("Size"),
            "latency_ns": pl.col("ResponseTime") * FILETIME_TICK_NS,
        }
        return exprs, [op_reason]
