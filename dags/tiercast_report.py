"""tiercast_report: the what-if report, rewritten whenever the warehouse got new results.

Triggered by ``tiercast-results`` events (the replay DAG's load task emits one only when it
loaded something). Writes ``<data root>/reports/tiercast.html`` (``tiercast report``: traces,
curves, array runs side by side, sweeps) and names the traces with new runs in the log.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag, get_current_context, task

from pipelines.airflow_support import NEW_RESULTS, dag_settings, finish, root_location, task_root


@dag(
    dag_id="tiercast_report",
    **dag_settings("TIERCAST_REPORT_CRON", "", NEW_RESULTS, timedelta(minutes=30)),
    doc_md=__doc__,
)
def tiercast_report():
    @task
    def report() -> dict:
        from pipelines.orchestrate import REPORT_INPUTS
        from pipelines.report import write_report

        events = get_current_context().get("triggering_asset_events") or {}
        traces = sorted({t for evs in events.values() for e in evs for t in (e.extra or {}).get(
            "traces_with_new_runs", [])})
        with task_root(REPORT_INPUTS) as root:
            out = write_report(root, root / "reports" / "tiercast.html", "tiercast: scheduled what-if report")
            written = out.relative_to(root).as_posix()
        print(f"report {written} under {root_location()} (traces with new runs: {traces or 'see the warehouse'})")
        return finish({"report": written, "traces_with_new_runs": traces})

    report()


tiercast_report()
