"""tiercast_replay: every ingested trace through the configured scenarios, into the warehouse.

Runs when the ingest DAG publishes new datasets and daily (``$TIERCAST_REPLAY_CRON``). Thin
wiring of ``pipelines.orchestrate``:

- ``plan`` reads ``<data root>/replay.toml`` (``scenarios``, ``traces`` globs over trace id or
  source file name, ``formats``; run params override), checks every scenario loads before
  anything is mapped (a misspelled one fails at once, no retries), and lists the (trace,
  scenario) pairs not yet run by this model version (none configured: vnx1-flare and vnx2-mcx),
  in batches: the pairs of one trace up to ``task_requests`` requests (default 4 M) per task,
  since a task costs Airflow ~0.3-0.5 s to start and report;
- ``replay`` is mapped over the batches (idempotent: a finished run is found by its run id);
- ``skew`` is mapped over the volumes of the matching traces that ``volumes`` lists (per-volume
  work: a multi-volume trace spreads over workers) when ``replay.toml`` asks for
  ``skew_slice_bytes``;
- ``load`` (pool ``tiercast_warehouse``, size 1: one DuckDB writer) merges each trace's
  per-volume skew counts, brings the warehouse up to date and emits a ``tiercast-results``
  event only when something was loaded;
- ``summary`` writes ``runs/tiercast_replay/<run>.json`` and fails the run when anything failed.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, get_current_context, task

from pipelines.airflow_support import (
    NEW_DATASETS,
    NEW_RESULTS,
    WAREHOUSE_POOL,
    dag_settings,
    finish,
    input_errors_fail,
    root_asset,
    root_location,
    task_root,
)


@dag(
    dag_id="tiercast_replay",
    **dag_settings("TIERCAST_REPLAY_CRON", "0 2 * * *", NEW_DATASETS, timedelta(hours=6), retries=1),
    params={
        "scenarios": Param([], type="array", description="scenario presets or .toml files under the data root "
                                                         "([] = replay.toml, else vnx1-flare and vnx2-mcx)"),
        "traces": Param([], type="array", description="globs over trace id or source file name ([] = replay.toml, "
                                                      "else all)"),
    },
    doc_md=__doc__,
)
def tiercast_replay():
    @task(retries=0)
    def plan() -> list[list[dict]]:
        from pipelines.orchestrate import PLAN_INPUTS, replay_batches, replay_config, replay_plan

        p = get_current_context()["params"]
        with input_errors_fail(), task_root(PLAN_INPUTS) as root:
            config = replay_config(root, p["scenarios"], p["traces"])
            pairs, done, left = replay_plan(root, config)
        batches = replay_batches(pairs, config.task_requests)
        print(f"scenarios {list(config.scenarios)}: {len(pairs)} pair(s) to replay in {len(batches)} task(s) "
              f"(task_requests {config.task_requests:,}), {done} already run by this model version, "
              f"{left} left for the next run")
        return batches

    @task(retries=0)
    def volumes() -> list[dict]:
        from pipelines.orchestrate import PLAN_INPUTS, replay_config, skew_plan

        p = get_current_context()["params"]
        with input_errors_fail(), task_root(PLAN_INPUTS + ["results/skew/"]) as root:
            items = skew_plan(root, replay_config(root, p["scenarios"], p["traces"]))
        print(f"{len(items)} (trace, volume, slice size) item(s) to count for skew")
        return items

    @task
    def replay(batch: list[dict]) -> list[dict]:
        from pipelines.orchestrate import replay_batch, replay_inputs

        with input_errors_fail(), task_root(replay_inputs(batch)) as root:
            return replay_batch(root, batch)

    @task
    def skew(item: dict) -> dict:
        from pipelines.orchestrate import skew_inputs, skew_volume

        with task_root(skew_inputs(item)) as root:
            return skew_volume(root, item)

    @task(pool=WAREHOUSE_POOL, trigger_rule="all_done", retries=3, outlets=[NEW_RESULTS])
    def load(replayed, counted, *, outlet_events=None) -> dict:
        from pipelines.load import load as load_warehouse
        from pipelines.orchestrate import LOAD_INPUTS, merge_skew

        with task_root(LOAD_INPUTS) as root:
            merged = merge_skew(root, list(counted or []))
            report = load_warehouse(root)
        new = sorted({r["trace_id"] for batch in replayed or [] for r in batch or [] if r and not r.get("already_done")})
        print(f"skew of {len(merged)} trace(s) merged; loaded {report.loaded or 'nothing new'}, "
              f"removed {report.removed or 'nothing'} in {report.seconds:.2f} s")
        if report.loaded or report.removed:
            outlet_events[NEW_RESULTS].add(root_asset(root_location(), "results"),
                                           extra={"loaded": report.loaded, "traces_with_new_runs": new})
        return {"loaded": report.loaded, "removed": report.removed, "traces_with_new_runs": new, "skew": merged}

    @task(trigger_rule="all_done", retries=0)
    def summary(batches: list[list[dict]] | None, loaded: dict | None) -> dict:
        return finish({"pairs": sum(len(b) for b in batches or []), "replay_tasks": len(batches or []),
                       "load": loaded})

    batches = plan()
    summary(batches, load(replay.expand(batch=batches), skew.expand(item=volumes())))


tiercast_replay()
