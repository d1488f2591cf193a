"""Trace analytics that need no cache model: workload skew (``tiercast skew``) and the space of
redirect-on-write snapshots (``tiercast snapshots``). Both read an ingested trace part file by
part file, in frames of at most ``batch_rows`` rows (a volume's parts in time order, volumes one
after another: no global merge), so memory does not grow with the trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipelines.catalog import TraceRef, volume_of
from pipelines.dataset import key_of
from pipelines.files import atomic_output
from pipelines.progress import Progress
from replay.mech.snapshots.space import SnapshotTimeline, snapshot_space
from replay.skew import IO_SHARES_PCT, Skew, SkewCounter
from replay.version import SKEW_MODEL, model_version

DEFAULT_BATCH_ROWS = 1 << 21


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


def skew_trace(trace: TraceRef, slice_bytes: int, progress: Progress | None = None,
               data_dir: str | Path | None = None) -> Skew:
    """One pass per part file (each holds one volume; :meth:`SkewCounter.add_parquet`): counts per
    slice only, so it runs near the Parquet decode rate and memory holds one row per touched
    slice. With ``data_dir``, also written for the warehouse (:func:`write_skew`)."""
    files = trace.volume_files
    if not files:
        raise LookupError(f"trace {trace.trace_id} has no request files under {trace.path}")
    sizes = [pq.ParquetFile(f).metadata.num_rows for f in files]
    total = sum(sizes)
    counter = SkewCounter(slice_bytes)
    stats = trace.manifest.get("volumes") or {}
    done = 0
    for f, rows in zip(files, sizes, strict=True):
        counter.add_parquet(f, stats.get(volume_of(f)))
        done += rows
        if progress is not None:
            progress(done, total)
    s = counter.result(capacities(trace))
    if data_dir is not None:
        write_skew(data_dir, trace, s)
    return s


def skew_key(trace: TraceRef, slice_bytes: int) -> str:
    """16 hex digits naming a skew result: the trace, its data version, the slice size and the
    skew code's version (``replay.version.SKEW_MODEL``), as runs are keyed."""
    what = [trace.trace_id, trace.data_version, int(slice_bytes), model_version(SKEW_MODEL)]
    return key_of(what)


def skew_paths(data_dir: str | Path, trace: TraceRef, slice_bytes: int) -> dict[str, Path]:
    """``summary`` (the warehouse's ``skew`` row) and ``curve`` (its ``skew_curve`` rows) of one
    skew result, under ``results/skew{,_curve}/<trace>/<slice bytes>-<key>.parquet``."""
    name = f"{slice_bytes}-{skew_key(trace, slice_bytes)}.parquet"
    root = Path(data_dir) / "results"
    return {"summary": root / "skew" / trace.trace_id / name, "curve": root / "skew_curve" / trace.trace_id / name}


def write_skew(data_dir: str | Path, trace: TraceRef, s: Skew) -> dict[str, Path]:
    """The curve (:meth:`Skew.curve_points`), then the summary row (the skew point, the flash
    capacity for 80 / 90 / 95 % of the I/O), each written atomically; the summary is written last
    and is what the loader looks for, so a result without it is not a result. The same key again
    overwrites both (idempotent)."""
    paths = skew_paths(data_dir, trace, s.slice_bytes)
    key = paths["summary"].stem.rpartition("-")[2]
    ks, ios = s.curve_points()
    point = s.point(s.skew_index())
    ident = {"skew_key": key, "trace_id": trace.trace_id, "slice_bytes": s.slice_bytes}
    curve = pl.DataFrame({**{k: [v] * len(ks) for k, v in ident.items()}, "hottest_slices": ks,
                          "capacity_share": ks / s.slices, "io_share": ios / s.ios, "ios": ios},
                         schema_overrides={"hottest_slices": pl.Int64, "ios": pl.Int64})
    row = {**ident, "data_version": trace.data_version, "model_version": model_version(SKEW_MODEL),
           "slices": s.slices, "ios": s.ios, "skew_capacity_share": point["capacity_share"],
           "skew_io_share": point["io_share"], **{f"flash_bytes_{p}pct": s.capacity_for(p) for p in IO_SHARES_PCT},
           "computed_at": datetime.now(tz=UTC)}
    for df, path in ((curve, paths["curve"]), (pl.DataFrame([row]), paths["summary"])):
        with atomic_output(path, "skew result") as tmp:
            df.write_parquet(tmp)
    return paths


def skew_result(trace: TraceRef, data_dir: str | Path, slice_bytes: int) -> dict:
    """The kept skew row of ``trace`` at ``slice_bytes`` with the current code (computed and
    kept first when there is none), with ``reused``."""
    path = skew_paths(data_dir, trace, slice_bytes)["summary"]
    reused = path.is_file()
    if not reused:
        skew_trace(trace, slice_bytes, data_dir=data_dir)
    return {**pl.read_parquet(path).row(0, named=True), "reused": reused}


def snapshots_trace(trace: TraceRef, every_ns: int, keep_ns: int, block_bytes: int,
                    progress: Progress | None = None) -> SnapshotTimeline:
    frames = part_frames(trace, ["ts_ns", "volume", "op", "offset", "size"], progress=progress)
    return snapshot_space(frames, every_ns, keep_ns, block_bytes)
