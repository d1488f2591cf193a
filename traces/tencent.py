"""Tencent CBS block traces (SNIA IOTTA): ``Timestamp,Offset,Size,IOType,VolumeID``.

Timestamp in Unix seconds (an absolute clock, one-second resolution); Offset and Size in
512-byte sectors; IOType 0 = read, 1 = write. One volume per VolumeID.
Example from FORMATS.md: ``1538323199,105352008,584,1,1576`` is a 299,008-byte write at byte
53,940,228,096 of volume 1576 at 2018-09-30 15:59:59 UTC.
"""

from __future__ import annotations

import polars as pl

from traces.base import op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field

SECTOR_BYTES = 512
S_NS = 1_000_000_000


class TencentReader(DelimitedReader):
    name = "tencent"
    description = "Tencent CBS CSV (Unix seconds, 512 B sectors, 0=read 1=write)"
    absolute_clock = True
    fields = (
        Field("Timestamp"),
        Field("Offset"),
        Field("Size"),
        Field("IOType", pl.String),
        Field("VolumeID", pl.String),
    )
    sniff_pattern = r"^\s*\d+,\s*\d+,\s*\d+,\s*[01]\s*,\s*\d+\s*$"

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        op, op_reason = op_from_codes("IOType", {"0": "read", "1": "write"})
        ts, ts_reason = scaled_int("Timestamp", S_NS, "timestamp (s)")
        offset, off_reason = scaled_int("Offset", SECTOR_BYTES, "offset (sectors)")
        size, size_reason = scaled_int("Size", SECTOR_BYTES, "size (sectors)")
        df = df.with_columns(
            ts_raw_ns=ts,
            volume=pl.col("VolumeID").str.strip_chars(),
            op=op,
            offset=offset,
            size=size,
            latency_ns=pl.lit(None, pl.Int64),
        )
        return with_reason(df, op_reason, ts_reason, off_reason, size_reason)
