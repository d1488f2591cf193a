"""Independent replays on every core: ``compare --jobs N`` runs its scenarios in N worker
processes (each run writes only its own run directory, so they need no lock).

Workers are started with ``spawn``, not ``fork``: Polars and the progress display run threads, and
a forked child of a threaded process can deadlock on a lock a thread held at the fork. A spawned
worker imports the package and loads the compiled kernels from the on-disk numba cache
(``replay.jit``), ~1-2 s, instead of compiling them again.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
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


def run_all(fn: Callable[..., T], calls: Sequence[tuple], jobs: int,
            done: Callable[[int, int], Any] | None = None,
            each: Callable[[int, int, int], Any] | None = None) -> list[T]:
    """``[fn(*args) for args in calls]``, in order, on ``jobs`` processes (one: in this process);
    ``done(finished, total)`` after each call. ``fn`` must be a module-level function and its
    arguments picklable. A worker's exception is raised here, as it was raised there.

    ``each(index, done, total)``: the progress of call ``index`` inside ``fn``, which is then called
    with a ``progress=`` keyword (in a worker, it reaches ``each`` in this process through a queue,
    read every ``POLL_S`` seconds)."""
    if jobs <= 1 or len(calls) <= 1:
        out = []
        for i, args in enumerate(calls):
            kw = {"progress": lambda d, t, i=i: each(i, d, t)} if each else {}
            out.append(fn(*args, **kw))
            if done:
                done(i + 1, len(calls))
        return out
    results: list[Any] = [None] * len(calls)
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue() if each else None

    def drain() -> None:
        while q is not None:
            try:
                each(*q.get_nowait())
            except queue.Empty:
                return

    with ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=ctx,
                             initializer=_start if each else None, initargs=(q,) if each else ()) as ex:
        futures = {(ex.submit(_call_reporting, fn, i, args) if each else ex.submit(fn, *args)): i
                   for i, args in enumerate(calls)}
        pending, n = set(futures), 0
        while pending:
            finished, pending = wait(pending, timeout=POLL_S if each else None, return_when=FIRST_COMPLETED)
            drain()
            for f in finished:
                results[futures[f]] = f.result()
                n += 1
                if done:
                    done(n, len(calls))
    drain()  # what a worker sent just before it ended
    if q is not None:
        q.close()
    return results
