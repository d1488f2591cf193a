"""Engine for line-oriented text traces (CSV or whitespace separated).

Each block of lines is parsed twice at most: first by Polars' multi-threaded CSV parser with
the format's typed schema (the fast path, used for clean data), and, only for blocks or lines
it cannot take, by a vectorized line path (Arrow string array of the lines, split and cast in
Polars) that says exactly which field of which line is wrong. Both paths give the same typed
frame, so a reader only describes its fields and how they map to the canonical columns.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa

from traces.base import Check, ReadBatch, TraceReader, with_reason
from traces.source import LineBlock, Source

_TYPE_WORD = {pl.Int64: "an integer", pl.Float64: "a number", pl.String: "text"}
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class Field:
    name: str
    dtype: type[pl.DataType] = pl.Int64


def _lines_series(block: LineBlock, idx: np.ndarray | None) -> tuple[pl.Series, np.ndarray]:
    """The block's lines (or a subset) as a Polars String series, without a Python loop."""
    starts, ends = block.starts, block.ends
    if idx is not None:
        starts, ends = starts[idx], ends[idx]
    else:
        idx = np.arange(block.n_lines, dtype=np.int64)
    if len(starts) and np.all(starts[1:] == ends[:-1] + 1):
        offsets = np.append(starts, ends[-1]).astype(np.int64) - starts[0]
        data = block.data[int(starts[0]) : int(ends[-1])]
        arr = pa.Array.from_buffers(pa.large_binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    else:
        arr = pa.array([block.data[int(s) : int(e)] for s, e in zip(starts, ends, strict=True)], pa.large_binary())
    try:
        text = arr.cast(pa.large_string())
        text.validate(full=True)
        invalid = None
    except (pa.ArrowInvalid, pa.ArrowException):
        # Arrow rejects the whole array on the first bad byte: find the bad lines in Python
        # (only for blocks that contain non-UTF-8 bytes, which are rare and then rejected).
        decoded, invalid = [], []
        for b in arr.to_pylist():
            try:
                decoded.append(b.decode("utf-8"))
                invalid.append(False)
            except UnicodeDecodeError:
                decoded.append("")
                invalid.append(True)
        text = pa.array(decoded, pa.large_string())
        invalid = np.array(invalid)
    # contiguous lines are sliced newline to newline: drop the "\n" (and a CRLF's "\r")
    s = pl.Series("line", text).str.strip_chars_end("\r\n")
    if invalid is not None:
        s = pl.select(pl.when(pl.Series(invalid)).then(pl.lit("\x00INVALID")).otherwise(s)).to_series()
    return s, idx


class DelimitedReader(TraceReader):
    """A text trace with one request per line in fixed fields."""

    fields: ClassVar[tuple[Field, ...]]
    #: one-character separator, or None for runs of whitespace
    separator: ClassVar[str | None] = ","
    #: fields after this many may be absent (e.g. FIU's optional md5)
    required_fields: ClassVar[int | None] = None
    #: extra trailing fields are allowed (kept out of the table)
    allow_extra_fields: ClassVar[bool] = False
    #: a first line of names (see is_header) is a header and skipped
    may_have_header: ClassVar[bool] = True
    comment_prefix: ClassVar[str | None] = "#"
    #: (text field, integer field) that name the volume together: the streaming ingest then
    #: looks each row's volume up by a number made of the two instead of building its name
    volume_key: ClassVar[tuple[str, str] | None] = None
    #: regex the first data line must match for auto-detection
    sniff_pattern: ClassVar[str]

    block_bytes: int = 48 << 20

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        lines = [ln for ln in head.decode("utf-8", errors="replace").splitlines()[:20] if ln.strip()]
        if not lines:
            return False
        if cls.may_have_header and not re.match(r"\s*[-+]?\d", lines[0]):
            lines = lines[1:]
        data = [ln.rstrip("\r") for ln in lines[:-1] or lines]  # the last line of a head may be cut
        pat = re.compile(cls.sniff_pattern)
        hits = sum(bool(pat.match(ln)) for ln in data[:10])
        return hits > 0 and hits * 2 > len(data[:10])

    # -- to be provided by each format --------------------------------------------------
    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        """Map the typed fields to the canonical columns (ts_raw_ns, volume, op, offset,
        size, latency_ns); may set ``_reason`` for values that are well-typed but invalid.
        By default from :meth:`canonical_exprs`; formats that need more override this."""
        exprs, checks = self.canonical_exprs()
        return with_reason(df.with_columns(**exprs), *checks)

    def canonical_exprs(self) -> tuple[dict[str, pl.Expr], list[Check]] | None:
        """The canonical columns as expressions of the typed fields, and the format's own
        checks on them. A format that gives them can be ingested by the Polars streaming path
        (``pipelines.ingest_streaming``); None: only block by block, through :meth:`canonical`."""
        return None

    def is_header(self, first_line: str) -> bool:
        """Whether the file's first line is a header (skipped and counted, not a record): text
        whose fields are all names. A first line with a number in any field is a bad record and
        one with binary bytes is not text (``raw_lines`` shows them as ``\\xNN``): both are read
        as records, so their errors point at line 1 instead of the line after a fake header."""
        line = first_line.rstrip("\r")
        if not self.may_have_header or not line.strip() or "\\x" in line:
            return False
        if not line.replace("\t", " ").isprintable():
            return False
        parts = line.split() if self.separator is None else line.split(self.separator)
        return not any(_NUMBER.match(p.strip()) for p in parts)

    def skip_line(self) -> pl.Expr | None:
        """Lines that are not records and are counted, not rejected (beyond blank/comment)."""
        return None

    # -- engine -------------------------------------------------------------------------
    @property
    def _n_max(self) -> int:
        return len(self.fields)

    @property
    def _n_min(self) -> int:
        return self.required_fields if self.required_fields is not None else len(self.fields)

    def batches(self, source: Source) -> Iterator[ReadBatch]:
        first = True
        for block in source.iter_line_blocks(self.block_bytes):
            skipped: Counter = Counter()
            start = 0
            if first and block.n_lines and self.is_header(block.raw_lines(np.array([0]))[0]):
                skipped["header"] += 1
                start = 1
            first = False
            df = self._parse(block, start, skipped)
            df = df.with_columns(src_line=pl.col("_idx") + block.first_line)
            df = self.canonical(df)
            yield self.finish(df, block.raw_lines, skipped)

    def _parse(self, block: LineBlock, start: int, skipped: Counter) -> pl.DataFrame:
        fast = self._fast(block, start)
        if fast is None:
            return self._slow(block, np.arange(start, block.n_lines, dtype=np.int64), skipped)
        required = [f.name for f in self.fields[: self._n_min]]
        incomplete = fast.select(pl.any_horizontal(pl.col(required).is_null())).to_series()
        if not incomplete.any():
            return fast
        bad_idx = fast.filter(incomplete)["_idx"].to_numpy()
        good = fast.filter(~incomplete)
        slow = self._slow(block, bad_idx, skipped)
        return pl.concat([good, slow], how="vertical_relaxed").sort("_idx")

    def _typed_schema(self) -> dict[str, pl.DataType]:
        return {f.name: f.dtype for f in self.fields}

    def _fast(self, block: LineBlock, start: int) -> pl.DataFrame | None:
        n = block.n_lines - start
        if n <= 0 or b"\x00" in block.data:
            # the CSV parser keeps NUL bytes inside text fields: the exact path rejects such lines
            return None
        try:
            # whitespace formats: single spaces parse here; anything else (runs of blanks, tabs,
            # leading blanks) fails or leaves required fields null and takes the exact path
            df = pl.read_csv(
                block.data,
                has_header=False,
                skip_rows=start,
                separator=self.separator if self.separator is not None else " ",
                schema=self._typed_schema(),
                quote_char=None,
                comment_prefix=None,
                truncate_ragged_lines=self.allow_extra_fields,
            )
        except Exception:  # noqa: BLE001 - any parse problem sends the block to the exact path
            return None
        if df.height != n:
            return None
        return df.with_columns(
            _idx=pl.int_range(start, start + n, dtype=pl.Int64), _reason=pl.lit(None, pl.String)
        )

    def _slow(self, block: LineBlock, idx: np.ndarray, skipped: Counter) -> pl.DataFrame:
        lines, idx = _lines_series(block, idx)
        df = pl.DataFrame({"_idx": idx, "line": lines})
        stripped = pl.col("line").str.strip_chars()
        is_blank = stripped == ""
        is_comment = stripped.str.starts_with(self.comment_prefix) if self.comment_prefix else pl.lit(False)
        extra_skip = self.skip_line()
        kinds = df.select(
            blank=is_blank,
            comment=is_comment & ~is_blank,
            other=(extra_skip if extra_skip is not None else pl.lit(False)) & ~is_blank & ~is_comment,
        )
        for k in ("blank", "comment", "other"):
            c = int(kinds[k].sum())
            if c:
                skipped[k if k != "other" else "non-record"] += c
        keep = ~(kinds["blank"] | kinds["comment"] | kinds["other"])
        df = df.filter(keep)
        if self.separator is None:
            parts = stripped.str.replace_all(r"\s+", " ").str.split(" ")
        else:
            parts = pl.col("line").str.split(self.separator)
        df = df.with_columns(_parts=parts).with_columns(_n=pl.col("_parts").list.len())
        cols = []
        reason = (
            # the invalid-UTF-8 marker itself holds a NUL: test it first
            pl.when(pl.col("line") == "\x00INVALID")
            .then(pl.lit("line is not valid UTF-8 text"))
            .when(pl.col("line").str.contains("\x00", literal=True))
            .then(pl.lit("line contains NUL bytes"))
            .when((pl.col("_n") < self._n_min) | ((pl.col("_n") > self._n_max) & (not self.allow_extra_fields)))
            .then(
                pl.format(
                    "expected {} fields, found {}",
                    pl.lit(
                        str(self._n_max) if self._n_min == self._n_max else f"{self._n_min} to {self._n_max}"
                    ),
                    pl.col("_n"),
                )
            )
        )
        for i, f in enumerate(self.fields):
            raw = pl.col("_parts").list.get(i, null_on_oob=True).str.strip_chars()
            typed = raw if f.dtype == pl.String else raw.cast(f.dtype, strict=False)
            cols.append(typed.alias(f.name))
            if f.dtype != pl.String:
                reason = reason.when(raw.is_not_null() & typed.is_null()).then(
                    pl.format(f"field '{f.name}' is not {_TYPE_WORD[f.dtype]}: '{{}}'", raw.str.slice(0, 40))
                )
        reason = reason.otherwise(pl.lit(None, pl.String))
        return df.select(*cols, pl.col("_idx"), reason.alias("_reason"))
