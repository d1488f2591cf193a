"""The Polars streaming path of ingest: one ``scan_csv`` -> canonical columns -> row checks ->
Parquet parts per volume, for clean CSV traces.

Most real trace files have no bad line. For them one Polars streaming query (multi-threaded
parse, no Python per block) writes the same dataset the block-by-block path would, while a
second thread hashes the file and counts its lines. The result is kept only when every line of
the file became an accepted row; anything else (a line that does not parse, a row failing a
check, a blank or comment line, NUL bytes, compressed input, time going backwards under
``--order reject``) is left to the exact block path (``pipelines.ingest``), which reads the file
again and says which line is wrong and why.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.catalog import volume_dir
from schemas.trace import POLARS_SCHEMA
from schemas.trace_suite import row_counts
from traces.base import TraceReader
from traces.delimited import DelimitedReader
from traces.source import LineBlock, LineCount, Source

#: a ``scan_csv`` failure means a line the typed parser cannot take: the block path names it
PARSE_ERRORS = (pl.exceptions.PolarsError, ValueError, OSError)


@dataclass
class Streamed:
    """What the streaming path wrote: rows read (every data line), the time origin, the
    lines skipped (a header), and :func:`schemas.trace_suite.row_counts` of the rows written."""

    rows_read: int
    origin_ns: int
    skipped: dict[str, int]
    row_counts: tuple[pl.DataFrame, pl.DataFrame]


def _eligible(source: Source, reader: TraceReader) -> dict | None:
    """The format's canonical expressions and checks when the file can take this path."""
    if not isinstance(reader, DelimitedReader) or reader.separator is None or source.compression != "none":
        return None
    exprs = reader.canonical_exprs()
    if exprs is None:
        return None
    return {"exprs": exprs[0], "checks": [c for c, _ in exprs[1]] + [c for c, _ in reader.row_checks()]}


def _has_header(source: Source, reader: DelimitedReader) -> bool:
    head = source.head()
    cut = head.find(b"\n")
    first = LineBlock(head if cut < 0 else head[: cut + 1], 1)
    return first.n_lines > 0 and reader.is_header(first.raw_lines(np.array([0]))[0])


def part_path(root: Path, max_rows: int):
    """``file_path_provider`` naming parts as the block path does: ``volume=<v>/part-NNNNN.parquet``."""

    def provide(args) -> Path:
        volume = str(args.partition_keys["volume"][0])
        return volume_dir(root, volume) / f"part-{args.index_in_partition:05d}.parquet"

    return provide


#: bytes of the file's head whose volumes the main query looks up instead of naming per row
HEAD_BYTES = 4 << 20
#: at most this many names in the lookup table (texts x numbers)
MAX_NAMES = 1 << 16
#: the volume of a row the lookup does not know: no line of a file can hold a newline
NOT_IN_HEAD = "\n"


@dataclass
class VolumeLookup:
    """Volume names of the file's head as a table: row ``i * numbers + n`` names the volume of
    text ``texts[i]`` and number ``n``. Looking a row's volume up there costs ~0.8 CPU-s per GB
    less than building its name from strings."""

    texts: list[str]
    numbers: int
    names: pl.Series

    def expr(self, text: str, number: str) -> pl.Expr:
        """Each row's volume (:data:`NOT_IN_HEAD` for a text or number the head did not show)."""
        n = pl.col(number)
        code = pl.col(text).cast(pl.Enum(self.texts), strict=False).to_physical().cast(pl.Int64)
        found = pl.lit(self.names).gather(pl.when(n.is_between(0, self.numbers - 1)).then(code * self.numbers + n))
        return found.fill_null(NOT_IN_HEAD)


def _volume_lookup(source: Source, reader: DelimitedReader, header: int, name: pl.Expr) -> VolumeLookup | None:
    """The :class:`VolumeLookup` of the file's head, named by the format's own volume
    expression ``name`` (None: the format has no volume key, or the head is not plain)."""
    if reader.volume_key is None:
        return None
    text, number = reader.volume_key
    head = source.head(HEAD_BYTES)
    head = head[: head.rfind(b"\n") + 1]
    try:
        df = pl.read_csv(head, has_header=False, skip_rows=header, schema=reader._typed_schema(), quote_char=None,
                         comment_prefix=None, truncate_ragged_lines=reader.allow_extra_fields)
    except PARSE_ERRORS:
        return None
    texts = df[text].drop_nulls().unique().sort().to_list()
    numbers = int(df[number].max() or 0) + 1
    if not texts or not 0 < numbers <= MAX_NAMES // len(texts):
        return None
    table = pl.DataFrame({text: texts}).join(pl.DataFrame({number: range(numbers)}, schema={number: pl.Int64}),
                                             how="cross", maintain_order="left_right")
    names = table.select(name.cast(pl.Categorical)).to_series()
    return VolumeLookup(texts, numbers, names)


def _write(tmp: Path, source: Source, reader: DelimitedReader, plan: dict, header: int, max_rows_per_part: int,
           compression: str, compression_level: int | None, lookup: VolumeLookup | None):
    """Run the streaming query: (time origin, row counts), or None when there is no row or a
    line the parser cannot take. With ``lookup`` the volume of a row whose key is not in it
    is :data:`NOT_IN_HEAD` (its rows show up under that name in the counts)."""
    exprs = dict(plan["exprs"])
    if lookup is not None:
        exprs["volume"] = lookup.expr(*reader.volume_key)
    lf = pl.scan_csv(
        source.path, has_header=False, skip_rows=header, schema=reader._typed_schema(), quote_char=None,
        comment_prefix=None, truncate_ragged_lines=reader.allow_extra_fields,
        row_index_name="src_line", row_index_offset=1 + header,
    )
    required = [f.name for f in reader.fields[: reader._n_min]]
    rows = lf.with_columns(**exprs).filter(
        ~pl.any_horizontal(*(pl.col(c).is_null() for c in required), *(c.fill_null(False) for c in plan["checks"]))
    )
    try:
        first = rows.select("ts_raw_ns").head(1).collect()
        if not first.height:
            return None
        origin = int(first.item())
        canonical = rows.select(
            (pl.col("ts_raw_ns") - origin).alias("ts_ns"),
            *(pl.col(c).cast(t, strict=False) for c, t in POLARS_SCHEMA.items() if c != "ts_ns"),
        )
        sink = canonical.sink_parquet(
            pl.PartitionBy(tmp, key="volume", include_key=True, max_rows_per_file=max_rows_per_part,
                           file_path_provider=part_path(tmp, max_rows_per_part)),
            compression=compression, compression_level=compression_level, mkdir=True, lazy=True,
        )
        # one scan feeds both: Polars shares the common plan of the queries it collects together
        return origin, tuple(pl.collect_all([sink, *row_counts(canonical, reader.capacities)])[1:])
    except PARSE_ERRORS:
        return None


def stream_csv(tmp: Path, source: Source, reader: TraceReader, max_rows_per_part: int, compression: str,
               compression_level: int | None = None) -> Streamed | None:
    """Write the accepted rows of ``source`` under ``tmp`` in one streaming query; None when
    the file must take the block path (nothing is left under ``tmp`` then). A volume the head
    of the file did not show costs a second query that names every row's volume itself."""
    plan = _eligible(source, reader)
    if plan is None:
        return None
    header = int(_has_header(source, reader))
    counted: dict[str, LineCount | BaseException] = {}

    def count() -> None:
        try:
            counted["lines"] = source.count_lines()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            counted["lines"] = e

    hasher = threading.Thread(target=count, name="tiercast-sha256", daemon=True)
    hasher.start()
    lookup = _volume_lookup(source, reader, header, plan["exprs"]["volume"])
    args = (tmp, source, reader, plan, header, max_rows_per_part, compression, compression_level)
    written = _write(*args, lookup)
    if written is not None and lookup is not None and NOT_IN_HEAD in written[1][0]["volume"]:
        discard(tmp)
        written = _write(*args, None)
    hasher.join()
    lines = counted["lines"]
    if isinstance(lines, BaseException):
        raise lines
    if written is None or lines.has_nul:
        discard(tmp)
        return None
    return Streamed(lines.lines - header, written[0], {"header": 1} if header else {}, written[1])


def discard(tmp: Path) -> None:
    """Remove what the streaming path wrote (the block path starts from an empty staging)."""
    import shutil

    for d in Path(tmp).glob("volume=*"):
        shutil.rmtree(d)
