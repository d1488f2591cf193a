"""The canonical request table every block-trace reader produces.

One row per host request. Units are in the column names: ``ts_ns`` is nanoseconds since the
trace's first accepted request, ``offset``/``size`` are bytes, ``latency_ns`` is nanoseconds
(null when the format carries none), ``src_line`` points back to the raw file (1-based line
number for text formats, 1-based record number for binary ones).
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

OPS: tuple[str, ...] = ("read", "write", "trim", "flush")
OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH = range(4)
OP_DTYPE = pl.Enum(list(OPS))

POLARS_SCHEMA: dict[str, pl.DataType] = {
    "ts_ns": pl.Int64,
    "volume": pl.Categorical,
    "op": OP_DTYPE,
    "offset": pl.Int64,
    "size": pl.Int32,
    "latency_ns": pl.Int64,
    "src_line": pl.Int64,
}

ARROW_SCHEMA = pa.schema(
    [
        pa.field("ts_ns", pa.int64(), nullable=False, metadata={"unit": "ns since trace start"}),
        pa.field("volume", pa.dictionary(pa.uint32(), pa.large_string()), nullable=False),
        pa.field("op", pa.dictionary(pa.uint8(), pa.large_string(), ordered=True), nullable=False,
                 metadata={"values": ",".join(OPS)}),
        pa.field("offset", pa.int64(), nullable=False, metadata={"unit": "bytes"}),
        pa.field("size", pa.int32(), nullable=False, metadata={"unit": "bytes"}),
        pa.field("latency_ns", pa.int64(), nullable=True, metadata={"unit": "ns"}),
        pa.field("src_line", pa.int64(), nullable=False, metadata={"unit": "1-based line or record"}),
    ]
)

REJECT_SCHEMA: dict[str, pl.DataType] = {
    "src_line": pl.Int64,
    "raw": pl.String,
    "reason": pl.String,
}

COLUMNS: tuple[str, ...] = tuple(POLARS_SCHEMA)


def conform(df: pl.DataFrame) -> pl.DataFrame:
    """Cast a frame with the canonical columns to the canonical dtypes and column order."""
    return df.select(pl.col(c).cast(t) for c, t in POLARS_SCHEMA.items())


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=POLARS_SCHEMA)


def empty_rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=REJECT_SCHEMA)
