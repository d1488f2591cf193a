"""UMass / SPC-1 traces (Financial1/2, WebSearch1-3): ``ASU,LBA,Size,Opcode,Timestamp``.

ASU (application specific unit) is the volume; LBA in 512-byte blocks; Size in bytes; Opcode
``r``/``w`` in any case; Timestamp in seconds from the trace start as a decimal number
(``0.000000``). The SPC trace specification allows further optional fields after the
timestamp: they are ignored.

Seconds become nanoseconds exactly: the text is parsed as a decimal (Polars
``Decimal(38, 9)``), never as a binary float, so ``1.000001`` is 1,000,001,000 ns and not
1,000,000,999; digits below 1 ns are rounded half to even.
"""

from __future__ import annotations

import polars as pl

from traces.base import decimal_scaled, op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field

SECTOR_BYTES = 512
NS_DIGITS = 9  # seconds -> ns


class SpcReader(DelimitedReader):
    name = "spc"
    description = "UMass/SPC-1 CSV (512 B LBA, bytes, r/w, decimal seconds)"
    allow_extra_fields = True
    fields = (
        Field("ASU"),
        Field("LBA"),
        Field("Size"),
        Field("Opcode", pl.String),
        Field("Timestamp", pl.String),
    )
    sniff_pattern = r"^\s*\d+,\s*\d+,\s*\d+,\s*[rRwW]\s*,\s*\d*\.?\d+([eE][-+]?\d+)?\s*(,.*)?$"

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        op, op_reason = op_from_codes("Opcode", {"r": "read", "w": "write"})
        ts, ts_reason = decimal_scaled("Timestamp", NS_DIGITS, "timestamp (s)")
        offset, off_reason = scaled_int("LBA", SECTOR_BYTES, "LBA (blocks)")
        df = df.with_columns(
            ts_raw_ns=ts,
            volume=pl.col("ASU").cast(pl.String),
            op=op,
            offset=offset,
            size=pl.col("Size"),
            latency_ns=pl.lit(None, pl.Int64),
        )
        return with_reason(df, op_reason, ts_reason, off_reason)
