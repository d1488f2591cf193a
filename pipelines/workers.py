"""Independent replays on every core: ``compare --jobs N`` runs its scenarios on N processes, this
one and N - 1 workers (each run writes only its own run directory, so they need no lock). Each takes
the next scenario when it is free (longest first when their costs are given), so this process,
whose imports and kernels are loaded, is never idle while a worker starts.

Workers are started with ``spawn``, not ``fork``: Polars and the progress display run threads, and
a forked child of a threaded process can deadlock on a lock a thread held at the fork. A spawned
worker imports the package and loads the compiled kernels from the on-disk numba cache
(``replay.jit``), ~1-2 s, instead of compiling them again.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: a worker's queue for ``(call index, done, total)`` progress messages (set by ``_start``)
_progress_queue = None
#: how often the parent reads the workers' progress messages, in seconds
POLL_S = 0.25


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _start(q) -> None:
    """A worker's initializer: keep the parent's progress queue."""
    global _progress_queue
    _progress_queue = q


def _call_reporting(fn: Callable[..., T], index: int, args: tuple) -> T:
    """``fn(*args, progress=...)`` in a worker, its progress sent to the parent as ``(index, done, total)``."""
    q = _progress_queue
    return fn(*args, progress=lambda done, total: q.put((index, done, total)))


@contextlib.contextmanager
def _one_polars_thread():
    """Workers started inside get one Polars thread (``POLARS_MAX_THREADS``, read when Polars is
    imported, so it must be in the environment they are spawned with). ``jobs`` processes already
    fill the cores; a second Polars thread per process only contends with the others' kernels (a 10 M
    request replay spent ~0.3 CPU-s more with two threads than with one, in the same time)."""
    before = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["POLARS_MAX_THREADS"]
        else:
            os.environ["POLARS_MAX_THREADS"] = before


def run_all(fn: Callable[..., T], calls: Sequence[tuple], jobs: int,
            done: Callable[[int, int], Any] | None = None,
            each: Callable[[int, int, int], Any] | None = None,
            cost: Sequence[float] | None = None) -> list[T]:
    """``[fn(*args) for args in calls]``, in order, on ``jobs`` processes: this one and ``jobs - 1``
    workers, each taking the next call when it is free (this process is warm: its imports and
    compiled kernels are loaded, a worker's cost ~1.2 CPU-s). ``done(finished, total)`` after each
    call. ``fn`` must be a module-level function and its arguments picklable. A worker's exception
    is raised here, as it was raised there.

    ``each(index, done, total)``: the progress of call ``index`` inside ``fn``, which is then called
    with a ``progress=`` keyword (in a worker, it reaches ``each`` in this process through a queue,
    read every ``POLL_S`` seconds and whenever this process's own call reports).

    ``cost``: each call's expected run time (any unit): calls are taken longest first, and this
    process, free at once, takes the first (a worker starts ~1 s later). Longest-processing-time
    first ends within 4/3 - 1/(3 x processes) of the best split (Graham 1969); four uneven replays on
    two processes: 9.2-9.4 s in the given order, 8.0-8.5 s longest first (docs/performance.md)."""
    n = len(calls)
    results: list[Any] = [None] * n
    order = sorted(range(n), key=lambda i: -cost[i]) if cost is not None else list(range(n))
    state = {"next": 0, "stop": False, "count": 0}

    def record(i: int, value: Any) -> None:
        results[i] = value
        state["count"] += 1
        if done:
            done(state["count"], n)

    if jobs <= 1 or n <= 1:
        for i, args in enumerate(calls):
            record(i, fn(*args, **({"progress": lambda d, t, i=i: each(i, d, t)} if each else {})))
        return results
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue() if each else None
    finished: queue.Queue = queue.Queue()  # (index, future) of each worker call that ended
    lock = threading.Lock()
    workers = min(jobs - 1, n - 1)

    def take() -> int | None:
        with lock:
            if state["stop"] or state["next"] >= n:
                return None
            state["next"] += 1
            return order[state["next"] - 1]

    def drain() -> None:
        while q is not None:
            try:
                each(*q.get_nowait())
            except queue.Empty:
                return

    def collect(block: bool) -> None:
        """Record the worker calls that ended, raising a worker's exception here; ``block``: wait
        for one at least."""
        while True:
            try:
                i, f = finished.get(timeout=POLL_S) if block else finished.get_nowait()
            except queue.Empty:
                drain()
                if block:
                    continue
                return
            drain()
            record(i, f.result())
            block = False

    with _one_polars_thread(), ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                                   initializer=_start if each else None,
                                                   initargs=(q,) if each else ()) as ex:
        def submit() -> None:
            i = take()
            if i is not None:
                f = ex.submit(_call_reporting, fn, i, calls[i]) if each else ex.submit(fn, *calls[i])
                f.add_done_callback(lambda f, i=i: (finished.put((i, f)), submit()))

        try:
            i = take()  # this process's first call, before the workers take theirs
            for _ in range(workers):
                submit()
            while i is not None:
                record(i, fn(*calls[i], **({"progress": lambda d, t, i=i: (each(i, d, t), drain())} if each else {})))
                collect(block=False)
                i = take()
            while state["count"] < n:
                collect(block=True)
        except BaseException:
            with lock:
                state["stop"] = True
            raise
    drain()  # what a worker sent just before it ended
    if q is not None:
        q.close()
    return results
