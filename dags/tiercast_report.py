"""tiercast_report: the what-if report, rewritten whenever the warehouse got new results.

Triggered by ``tiercast-results`` events (the replay DAG's load task emits one only when it
loaded something). Writes ``<data root>/reports/tiercast.html`` (``tiercast report``: traces,
curves, array runs side by side, sweeps) and names the traces with new runs in the log.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag, get_current_context, task

from pipelines.airflow_support import NEW_RESULTS, dag_settings, finish, task_root


@dag(
    dag_id="tiercast_report",
    **dag_settings("TIERCAST_REPORT_CRON", "", NEW_RESULTS, timedelta(minutes=30)),
    doc_md=__doc__,
)
def tiercast_report():
    @task
    def report() -> dict:
        from pipelines.report import write_report

        root = task_root()
        events = get_current_context().get("triggering_asset_events") or {}
        traces = sorted({t for evs in events.values() for e in evs for t in (e.extra or {}).get(
            "traces_with_new_runs", [])})
        out = write_report(root, root / "reports" / "tiercast.html", "tiercast: scheduled what-if report")
        print(f"report {out} (traces with new runs: {traces or 'see the warehouse'})")
        return finish(root, {"report": str(out), "traces_with_new_runs": traces})

    report()


tiercast_report()
