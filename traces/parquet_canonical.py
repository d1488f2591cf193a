"""Parquet files already in the canonical columns (``tiercast synth`` output, exports).

Required columns: ``ts_ns``, ``volume``, ``op``, ``offset``, ``size``; ``latency_ns`` and
``src_line`` are optional (``src_line`` defaults to the 1-based row number).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import polars as pl

from schemas.trace import OP_DTYPE
from traces.base import ReadBatch, TraceReader
from traces.errors import TraceFormatError
from traces.source import Source, open_parquet
from traces.synth import read_meta

REQUIRED = ("ts_ns", "volume", "op", "offset", "size")
BATCH_ROWS = 1 << 20


class CanonicalParquetReader(TraceReader):
    name = "tiercast-parquet"
    description = "Parquet in tiercast's canonical columns (e.g. tiercast synth output)"
    binary = True

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return head.startswith(b"PAR1")

    def batches(self, source: Source) -> Iterator[ReadBatch]:
        pf = open_parquet(source.path)
        names = pf.schema_arrow.names
        missing = [c for c in REQUIRED if c not in names]
        if missing:
            raise TraceFormatError(
                source.path, None, f"Parquet file lacks canonical columns {missing}; map them with --mapping"
            )
        self.metadata = {"synth": read_meta(pf.schema_arrow)} if read_meta(pf.schema_arrow) else {}
        row0 = 1
        for batch in pf.iter_batches(batch_size=BATCH_ROWS):
            df = pl.from_arrow(batch)
            n = df.height
            df = df.with_columns(
                _idx=pl.int_range(0, n, dtype=pl.Int64),
                src_line=pl.col("src_line") if "src_line" in df.columns else pl.int_range(row0, row0 + n, dtype=pl.Int64),
                latency_ns=pl.col("latency_ns") if "latency_ns" in df.columns else pl.lit(None, pl.Int64),
            )
            op_text = pl.col("op").cast(pl.String)
            df = df.with_columns(
                ts_raw_ns=pl.col("ts_ns").cast(pl.Int64, strict=False),
                volume=pl.col("volume").cast(pl.String),
                op=op_text.cast(OP_DTYPE, strict=False),
                offset=pl.col("offset").cast(pl.Int64, strict=False),
                size=pl.col("size").cast(pl.Int64, strict=False),
                _reason=pl.when(op_text.is_not_null() & op_text.cast(OP_DTYPE, strict=False).is_null())
                .then(pl.format("unknown op '{}'", op_text))
                .otherwise(pl.lit(None, pl.String)),
            )
            rows = df

            def raw_of(idx: np.ndarray, rows=rows) -> list[str]:
                sub = rows[idx.tolist()].select(REQUIRED)
                return [json.dumps(r, default=str) for r in sub.iter_rows(named=True)]

            yield self.finish(df, raw_of)
            row0 += n
