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
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_all(fn: Callable[..., T], calls: Sequence[tuple], jobs: int,
            done: Callable[[int, int], Any] | None = None) -> list[T]:
    """``[fn(*args) for args in calls]``, in order, on ``jobs`` processes (one: in this process);
    ``done(finished, total)`` after each call. ``fn`` must be a module-level function and its
    arguments picklable. A worker's exception is raised here, as it was raised there."""
    if jobs <= 1 or len(calls) <= 1:
        out = []
        for i, args in enumerate(calls):
            out.append(fn(*args))
            if done:
                done(i + 1, len(calls))
        return out
    results: list[Any] = [None] * len(calls)
    with ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = {ex.submit(fn, *args): i for i, args in enumerate(calls)}
        for n, f in enumerate(as_completed(futures), 1):
            results[futures[f]] = f.result()
            if done:
                done(n, len(calls))
    return results
