"""What the three DAG files share: task defaults (timeouts, retries with backoff, a failure
record), the data root of a running task, and the conversion of input errors into
``AirflowFailException`` (failed at once, no retry). Imports only ``airflow.sdk``, which the DAG
files import anyway, so parsing stays cheap.
"""

from __future__ import annotations

import json
import os
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

from pipelines.orchestrate import VARIABLE, InputError, data_root, worker_env, write_run_summary

#: the warehouse has one writer: the load task runs in this pool (create it with size 1:
#: ``airflow pools set tiercast_warehouse 1 "one DuckDB writer"``)
WAREHOUSE_POOL = "tiercast_warehouse"
#: events of new datasets (ingest -> replay) and of a warehouse that changed (replay -> report)
NEW_DATASETS = AssetAlias("tiercast-datasets")
NEW_RESULTS = AssetAlias("tiercast-results")


def task_root() -> Path:
    """The data root of the running task (Variable, else environment), its worker set up."""
    with input_errors_fail():
        root = data_root(Variable.get(VARIABLE, default=None))
    worker_env(root)
    return root


def root_asset(root: Path, kind: str) -> Asset:
    """The asset of one data root's datasets or warehouse: its URI names the real location."""
    target = root / ("tiercast.duckdb" if kind == "results" else "traces")
    return Asset(name=f"tiercast-{kind}:{root}", uri=target.resolve().as_uri())


@contextmanager
def input_errors_fail():
    """An input error in the block fails the task at once (no retries); others propagate."""
    try:
        yield
    except InputError as e:
        raise AirflowFailException(str(e)) from None


def _failures_file(root: Path, dag_id: str, run_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in run_id)
    return root / "runs" / dag_id / f"{safe}.failures.jsonl"


def record_failure(context) -> None:
    """Task failure callback: one line per failed task instance in the run's failures file."""
    try:
        root = data_root(Variable.get(VARIABLE, default=None))
    except Exception:  # noqa: BLE001 - a callback must not fail; the log has the error anyway
        return
    ti = context["ti"]
    path = _failures_file(root, ti.dag_id, ti.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"task_id": ti.task_id, "map_index": ti.map_index, "try_number": ti.try_number,
            "error": str(context.get("exception") or "")[:2000]}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def failures(root: Path) -> list[dict]:
    """The failed task instances of the running DAG run (see :func:`record_failure`)."""
    ctx = get_current_context()
    path = _failures_file(root, ctx["dag"].dag_id, ctx["run_id"])
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def finish(root: Path, summary: dict) -> dict:
    """Write the run's summary; fail the run (visibly red) when a task instance failed in it."""
    ctx = get_current_context()
    failed = failures(root)
    path = write_run_summary(root, ctx["dag"].dag_id, ctx["run_id"], {**summary, "failed": failed})
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
