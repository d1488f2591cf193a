"""The reader interface shared by every block-trace format.

A reader turns a :class:`~traces.source.Source` into :class:`Chunk` s: accepted rows in the
canonical columns (with the timestamp still on the format's own clock, ``ts_raw_ns``) and
rejected rows with their line number, raw text and reason. Row-level checks that are the same
for every format (size > 0, offset >= 0, capacity, time order per volume) live here, in Polars,
so that every reader routes bad rows the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl

from schemas.trace import OP_DTYPE, REJECT_SCHEMA
from traces.source import LineBlock, Source

INT32_MAX = 2**31 - 1

#: Columns of an accepted chunk, before the pipeline rebases time to the trace start.
CHUNK_SCHEMA: dict[str, pl.DataType] = {
    "ts_raw_ns": pl.Int64,
    "volume": pl.String,
    "op": OP_DTYPE,
    "offset": pl.Int64,
    "size": pl.Int32,
    "latency_ns": pl.Int64,
    "src_line": pl.Int64,
}

ORDER_POLICIES = ("sort", "reject")


@dataclass
class Chunk:
    rows: pl.DataFrame
    rejects: pl.DataFrame
    skipped: Counter = field(default_factory=Counter)
    out_of_order: int = 0

    @property
    def n_read(self) -> int:
        return self.rows.height + self.rejects.height


class TraceReader(ABC):
    """Base of every block-trace reader.

    Subclasses set ``name`` and ``description``, implement :meth:`sniff` and :meth:`chunks`,
    and pass the per-row results through :meth:`finish` so the shared checks apply.
    ``absolute_clock`` says whether ``ts_raw_ns`` counts from the Unix epoch (then the trace
    has an absolute start time) or from an arbitrary origin.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[str] = "trace"
    absolute_clock: ClassVar[bool] = False
    binary: ClassVar[bool] = False

    def __init__(self, order: str = "sort", capacities: dict[str, int] | None = None, **options: Any):
        if order not in ORDER_POLICIES:
            raise ValueError(f"order must be one of {ORDER_POLICIES}, got {order!r}")
        self.order = order
        self.capacities = dict(capacities or {})
        self.options = options
        #: facts the format carries beyond the rows (e.g. a synthetic workload's parameters)
        self.metadata: dict[str, Any] = {}
        self._last_ts: dict[str, int] = {}

    # -- what a format implements -------------------------------------------------------
    @classmethod
    @abstractmethod
    def sniff(cls, head: bytes) -> bool:
        """True when the first decompressed bytes of a file look like this format."""

    @abstractmethod
    def chunks(self, source: Source) -> Iterator[Chunk]:
        """Stream the file as chunks of accepted and rejected rows."""

    def identity(self) -> dict[str, Any]:
        """Everything that changes the output table; part of the trace id."""
        return {"format": self.name, "order": self.order, **{k: self.options[k] for k in sorted(self.options)}}

    # -- shared row checks --------------------------------------------------------------
    def finish(
        self,
        df: pl.DataFrame,
        raw_of: Callable[[np.ndarray], list[str]],
        skipped: Counter | None = None,
    ) -> Chunk:
        """Apply the shared checks to a parsed block and split it into accepted and rejects.

        ``df`` holds the canonical columns (any integer widths), ``src_line``, ``_idx``
        (position in the block, for ``raw_of``) and ``_reason`` (null or the parse failure).
        """
        cap = self.capacities
        checks = [
            (pl.col("ts_raw_ns").is_null(), pl.lit("timestamp missing or out of range")),
            (pl.col("volume").is_null() | (pl.col("volume") == ""), pl.lit("volume missing")),
            (pl.col("op").is_null(), pl.lit("operation missing or unknown")),
            (pl.col("offset").is_null(), pl.lit("offset missing")),
            (pl.col("size").is_null(), pl.lit("size missing")),
            (pl.col("offset") < 0, pl.format("offset must be >= 0, got {}", pl.col("offset"))),
            (pl.col("size") <= 0, pl.format("size must be > 0, got {}", pl.col("size"))),
            (pl.col("size") > INT32_MAX, pl.format("size {} bytes exceeds 2 GiB - 1", pl.col("size"))),
            (pl.col("latency_ns") < 0, pl.format("latency must be >= 0, got {} ns", pl.col("latency_ns"))),
        ]
        if cap:
            cap_expr = pl.col("volume").replace_strict(cap, default=None, return_dtype=pl.Int64)
            checks.append(
                (
                    (pl.col("offset") + pl.col("size")) > cap_expr,
                    pl.format(
                        "request end {} is beyond the volume capacity {} bytes",
                        pl.col("offset") + pl.col("size"),
                        cap_expr,
                    ),
                )
            )
        reason = pl.col("_reason")
        for cond, text in checks:
            reason = pl.when(reason.is_null() & cond.fill_null(False)).then(text).otherwise(reason)
        df = df.with_columns(_reason=reason)

        out_of_order = 0
        ok = df.filter(pl.col("_reason").is_null())
        if ok.height:
            ok, backwards = self._order_check(ok)
            out_of_order = int(backwards.sum())
            if self.order == "reject" and out_of_order:
                bad = ok.filter(backwards).with_columns(_reason=pl.lit("timestamp goes backwards within its volume"))
                ok = ok.filter(~backwards)
                df = pl.concat([df.filter(pl.col("_reason").is_not_null()), bad], how="vertical_relaxed")
                out_of_order = 0
            else:
                df = df.filter(pl.col("_reason").is_not_null())
        else:
            df = df.filter(pl.col("_reason").is_not_null())

        rows = ok.select(pl.col(c).cast(t) for c, t in CHUNK_SCHEMA.items())
        rejects = self._rejects(df, raw_of)
        return Chunk(rows, rejects, skipped or Counter(), out_of_order)

    def _order_check(self, ok: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
        """Flag rows whose timestamp is below an earlier one of the same volume (across chunks)."""
        prev = pl.col("volume").replace_strict(self._last_ts, default=None, return_dtype=pl.Int64)
        ts = pl.col("ts_raw_ns")
        running = pl.max_horizontal(ts.cum_max().over("volume"), prev.fill_null(ts))
        before = pl.max_horizontal(ts.cum_max().shift(1).over("volume"), prev)
        flags = ok.select(
            backwards=(ts < before).fill_null(False),
            running=running,
            volume=pl.col("volume"),
        )
        last = flags.group_by("volume").agg(pl.col("running").max())
        self._last_ts.update(dict(zip(last["volume"].to_list(), last["running"].to_list(), strict=True)))
        return ok, flags["backwards"]

    @staticmethod
    def _rejects(df: pl.DataFrame, raw_of: Callable[[np.ndarray], list[str]]) -> pl.DataFrame:
        if not df.height:
            return pl.DataFrame(schema=REJECT_SCHEMA)
        df = df.sort("src_line")
        raw = raw_of(df["_idx"].to_numpy())
        return pl.DataFrame(
            {"src_line": df["src_line"], "raw": raw, "reason": df["_reason"]}, schema=REJECT_SCHEMA
        )


def raw_from_block(block: LineBlock) -> Callable[[np.ndarray], list[str]]:
    return block.raw_lines


def op_from_codes(field: str, codes: dict[str, str], case_sensitive: bool = False) -> tuple[pl.Expr, pl.Expr]:
    """Map a text op field to the canonical op, and a reason for values outside ``codes``."""
    col = pl.col(field).cast(pl.String).str.strip_chars()
    key = col if case_sensitive else col.str.to_lowercase()
    table = codes if case_sensitive else {k.lower(): v for k, v in codes.items()}
    op = key.replace_strict(table, default=None, return_dtype=pl.String).cast(OP_DTYPE)
    expected = " or ".join(sorted(set(codes)))
    reason = pl.when(op.is_null() & col.is_not_null()).then(
        pl.format(f"unknown {field} '{{}}' (expected {expected})", col.str.slice(0, 20))
    )
    return op, reason


def with_reason(df: pl.DataFrame, *reasons: pl.Expr) -> pl.DataFrame:
    """Keep the first reason already set; otherwise take the first of ``reasons`` that applies
    (each a ``pl.when(...).then(...)`` without otherwise)."""
    expr = pl.col("_reason")
    for r in reasons:
        expr = pl.coalesce(expr, r.otherwise(pl.lit(None, pl.String)))
    return df.with_columns(_reason=expr)
