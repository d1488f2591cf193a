"""Steps as the scheduler sees them: JSON-friendly inputs and outputs, one call per task.

The Airflow DAGs (dags/tiercast_*.py, through pipelines.orchestrate) call these, so what a task does is the same
code path the CLI and the tests exercise.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest import IngestResult, ingest_trace_or_log


def ingest_any(path: str | Path, data_dir: str | Path, fmt: str | None = None, options: dict | None = None,
               validate: str = "auto", measured_validate: str | None = None) -> dict:
    """Ingest a trace or a measured log (detected), idempotently; returns a small summary.
    ``validate`` for a trace, ``measured_validate`` (default: the same) for a measured log;
    ``"off"`` leaves its contract check to the caller (the DAG runs GX once per batch)."""
    r = ingest_trace_or_log(path, data_dir, fmt, options, validate=validate, measured_validate=measured_validate)
    kind, rid = ("trace", r.trace_id) if isinstance(r, IngestResult) else ("measured", r.dataset_id)
    return {"kind": kind, "id": rid, "format": r.format, "rows_read": r.rows_read, "rows_accepted": r.rows_accepted,
            "rows_rejected": r.rows_rejected, "already_ingested": r.already_ingested}


def replay_pair(trace_id: str, scenario: str, data_dir: str | Path) -> dict:
    """Replay one ingested trace through one scenario (preset name or TOML path), idempotently
    (a finished run with the same run id is returned as is); returns the run summary."""
    from pipelines.catalog import find_trace
    from pipelines.replay import replay_trace
    from replay.scenario import load as load_scenario

    summary = replay_trace(find_trace(Path(data_dir), trace_id), data_dir, load_scenario(scenario))
    keys = ("run_id", "requests", "iops", "latency_mean_ms", "latency_p99_ms", "already_done")
    return {k: summary.get(k) for k in keys} | {"trace_id": trace_id, "scenario": scenario}
