"""Ingest step: one raw trace file -> validated Parquet dataset partitioned by volume + manifest.
The skeleton every ingest step follows (:func:`ingest_source`) is here too; measured logs
(pipelines.ingest_logs) bring their own reader, tables and manifest fields to it.

Guarantees (tested):
- rows read = rows accepted + rows rejected; every rejected row is kept with its source line,
  raw text and reason in ``rejects/``;
- the dataset appears only complete (written to a temporary directory, renamed at the end);
  a failed or interrupted ingest leaves no trace directory behind;
- ingesting the same content with the same options again is a no-op that says so, unless the
  dataset was made by an older reader version (``reader_version`` in the manifest) or ``force``
  is given: then the file is read again and the dataset replaced.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.catalog import SPLIT_DIR, traces_root, volume_dir, write_json_atomic
from pipelines.dataset import (
    RejectsWriter,
    check_counts,
    check_validate_mode,
    content_id,
    ingest_once,
    package_version,
    reader_version,
)
from pipelines.files import atomic_file
from pipelines.ingest_streaming import discard, stream_csv
from pipelines.progress import Progress
from schemas.trace import ARROW_SCHEMA, conform
from schemas.trace_suite import exact_check, exact_report, validate_trace_dir, volume_files
from traces.base import TraceReader
from traces.errors import TraceFormatError
from traces.registry import detect, reader_class
from traces.source import Source, prefetch

if TYPE_CHECKING:
    from pipelines.ingest_logs import MeasuredIngestResult

FLUSH_ROWS_PER_VOLUME = 1_000_000
FLUSH_ROWS_TOTAL = 3_000_000
MAX_PENDING_WRITES = 2
PARQUET_COMPRESSION = "zstd"
#: zstd level 1 (Arrow's default; Polars' is 3): ~4 % larger parts, decompressed as fast, for half
#: the encoding CPU (5 M canonical rows: 3.3 -> 1.6 CPU-s; Polars' 1 GB CSV -> Parquet: 14.6 -> 11.6)
PARQUET_COMPRESSION_LEVEL = 1
#: ``--validate`` modes that run the GX suite inside the ingest (``auto`` leaves it to a batch)
GX_IN_INGEST = ("full", "sample")

R = TypeVar("R")
#: what a kind's reading step gives: its manifest fields, and the contract check of the rows it
#: wrote, run on the finished manifest (-> the validation report, what the manifest keeps of it)
Contents = tuple[dict, Callable[[dict], tuple[dict, dict]]]


@dataclass
class IngestResult:
    trace_id: str
    format: str
    source_path: str
    sha256: str
    rows_read: int
    rows_accepted: int
    rows_rejected: int
    volumes: dict[str, int]
    already_ingested: bool = False
    path: str = ""
    lines_skipped: dict[str, int] = field(default_factory=dict)
    sorted_rows: int = 0
    reader_version: str = ""

    def summary(self) -> dict:
        return asdict(self)


class _PartitionWriter:
    """Buffers accepted rows per volume and writes Parquet parts of bounded memory.

    Parts are written by one background thread (Polars' writer releases the GIL), at most
    ``MAX_PENDING_WRITES`` behind, so compression overlaps parsing of the next block.
    """

    def __init__(self, root: Path):
        self.root = root
        self.buffers: dict[str, list[pl.DataFrame]] = {}
        self.rows: Counter = Counter()
        self.parts: Counter = Counter()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tiercast-parquet")
        self._pending: list[Future] = []

    def add(self, df: pl.DataFrame) -> None:
        for (vol,), part in df.partition_by("volume", as_dict=True, maintain_order=True).items():
            while part.height:  # a part file never holds more than FLUSH_ROWS_PER_VOLUME rows
                take = part.head(FLUSH_ROWS_PER_VOLUME - self.rows[vol])
                part = part.slice(take.height)
                self.buffers.setdefault(vol, []).append(take)
                self.rows[vol] += take.height
                if self.rows[vol] >= FLUSH_ROWS_PER_VOLUME:
                    self._flush(vol)
        while sum(self.rows.values()) > FLUSH_ROWS_TOTAL:
            self._flush(self.rows.most_common(1)[0][0])

    def _flush(self, vol: str) -> None:
        frames = self.buffers.pop(vol, [])
        self.rows.pop(vol, None)
        if not frames:
            return
        d = volume_dir(self.root, vol)
        path = d / f"part-{self.parts[vol]:05d}.parquet"
        self.parts[vol] += 1
        while len(self._pending) >= MAX_PENDING_WRITES:
            self._pending.pop(0).result()
        self._pending.append(self._pool.submit(_write_part, frames, path))

    def close(self) -> None:
        try:
            for vol in list(self.buffers):
                self._flush(vol)
            for f in self._pending:
                f.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _write_part(frames: list[pl.DataFrame], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Polars' writer compresses columns in parallel (~1.6x pyarrow's write_table here)
    frame = conform(pl.concat(frames))
    frame.write_parquet(path, compression=PARQUET_COMPRESSION, compression_level=PARQUET_COMPRESSION_LEVEL)


def to_arrow(df: pl.DataFrame) -> pa.Table:
    return conform(df).to_arrow().cast(ARROW_SCHEMA)


def make_reader(fmt: str, options: dict | None = None) -> TraceReader:
    return reader_class(fmt)(**(options or {}))


def ingest_source(
    path: str | Path,
    root: Path,
    id_key: str,
    reader_of: Callable[[str], Any],
    read: Callable[[Path, Source, Any], Contents],
    result: Callable[[dict, Path, Path, bool], R],
    contract: str,
    fmt: str | None = None,
    validate: str = "auto",
    force: bool = False,
) -> R:
    """One raw file into a dataset under ``root`` by :func:`ingest_once`, with what every kind
    shares: the reader (``reader_of``) of the forced or detected format, the manifest's common
    fields (id, source, reader, versions, timing) around the kind's own (``read`` writes the rows
    into the staging directory), and the contract gate: unless ``validate`` is "off", the check's
    report is kept as ``validation.json`` and a failed one publishes nothing.
    ``result(manifest, path, dataset_dir, already)`` makes the caller's result."""
    check_validate_mode(validate)
    path = Path(path)
    source = Source(path)
    reader = reader_of(fmt or detect(source))

    def build(tmp: Path) -> dict:
        started = time.time()
        fields, check = read(tmp, source, reader)
        identity = reader.identity()
        manifest = {
            id_key: content_id(source.sha256, identity),
            "format": reader.name,
            "kind": reader.kind,
            "reader_options": identity,
            "source_path": str(source.path.resolve()),
            "source_bytes": source.path.stat().st_size,
            "compression": source.compression,
            "sha256": source.sha256,
            "reader_metadata": reader.metadata,
            **fields,
            "ingested_at": datetime.now(tz=UTC).isoformat(),
            "ingest_seconds": round(time.time() - started, 3),
            "tiercast_version": package_version(),
            "reader_version": reader_version(),
        }
        if validate != "off":
            report, manifest["validation"] = check(manifest)
            write_json_atomic(tmp / "validation.json", report)
            if not report["success"]:
                raise TraceFormatError(source.path, None, f"accepted rows fail the {contract} contract: "
                                       + report["summary"])
        write_json_atomic(tmp / "manifest.json", manifest)
        return manifest

    return ingest_once(root, path, reader.identity(), id_key, build,
                       lambda man, final, already: result(man, path, final, already), force=force)


def ingest_file(
    path: str | Path,
    data_dir: str | Path,
    fmt: str | None = None,
    options: dict | None = None,
    progress: Progress | None = None,
    validate: str = "auto",
    force: bool = False,
) -> IngestResult:
    """Read one raw trace file into ``data_dir/traces/<trace_id>``; see the module docstring.
    ``force`` re-reads the file even when it is already ingested and replaces the dataset."""
    return ingest_source(
        path,
        traces_root(data_dir),
        "trace_id",
        lambda f: make_reader(f, options),
        lambda tmp, source, reader: _contents(tmp, source, reader, progress, validate),
        _result,
        "trace",
        fmt,
        validate,
        force,
    )


def ingest_trace_or_log(path: str | Path, data_dir: str | Path, fmt: str | None = None, options: dict | None = None,
                        progress: Progress | None = None, validate: str = "auto",
                        measured_validate: str | None = None, force: bool = False) -> IngestResult | MeasuredIngestResult:
    """Ingest ``path`` as what it is: a measured log (iostat, vxstat, fio, ...: pipelines.ingest_logs,
    own step and tables) when its format, forced or detected, is one, else a block trace.
    ``validate`` for a trace, ``measured_validate`` (default: the same) for a measured log."""
    from pipelines.ingest_logs import ingest_log_file, measured_format  # it builds on this module

    if mfmt := measured_format(path, fmt):
        return ingest_log_file(path, data_dir, mfmt, options, progress, measured_validate or validate, force)
    return ingest_file(path, data_dir, fmt, options, progress, validate, force)


def _result(man: dict, source_path: Path, final: Path, already: bool = False) -> IngestResult:
    return IngestResult(
        trace_id=man["trace_id"],
        format=man["format"],
        source_path=str(source_path),
        sha256=man["sha256"],
        rows_read=man["rows_read"],
        rows_accepted=man["rows_accepted"],
        rows_rejected=man["rows_rejected"],
        volumes={v: s["requests"] for v, s in man["volumes"].items()},
        already_ingested=already,
        path=str(final),
        lines_skipped=man.get("lines_skipped", {}),
        sorted_rows=man.get("sorted_rows", 0),
        reader_version=man.get("reader_version", ""),
    )


@dataclass
class _Read:
    """What reading the file gave besides the written rows (those are counted from disk)."""

    rows_read: int
    origin_ns: int | None
    skipped: dict[str, int]
    rows_rejected: int = 0
    #: :func:`schemas.trace_suite.row_counts` when computed while writing
    row_counts: tuple[pl.DataFrame, pl.DataFrame] | None = None


def _read_blocks(tmp: Path, source: Source, reader: TraceReader, progress: Progress | None) -> _Read:
    """The exact path: block by block, every bad line to rejects with its reason."""
    total_bytes = source.path.stat().st_size
    writer = _PartitionWriter(tmp)
    rejects = RejectsWriter(tmp)
    origin: int | None = None
    read = 0
    skipped: Counter = Counter()
    for batch in prefetch(reader.batches(source), depth=1):
        read += batch.n_read
        skipped.update(batch.skipped)
        rejects.write(batch.rejects)
        rows = batch.rows
        if rows.height:
            if origin is None:
                origin = int(rows["ts_raw_ns"][0])
            writer.add(rows.with_columns(ts_ns=pl.col("ts_raw_ns") - origin).drop("ts_raw_ns"))
        if progress:
            progress(source.raw_bytes_read, total_bytes)
    writer.close()
    rejects.close()
    if read == 0:
        what = "has only a header" if skipped.get("header") else "contains no requests"
        raise TraceFormatError(source.path, None, f"file {what} ({dict(skipped) or 'empty'})")
    if origin is None:
        line, reason = rejects.first
        raise TraceFormatError(
            source.path, line,
            f"no line could be read as {reader.name}: {reason} (and {rejects.count - 1} more rejected)",
        )
    return _Read(read, origin, dict(skipped), rejects.count)


def _read_streaming(tmp: Path, source: Source, reader: TraceReader, progress: Progress | None) -> _Read | None:
    """The Polars streaming path, kept only when every line of the file became an accepted
    row (and, under ``--order reject``, no timestamp goes back)."""
    streamed = stream_csv(tmp, source, reader, FLUSH_ROWS_PER_VOLUME, PARQUET_COMPRESSION, PARQUET_COMPRESSION_LEVEL)
    if streamed is None:
        return None
    rows = int(streamed.row_counts[0]["requests"].sum())
    if rows != streamed.rows_read or (reader.order == "reject" and _goes_back(tmp)):
        discard(tmp)
        return None
    if progress:
        progress(source.raw_bytes_read, source.path.stat().st_size)
    rejects = RejectsWriter(tmp)  # the block path's layout: an empty rejects/
    rejects.close()
    return _Read(streamed.rows_read, streamed.origin_ns, streamed.skipped, rejects.count, streamed.row_counts)


def _goes_back(tmp: Path) -> bool:
    """Whether a timestamp goes back within a volume of the rows written under ``tmp``."""
    return any(
        pl.scan_parquet(files, hive_partitioning=False).select((pl.col("ts_ns").diff() < 0).any()).collect().item()
        for files in volume_files(tmp).values()
    )


def _contents(tmp: Path, source: Source, reader: TraceReader, progress: Progress | None, validate: str) -> Contents:
    """The trace's rows under ``tmp``, in time order per volume (sorted when they were not)."""
    if validate in GX_IN_INGEST:
        # importing Great Expectations takes seconds; do it while the file is being parsed
        threading.Thread(target=importlib.import_module, args=("great_expectations",), daemon=True).start()
    got = _read_streaming(tmp, source, reader, progress) or _read_blocks(tmp, source, reader, progress)
    counts, stats = exact_check(tmp, reader.capacities, got.row_counts)
    check_counts(source.path, got.rows_read, counts["rows"], got.rows_rejected)

    origin = got.origin_ns
    min_ts = min(s["first_ts_ns"] for s in stats.values())
    sorted_rows = sum(s["out_of_order"] for s in stats.values())
    if sorted_rows or min_ts < 0:
        _sort_volumes(tmp, list(stats), shift_ns=-min_ts if min_ts < 0 else 0)
        origin += min(min_ts, 0)
        counts, stats = exact_check(tmp, reader.capacities)

    fields = {
        "ts_origin_raw_ns": origin,
        "start_time": (
            datetime.fromtimestamp(origin / 1e9, tz=UTC).isoformat() if reader.absolute_clock else None
        ),
        "rows_read": got.rows_read,
        "rows_accepted": counts["rows"],
        "rows_rejected": got.rows_rejected,
        "lines_skipped": got.skipped,
        "sorted_rows": sorted_rows,
        "volumes": {
            v: {**{k: x for k, x in s.items() if k != "out_of_order"}, "span_ns": s["last_ts_ns"] - s["first_ts_ns"],
                "capacity_bytes": reader.capacities.get(v)}
            for v, s in sorted(stats.items())
        },
    }
    return fields, lambda manifest: _check(tmp, manifest, counts, validate)


def _check(tmp: Path, manifest: dict, counts: dict, validate: str) -> tuple[dict, dict]:
    """The exact counts of every contract rule gate publication; GX runs here only when asked."""
    report = exact_report(counts)
    if report["success"] and validate in GX_IN_INGEST:
        report = validate_trace_dir(tmp, manifest, mode=validate)
    return report, {k: report[k] for k in ("success", "mode", "rows_validated", "gx") if k in report}


def _sort_volumes(tmp: Path, volumes: list[str], shift_ns: int) -> None:
    """Rewrite each volume's parts in (ts_ns, src_line) order; DuckDB sorts out of core."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    for vol in volumes:
        d = volume_dir(tmp, vol)
        parts = sorted(d.glob("part-*.parquet"))
        rel = con.sql(
            "SELECT * REPLACE (ts_ns + $shift_ns AS ts_ns) FROM read_parquet($files, hive_partitioning=false) "
            "ORDER BY ts_ns, src_line",
            params={"shift_ns": int(shift_ns), "files": [str(p) for p in parts]},
        )
        reader = rel.fetch_record_batch(1_000_000)
        with atomic_file(d / "part-00000.parquet") as out:
            with pq.ParquetWriter(out, ARROW_SCHEMA, compression=PARQUET_COMPRESSION,
                                  compression_level=PARQUET_COMPRESSION_LEVEL) as w:
                for batch in reader:
                    w.write_table(to_arrow(pl.from_arrow(batch)))
            for p in parts:
                p.unlink()
    con.close()


def split_by_volume(trace_id: str, data_dir: str | Path, validate: str = "auto",
                    force: bool = False) -> list[IngestResult]:
    """One dataset per volume of an ingested trace (issue 29: a 1,000-volume cloud trace becomes
    1,000 independent replays the replay DAG maps over workers): each volume's accepted requests,
    in time order, written as canonical Parquet to ``<data>/split/<trace_id>/<name>.<volume>.parquet``
    (streamed, one volume at a time) and ingested as its own trace (its own time origin: the
    volume's first request). Returns the per-volume ingest results, in volume order."""
    from urllib.parse import quote

    from pipelines.catalog import find_trace, volume_of
    from schemas.trace import COLUMNS

    trace = find_trace(Path(data_dir), trace_id)
    by_volume: dict[str, list[Path]] = {}
    for f in trace.volume_files:
        by_volume.setdefault(volume_of(f), []).append(f)
    out_dir = Path(data_dir) / SPLIT_DIR / trace.trace_id
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for vol in sorted(by_volume):
        path = out_dir / f"{trace.name}.{quote(vol, safe='')}.parquet"
        if not path.exists() or force:
            with atomic_file(path) as tmp:
                lf = pl.scan_parquet(by_volume[vol], hive_partitioning=False)
                lf.select([c for c in COLUMNS if c in lf.collect_schema().names()]).sink_parquet(
                    tmp, compression="zstd", compression_level=1, row_group_size=1 << 20)
        results.append(ingest_file(path, data_dir, "tiercast-parquet", validate=validate, force=force))
    return results
