"""What the three DAG files share: task defaults (timeouts, retries with backoff, a failure
record), the data root of a running task, and the conversion of input errors into
``AirflowFailException`` (failed at once, no retry). Imports only ``airflow.sdk``, which the DAG
files import anyway, so parsing stays cheap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airflow.sdk import (
    Asset,
    AssetAlias,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    Variable,
    get_current_context,
)
from airflow.sdk.exceptions import AirflowFailException

from pipelines import object_store
from pipelines.catalog import write_json_atomic
from pipelines.object_store import is_url
from pipelines.orchestrate import VARIABLE, InputError, data_root, run_file, worker_env, write_run_summary

#: the warehouse has one writer: the load task runs in this pool (create it with size 1:
#: ``airflow pools set tiercast_warehouse 1 "one DuckDB writer"``)
WAREHOUSE_POOL = "tiercast_warehouse"
#: events of new datasets (ingest -> replay) and of a warehouse that changed (replay -> report)
NEW_DATASETS = AssetAlias("tiercast-datasets")
NEW_RESULTS = AssetAlias("tiercast-results")


def root_location() -> Path | str:
    """The configured data root of the running task (a path or an object-store URL), its
    worker set up."""
    with input_errors_fail():
        location = data_root(Variable.get(VARIABLE, default=None))
    worker_env()
    return location


@contextmanager
def task_root(inputs: list[str] = (), keep_on: tuple[type[BaseException], ...] = ()) -> Iterator[Path]:
    """The data root of the running task as a local directory: the root itself, or, for an
    object-store root, a scratch copy of the declared ``inputs`` whose changes go back to the
    store when the block ends (``pipelines.object_store.staged``; nothing on an exception but
    ``keep_on``). So no task relies on another task's local disk."""
    location = root_location()
    if not is_url(location):
        yield location
        return
    with object_store.staged(location, list(inputs), keep_on=keep_on) as local:
        yield local


def root_asset(location: Path | str, kind: str) -> Asset:
    """The asset of one data root's datasets or warehouse: its URI names the real location."""
    target = "tiercast.duckdb" if kind == "results" else "traces"
    uri = f"{location}/{target}" if is_url(location) else (Path(location) / target).resolve().as_uri()
    return Asset(name=f"tiercast-{kind}:{location}", uri=uri)


@contextmanager
def input_errors_fail():
    """An input error in the block fails the task at once (no retries); others propagate."""
    try:
        yield
    except InputError as e:
        raise AirflowFailException(str(e)) from None


def _failures_dir(dag_id: str, run_id: str) -> str:
    return run_file(dag_id, run_id, ".failures")


def record_failure(context) -> None:
    """Task failure callback: one JSON file (one object in a store) per failed task instance
    try, under ``runs/<dag>/<run>.failures/``."""
    try:
        location = data_root(Variable.get(VARIABLE, default=None))
    except Exception:  # noqa: BLE001 - a callback must not fail; the log has the error anyway
        return
    ti = context["ti"]
    rel = f"{_failures_dir(ti.dag_id, ti.run_id)}/{ti.task_id}.{ti.map_index}.{ti.try_number}.json"
    line = {"task_id": ti.task_id, "map_index": ti.map_index, "try_number": ti.try_number,
            "error": str(context.get("exception") or "")[:2000]}
    if is_url(location):
        object_store.put_json(location, rel, line)
    else:
        (location / rel).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(location / rel, line)


def failures(root: Path, dag_id: str, run_id: str, states: dict[str, str]) -> list[dict]:
    """The failed task instances of a DAG run: those that recorded their failure (see
    :func:`record_failure`), and those Airflow marks failed without a record (``states``: task
    key -> state, as ``get_task_states`` gives them): a task that never started, or whose
    process was killed, runs no callback, yet must not leave a green run."""
    folder = root / _failures_dir(dag_id, run_id)
    recorded = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    keys = {f["task_id"] if f["map_index"] < 0 else f"{f['task_id']}_{f['map_index']}" for f in recorded}
    silent = [{"task_id": key, "map_index": -1, "try_number": None, "state": state,
               "error": "failed without running its failure callback (never started, or its process was killed)"}
              for key, state in sorted(states.items()) if state == "failed" and key not in keys]
    return recorded + silent


def finish(summary: dict) -> dict:
    """Write the run's summary; fail the run (visibly red) when a task instance failed in it."""
    ctx = get_current_context()
    dag_id, run_id = ctx["dag"].dag_id, ctx["run_id"]
    states = ctx["ti"].get_task_states(dag_id=dag_id, run_ids=[run_id]).get(run_id, {})
    with task_root([_failures_dir(dag_id, run_id) + "/"]) as root:
        failed = failures(root, dag_id, run_id, states)
        path = write_run_summary(root, dag_id, run_id, {**summary, "failed": failed})
    print(f"summary: {json.dumps(summary, default=str)}; written to {path}")
    if failed:
        names = ", ".join(f"{f['task_id']}[{f['map_index']}]" for f in failed)
        raise AirflowFailException(f"{len(failed)} task instance(s) failed in this run ({names}); see {path}")
    return summary


def dag_settings(cron_env: str, cron_default: str, asset, timeout: timedelta, retries: int = 2) -> dict:
    """What every tiercast DAG sets: its schedule (the cron in ``$<cron_env>``, ``""`` = on
    ``asset`` events only, else both), one active run, and the task defaults."""
    cron = os.environ.get(cron_env, cron_default).strip()
    schedule = AssetOrTimeSchedule(timetable=CronTriggerTimetable(cron, timezone="UTC"), assets=[asset]) \
        if cron else [asset]
    return {"schedule": schedule, "start_date": datetime(2026, 1, 1, tzinfo=UTC), "catchup": False,
            "max_active_runs": 1, "tags": ["tiercast"], "default_args": default_args(timeout, retries)}


def default_args(timeout: timedelta, retries: int = 2) -> dict:
    """Every task: a time limit, retries of transient errors with exponential backoff, and a
    record of each failure for the run's summary."""
    return {
        "owner": "tiercast",
        "retries": retries,
        "retry_delay": timedelta(seconds=float(os.environ.get("TIERCAST_RETRY_DELAY_S", "30"))),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=10),
        "execution_timeout": timeout,
        "on_failure_callback": record_failure,
    }
