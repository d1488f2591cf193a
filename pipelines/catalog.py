"""The data directory: where ingested traces, rejects and manifests live, and how to find them.

Layout (every path below ``data_dir``)::

    traces/<trace_id>/manifest.json
    traces/<trace_id>/validation.json
    traces/<trace_id>/volume=<quoted volume>/part-<k>.parquet
    traces/<trace_id>/rejects/part-<k>.parquet
    traces/<trace_id>/pages/<page_size>-<key>/*.npy   page streams (pipelines.simulate), rebuilt on demand
    traces/_sources.json        fast re-ingest check: (path, size, mtime, options) -> trace_id
    split/<trace_id>/<name>.<quoted volume>.parquet   one volume's requests (``ingest --split-by
                                volume``), the source of that volume's own trace

A trace directory appears only by an atomic rename of a finished temporary directory, so a
directory with a manifest is always complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote, unquote

from pipelines.files import atomic_file
from pipelines.sql import identifier

if TYPE_CHECKING:  # Polars is imported where a trace is read, not by `tiercast traces`
    import polars as pl

DEFAULT_DATA_DIR = "tiercast-data"
ENV_DATA_DIR = "TIERCAST_DATA_DIR"
MAX_LISTED_CANDIDATES = 10
PAGES_DIR = "pages"  # a trace's page streams (pipelines.simulate)
SPLIT_DIR = "split"  # per-volume sources of the traces split from one (pipelines.ingest.split_by_volume)
T = TypeVar("T")


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    return Path(data_dir or os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR)


def traces_root(data_dir: Path) -> Path:
    return Path(data_dir) / "traces"


def write_json_atomic(path: Path, obj) -> None:
    """Write ``obj`` as JSON through a temporary file renamed over ``path``: the file is whole or
    absent. The temporary file is removed when writing fails (a full disk leaves nothing)."""
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str))


def volume_dir(root: Path, volume: str) -> Path:
    """The directory of one volume's part files (``volume=<quoted name>``)."""
    return root / f"volume={quote(str(volume), safe='')}"


def volume_of(part_file: Path) -> str:
    """The volume a part file holds (:func:`volume_dir`'s inverse)."""
    return unquote(Path(part_file).parent.name.removeprefix("volume="))


@dataclass(frozen=True)
class TraceRef:
    trace_id: str
    path: Path
    manifest: dict

    @property
    def data_version(self) -> str:
        """What, besides the trace id, decides this dataset's rows: the reader version that wrote
        it (a re-ingest by a fixed reader keeps the id and replaces the rows). Results computed
        from the trace are keyed on it, so they are never served from older rows."""
        return str(self.manifest.get("reader_version") or "")

    @property
    def name(self) -> str:
        """What a person calls the trace: its source file's name without the extension (the trace id's
        first 12 characters when the manifest names no source)."""
        src = self.manifest.get("source_path")
        return Path(src).stem if src else self.trace_id[:12]

    @property
    def split_from(self) -> str | None:
        """The trace this one holds one volume of (its source is ``split/<that trace id>/...``),
        else None."""
        src = Path(self.manifest.get("source_path") or "")
        return src.parent.name if src.parent.parent.name == SPLIT_DIR else None

    @property
    def volume_files(self) -> list[Path]:
        return sorted(self.path.glob("volume=*/part-*.parquet"))

    @property
    def reject_files(self) -> list[Path]:
        return sorted((self.path / "rejects").glob("part-*.parquet"))

    def disk_usage(self) -> dict[str, int]:
        """Bytes on disk: ``trace_bytes`` (requests, rejects, manifests) and ``page_stream_bytes``
        (the replay-ready page streams under ``pages/``, which can be deleted and are rebuilt)."""
        out = {"trace_bytes": 0, "page_stream_bytes": 0}
        for root, _, files in os.walk(self.path):
            kind = "page_stream_bytes" if Path(root).relative_to(self.path).parts[:1] == (PAGES_DIR,) else "trace_bytes"
            out[kind] += sum(os.stat(os.path.join(root, f)).st_size for f in files)
        return out

    def max_end_bytes(self) -> dict[str, int]:
        """Each volume's highest address (offset + size) from the manifest: the workload's
        footprint (``Scenario.with_footprint``)."""
        return {v: int(s["max_end"]) for v, s in (self.manifest.get("volumes") or {}).items() if s.get("max_end")}

    def scan(self) -> pl.LazyFrame:
        """All accepted requests, volume by volume (each volume in time order)."""
        import polars as pl

        return pl.scan_parquet(self.volume_files, hive_partitioning=False)

    def iter_ordered(self, batch_rows: int = 1 << 20, columns: list[str] | None = None):
        """All accepted requests in global time order (ts_ns, then volume, then src_line), as
        Polars frames of at most ``batch_rows`` rows. DuckDB merges the volumes out of core, so
        traces larger than memory stream."""
        import duckdb
        import polars as pl

        cols = ", ".join(identifier(c) for c in columns) if columns else "*"
        con = duckdb.connect()
        try:
            rel = con.sql(
                f"SELECT {cols} FROM read_parquet($files, hive_partitioning=false) ORDER BY ts_ns, volume, src_line",
                params={"files": [str(f) for f in self.volume_files]},
            )
            reader = rel.fetch_record_batch(batch_rows)
            for batch in reader:
                yield pl.from_arrow(batch)
        finally:
            con.close()

    def rejects(self) -> pl.DataFrame:
        import polars as pl

        from schemas.trace import empty_rejects

        files = self.reject_files
        return pl.read_parquet(files) if files else empty_rejects()


def list_traces(data_dir: Path) -> list[TraceRef]:
    root = traces_root(data_dir)
    out = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            m = d / "manifest.json"
            if d.is_dir() and not d.name.startswith(".") and m.is_file():
                out.append(TraceRef(d.name, d, json.loads(m.read_text())))
    return out


def find_by_prefix(candidates: Mapping[str, T], ref: str, what: str, where: str | Path, hint: str) -> T:
    """The one lookup of an id the user typed (trace, measured dataset, capture, replay run):
    an exact id wins, else a unique prefix; an ambiguous prefix is a LookupError listing the
    candidates, an unknown one a LookupError naming ``what`` was looked for, where, and the
    command (``hint``) that lists them. An empty ``ref`` matches nothing."""
    if ref in candidates:
        return candidates[ref]
    matches = sorted(k for k in candidates if ref and k.startswith(ref))
    if len(matches) == 1:
        return candidates[matches[0]]
    if matches:
        shown = ", ".join(matches[:MAX_LISTED_CANDIDATES]) + (
            f" and {len(matches) - MAX_LISTED_CANDIDATES} more" if len(matches) > MAX_LISTED_CANDIDATES else "")
        raise LookupError(f"{what} {ref!r} is ambiguous: it is a prefix of {len(matches)} ids ({shown}); "
                          "give more characters")
    raise LookupError(f"no {what} {ref!r} in {where} ({hint})")


def find_trace(data_dir: Path, ref: str) -> TraceRef:
    """A trace by its id (or an unambiguous prefix of it)."""
    traces = {t.trace_id: t for t in list_traces(data_dir)}
    return find_by_prefix(traces, ref, "ingested trace", traces_root(data_dir), "see `tiercast traces`")
