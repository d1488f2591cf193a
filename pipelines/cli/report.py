"""``tiercast report``: the HTML report of everything in the data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import DataDirOpt, app, check_output, data_dir_of, out


@app.command()
def report(
    out_path: Annotated[Path, typer.Option("--out", help="HTML file to write.")] = Path("reports/report.html"),
    title: Annotated[str, typer.Option(help="Page title.")] = "tiercast report",
    data_dir: DataDirOpt = None,
) -> None:
    """Write a self-contained HTML report (charts inlined) plus a CSV of every table shown."""
    from pipelines.report import write_report

    check_output(out_path, "--out")  # before any work: never a directory, device or FIFO
    path = write_report(data_dir_of(data_dir), out_path, title)
    out.print(f"wrote {path} (tables as CSV in {path.parent / (path.stem + '_tables')})")
