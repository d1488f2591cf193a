"""Ingest step for measured logs: one iostat / vxstat / vxdmpadm / fio / IOMeter file ->
validated Parquet tables + manifest, with the same guarantees as trace ingest (tested):

- per table, rows read = rows accepted + rows rejected; every rejected line is kept with its
  line number, raw text and reason in ``<table>/rejects/``;
- the dataset appears only complete (written to a temporary directory, renamed at the end);
- ingesting the same content with the same options again is a no-op that says so.

Layout::

    measured/<dataset_id>/manifest.json
    measured/<dataset_id>/validation.json
    measured/<dataset_id>/<table>/part-00000.parquet
    measured/<dataset_id>/<table>/rejects/part-00000.parquet
    measured/_sources.json
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipelines.catalog import find_by_prefix
from pipelines.dataset import RejectsWriter, check_counts
from pipelines.ingest import Contents, ingest_source
from pipelines.progress import Progress
from schemas.measured import TIME_COLUMN, arrow_schema, conform
from traces.errors import TraceFormatError
from traces.measured import MeasuredReader
from traces.registry import detect, reader_class
from traces.source import Source

PARQUET_COMPRESSION = "zstd"
FLUSH_ROWS = 1_000_000
MAX_LISTED_KEYS = 10_000

#: the column naming the measured object in each table (for the manifest's ``devices``)
KEY_COLUMN = {
    "iostat_device": "device", "iostat_device_boot": "device", "vxstat": "name", "vxdmp": "name",
    "fio_job": "jobname", "fio_disk_util": "name", "fio_log": "job", "fio_hist": "job", "iometer": "target_name",
}
#: tables with one report per interval, and the column that flags the cumulative/boot one
INTERVAL_TABLES = {"iostat_device": None, "iostat_cpu": None, "vxstat": "cumulative", "vxdmp": "cumulative"}


def measured_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "measured"


def is_measured_format(fmt: str) -> bool:
    return getattr(reader_class(fmt), "kind", "trace") == "measured"


def measured_format(path: str | Path, fmt: str | None) -> str | None:
    """The measured-log format of ``path`` (forced or detected), or None for a trace format."""
    if fmt is not None:
        return fmt if is_measured_format(fmt) else None
    detected = detect(Source(Path(path)))
    return detected if is_measured_format(detected) else None


@dataclass
class MeasuredIngestResult:
    dataset_id: str
    format: str
    source_path: str
    sha256: str
    rows_read: int
    rows_accepted: int
    rows_rejected: int
    tables: dict[str, dict]
    already_ingested: bool = False
    path: str = ""
    warnings: list[str] = field(default_factory=list)
    lines_skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return asdict(self)


class _TableWriter:
    """Streams one table's accepted rows into ``<table>/part-00000.parquet`` (row groups of
    up to FLUSH_ROWS rows) and keeps the facts the manifest needs."""

    def __init__(self, root: Path, table: str):
        self.table = table
        self.dir = root / table
        self.schema = arrow_schema(table)
        self.buffer: list[pl.DataFrame] = []
        self.buffered = 0
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.non_null: Counter = Counter()
        self.keys: set = set()
        self.reports: set = set()
        self.first = None
        self.last = None

    def add(self, df: pl.DataFrame) -> None:
        df = conform(self.table, df)
        self.rows += df.height
        for c, n in df.select(pl.all().count()).row(0, named=True).items():
            self.non_null[c] += n
        key = KEY_COLUMN.get(self.table)
        if key and len(self.keys) < MAX_LISTED_KEYS:
            self.keys.update(df.get_column(key).drop_nulls().unique().to_list())
        if self.table in INTERVAL_TABLES:
            flag = INTERVAL_TABLES[self.table]
            reps = df.filter(~pl.col(flag)) if flag else df
            self.reports.update(reps.get_column("report").unique().to_list())
        tcol = TIME_COLUMN.get(self.table)
        if tcol:
            lo, hi = df.select(pl.col(tcol).min().alias("lo"), pl.col(tcol).max().alias("hi")).row(0)
            if lo is not None:
                self.first = lo if self.first is None else min(self.first, lo)
                self.last = hi if self.last is None else max(self.last, hi)
        self.buffer.append(df)
        self.buffered += df.height
        if self.buffered >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        table = pl.concat(self.buffer).to_arrow().cast(self.schema)
        if self.writer is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.dir / "part-00000.parquet", self.schema, compression=PARQUET_COMPRESSION)
        self.writer.write_table(table)
        self.buffer, self.buffered = [], 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()


def make_measured_reader(fmt: str, options: dict | None = None) -> MeasuredReader:
    cls = reader_class(fmt)
    if getattr(cls, "kind", "trace") != "measured":
        raise ValueError(f"format {fmt!r} is a trace format, not a measured log (use pipelines.ingest)")
    return cls(**(options or {}))


def ingest_log_file(
    path: str | Path,
    data_dir: str | Path,
    fmt: str | None = None,
    options: dict | None = None,
    progress: Progress | None = None,
    validate: str = "auto",
    force: bool = False,
) -> MeasuredIngestResult:
    """Read one measured log into ``data_dir/measured/<dataset_id>``; see the module docstring.
    ``force`` re-reads the file even when it is already ingested and replaces the dataset."""
    return ingest_source(
        path,
        measured_root(data_dir),
        "dataset_id",
        lambda f: make_measured_reader(f, options),
        lambda tmp, source, reader: _contents(tmp, source, reader, progress, validate),
        _result,
        "measured-log",
        fmt,
        validate,
        force,
    )


def _result(man: dict, source_path: Path, final: Path, already: bool = False) -> MeasuredIngestResult:
    return MeasuredIngestResult(
        dataset_id=man["dataset_id"],
        format=man["format"],
        source_path=str(source_path),
        sha256=man["sha256"],
        rows_read=man["rows_read"],
        rows_accepted=man["rows_accepted"],
        rows_rejected=man["rows_rejected"],
        tables={t: {k: s[k] for k in ("rows_read", "rows_accepted", "rows_rejected")} for t, s in man["tables"].items()},
        already_ingested=already,
        path=str(final),
        warnings=man.get("warnings", []),
        lines_skipped=man.get("lines_skipped", {}),
    )


def _iso(v) -> object:
    return v.isoformat() if isinstance(v, datetime) else v


def _contents(tmp: Path, source: Source, reader: MeasuredReader, progress: Progress | None,
              validate: str) -> Contents:
    """The log's tables under ``tmp``, each with its rejects."""
    total_bytes = source.path.stat().st_size
    writers: dict[str, _TableWriter] = {}
    rejects: dict[str, RejectsWriter] = {}
    skipped: Counter = Counter()
    for batch in reader.batches(source):
        skipped.update(batch.skipped)
        for table, df in batch.tables.items():
            writers.setdefault(table, _TableWriter(tmp, table)).add(df)
        for table, rej in batch.rejects.items():
            writers.setdefault(table, _TableWriter(tmp, table))
            rejects.setdefault(table, RejectsWriter(tmp / table)).write(rej.sort("src_line", nulls_last=True))
        if progress:
            progress(source.raw_bytes_read, total_bytes)
    for w in writers.values():
        w.close()
    for r in rejects.values():
        r.close()

    tables: dict[str, dict] = {}
    for name, w in sorted(writers.items()):
        rej = rejects[name].count if name in rejects else 0
        tables[name] = {
            "rows_read": w.rows + rej,
            "rows_accepted": w.rows,
            "rows_rejected": rej,
            "first_reject": list(rejects[name].first) if name in rejects and rejects[name].first else None,
            "time_column": TIME_COLUMN.get(name),
            "first": _iso(w.first),
            "last": _iso(w.last),
            "keys": sorted(map(str, w.keys)) if name in KEY_COLUMN else None,
            "intervals": len(w.reports) if name in INTERVAL_TABLES else None,
            "columns_present": [c for c in w.schema.names if w.non_null[c] > 0],
        }
        check_counts(source.path, tables[name]["rows_read"], tables[name]["rows_accepted"],
                     tables[name]["rows_rejected"], f"table {name}: rows")
    read = sum(t["rows_read"] for t in tables.values())
    accepted = sum(t["rows_accepted"] for t in tables.values())
    rejected = read - accepted
    if read == 0:
        raise TraceFormatError(source.path, None, f"no {reader.name} data rows found ({dict(skipped) or 'empty file'})")
    if accepted == 0:
        first = next(t["first_reject"] for t in tables.values() if t["first_reject"])
        raise TraceFormatError(source.path, first[0], f"no line could be read as {reader.name}: {first[1]} "
                                                      f"(and {rejected - 1} more rejected)")
    meta = reader.metadata
    devices = sorted({k for t in ("iostat_device", "iostat_device_boot", "vxstat", "vxdmp", "fio_disk_util")
                      if t in tables for k in (tables[t]["keys"] or [])})
    fields = {
        "tool": reader.tool,
        "tool_version": meta.get("tool_version"),
        "hosts": meta.get("hosts", []),
        "devices": devices,
        "intervals": max((t["intervals"] or 0 for t in tables.values()), default=0),
        "rows_read": read,
        "rows_accepted": accepted,
        "rows_rejected": rejected,
        "tables": tables,
        "lines_skipped": dict(skipped),
        "warnings": reader.warnings,
    }
    return fields, lambda manifest: _check(tmp, manifest, validate)


def _check(tmp: Path, manifest: dict, validate: str) -> tuple[dict, dict]:
    """The measured-log contract (Great Expectations) over the written tables."""
    from schemas.measured_suite import validate_measured_dir

    report = validate_measured_dir(tmp, manifest, mode=validate)
    return report, {"success": report["success"], "mode": report["mode"],
                    "tables": {t: r["success"] for t, r in report["tables"].items()}}


@dataclass(frozen=True)
class MeasuredRef:
    dataset_id: str
    path: Path
    manifest: dict

    def table_files(self, table: str) -> list[Path]:
        return sorted((self.path / table).glob("part-*.parquet"))

    def scan(self, table: str) -> pl.LazyFrame:
        files = self.table_files(table)
        if not files:
            raise LookupError(f"measured dataset {self.dataset_id} has no table {table!r} "
                              f"(it has: {', '.join(self.manifest['tables'])})")
        return pl.scan_parquet(files)

    def rejects(self, table: str) -> pl.DataFrame:
        from schemas.trace import empty_rejects

        files = sorted((self.path / table / "rejects").glob("part-*.parquet"))
        return pl.read_parquet(files) if files else empty_rejects()


def list_measured(data_dir: str | Path) -> list[MeasuredRef]:
    root = measured_root(data_dir)
    out = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            m = d / "manifest.json"
            if d.is_dir() and not d.name.startswith(".") and m.is_file():
                out.append(MeasuredRef(d.name, d, json.loads(m.read_text())))
    return out


def find_measured(data_dir: str | Path, ref: str) -> MeasuredRef:
    """A measured dataset by its id (or an unambiguous prefix of it)."""
    datasets = {m.dataset_id: m for m in list_measured(data_dir)}
    return find_by_prefix(datasets, ref, "measured dataset", measured_root(data_dir), "see `tiercast measured`")
