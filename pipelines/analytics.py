"""Trace analytics that need no cache model: workload skew (``tiercast skew``) and the space of
redirect-on-write snapshots (``tiercast snapshots``). Both read an ingested trace part file by
part file, in frames of at most ``batch_rows`` rows (a volume's parts in time order, volumes one
after another: no global merge), so memory does not grow with the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import polars as pl
import pyarrow.parquet as pq

from pipelines.catalog import TraceRef
from replay.skew import Skew, SkewCounter
from replay.snapshots import SnapshotTimeline, snapshot_space

DEFAULT_BATCH_ROWS = 1 << 21
Progress = Callable[[int, int], None]  # (rows done, rows total)


def part_frames(trace: TraceRef, columns: Sequence[str], batch_rows: int = DEFAULT_BATCH_ROWS,
                progress: Progress | None = None) -> Iterator[pl.DataFrame]:
    """The trace's rows, volume by volume, each volume in time order."""
    files = trace.volume_files
    if not files:
        raise LookupError(f"trace {trace.trace_id} has no request files under {trace.path}")
    sizes = [pq.ParquetFile(f).metadata.num_rows for f in files]
    done, total = 0, sum(sizes)
    for f, rows in zip(files, sizes, strict=True):
        lf = pl.scan_parquet(f).select(columns)
        for start in range(0, rows, batch_rows):
            df = lf.slice(start, batch_rows).collect()
            yield df
            done += df.height
            if progress is not None:
                progress(done, total)


def capacities(trace: TraceRef) -> dict[str, int]:
    """Volume -> capacity in bytes, for the volumes whose capacity the ingest recorded."""
    vols = trace.manifest.get("volumes") or {}
    return {v: int(s["capacity_bytes"]) for v, s in vols.items() if (s or {}).get("capacity_bytes")}


def skew_trace(trace: TraceRef, slice_bytes: int, progress: Progress | None = None) -> Skew:
    """One streaming Polars pass per part file (each holds one volume): counts per slice only, so
    it runs near the Parquet decode rate and memory holds one row per touched slice."""
    files = trace.volume_files
    if not files:
        raise LookupError(f"trace {trace.trace_id} has no request files under {trace.path}")
    total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    counter = SkewCounter(slice_bytes)
    done = 0
    for f in files:
        counter.add_parquet(f)
        done += pq.ParquetFile(f).metadata.num_rows
        if progress is not None:
            progress(done, total)
    return counter.result(capacities(trace))


def snapshots_trace(trace: TraceRef, every_ns: int, keep_ns: int, block_bytes: int,
                    progress: Progress | None = None) -> SnapshotTimeline:
    frames = part_frames(trace, ["ts_ns", "volume", "op", "offset", "size"], progress=progress)
    return snapshot_space(frames, every_ns, keep_ns, block_bytes)
