"""The data stack imported once into the Airflow processes that fork task processes, so a task
does not pay for it (measured: the largest part of a task's fixed cost, see docs/operations/airflow.md).

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
                "pipelines.load", "pipelines.analytics", "pipelines.airflow_support", "replay.scenario", "replay.array",
                "airflow.sdk.execution_time.task_runner")
#: ``airflow`` sub-commands whose process forks the task processes
FORKING = (("scheduler",), ("celery", "worker"))


def preload(argv: list[str] | None = None) -> list[str]:
    """Import :data:`TASK_MODULES` when this process is one of :data:`FORKING`; returns what it
    imported. The kernels come from the cache every entry point uses (``replay.numba_cache``),
    whatever the data root."""
    args = tuple(sys.argv[1:] if argv is None else argv)
    if not any(args[:len(c)] == c for c in FORKING):
        return []
    from pipelines.orchestrate import worker_env

    worker_env()
    for name in TASK_MODULES:
        importlib.import_module(name)
    load_kernels()
    notice_task_exit_at_once()
    return list(TASK_MODULES)


def notice_task_exit_at_once() -> bool:
    """Make Airflow's task supervisor wait on the task process itself once the process has closed
    its sockets, instead of sleeping on no socket at all; returns False when Airflow's supervisor
    no longer has the parts this relies on (then nothing is changed).

    Why: ``WatchedSubprocess._monitor_subprocess`` selects on the task's sockets for up to
    ``[workers] min_heartbeat_interval`` (an integer, >= 1 s). A task process closes its log and
    request sockets itself before ``os._exit``, and the kernel closes stdout/stderr before the
    exited process can be reaped, so the supervisor often finds every socket closed and the process
    not yet reaped; its next select then has nothing to wait on and sleeps the full interval, and
    the executor slot stays taken. Measured: ``plan`` and ``volumes`` of ``tiercast_replay`` ended
    at 0.2 s and their slots freed at ~1.2 s. This patches a private method
    (``_service_subprocess``; ``_open_sockets``, ``_exit_code`` and ``_process``, a process tracker
    with ``wait(timeout)`` and ``TimeoutExpired``): ``tests/test_dags.py::test_supervisor_notices_a_task_exit_at_once`` pins
    them and the effect."""
    try:
        from airflow.sdk.execution_time.supervisor import WatchedSubprocess
    except ImportError:
        return False
    original = getattr(WatchedSubprocess, "_service_subprocess", None)
    if original is None or not hasattr(WatchedSubprocess, "__attrs_attrs__") or \
            not {"_open_sockets", "_exit_code", "_process"} <= {a.name for a in WatchedSubprocess.__attrs_attrs__}:
        return False
    if getattr(original, "tiercast_patched", False):
        return True
    def _service_subprocess(self, max_wait_time: float, raise_on_timeout: bool = False,
                            expect_signal: int | None = None):
        if not self._open_sockets and self._exit_code is None:
            try:  # psutil (or Popen) polls waitpid at intervals of at most 40 ms and keeps the exit code
                self._process.wait(timeout=max_wait_time)
            except self._process.TimeoutExpired:
                pass
            max_wait_time = 0
        return original(self, max_wait_time, raise_on_timeout=raise_on_timeout, expect_signal=expect_signal)

    _service_subprocess.tiercast_patched = True
    WatchedSubprocess._service_subprocess = _service_subprocess
    return True


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
