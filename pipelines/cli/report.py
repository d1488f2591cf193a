"""``tiercast report``: the offline what-if HTML report of the warehouse's runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import DataDirOpt, app, check_out_option, data_dir_of, out
from pipelines.cli.examples import epilog

DEFAULT_OUT = Path("reports/report.html")


@app.command(epilog=epilog("report"))
def report(
    out_path: Annotated[Path, typer.Option("--out", help="HTML file to write, in a directory that exists "
                                                         "(reports/ is created for the default).")] = DEFAULT_OUT,
    title: Annotated[str, typer.Option(help="Page title.")] = "tiercast report",
    trace: Annotated[str | None, typer.Option(help="Only this trace (id or unambiguous prefix).")] = None,
    run: Annotated[list[str] | None, typer.Option(help="A run id (or unambiguous prefix) to show; repeatable, "
                                                       "in the order given. Default: the newest run of every "
                                                       "trace and scenario.")] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Write a self-contained, offline HTML report of interactive charts (hit ratios, cache
    curves, write cache, SSD cache, sweeps, latency, balance, skew, snapshots, write cliff) plus
    a CSV of every chart's numbers."""
    from pipelines.report import write_report

    check_out_option(out_path, "--out", DEFAULT_OUT)
    d = data_dir_of(data_dir)
    trace_id = None
    if trace is not None:
        from pipelines.catalog import find_trace

        trace_id = find_trace(d, trace).trace_id
    run_ids = None
    if run:
        from pipelines.compare import find_run

        run_ids = [find_run(d, r)["run_id"] for r in run]
    path = write_report(d, out_path, title, trace_id=trace_id, run_ids=run_ids)
    tables = path.parent / f"{path.stem}_tables"
    out.print(f"wrote {path}" + (f" (every chart's numbers as CSV in {tables})" if tables.is_dir() else ""))
