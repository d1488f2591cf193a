"""FIU block traces (SNIA IOTTA: homes, mail, web-vm): ``ts pid process lba size rw major minor md5``.

Space separated; ts in nanoseconds (from an arbitrary origin, not the epoch); lba and size
in 512-byte blocks; rw ``R``/``W``; the md5 of the block content may be absent.
Volume = ``"major,minor"`` (e.g. ``"6,0"``): the device number identifies the disk, the
same way blkparse names its devices; pid and process are not kept.
"""

from __future__ import annotations

import polars as pl

from traces.base import op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field

SECTOR_BYTES = 512


class FiuReader(DelimitedReader):
    name = "fiu"
    description = "FIU space-separated traces (ns, 512 B blocks, R/W, volume major,minor)"
    separator = None
    required_fields = 8
    fields = (
        Field("ts"),
        Field("pid"),
        Field("process", pl.String),
        Field("lba"),
        Field("size"),
        Field("rw", pl.String),
        Field("major"),
        Field("minor"),
        Field("md5", pl.String),
    )
    sniff_pattern = r"^\s*\d+\s+\d+\s+\S+\s+\d+\s+\d+\s+[RWrw]\s+\d+\s+\d+(\s+[0-9A-Fa-f]+)?\s*$"

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        op, op_reason = op_from_codes("rw", {"R": "read", "W": "write"})
        offset, off_reason = scaled_int("lba", SECTOR_BYTES, "lba (blocks)")
        size, size_reason = scaled_int("size", SECTOR_BYTES, "size (blocks)")
        df = df.with_columns(
            ts_raw_ns=pl.col("ts"),
            volume=pl.concat_str(
                pl.col("major").cast(pl.String), pl.col("minor").cast(pl.String), separator=","
            ),
            op=op,
            offset=offset,
            size=size,
            latency_ns=pl.lit(None, pl.Int64),
        )
        return with_reason(df, op_reason, off_reason, size_reason)
