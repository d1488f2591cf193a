"""``tiercast demo``: the seed experiments in quick mode on the embedded default."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import DataDirOpt, app, check_out_option, console, data_dir_of, out
from pipelines.cli.examples import epilog

DEFAULT_REPORTS = Path("reports")


@app.command(epilog=epilog("demo"))
def demo(
    data_dir: DataDirOpt = None,
    reports: Annotated[Path, typer.Option(help="Directory of the reports to write (created, in a directory that "
                                               "exists).")] = DEFAULT_REPORTS,
) -> None:
    """Run the seed experiments in quick mode (synthetic workloads through the seed arrays, the
    seed table and findings), one compare and one size, load DuckDB, write reports/seeds.html,
    compare.html and size.html, and say where everything is."""
    from pipelines.cli.experiments import show
    from pipelines.demo import demo as run
    from pipelines.demo import where

    check_out_option(reports, "--reports", DEFAULT_REPORTS, directory=True)  # before minutes of work
    d = data_dir_of(data_dir)
    res, whatif_reports = run(d, reports, log=console.print)
    show(res)
    for line in where(d, [res.report, *whatif_reports]):
        out.print(line, soft_wrap=True)
