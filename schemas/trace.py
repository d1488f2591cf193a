"""The canonical request table every block-trace reader produces.

One row per host request. Its columns are declared once, in :data:`TRACE_COLUMNS` (name, types,
unit); the Polars and Arrow schemas and a reader's working schema are derived from it. Units are
in the column names: ``ts_ns`` is nanoseconds since the trace's first accepted request,
``offset``/``size`` are bytes, ``latency_ns`` is nanoseconds (null when the format carries none),
``src_line`` points back to the raw file (1-based line number for text formats, 1-based record
number for binary ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

OPS: tuple[str, ...] = ("read", "write", "trim", "flush")
OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH = range(4)
OP_DTYPE = pl.Enum(list(OPS))


@dataclass(frozen=True)
class Column:
    """One canonical column. ``unit`` (or an enumeration's ``values``) goes into the Arrow field's
    metadata. A reader holds the column as ``read_name`` / ``read_dtype`` where they differ: the
    ingest step turns those into the canonical column."""

    name: str
    dtype: pl.DataType
    arrow: pa.DataType
    unit: str | None = None
    nullable: bool = False
    values: tuple[str, ...] | None = None
    read_name: str | None = None
    read_dtype: pl.DataType | None = None

    def field(self) -> pa.Field:
        meta = {"unit": self.unit} if self.unit else None
        if self.values:
            meta = {"values": ",".join(self.values)}
        return pa.field(self.name, self.arrow, nullable=self.nullable, metadata=meta)


TRACE_COLUMNS: tuple[Column, ...] = (
    Column("ts_ns", pl.Int64, pa.int64(), "ns since trace start", read_name="ts_raw_ns"),
    Column("volume", pl.Categorical, pa.dictionary(pa.uint32(), pa.large_string()), read_dtype=pl.String),
    Column("op", OP_DTYPE, pa.dictionary(pa.uint8(), pa.large_string(), ordered=True), values=OPS),
    Column("offset", pl.Int64, pa.int64(), "bytes"),
    Column("size", pl.Int32, pa.int32(), "bytes"),
    Column("latency_ns", pl.Int64, pa.int64(), "ns", nullable=True),
    Column("src_line", pl.Int64, pa.int64(), "1-based line or record"),
)

POLARS_SCHEMA: dict[str, pl.DataType] = {c.name: c.dtype for c in TRACE_COLUMNS}
ARROW_SCHEMA = pa.schema([c.field() for c in TRACE_COLUMNS])
#: Columns of a reader's accepted rows (``traces.base.ReadBatch``), before the ingest step rebases
#: time to the trace start.
READ_SCHEMA: dict[str, pl.DataType] = {c.read_name or c.name: c.read_dtype or c.dtype for c in TRACE_COLUMNS}

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
