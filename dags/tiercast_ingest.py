"""tiercast_ingest: files landing in ``<data root>/landing`` -> validated datasets, unattended.

Runs every 10 minutes (``$TIERCAST_INGEST_CRON``) and whenever the ``tiercast-landing`` asset is
updated (a producer can signal a drop). Thin wiring of ``pipelines.orchestrate``:

Every task reads and writes the data root through ``task_root``: the root itself, or, when it
is an object store (``s3://...``), a scratch copy of the task's declared inputs whose outputs go
back to the store (no task relies on another task's local disk).

- ``discover`` lists the ready files (a ``<name>.done`` marker beside them, or unchanged for
  ``stable_seconds`` unless ``require_marker``), oldest first, at most ``max_files`` (below
  ``max_map_length``); an archived file that grew since its ingest is put back first;
- ``ingest`` is mapped over them: a good file is ingested and archived to ``archive/<date>/``;
  one that lands again beginning with an earlier ingest's bytes withdraws that partial dataset
  and its results into ``quarantine/superseded/``; a bad one goes to ``quarantine/`` with
  ``<name>.error.json`` and fails its own task instance at once (``AirflowFailException``, no
  retries); I/O errors retry;
- with ``split_by`` "volume" (``$TIERCAST_SPLIT_BY`` for the scheduled runs), each ingested
  trace also becomes one dataset per volume in the same task instance; the replay DAG then maps
  over the volumes instead of the whole trace (a 1,000-volume trace: 1,000 independent replays);
- ``validate`` runs the Great Expectations contract once over this run's new datasets;
- ``publish`` emits one ``tiercast-datasets`` asset event per new valid dataset (the replay DAG
  listens);
- ``summary`` writes ``runs/tiercast_ingest/<run>.json`` and fails the run when anything failed.
"""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.sdk import (
    Asset,
    Param,
    dag,
    get_current_context,
    task,
)

from pipelines.airflow_support import (
    NEW_DATASETS,
    dag_settings,
    finish,
    input_errors_fail,
    root_asset,
    root_location,
    task_root,
)

LANDING = Asset(name="tiercast-landing", uri="tiercast://landing")



@dag(
    dag_id="tiercast_ingest",
    **dag_settings("TIERCAST_INGEST_CRON", "*/10 * * * *", LANDING, timedelta(minutes=60)),
    params={
        "landing_dir": Param("", type="string", description="folder of new files under the data root ('' = landing)"),
        "stable_seconds": Param(60, type="number", minimum=0, description="unchanged this long = fully landed"),
        "require_marker": Param(False, type="boolean",
                                description="take only files with a <name>.done marker, never by age"),
        "max_files": Param(500, type="integer", minimum=1, maximum=1000, description="files per run"),
        "split_by": Param(os.environ.get("TIERCAST_SPLIT_BY", ""), type="string", enum=["", "volume"],
                          description="'volume': also one dataset per volume of each trace, replayed on its own"),
    },
    doc_md=__doc__,
)
def tiercast_ingest():
    @task(retries=0)
    def discover() -> list[str]:
        from pipelines.orchestrate import discover as ready

        p = get_current_context()["params"]
        location = root_location()
        with input_errors_fail():
            found, waiting = ready(location, p["landing_dir"], float(p["stable_seconds"]), int(p["max_files"]),
                                   bool(p["require_marker"]))
        print(f"{len(found)} file(s) ready under {location}, {len(waiting)} still landing or left for the next run")
        return found

    @task
    def ingest(path: str) -> dict:
        from pipelines.object_store import is_url
        from pipelines.orchestrate import (
            InputError,
            ingest_inputs,
            ingest_landed,
            split_inputs,
            split_landed,
            under_root,
        )

        split_by = get_current_context()["params"]["split_by"]
        local = not is_url(root_location())  # an object store's objects land whole: nothing to supersede
        with input_errors_fail(), task_root(ingest_inputs(path), keep_on=(InputError,)) as root:
            result = ingest_landed(root / path, root, under_root(root, "", "quarantine", "quarantine"),
                                   under_root(root, "", "archive", "archive"), supersede=local)
        if not split_by:
            return result
        with input_errors_fail(), task_root(split_inputs(result)) as root:
            return split_landed(root, result, split_by)

    @task(trigger_rule="all_done")
    def validate(ingested) -> dict:
        from pipelines.orchestrate import under_root, validate_batch, validate_inputs

        done = [r for r in ingested if r]  # failed instances left no result
        with task_root(validate_inputs(done)) as root:
            return validate_batch(root, done, under_root(root, "", "quarantine", "quarantine"))

    @task(outlets=[NEW_DATASETS])
    def publish(checked: dict, *, outlet_events=None) -> int:
        location = root_location()
        for r in checked["valid"]:
            outlet_events[NEW_DATASETS].add(root_asset(location, "datasets"), extra={
                k: r[k] for k in ("kind", "id", "source", "volume", "split_from") if k in r})
        return len(checked["valid"])

    @task(trigger_rule="all_done", retries=0)
    def summary(found: list[str], checked: dict | None, published: int | None) -> dict:
        return finish({"landed": len(found or []), "new_datasets": published or 0,
                       "invalid": (checked or {}).get("invalid", []),
                       "superseded": (checked or {}).get("superseded", [])})

    found = discover()
    checked = validate(ingest.expand(path=found))
    summary(found, checked, publish(checked))


tiercast_ingest()
