"""Replay steps: one cache policy at one size (``simulate``) and hit-ratio curves (``mrc``).

Plain functions called the same way by the CLI, the DAGs and the tests. Both stream an ingested
trace in time order, chunk by chunk (bounded memory; identical results for any chunk size), and
write Parquet under the data directory for the load step::

    results/simulate/<trace_id>/<policy>-<cache_bytes>-<page_size>/summary.parquet
    results/simulate/<trace_id>/<policy>-<cache_bytes>-<page_size>/intervals.parquet
    results/mrc/<trace_id>/<method>-<page_size>[-<rate>].parquet

Both record the ``model_version`` that produced them (``replay.version.CACHE_MODEL``: a hash of
the cache kernels' and curve code's source). They are recomputed on every call, never returned
from disk, so a model change cannot serve stale numbers; the version says which code wrote a file.

A single-volume trace is read straight from its Parquet files (already in time order); a
multi-volume trace goes through the catalog's DuckDB merge.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from pipelines.catalog import TraceRef
from replay.intervals import IntervalAggregator, outcome_frame
from replay.kernels import cache_model
from replay.mrc import Shards, StackDistances, curve_frame, default_sizes
from replay.pages import ChunkBuilder, check_page_size
from replay.version import CACHE_MODEL, model_version
from schemas.trace import OP_WRITE
from traces.source import prefetch

REPLAY_COLUMNS = ["ts_ns", "volume", "op", "offset", "size"]
DEFAULT_BATCH_ROWS = 1 << 21
Progress = Callable[[int, int], None]  # (rows done, rows total)


def total_rows(trace: TraceRef) -> int:
    return int(trace.manifest.get("rows_accepted") or sum(pq.ParquetFile(f).metadata.num_rows
                                                          for f in trace.volume_files))


def read_frames(trace: TraceRef, batch_rows: int = DEFAULT_BATCH_ROWS,
                columns: Sequence[str] = REPLAY_COLUMNS) -> Iterator[pl.DataFrame]:
    """The trace's accepted requests in global time order, as frames of at most ``batch_rows``."""
    files = trace.volume_files
    if not files:
        raise LookupError(f"trace {trace.trace_id} has no request files under {trace.path}")
    volumes = {f.parent.name for f in files}
    if len(volumes) > 1:
        # iter_ordered quotes the names itself (OFFSET is an SQL keyword)
        yield from trace.iter_ordered(batch_rows, list(columns))
        return
    for f in files:  # one volume: its part files are in time order already
        # Polars' reader (multi-threaded, one contiguous chunk per column) is ~3x faster here
        # than pyarrow iter_batches + from_arrow, whose batches stop at every row group.
        rows = pq.ParquetFile(f).metadata.num_rows
        lf = pl.scan_parquet(f).select(columns)
        if rows <= batch_rows:
            yield lf.collect()
        else:
            for start in range(0, rows, batch_rows):
                yield lf.slice(start, batch_rows).collect()


def results_dir(data_dir: str | Path, kind: str, trace_id: str) -> Path:
    return Path(data_dir) / "results" / kind / trace_id


def _write_atomic(df: pl.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    df.write_parquet(tmp)
    os.replace(tmp, path)
    return path


def simulate(trace: TraceRef, data_dir: str | Path | None, policy: str, cache_bytes: int,
             page_size: int = 4096, interval: str | int | None = "60s", params: dict | None = None,
             batch_rows: int = DEFAULT_BATCH_ROWS, progress: Progress | None = None) -> dict:
    """Replay ``trace`` through one cache policy; returns the summary (requests, pages, hits,
    hit_ratio, byte_hit_ratio, the model's other counters, and ``distinct_pages``: pages any
    request touches, trims included) and writes summary and
    per-interval Parquet under ``data_dir`` (skipped when ``data_dir`` is None; no per-interval
    metrics when ``interval`` is None)."""
    model = cache_model(policy, cache_bytes, page_size, **(params or {}))
    state = model.new_state()
    builder = ChunkBuilder(model.page_size_bytes)
    agg = IntervalAggregator(interval) if interval is not None else None
    total = total_rows(trace)
    done = 0
    for chunk in prefetch(builder.build(df) for df in prefetch(read_frames(trace, batch_rows))):
        outcomes = model.replay(state, chunk)
        if agg is not None:
            agg.add(outcome_frame(chunk, outcomes))
        done += chunk.n_requests
        if progress:
            progress(done, total)
    c = model.counters(state)
    summary = {"trace_id": trace.trace_id, "policy": model.name, "cache_bytes": model.cache_bytes,
               "page_size": model.page_size_bytes, "distinct_pages": builder.ids.n_ids,
               "model_version": model_version(CACHE_MODEL), **c}
    if data_dir is not None:
        out = results_dir(data_dir, "simulate", trace.trace_id) / f"{model.name}-{model.cache_bytes}-{model.page_size_bytes}"
        _write_atomic(pl.DataFrame([summary]), out / "summary.parquet")
        if agg is not None:
            intervals = agg.result().with_columns(pl.lit(trace.trace_id).alias("trace_id"),
                                                  pl.lit(model.name).alias("policy"),
                                                  pl.lit(model.cache_bytes).alias("cache_bytes"))
            _write_atomic(intervals, out / "intervals.parquet")
        summary["results_dir"] = str(out)
    return summary


def mrc(trace: TraceRef, data_dir: str | Path | None, page_size: int = 4096,
        sizes: Sequence[int] | None = None, method: str = "exact", rate: float | None = None, max_pages: int = 0,
        n_sizes: int = 20, batch_rows: int = DEFAULT_BATCH_ROWS, progress: Progress | None = None) -> pl.DataFrame:
    """LRU hit-ratio curve of ``trace`` at ``sizes`` (bytes; default ``n_sizes`` log-spaced sizes
    up to the footprint). ``method``: ``exact`` (stack distances) or ``shards``: fixed-rate at
    ``rate`` (default 0.01), or fixed-size with at most ``max_pages`` sampled pages when
    ``max_pages`` > 0 (starting at ``rate``, default 1.0, and lowering it as pages arrive).
    Returns the result rows and writes them to ``mrc_path`` under ``data_dir`` (unless None)."""
    page_size = check_page_size(page_size)
    if method not in ("exact", "shards"):
        raise ValueError(f"unknown MRC method {method!r}: use exact or shards")
    if method == "exact" and (rate is not None or max_pages):
        raise ValueError("the sampling rate and max_pages apply to the shards method only, not exact")
    if sizes is not None:
        if not len(sizes):
            raise ValueError("no cache sizes given (None: the default sizes)")
        bad = [s for s in sizes if s < page_size]
        if bad:
            raise ValueError(f"cache size(s) {bad} B smaller than one {page_size} B page")
    builder = ChunkBuilder(page_size)
    total = total_rows(trace)
    done = 0
    if method == "exact":
        sd = StackDistances()
        for chunk in prefetch(builder.build(df) for df in prefetch(read_frames(trace, batch_rows))):
            ids, nbytes = chunk.page_id, chunk.page_bytes
            if chunk.op.size and chunk.op.max() > OP_WRITE:
                access = chunk.op[chunk.page_req] <= OP_WRITE
                ids, nbytes = ids[access], nbytes[access]
            sd.update(ids, nbytes, n_ids=chunk.n_ids)
            done += chunk.n_requests
            if progress:
                progress(done, total)
        footprint = sd.distinct_pages
        estimator, sample_rate, name = sd, 1.0, "exact"
    else:
        sh = Shards(rate=rate if rate is not None else (1.0 if max_pages else 0.01), max_pages=max_pages)
        for n, keys, nbytes in prefetch((df.height, *builder.page_keys(df))
                                         for df in prefetch(read_frames(trace, batch_rows))):
            sh.update(keys, nbytes)
            done += n
            if progress:
                progress(done, total)
        footprint = int(round(sh.cold[0]))
        estimator, sample_rate = sh, sh.current_rate
        name = "shards_max" if max_pages else "shards"
    if sizes is None and footprint == 0:
        raise LookupError(f"trace {trace.trace_id}: no page access {'sampled' if method != 'exact' else 'seen'}, "
                          "so no default cache sizes (give sizes)")
    cache_sizes = list(sizes) if sizes is not None else default_sizes(footprint, page_size, n_sizes)
    caps = np.asarray(cache_sizes, dtype=np.int64) // page_size
    hr, bhr = estimator.hit_ratios(caps)
    rows = curve_frame(trace.trace_id, page_size, cache_sizes, hr, bhr, name, sample_rate, model_version(CACHE_MODEL))
    if data_dir is not None:
        _write_atomic(rows, mrc_path(data_dir, trace.trace_id, name, page_size, sample_rate))
    return rows


def mrc_path(data_dir: str | Path, trace_id: str, method: str, page_size: int, sample_rate: float) -> Path:
    """Where ``mrc`` writes a curve (``method`` as in its rows: exact, shards or shards_max)."""
    suffix = "" if method == "exact" else f"-{sample_rate:.6g}"
    return results_dir(data_dir, "mrc", trace_id) / f"{method}-{page_size}{suffix}.parquet"
