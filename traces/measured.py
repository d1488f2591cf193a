"""The reader interface of measured performance logs (iostat, vxstat, vxdmpadm, fio, IOMeter).

A measured log is not a request trace: one file fills several tables (iostat: devices and
CPU; fio: jobs, percentiles, bins, ...), declared in :mod:`schemas.measured`. A reader
streams the file as :class:`MeasuredBatch` s holding, per table, accepted rows and rejected
lines (line number, raw text, reason). Lines that are not data (blank lines, banners,
headers) are counted as skipped, never silently lost. Facts about the whole file (tool
version, host, assumptions the reader had to make) go to ``metadata`` and ``warnings``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from schemas.measured import conform
from schemas.trace import REJECT_SCHEMA
from traces.delimited import _lines_series
from traces.source import LineBlock, Source

TRUE_WORDS = {"1", "true", "yes", "on", "y"}
FALSE_WORDS = {"0", "false", "no", "off", "n"}


@dataclass
class MeasuredBatch:
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    rejects: dict[str, pl.DataFrame] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)

    def add(self, table: str, rows: pl.DataFrame | None = None, rejects: pl.DataFrame | None = None) -> None:
        if rows is not None and rows.height:
            rows = conform(table, rows)
            self.tables[table] = pl.concat([self.tables[table], rows]) if table in self.tables else rows
        if rejects is not None and rejects.height:
            rejects = rejects.select(pl.col(c).cast(t) for c, t in REJECT_SCHEMA.items())
            self.rejects[table] = pl.concat([self.rejects[table], rejects]) if table in self.rejects else rejects


class MeasuredReader(ABC):
    """Base of every measured-log reader. Options arrive as strings from the CLI
    (``--option key=value``) or as Python values from code; the ``opt_*`` helpers take both."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[str] = "measured"
    binary: ClassVar[bool] = False
    auto_detect: ClassVar[bool] = True
    #: tables this reader can fill (the first is its main table)
    tables: ClassVar[tuple[str, ...]]
    #: options this reader understands (``-o key=value``) -> one-line help; anything else is an
    #: error, never silently ignored (the same convention as traces.base.TraceReader)
    option_help: ClassVar[dict[str, str]] = {}

    def __init__(self, order: str = "sort", **options: Any):
        unknown = sorted(set(options) - set(self.option_help))
        if unknown:
            known = ", ".join(self.option_help) or "none"
            raise ValueError(f"{self.name} reader: unknown option(s) {', '.join(unknown)} (known: {known})")
        self.options = {k: v for k, v in options.items() if v is not None}
        self.metadata: dict[str, Any] = {"tool": self.tool}
        self.warnings: list[str] = []

    tool: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def sniff(cls, head: bytes) -> bool:
        """True when the first decompressed bytes of a file look like this format."""

    @abstractmethod
    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        """Stream the file as batches of accepted and rejected rows per table."""

    def identity(self) -> dict[str, Any]:
        """Everything that changes the output tables; part of the dataset id."""
        return {"format": self.name, **{k: str(self.options[k]) for k in sorted(self.options)}}

    # -- option helpers -----------------------------------------------------------------
    def opt_str(self, key: str, default: str | None = None) -> str | None:
        v = self.options.get(key, default)
        return None if v is None else str(v)

    def opt_float(self, key: str, default: float | None = None) -> float | None:
        v = self.options.get(key)
        if v is None:
            return default
        try:
            return float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name} reader: option {key} must be a number, got {v!r}") from None

    def opt_bool(self, key: str, default: bool | None = None) -> bool | None:
        v = self.options.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        s = str(v).strip().lower()
        if s in TRUE_WORDS:
            return True
        if s in FALSE_WORDS:
            return False
        raise ValueError(f"{self.name} reader: option {key} must be true or false, got {v!r}")

    def opt_choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        v = str(self.options.get(key, default)).strip().lower()
        if v not in choices:
            raise ValueError(f"{self.name} reader: option {key} must be one of {', '.join(choices)}, got {v!r}")
        return v

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)


def reject_frame(src_line, raw, reason) -> pl.DataFrame:
    """Rejects in the shared (src_line, raw, reason) schema from Series, lists or scalars."""
    n = len(src_line)
    reason = reason if not isinstance(reason, str) else [reason] * n
    return pl.DataFrame({"src_line": src_line, "raw": raw, "reason": reason}, schema=REJECT_SCHEMA)


def lines_frame(block: LineBlock) -> pl.DataFrame:
    """A block's lines as a frame: ``line`` (CR stripped; non-UTF-8 lines marked) and ``src_line``."""
    lines, idx = _lines_series(block, None)
    return pl.DataFrame({"line": lines, "src_line": idx + block.first_line})


def iter_paragraph_blocks(source: Source, block_bytes: int = 8 << 20) -> Iterator[LineBlock]:
    """Line blocks that end after a blank line, so a report (a paragraph of a text log) is
    never split between blocks unless it alone is larger than a block."""
    carry = b""
    carry_line = 1
    for block in source.iter_line_blocks(block_bytes):
        data = carry + block.data if carry else block.data
        first = carry_line if carry else block.first_line
        cut = max(data.rfind(b"\n\n") + 2, data.rfind(b"\n\r\n") + 3)
        if cut <= 2:  # no blank line in the block: hand it over whole
            carry = b""
            yield LineBlock(data, first)
            continue
        head, carry = data[:cut], data[cut:]
        carry_line = first + head.count(b"\n")
        yield LineBlock(head, first)
    if carry:
        yield LineBlock(carry, carry_line)


def read_all(reader: MeasuredReader, path) -> MeasuredBatch:
    """Every batch of a file merged into one (for small files, tests and interactive use)."""
    out = MeasuredBatch()
    for batch in reader.batches(Source(path)):
        for t, df in batch.tables.items():
            out.add(t, rows=df)
        for t, df in batch.rejects.items():
            out.add(t, rejects=df)
        out.skipped.update(batch.skipped)
    return out
