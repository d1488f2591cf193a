"""The data stack imported once into the Airflow processes that fork task processes, so a task
does not pay for it (measured: the largest part of a task's fixed cost, see README *Airflow*).

Airflow 3's LocalExecutor forks its workers from the scheduler, and each task process is forked
from a worker (``airflow.sdk.execution_time.supervisor``); a Celery worker forks its task
processes the same way. A module imported before those forks is already imported in every task.
Hooked in through ``airflow_local_settings.py``, which every Airflow process imports at start
(``$AIRFLOW_HOME/config/airflow_local_settings.py``):

    from pipelines.airflow_preload import preload
    preload()

It imports only in the forking processes (``airflow scheduler``, ``airflow celery worker``), so
the CLI, the API server and the DAG processor stay light. It imports, and loads the compiled
kernels from numba's cache (:func:`load_kernels`); it runs nothing, so no thread pool (Polars,
DuckDB) is started before the fork.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["preload"]

#: what the replay DAG's tasks import (plan, replay, skew, load), and Airflow's task runner, which a
#: LocalExecutor worker imports at its first task only (that task started 37 s late, load average 12)
TASK_MODULES = ("polars", "pyarrow.parquet", "duckdb", "numba", "pipelines.steps", "pipelines.replay",
                "pipelines.load", "pipelines.analytics", "replay.scenario", "replay.array",
                "airflow.sdk.execution_time.task_runner")
#: ``airflow`` sub-commands whose process forks the task processes
FORKING = (("scheduler",), ("celery", "worker"))


def preload(argv: list[str] | None = None) -> list[str]:
    """Import :data:`TASK_MODULES` when this process is one of :data:`FORKING`; returns what it
    imported. numba's cache directory is set first (``worker_env``; numba reads it at import)."""
    args = tuple(sys.argv[1:] if argv is None else argv)
    if not any(args[:len(c)] == c for c in FORKING):
        return []
    from pipelines.orchestrate import InputError, data_root, worker_env

    try:
        worker_env(data_root(None))
    except InputError:
        return []  # the data root is an Airflow Variable: the tasks set numba's cache up themselves
    for name in TASK_MODULES:
        importlib.import_module(name)
    load_kernels()
    return list(TASK_MODULES)


def load_kernels() -> int:
    """Load every compiled kernel of ``replay/`` that numba's cache holds, for every signature
    the cache holds it in, so a forked task calls them at once: measured, the first replay in a
    process took 5.8 s and the next 0.6 s (2,000 requests), of which loading the 108 cached
    overloads is 4.5 s. numba keeps no public list of a cache's signatures: they are read from
    its index (``_cache._cache_file._load_index``); a cache that cannot be read is skipped (the
    task then loads or compiles as usual). Only compiles from the cache: no thread pool starts.
    Returns the overloads loaded."""
    from numba.core.dispatcher import Dispatcher

    loaded = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("replay.") or module is None:
            continue
        for obj in list(vars(module).values()):
            if not isinstance(obj, Dispatcher) or getattr(obj, "_cache", None) is None:
                continue
            try:
                signatures = [key[0] for key in obj._cache._cache_file._load_index()]
            except Exception:  # noqa: BLE001 - numba internals: a miss only costs the task the load
                continue
            for sig in signatures:
                try:
                    obj.compile(sig)
                    loaded += 1
                except Exception:  # noqa: BLE001 - as above
                    continue
    return loaded
