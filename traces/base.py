"""The reader interface shared by every block-trace format.

A reader turns a :class:`~traces.source.Source` into :class:`ReadBatch` s: accepted rows in the
canonical columns (with the timestamp still on the format's own clock, ``ts_raw_ns``) and
rejected rows with their line number, raw text and reason. Row-level checks that are the same
for every format (size > 0, offset >= 0, capacity, time order per volume) live here, in Polars,
so that every reader routes bad rows the same way.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import polars as pl

from schemas.trace import OP_DTYPE, READ_SCHEMA, REJECT_SCHEMA
from traces.source import Source

INT32_MAX = 2**31 - 1

ORDER_POLICIES = ("sort", "reject")


@dataclass
class ReadBatch:
    """One block of a file as a reader parsed it: accepted rows (``READ_SCHEMA``), rejects, skipped lines."""

    rows: pl.DataFrame
    rejects: pl.DataFrame
    skipped: Counter = field(default_factory=Counter)
    out_of_order: int = 0

    @property
    def n_read(self) -> int:
        return self.rows.height + self.rejects.height


class TraceReader(ABC):
    """Base of every block-trace reader.

    Subclasses set ``name`` and ``description``, implement :meth:`sniff` and :meth:`batches`,
    and pass the per-row results through :meth:`finish` so the shared checks apply.
    ``absolute_clock`` says whether ``ts_raw_ns`` counts from the Unix epoch (then the trace
    has an absolute start time) or from an arbitrary origin.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[str] = "trace"
    absolute_clock: ClassVar[bool] = False
    binary: ClassVar[bool] = False
    #: format-specific options (``-o key=value`` on the CLI) -> one-line help
    option_help: ClassVar[dict[str, str]] = {}

    def __init__(self, order: str = "sort", capacities: dict[str, int] | None = None, **options: Any):
        if order not in ORDER_POLICIES:
            raise ValueError(f"order must be one of {ORDER_POLICIES}, got {order!r}")
        unknown = sorted(set(options) - set(self.option_help))
        if unknown:
            accepted = ", ".join(["order", *self.option_help])
            raise ValueError(
                f"format {self.name!r} has no option {', '.join(map(repr, unknown))}; accepted options: {accepted}"
            )
        if isinstance(capacities, str):
            raise ValueError(
                f"format {self.name!r}: capacities cannot be given as text; use the format's own source "
                "(alibaba: -o device_sizes=PATH, generic: [capacities] in the mapping)"
            )
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
    def batches(self, source: Source) -> Iterator[ReadBatch]:
        """Stream the file as batches of accepted and rejected rows."""

    def identity(self) -> dict[str, Any]:
        """Everything that changes the output table; part of the trace id."""
        ident = {"format": self.name, "order": self.order, **{k: self.options[k] for k in sorted(self.options)}}
        if self.capacities:
            # capacities route rows to rejects, so they are part of what the trace id covers
            text = json.dumps(sorted(self.capacities.items()))
            ident["capacities_sha256"] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return ident

    # -- shared row checks --------------------------------------------------------------
    def row_checks(self) -> list[Check]:
        """The checks every accepted row passes, whatever the format (size, offset, latency,
        capacity): ``(condition, reason text)`` over the canonical columns."""
        cap = self.capacities
        checks: list[Check] = [
            (pl.col("ts_raw_ns").is_null(), pl.lit("timestamp missing or out of range")),
            (pl.col("volume").is_null() | (pl.col("volume") == ""), pl.lit("volume missing")),
            (pl.col("op").is_null(), pl.lit("operation missing or unknown")),
            (pl.col("offset").is_null(), pl.lit("offset missing")),
            (pl.col("size").is_null(), pl.lit("size missing")),
            (pl.col("offset") < 0, pl.format("offset must be >= 0, got {}", pl.col("offset"))),
            # a flush carries no data: size 0 is its only valid size (blkparse empty flushes)
            (
                (pl.col("size") <= 0) & ~((pl.col("op") == "flush").fill_null(False) & (pl.col("size") == 0)),
                pl.format("size must be > 0, got {}", pl.col("size")),
            ),
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
        return checks

    def finish(
        self,
        df: pl.DataFrame,
        raw_of: Callable[[np.ndarray], list[str]],
        skipped: Counter | None = None,
    ) -> ReadBatch:
        """Apply the shared checks to a parsed block and split it into accepted and rejects.

        ``df`` holds the canonical columns (any integer widths), ``src_line``, ``_idx``
        (position in the block, for ``raw_of``) and ``_reason`` (null or the parse failure).
        """
        checks = self.row_checks()
        # Conditions are cheap comparisons over every row; reason texts are built only for the
        # rows that fail, so a clean block costs one boolean pass.
        failed = pl.col("_reason").is_not_null() | pl.any_horizontal(c.fill_null(False) for c, _ in checks)
        df = df.with_columns(_bad=failed)
        bad = df.filter(pl.col("_bad"))
        ok = df.filter(~pl.col("_bad")) if bad.height else df
        if bad.height:
            reason = pl.col("_reason")
            for cond, text in checks:
                reason = pl.when(reason.is_null() & cond.fill_null(False)).then(text).otherwise(reason)
            bad = bad.with_columns(_reason=reason)

        out_of_order = 0
        if ok.height:
            backwards = self._order_check(ok)
            if backwards is not None:
                out_of_order = int(backwards.sum())
                if self.order == "reject" and out_of_order:
                    late = ok.filter(backwards).with_columns(
                        _reason=pl.lit("timestamp goes backwards within its volume")
                    )
                    ok = ok.filter(~backwards)
                    bad = pl.concat([bad, late], how="vertical_relaxed")
                    out_of_order = 0

        rows = ok.select(pl.col(c).cast(t) for c, t in READ_SCHEMA.items())
        rejects = self._rejects(bad, raw_of)
        return ReadBatch(rows, rejects, skipped or Counter(), out_of_order)

    def _order_check(self, ok: pl.DataFrame) -> pl.Series | None:
        """Flag rows whose timestamp is below an earlier one of the same volume (across
        batches); None when nothing goes backwards (the common case, checked cheaply first)."""
        ts = pl.col("ts_raw_ns")
        per_volume = ok.group_by("volume").agg(first=ts.first(), high=ts.max())
        earlier = [self._last_ts.get(v) for v in per_volume["volume"].to_list()]
        monotonic = not ok.select((ts.diff() < 0).any()).item()
        continues = all(e is None or f >= e for e, f in zip(earlier, per_volume["first"].to_list(), strict=True))
        if monotonic and continues:
            for v, hi, e in zip(per_volume["volume"].to_list(), per_volume["high"].to_list(), earlier, strict=True):
                self._last_ts[v] = hi if e is None else max(hi, e)
            return None
        prev = pl.col("volume").replace_strict(self._last_ts, default=None, return_dtype=pl.Int64)
        running = pl.max_horizontal(ts.cum_max().over("volume"), prev.fill_null(ts))
        before = pl.max_horizontal(ts.cum_max().shift(1).over("volume"), prev)
        flags = ok.select(
            backwards=(ts < before).fill_null(False),
            running=running,
            volume=pl.col("volume"),
        )
        last = flags.group_by("volume").agg(pl.col("running").max())
        self._last_ts.update(dict(zip(last["volume"].to_list(), last["running"].to_list(), strict=True)))
        return flags["backwards"]

    @staticmethod
    def _rejects(df: pl.DataFrame, raw_of: Callable[[np.ndarray], list[str]]) -> pl.DataFrame:
        if not df.height:
            return pl.DataFrame(schema=REJECT_SCHEMA)
        df = df.sort("src_line")
        raw = raw_of(df["_idx"].to_numpy())
        return pl.DataFrame(
            {"src_line": df["src_line"], "raw": raw, "reason": df["_reason"]}, schema=REJECT_SCHEMA
        )


Check = tuple[pl.Expr, pl.Expr]
"""A row check as ``(condition, reason text)``: the text is built only when some row fails."""


def op_from_codes(field: str, codes: dict[str, str], case_sensitive: bool = False) -> tuple[pl.Expr, Check]:
    """Map a text op field to the canonical op, and a reason for values outside ``codes``.

    Matching is by equality against each code (and, unless ``case_sensitive``, its lower,
    upper and capitalized spellings): a chain of comparisons is ~10x faster in Polars than
    normalizing every string first. The reason refers to the mapped column, so compute it as
    ``op`` (``df.with_columns(op=op)``) before ``with_reason(df, reason)``.
    """
    col = pl.col(field).cast(pl.String)
    variants: dict[str, str] = {}
    for k, v in codes.items():
        spellings = [k] if case_sensitive else [k, k.lower(), k.upper(), k.capitalize()]
        for sp in spellings:
            variants.setdefault(sp, v)
    op = None
    for k, v in variants.items():
        hit = col == k
        op = pl.when(hit).then(pl.lit(v, OP_DTYPE)) if op is None else op.when(hit).then(pl.lit(v, OP_DTYPE))
    op = op.otherwise(pl.lit(None, OP_DTYPE))
    expected = " or ".join(sorted(set(codes)))
    unknown = pl.col("op").is_null() & col.is_not_null()
    return op, (unknown, pl.format(f"unknown {field} '{{}}' (expected {expected})", col.str.slice(0, 20)))


def with_reason(df: pl.DataFrame, *reasons: pl.Expr | Check) -> pl.DataFrame:
    """Keep the first reason already set; otherwise take the first of ``reasons`` that applies
    (each a ``pl.when(...).then(...)`` without otherwise, or a :data:`Check`).

    When every reason is a Check, the conditions are evaluated first and a block where none
    holds returns at once: formatting reason strings for every row costs more than parsing.
    """
    if reasons and all(isinstance(r, tuple) for r in reasons):
        if not df.select(pl.any_horizontal(c.fill_null(False) for c, _ in reasons).any()).item():
            return df
    expr = pl.col("_reason")
    for r in reasons:
        e = pl.when(r[0].fill_null(False)).then(r[1]) if isinstance(r, tuple) else r
        expr = pl.coalesce(expr, e.otherwise(pl.lit(None, pl.String)))
    return df.with_columns(_reason=expr)


def scaled_int(field: str, factor: int, what: str) -> tuple[pl.Expr, Check]:
    """Integer ``field`` times ``factor`` (e.g. sectors -> bytes) as Int64, and a reason for
    values whose product does not fit in int64 (Polars integer products wrap silently)."""
    col = pl.col(field).cast(pl.Int64)
    limit = (2**63 - 1) // factor
    fits = col.abs() <= limit
    value = pl.when(fits).then(col.clip(-limit, limit) * factor)
    return value, (col.is_not_null() & ~fits, pl.format(f"{what} {{}} is out of range", col))


def decimal_scaled(field: str, scale: int, what: str) -> tuple[pl.Expr, Check]:
    """Decimal text (e.g. seconds ``'0.000123'``, ``'1.5e-3'``) times ``10**scale`` as an exact
    Int64 (e.g. nanoseconds for scale 9), and a reason for text that is not a number or is out
    of range.

    The text is cast to ``Decimal(38, scale)`` (no binary floating point anywhere, so a trace's
    microseconds stay exact); digits beyond ``scale`` are rounded half to even.
    """
    text = pl.col(field).cast(pl.String).str.strip_chars()
    dec = text.cast(pl.Decimal(38, scale), strict=False)
    factor = 10**scale
    lim = pl.lit(Decimal(2**63 - 1) / factor, pl.Decimal(38, scale))
    fits = dec.abs() <= lim
    value = pl.when(fits).then((dec.clip(-lim, lim) * factor).cast(pl.Int64, strict=False))
    not_number = text.is_not_null() & dec.is_null()
    text_reason = (
        pl.when(not_number)
        .then(pl.format(f"field '{field}' is not a number: '{{}}'", text.str.slice(0, 40)))
        .otherwise(pl.format(f"{what} {{}} is out of range", text.str.slice(0, 40)))
    )
    return value, (not_number | (dec.is_not_null() & ~fits), text_reason)
