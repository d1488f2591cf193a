"""Replay steps: one cache policy at one size (``simulate``) and hit-ratio curves (``mrc``).

Plain functions called the same way by the CLI, the DAGs and the tests. Both stream an ingested
trace in time order, segment by segment (bounded memory; identical results for any segment size), and
write Parquet under the data directory for the load step::

    results/simulate/<trace_id>/<policy>-<cache_bytes>-<page_size>/summary.parquet
    results/simulate/<trace_id>/<policy>-<cache_bytes>-<page_size>/intervals.parquet
    results/mrc/<trace_id>/<method>-<page_size>[-<rate>].parquet

Both record the ``model_version`` that produced them (``replay.version.CACHE_MODEL``: a hash of
the cache kernels' and curve code's source). They are recomputed on every call, never returned
from disk, so a model change cannot serve stale numbers; the version says which code wrote a file.

A single-volume trace is read straight from its Parquet files (already in time order); a
multi-volume trace goes through the catalog's DuckDB merge.

**Page streams.** The first replay of a trace at a page size also writes what it prepared (dense
page ids and the per-request columns, ``replay.page_stream``) to
``traces/<trace_id>/pages/<page_size>-<key>/``; later replays at that page size read it instead of
the Parquet files (``TraceSegments``). The key hashes the trace id, its data version, the source's
sha256, the page size and the source of the code that prepares pages (``STREAM_CODE``), so a
re-ingest (which replaces the trace directory, streams included) or a code change never serves an
old stream. A stream is written in a staging directory and renamed into place once complete; a
stream that fails its checks is removed and the trace read again.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import polars as pl

from pipelines.catalog import PAGES_DIR, TraceRef
from pipelines.dataset import Staging, key_of, remove_stale_staging
from pipelines.files import write_parquet
from pipelines.progress import Progress
from replay.intervals import CacheIntervals
from replay.kernels import cache_model
from replay.model import Segment
from replay.mrc import AveragedShards, Shards, StackDistances, curve_frame, default_sizes
from replay.page_stream import PageStream, PageStreamWriter, StreamError
from replay.pages import SegmentBuilder, check_page_size, segment_head, segment_page_keys
from replay.version import CACHE_MODEL, model_version
from schemas.trace import OP_WRITE
from traces.source import prefetch

REPLAY_COLUMNS = ["ts_ns", "volume", "op", "offset", "size"]
DEFAULT_BATCH_ROWS = 1 << 21
#: requests per segment of simulate and mrc: small enough that the few segments in flight (read,
#: prepared, replayed) stay well below the kernel state, large enough that the per-segment Python
#: work stays negligible. 10 M requests, LRU, whole process: 128 k -> first run 365-395 MiB peak
#: RSS (below libCacheSim's 402-435), 1.39 / 1.77 s best (Zipf / uniform); 256 k -> 399-431 MiB,
#: 1.33 / 1.76 s; repeat runs (page stream) alike at both; 1 M: 0.43 / 0.58 GB; 64 k: 371 MiB
#: but +0.2-0.3 s
CACHE_BATCH_ROWS = 1 << 17
T = TypeVar("T")

#: what decides a page stream's content besides the trace: page split, dense ids, the stream
#: format, the segment layout, and the reading of the trace in time order (here and the catalog)
STREAM_CODE = ("replay.pages", "replay.ids", "replay.page_stream", "replay.model", "pipelines.simulate",
               "pipelines.catalog", "schemas.trace")


def total_rows(trace: TraceRef) -> int:
    if trace.manifest.get("rows_accepted") is not None:
        return int(trace.manifest["rows_accepted"])
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in trace.volume_files)


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
    import pyarrow.parquet as pq

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


def page_stream_key(trace: TraceRef, page_size: int) -> str:
    """16 hex digits naming the page stream of ``trace`` at ``page_size`` with the current code."""
    what = [trace.trace_id, trace.data_version, trace.manifest.get("sha256"), int(page_size),
            model_version(STREAM_CODE)]
    return key_of(what)


def page_stream_dir(trace: TraceRef, page_size: int) -> Path:
    return trace.path / PAGES_DIR / f"{page_size}-{page_stream_key(trace, page_size)}"


def open_page_stream(trace: TraceRef, page_size: int) -> PageStream | None:
    """The trace's finished page stream at ``page_size``, or None (none yet, or one that fails
    its checks: then it is removed, to be written again)."""
    d = page_stream_dir(trace, page_size)
    if not d.is_dir():
        return None
    try:
        return PageStream(d, d.name.rpartition("-")[2])
    except StreamError:
        shutil.rmtree(d, ignore_errors=True)
        return None


class TraceSegments:
    """The segments of ``trace`` at ``page_size`` in time order, for any model: from the trace's
    page stream when one is ready, else built from its Parquet files (``SegmentBuilder``), and then,
    with ``record``, written as its page stream on the way (published once the last segment is
    written; an interrupted or failed pass leaves nothing). ``n_ids`` and ``volumes`` are the
    trace's distinct pages and volume names (dense id order) seen so far (all of them with a stream).
    ``max_requests``: only the trace's first requests (the last segment cut; no stream is written).

    A stream that turns out damaged while it is read raises ``StreamError``; ``replay_with_stream``
    then removes it and runs again from the Parquet files."""

    def __init__(self, trace: TraceRef, page_size: int, batch_rows: int = DEFAULT_BATCH_ROWS, record: bool = True,
                 max_requests: int | None = None):
        self.trace, self.page_size, self.batch_rows = trace, check_page_size(page_size), batch_rows
        self.max_requests = max_requests
        self.record = record and max_requests is None  # a stream is written from a whole pass only
        self.stream = open_page_stream(trace, self.page_size)
        self.builder = SegmentBuilder(self.page_size)
        self.total = self.stream.n_requests if self.stream else total_rows(trace)
        if max_requests is not None:
            self.total = min(self.total, max_requests)

    @property
    def from_stream(self) -> bool:
        return self.stream is not None

    @property
    def n_ids(self) -> int:
        """Distinct pages: of the whole trace from a stream, else of the segments built so far."""
        return self.stream.n_ids if self.stream else self.builder.ids.n_ids

    @property
    def volumes(self) -> list[str]:
        """Volume names by dense volume id (from a stream: all of them from the start)."""
        return list(self.stream.volumes) if self.stream else list(self.builder.volumes)

    def __iter__(self) -> Iterator[Segment]:
        if self.max_requests is None:
            yield from self._segments()
            return
        left = self.max_requests
        for segment in self._segments():
            if left <= 0:
                return
            yield segment_head(segment, left) if segment.n_requests > left else segment
            left -= segment.n_requests

    def _segments(self) -> Iterator[Segment]:
        if self.stream is not None:
            yield from prefetch(self.stream.segments(self.batch_rows), depth=1)
            return
        builder = self.builder
        built = (builder.build(df) for df in prefetch(read_frames(self.trace, self.batch_rows), depth=1))
        if not self.record:
            yield from prefetch(built, depth=1)
        else:
            yield from self._recorded(built, builder)

    def _recorded(self, built: Iterator[Segment], builder: SegmentBuilder) -> Iterator[Segment]:
        """``built``, written as the page stream on the way. Writing is an optimisation: a trace
        directory that cannot be written (read-only, disk full) costs the stream, not the replay."""
        root = self.trace.path / PAGES_DIR
        final = page_stream_dir(self.trace, self.page_size)
        with contextlib.ExitStack() as cleanup:
            try:
                if root.is_dir():
                    remove_stale_staging(root)
                stage = cleanup.enter_context(Staging(root))
                writer = PageStreamWriter(stage.path, self.page_size, final.name.rpartition("-")[2])
                cleanup.callback(writer.close)
            except OSError:
                writer = None

            def write(segments: Iterator[Segment]) -> Iterator[Segment]:
                nonlocal writer
                for segment in segments:
                    if writer is not None:
                        try:
                            writer.add(segment)  # in the preparing thread, while the kernel runs
                        except OSError:
                            writer = None
                    yield segment

            yield from prefetch(write(built), depth=1)
            if writer is None:
                return
            try:
                writer.finish(builder.ids.n_ids, list(builder.volumes),
                              {"trace_id": self.trace.trace_id, "data_version": self.trace.data_version})
                for old in root.glob(f"{self.page_size}-*"):  # streams of older code at this page size
                    if old.name != final.name:
                        shutil.rmtree(old, ignore_errors=True)
                stage.publish(final.name)
            except OSError:
                pass  # left unpublished: the staging directory is removed on the way out


def replay_with_stream(trace: TraceRef, page_size: int, run: Callable[[TraceSegments], T],
                       batch_rows: int = DEFAULT_BATCH_ROWS, record: bool = True) -> T:
    """``run(segments)`` over ``TraceSegments(trace, page_size, ...)``; when the page stream proves
    damaged mid-way, it is removed and ``run`` called again on segments built from the Parquet
    files (``run`` must start from a fresh state each call)."""
    segments = TraceSegments(trace, page_size, batch_rows, record)
    try:
        return run(segments)
    except StreamError:
        if not segments.from_stream:
            raise
        shutil.rmtree(segments.stream.dir, ignore_errors=True)
    return run(TraceSegments(trace, page_size, batch_rows, record))


def _accesses(segment: Segment, *page_values: np.ndarray) -> tuple[np.ndarray, ...]:
    """``page_values`` (per page access) of the read/write accesses only (trims and flushes are
    not cache accesses)."""
    if segment.op.size and segment.op.max() > OP_WRITE:
        access = segment.op[segment.page_req] <= OP_WRITE
        return tuple(v[access] for v in page_values)
    return page_values


def results_dir(data_dir: str | Path, kind: str, trace_id: str) -> Path:
    return Path(data_dir) / "results" / kind / trace_id


def simulate(trace: TraceRef, data_dir: str | Path | None, policy: str, cache_bytes: int,
             page_size: int = 4096, interval: str | int | None = "60s", params: dict | None = None,
             batch_rows: int = CACHE_BATCH_ROWS, progress: Progress | None = None, page_stream: bool = True) -> dict:
    """Replay ``trace`` through one cache policy; returns the summary (requests, pages, hits,
    hit_ratio, byte_hit_ratio, the model's other counters, and ``distinct_pages``: pages any
    request touches, trims included) and writes summary and
    per-interval Parquet under ``data_dir`` (skipped when ``data_dir`` is None; no per-interval
    metrics when ``interval`` is None). ``page_stream``: write the trace's page stream when it
    has none at this page size (it is read whenever present)."""
    model = cache_model(policy, cache_bytes, page_size, **(params or {}))

    def run(segments: TraceSegments):
        state = model.new_state()
        state.ensure_ids(segments.n_ids)  # a stream knows every distinct page at once: sized once, not doubled
        agg = CacheIntervals(interval) if interval is not None else None
        done = 0
        # the kernel in a thread of its own (it releases the GIL), one segment or two ahead of the
        # tally of its hit flags here: 100 M one-page requests, ~0.5 s of a 4-5 s run overlapped
        hits = prefetch(((segment, model.page_hits(state, segment)) for segment in segments), depth=2)
        for segment, hit in hits:
            model.record_hits(state, segment, hit, agg)
            done += segment.n_requests
            if progress:
                progress(done, segments.total)
        return state, agg, segments.n_ids

    state, agg, n_ids = replay_with_stream(trace, model.page_size_bytes, run, batch_rows, page_stream)
    c = model.counters(state)
    summary = {"trace_id": trace.trace_id, "policy": model.name, "cache_bytes": model.cache_bytes,
               "page_size": model.page_size_bytes, "distinct_pages": n_ids,
               "model_version": model_version(CACHE_MODEL), **c}
    if data_dir is not None:
        out = results_dir(data_dir, "simulate", trace.trace_id) / f"{model.name}-{model.cache_bytes}-{model.page_size_bytes}"
        write_parquet(pl.DataFrame([summary]), out / "summary.parquet")
        if agg is not None:
            intervals = agg.result().with_columns(pl.lit(trace.trace_id).alias("trace_id"),
                                                  pl.lit(model.name).alias("policy"),
                                                  pl.lit(model.cache_bytes).alias("cache_bytes"))
            write_parquet(intervals, out / "intervals.parquet")
        summary["results_dir"] = str(out)
    return summary


def mrc(trace: TraceRef, data_dir: str | Path | None, page_size: int = 4096,
        sizes: Sequence[int] | None = None, method: str = "exact", rate: float | None = None, max_pages: int = 0,
        n_sizes: int = 20, batch_rows: int = CACHE_BATCH_ROWS, progress: Progress | None = None,
        page_stream: bool = True, seeds: int = 1) -> pl.DataFrame:
    """LRU hit-ratio curve of ``trace`` at ``sizes`` (bytes; default ``n_sizes`` log-spaced sizes
    up to the footprint). ``method``: ``exact`` (stack distances) or ``shards``: fixed-rate at
    ``rate`` (default 0.01), or fixed-size with at most ``max_pages`` sampled pages when
    ``max_pages`` > 0 (starting at ``rate``, default 1.0, and lowering it as pages arrive).
    Returns the result rows and writes them to ``mrc_path`` under ``data_dir`` (unless None).
    ``seeds`` > 1 (fixed-rate SHARDS only): that many disjoint samples at ``rate``, curves averaged
    (``replay.mrc.AveragedShards``). The exact method reads and writes the page stream like
    ``simulate``; SHARDS reads it when present and never writes one (it needs no dense ids)."""
    page_size = check_page_size(page_size)
    if method not in ("exact", "shards"):
        raise ValueError(f"unknown MRC method {method!r}: use exact or shards")
    if method == "exact" and (rate is not None or max_pages or seeds != 1):
        raise ValueError("the sampling rate, max_pages and seeds apply to the shards method only, not exact")
    if seeds < 1 or (seeds > 1 and max_pages):
        raise ValueError(f"seeds must be >= 1, and 1 with max_pages (fixed-size SHARDS); got {seeds}")
    if sizes is not None:
        if not len(sizes):
            raise ValueError("no cache sizes given (None: the default sizes)")
        bad = [s for s in sizes if s < page_size]
        if bad:
            raise ValueError(f"cache size(s) {bad} B smaller than one {page_size} B page")
    if method == "exact":
        def run(segments: TraceSegments) -> StackDistances:
            sd = StackDistances()
            done = 0
            for segment in segments:
                # a stream knows every distinct page at once: the tables are sized once, not doubled
                sd.update(*_accesses(segment, segment.page_id, segment.page_bytes), n_ids=max(segment.n_ids, segments.n_ids))
                done += segment.n_requests
                if progress:
                    progress(done, segments.total)
            return sd

        sd = replay_with_stream(trace, page_size, run, batch_rows, page_stream)
        footprint = sd.distinct_pages
        estimator, sample_rate, name = sd, 1.0, "exact"
    else:
        def run_shards(segments: TraceSegments) -> Shards | AveragedShards:
            r = rate if rate is not None else (1.0 if max_pages else 0.01)
            sh = AveragedShards(rate=r, seeds=seeds) if seeds > 1 else Shards(rate=r, max_pages=max_pages)
            if segments.from_stream:  # page keys from the stream: no Parquet read, no page split
                items = ((c.n_requests, *_accesses(c, segment_page_keys(c), c.page_bytes)) for c in segments)
            else:  # keys only: SHARDS needs no dense ids, so no stream is written here
                builder = SegmentBuilder(page_size)
                items = prefetch((df.height, *builder.page_keys(df))
                                 for df in prefetch(read_frames(trace, batch_rows), depth=1))
            done = 0
            for n, keys, nbytes in items:
                sh.update(keys, nbytes)
                done += n
                if progress:
                    progress(done, segments.total)
            return sh

        sh = replay_with_stream(trace, page_size, run_shards, batch_rows, record=False)
        footprint = int(round(sh.cold[0]))
        estimator, sample_rate = sh, sh.current_rate
        name = "shards_max" if max_pages else "shards"
    if sizes is None and footprint == 0:
        raise LookupError(f"trace {trace.trace_id}: no page access {'sampled' if method != 'exact' else 'seen'}, "
                          "so no default cache sizes (give sizes)")
    cache_sizes = list(sizes) if sizes is not None else default_sizes(footprint, page_size, n_sizes)
    caps = np.asarray(cache_sizes, dtype=np.int64) // page_size
    hr, bhr = estimator.hit_ratios(caps)
    rows = curve_frame(trace.trace_id, page_size, cache_sizes, hr, bhr, name, sample_rate, model_version(CACHE_MODEL),
                       footprint)
    if data_dir is not None:
        write_parquet(rows, mrc_path(data_dir, trace.trace_id, name, page_size, sample_rate))
    return rows


def mrc_path(data_dir: str | Path, trace_id: str, method: str, page_size: int, sample_rate: float) -> Path:
    """Where ``mrc`` writes a curve (``method`` as in its rows: exact, shards or shards_max)."""
    suffix = "" if method == "exact" else f"-{sample_rate:.6g}"
    return results_dir(data_dir, "mrc", trace_id) / f"{method}-{page_size}{suffix}.parquet"
