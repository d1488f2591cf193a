"""tiercast scheduled pipeline: traces and logs landing in a folder -> Parquet -> DuckDB.

Thin wiring only: every step is a plain function in ``pipelines`` (the same ones the CLI and the
tests call), imported inside the tasks so that parsing this file stays cheap.

- ``discover`` lists the files in the landing folder (param ``landing_dir``, default
  ``$TIERCAST_LANDING_DIR`` or ``<data_dir>/landing``);
- ``ingest`` is mapped over them (dynamic task mapping); each is idempotent (a file already
  ingested is a no-op), so retries and re-runs are safe;
- ``replay`` is mapped over (trace, scenario) pairs (param ``scenarios``);
- ``load`` refreshes the DuckDB warehouse, one task instance at a time (DuckDB has one writer),
  and marks the ``tiercast-results`` asset updated.
"""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import Asset, Param, dag, get_current_context, task

RESULTS = Asset("tiercast-results", uri="file:///tiercast/results")


def _data_dir() -> str:
    ctx = get_current_context()
    return ctx["params"]["data_dir"] or os.environ.get("TIERCAST_DATA_DIR", "tiercast-data")


@dag(
    dag_id="tiercast_pipeline",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["tiercast"],
    params={
        "data_dir": Param("", type="string", description="tiercast data directory ('' = $TIERCAST_DATA_DIR)"),
        "landing_dir": Param("", type="string", description="folder of new raw files ('' = <data_dir>/landing)"),
        "scenarios": Param([], type="array", description="scenario presets or files to replay every trace through"),
    },
    doc_md=__doc__,
)
def tiercast_pipeline():
    @task
    def discover() -> list[str]:
        from pathlib import Path

        ctx = get_current_context()
        landing = ctx["params"]["landing_dir"] or os.environ.get("TIERCAST_LANDING_DIR") or str(
            Path(_data_dir()) / "landing"
        )
        files = sorted(str(p) for p in Path(landing).glob("*") if p.is_file() and not p.name.startswith("."))
        print(f"{len(files)} file(s) in {landing}")
        return files

    @task(retries=2)
    def ingest(path: str) -> dict:
        from pipelines.steps import ingest_any

        result = ingest_any(path, _data_dir())
        print(f"{path}: {result}")
        return result

    @task
    def pairs(ingested: list[dict]) -> list[dict]:
        scenarios = get_current_context()["params"]["scenarios"]
        # index rather than iterate a mapped task's results (iteration probes one past the end)
        rows = [ingested[i] for i in range(len(ingested))]
        traces = [r["id"] for r in rows if r["kind"] == "trace"]
        return [{"trace_id": t, "scenario": s} for t in traces for s in scenarios]

    @task(retries=1)
    def replay(pair: dict) -> dict:
        from pipelines.steps import replay_pair

        return replay_pair(pair["trace_id"], pair["scenario"], _data_dir())

    @task(max_active_tis_per_dag=1, outlets=[RESULTS], trigger_rule="none_failed")
    def load(_replayed: list[dict] | None = None) -> dict:
        from pipelines.load import load as load_warehouse

        counts = load_warehouse(_data_dir())
        print(f"warehouse tables: {counts}")
        return counts

    ingested = ingest.expand(path=discover())
    load(replay.expand(pair=pairs(ingested)))


tiercast_pipeline()
