"""Orchestration overhead: ``tiercast_replay`` on ``--traces`` traces x 3 scenarios under a real
Airflow (``airflow standalone``, LocalExecutor, parallelism 2; or with ``--executor celery`` the
CeleryExecutor: redis-server and two Celery workers of concurrency 1, tests/standalone.py),
against the same steps called directly in one process, one after another
(``pipelines.orchestrate``: plan, replays, load).

The traces: synthetic (seed 000's database pattern, 4 KiB random reads, 8 KiB random writes in
turn), ``--requests`` each, ingested before either run (not timed). Airflow's time is the DAG
run's start to end as the scheduler recorded it (queueing of the first task included, the
trigger CLI call and start-up of the standalone processes not); the direct time is the steps'
wall time. Both must give the same warehouse rows. With ``--warm`` (default) the workers use the
same numba cache as the direct run (``replay.numba_cache``); ``--no-warm`` shows a new worker's
first run, whose first replays compile the kernels into an empty ``NUMBA_CACHE_DIR``. With
``--warmup`` (default) a ``tiercast_ingest`` run on the empty landing folder goes first: the first
task after start-up waited ~35 s for the API server, once (a long-running scheduler pays that
once, not per run). ``--preload`` (default): ``pipelines.airflow_preload`` in the scheduler.

    .venv/bin/python benchmarks/orchestration.py               # 4 traces x 3 scenarios
    .venv/bin/python benchmarks/orchestration.py --task-requests 0   # ... a replay task per pair
    .venv/bin/python benchmarks/orchestration.py --executor celery --traces 2 --requests 20000
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)  # benchmarks/array.py would shadow the standard library's ``array``
sys.path.insert(1, str(ROOT / "tests"))

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime  # noqa: E402

from standalone import CeleryCluster, Standalone  # noqa: E402
from test_scheduler import WHATIF, data_root, serial  # noqa: E402

from pipelines.load import query  # noqa: E402

SCENARIOS = ["vnx1-flare", "vnx2-mcx", "vnx5400"]


def _s(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=4)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--warm", action=argparse.BooleanOptionalAction, default=True,
                    help="workers use this process's numba cache (else they compile into an empty one first)")
    ap.add_argument("--executor", choices=("local", "celery"), default="local")
    ap.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                    help="run tiercast_ingest on an empty landing folder first (its tasks warm the API server "
                         "and the workers); else the replay run is the first after start-up")
    ap.add_argument("--preload", action=argparse.BooleanOptionalAction, default=True,
                    help="import the data stack before the task processes fork (pipelines.airflow_preload)")
    ap.add_argument("--scenarios", type=int, default=len(SCENARIOS), choices=range(1, len(SCENARIOS) + 1))
    ap.add_argument("--task-requests", type=int, default=None,
                    help="replay.toml task_requests: requests of the pairs one replay task runs (0: a task per "
                         "pair; default: tiercast's, 4 M)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="work in this (new) directory and keep it: Airflow's task logs are under airflow/logs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True)
            tmp = args.keep
        root = tmp / "data"
        data_root(root, args.traces, args.requests, SCENARIOS[:args.scenarios])
        if args.task_requests is not None:
            with open(root / "replay.toml", "a") as f:
                f.write(f"task_requests = {args.task_requests}\n")
        shutil.copytree(root, tmp / "serial")
        t = time.perf_counter()
        rows = serial(tmp / "serial")
        direct_s = time.perf_counter() - t
        t = time.perf_counter()
        cache = None if args.warm else tmp / "numba-cold"
        cluster = CeleryCluster(tmp / "airflow", root, workers=2, numba_cache=cache, preload=args.preload) \
            if args.executor == "celery" else \
            Standalone(tmp / "airflow", root, parallelism=2, numba_cache=cache, preload=args.preload)
        with cluster as af:
            started_s = time.perf_counter() - t
            warmup_s = None
            if args.warmup:  # the API server's and each worker's first task pay one-time costs
                t = time.perf_counter()
                warm = af.trigger("tiercast_ingest")  # nothing landed: touches no data
                af.wait("tiercast_ingest", warm)
                warmup_s = round(time.perf_counter() - t, 1)
            run = af.trigger("tiercast_replay")
            state = af.wait("tiercast_replay", run)
            start, end = af.run_times("tiercast_replay", run)
            tis = af.task_instances("tiercast_replay", run)
        replays = [x for x in tis if x[0] == "replay"]
        task_s = {f"{x[0]}[{x[1]}]": round(_s(x[3], x[4]), 1) for x in tis if x[3] and x[4]}
        airflow_s = _s(start, end)
        print(json.dumps({
            "executor": args.executor, "preload": args.preload, "pairs": len(rows), "replay_tasks": len(replays),
            "state": state, "same_results": query(root, WHATIF).rows() == rows,
            "direct_s": round(direct_s, 1), "airflow_run_s": round(airflow_s, 1),
            "overhead_x": round(airflow_s / direct_s, 2), "airflow_start_s": round(started_s, 1),
            "warmup_run_s": warmup_s,
            "task_s": task_s,
            # each task instance's (start, end) in seconds from the run's start: the gaps between
            # one task's end and the next one's start are the scheduler's and supervisor's share
            "timeline": sorted(((f"{x[0]}[{x[1]}]", round(_s(start, x[3]), 2), round(_s(start, x[4]), 2))
                                for x in tis if x[3] and x[4]), key=lambda r: r[1]),
        }, indent=1))


if __name__ == "__main__":
    main()
