"""``pipelines.workers.run_all``: this process and N - 1 spawned workers share the calls."""

from __future__ import annotations

import os
import time

import pytest

from pipelines.workers import run_all


def _pid_after(i: int, sleep_s: float, progress=None) -> tuple[int, int]:
    if progress:
        progress(1, 2)
    time.sleep(sleep_s)
    if progress:
        progress(2, 2)
    return i, os.getpid()


def _fails(i: int) -> int:
    if i == 2:
        raise ValueError(f"call {i} failed")
    return i


def test_this_process_takes_calls_beside_the_worker_and_order_is_kept():
    seen, done = [], []
    out = run_all(_pid_after, [(i, 0.3) for i in range(5)], jobs=2, done=lambda k, n: done.append((k, n)),
                  each=lambda i, d, t: seen.append((i, d, t)))
    assert [i for i, _ in out] == list(range(5))
    pids = {p for _, p in out}
    assert os.getpid() in pids and len(pids) == 2  # call 0 ran here (the worker took call 1)
    assert out[0][1] == os.getpid() and out[1][1] != os.getpid()
    assert done == [(k, 5) for k in range(1, 6)]
    assert sorted(seen) == sorted((i, d, 2) for i in range(5) for d in (1, 2))  # workers' progress reached here


def _started(i: int, sleep_s: float) -> tuple[int, int, float]:
    t = time.monotonic()
    time.sleep(sleep_s)
    return i, os.getpid(), t


def test_calls_are_taken_longest_first_and_this_process_takes_the_longest():
    """With costs, the longest call starts here at once, the next longest goes to the worker, and
    this process takes the rest longest first; results stay in the order of the calls."""
    cost = [1.0, 5.0, 2.0, 4.0, 3.0]
    out = run_all(_started, [(i, 0.4) for i in range(5)], jobs=2, cost=cost)
    assert [i for i, _, _ in out] == list(range(5))
    here = sorted((t, i) for i, p, t in out if p == os.getpid())
    assert here[0][1] == 1 and out[3][1] != os.getpid()
    assert [cost[i] for _, i in here] == sorted((cost[i] for _, i in here), reverse=True)


def test_replays_are_ordered_by_what_their_scenarios_model():
    from pipelines.whatif import replay_cost
    from replay.scenario import load

    cost = {p: replay_cost(load(p)) for p in ("vnx5400-fastvp", "vnx5400-fastcache", "vnx5400", "aws-gp3",
                                             "violin6232", "vnx5500-snapshots")}
    assert sorted(cost, key=cost.get, reverse=True) == ["vnx5500-snapshots", "vnx5400-fastvp", "vnx5400-fastcache",
                                                        "vnx5400", "aws-gp3", "violin6232"]


def test_a_workers_exception_is_raised_here():
    with pytest.raises(ValueError, match="call 2 failed"):
        run_all(_fails, [(i,) for i in range(4)], jobs=2)


def test_one_job_runs_in_this_process():
    assert {p for _, p in run_all(_pid_after, [(i, 0.0) for i in range(3)], jobs=1)} == {os.getpid()}


def _polars_threads(i: int) -> tuple[int, int]:
    import polars as pl

    time.sleep(0.3)  # long enough for the workers to take calls
    return os.getpid(), pl.thread_pool_size()


def test_workers_run_one_polars_thread_and_this_process_keeps_its_own():
    import polars as pl

    before = os.environ.get("POLARS_MAX_THREADS")
    out = run_all(_polars_threads, [(i,) for i in range(6)], jobs=3)
    assert {n for p, n in out if p != os.getpid()} == {1}
    assert {n for p, n in out if p == os.getpid()} <= {pl.thread_pool_size()}
    assert os.environ.get("POLARS_MAX_THREADS") == before
