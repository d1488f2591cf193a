"""``tiercast demo``: the main job on the embedded default, with bundled synthetic workloads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import DataDirOpt, app, check_output, data_dir_of, out, table


@app.command()
def demo(
    data_dir: DataDirOpt = None,
    requests: Annotated[int, typer.Option(min=1, help="Requests per synthetic workload.")] = 200_000,
    report: Annotated[Path, typer.Option(help="HTML report to write.")] = Path("reports/demo.html"),
) -> None:
    """Generate the seed articles' workloads, ingest, replay and sweep them through the seed
    arrays, compute hit-ratio curves, load DuckDB and write an HTML report."""
    from pipelines.demo import run_demo

    check_output(report, "--report")  # before minutes of work
    results = run_demo(data_dir_of(data_dir), requests=requests, log=out.print, report=report)
    t = table("workload", "trace_id", "requests", "rejected", "volumes")
    for name, r in results.items():
        t.add_row(name, r.trace_id, f"{r.rows_accepted:,}", f"{r.rows_rejected:,}", str(len(r.volumes)))
    out.print(t)
