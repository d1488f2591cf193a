"""``tiercast warm``: compile every compiled function the commands use, or load it from numba's
cache, once, so that the first replay, simulation or curve of a new install or worker compiles
nothing (~37 s on a quiet machine, minutes under load).

numba compiles a function at its first call, one specialization per combination of argument
types (a read-only array is another type than a writable one: docs/architecture/pitfalls.md#numba), and ``replay.jit``
caches each on disk in :func:`replay.jit.cache_dir`. Which types reach a kernel, and which
kernels run at all, depends on the data and the path it takes: a trace's first pass builds its
segments from Parquet (volume ids made by numpy for a one-volume frame, read-only from Polars for
several) and writes its page stream, later passes read the stream (writable arrays); the dense-id
table leaves its direct map and grows only past a number of distinct pages. So instead of
calling kernels with made-up arguments warm runs the commands' own steps, in a temporary data
directory, on two small synthetic traces (:data:`TRACES`), each step as on a new trace and again
with the trace's page stream present: every preset of ``replay/scenarios`` through
``replay_trace``, a closed-loop sweep, every cache policy through ``simulate``, the exact and
SHARDS curves; and an iostat log through its reader.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.catalog import PAGES_DIR, TraceRef
from pipelines.progress import Progress

#: (pattern, requests per volume, region bytes, volumes): one volume, enough requests to run every
#: kernel of a replay (flushes, promotions, interval ends); two volumes (page keys beyond the
#: dense-id map's direct array) with more distinct pages than its table takes before it first
#: grows (half its initial slots, ``replay.ids.IdMap``). Small enough that the work takes no time.
TRACES = (("database", 3000, 64 << 20, 1), ("randrw-70-30", 24_000, 1 << 30, 2))
#: an ``iostat -x`` sample: device rows that take the reader's compiled fast path
IOSTAT_SAMPLE = """Linux 5.15.0 (warm) 01/02/2026 _x86_64_ (2 CPU)

01/02/2026 10:00:00 AM
Device            r/s     w/s     rkB/s     wkB/s   rrqm/s   wrqm/s  %rrqm  %wrqm r_await w_await aqu-sz rareq-sz wareq-sz  svctm  %util
sda              1.00    2.00      4.00      8.00     0.00     0.00   0.00   0.00    0.50    0.70   0.00     4.00     4.00   0.30   0.10

01/02/2026 10:00:01 AM
Device            r/s     w/s     rkB/s     wkB/s   rrqm/s   wrqm/s  %rrqm  %wrqm r_await w_await aqu-sz rareq-sz wareq-sz  svctm  %util
sda              3.00    4.00     12.00     16.00     0.00     0.00   0.00   0.00    0.60    0.80   0.01     4.00     4.00   0.30   0.20
"""


@dataclass(frozen=True)
class Warmed:
    """What :func:`warm` did: where the compiled code is, how long it took, and how many
    compiled specializations (function, argument types) the cache holds afterwards."""

    cache_dir: Path
    seconds: float
    kernels: int


def steps(trace: TraceRef) -> list[tuple[str, int, Callable[[], object]]]:
    """(label, page size, call) of every command step warm runs on ``trace``; nothing is written
    but the trace's page streams."""
    from pipelines import replay as rp
    from pipelines import simulate as sim
    from replay.kernels import POLICIES
    from replay.scenario import load, preset_names

    out: list[tuple[str, int, Callable[[], object]]] = []
    for name in preset_names():
        sc = load(name)
        out.append((f"replay {name}", sc.dram.page_bytes, lambda sc=sc: rp.replay_trace(trace, None, sc)))
    sc = load("vnx5400")
    out.append(("sweep vnx5400", sc.dram.page_bytes, lambda: rp.sweep_trace(trace, None, sc, [4])))
    out += [(f"simulate {p}", 4096, lambda p=p: sim.simulate(trace, None, p, 1 << 20)) for p in POLICIES]
    out += [("mrc exact", 4096, lambda: sim.mrc(trace, None)),
            ("mrc shards", 4096, lambda: sim.mrc(trace, None, method="shards", rate=0.5)),
            ("mrc shards --max-pages", 4096, lambda: sim.mrc(trace, None, method="shards", max_pages=64)),
            ("mrc shards --seeds", 4096, lambda: sim.mrc(trace, None, method="shards", rate=0.25, seeds=2))]
    return out


def _both_ways(trace: TraceRef, page_size: int, call: Callable[[], object]) -> None:
    """``call()`` as on a new trace (segments built from its Parquet files: arrays Polars hands out
    read-only), then with the trace's page stream at ``page_size`` present (what later commands
    read: writable arrays, another specialization of every kernel they reach)."""
    from pipelines.simulate import TraceSegments

    shutil.rmtree(trace.path / PAGES_DIR, ignore_errors=True)
    call()
    for _ in TraceSegments(trace, page_size):  # writes the stream when the call did not
        pass
    call()


def cached_kernels() -> int:
    """Compiled specializations in the cache (one ``.nbc`` file each) of the kernels of ``replay``
    and of the iostat reader."""
    from replay.jit import cache_dir
    from traces.iostat import KERNEL_MODULES as IOSTAT

    return sum(1 for d in (cache_dir(), cache_dir(IOSTAT)) for _ in d.rglob("*.nbc"))


def write_trace(path: Path, pattern: str, requests: int, region_bytes: int, volumes: int) -> None:
    """A synthetic trace of ``volumes`` volumes (``requests`` each, seeds 1, 2, ...) in time order."""
    import polars as pl
    import pyarrow.parquet as pq

    from schemas.trace import ARROW_SCHEMA
    from traces import synth

    df = pl.concat([synth.generate(synth.pattern(pattern, requests=requests, region_bytes=region_bytes,
                                                 volume=f"warm{v}", seed=v + 1)) for v in range(volumes)])
    pq.write_table(df.sort("ts_ns", maintain_order=True).to_arrow().cast(ARROW_SCHEMA), path)


def warm(progress: Progress | None = None, log: Callable[[str], None] | None = None) -> Warmed:
    """Run every step of :func:`steps` on each of :data:`TRACES`, and an iostat read, in a
    temporary data directory; nothing is left behind but numba's cache."""
    import warnings

    from pipelines.catalog import find_trace
    from pipelines.ingest import ingest_file
    from pipelines.ingest_logs import ingest_log_file
    from replay.jit import cache_dir

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tiercast-warm-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # presets with sections not yet modelled say so on every replay
        d = Path(tmp) / "data"
        traces = []
        for i, spec in enumerate(TRACES):
            write_trace(Path(tmp) / f"warm{i}.parquet", *spec)
            traces.append(find_trace(d, ingest_file(Path(tmp) / f"warm{i}.parquet", d, validate="off").trace_id))
        todo = [(trace, *step) for trace in traces for step in steps(trace)]
        total = len(todo) + 1
        for i, (trace, label, page_size, call) in enumerate(todo):
            if log:
                log(label)
            _both_ways(trace, page_size, call)
            if progress:
                progress(i + 1, total)
        log_file = Path(tmp) / "warm.iostat"
        log_file.write_text(IOSTAT_SAMPLE)
        ingest_log_file(log_file, d, fmt="iostat", validate="off")
        if progress:
            progress(total, total)
    return Warmed(cache_dir(), time.perf_counter() - started, cached_kernels())
