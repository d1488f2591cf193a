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
the CLI, the API server and the DAG processor stay light, and it only imports: no thread pool
(Polars, DuckDB, numba) is started before the fork.
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
    return list(TASK_MODULES)
