"""Shared pieces of the CLI: the Typer app, common options, progress bars, error reporting."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from pipelines.catalog import ENV_DATA_DIR, resolve_data_dir
from traces.errors import TraceFormatError

app = typer.Typer(
    name="tiercast",
    help="Trace-replay analytics for storage engineers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 160)

DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar=ENV_DATA_DIR, help="Data directory [default: ./tiercast-data]."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def data_dir_of(opt: Path | None) -> Path:
    return resolve_data_dir(opt)


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


@contextmanager
def byte_progress(label: str, enabled: bool = True):
    """A rich progress bar over bytes; yields a ``callback(done, total)``."""
    if not enabled or not console.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as p:
        task = p.add_task(label, total=None)

        def cb(done: int, total: int) -> None:
            p.update(task, completed=done, total=total)

        yield cb


def run_app() -> None:
    """Run the app; errors a user can act on become one line on stderr and exit code 2."""
    try:
        app()
    except (TraceFormatError, LookupError, ValueError, FileNotFoundError) as e:
        console.print(f"[bold red]error:[/] {e}", markup=True, highlight=False)
        sys.exit(2)
