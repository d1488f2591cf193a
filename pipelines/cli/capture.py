"""``tiercast capture`` (run fio while iostat records, ingest both) and ``tiercast captures``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.choices import MAX_IOSTAT_INTERVAL_S
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    bounded,
    console,
    data_dir_of,
    one_of,
    out,
    print_json,
    table,
)
from pipelines.cli.examples import epilog
from pipelines.dataset import VALIDATE_MODES


@app.command(epilog=epilog("capture"))
def capture(
    fio_job: Annotated[Path, typer.Option("--fio", help="fio job file to run.")],
    iostat_interval: Annotated[int, typer.Option(
        "--iostat-interval", help=f"iostat interval, whole seconds (1 to {MAX_IOSTAT_INTERVAL_S}: iostat's "
                                  "resolution; the capture waits one interval after fio ends).",
        callback=bounded(1, MAX_IOSTAT_INTERVAL_S, integer=True))] = 1,
    validate: Annotated[str, typer.Option(help="Great Expectations contract: auto, full, sample, off.",
                                          callback=lambda v: one_of(v, VALIDATE_MODES))] = "auto",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a fio job while iostat records; ingest fio's JSON and per-I/O logs (also as a
    replayable trace) and iostat's JSON, linked by a capture id."""
    from pipelines.capture import capture as run_capture

    r = run_capture(fio_job, data_dir_of(data_dir), iostat_interval_s=iostat_interval, validate=validate)
    if as_json:
        print_json(r.summary())
    else:
        out.print(f"capture {r.capture_id}: devices {', '.join(r.devices) or '-'}; measured "
                  + ", ".join(f"{k} {v}" for k, v in r.datasets.items())
                  + "; traces " + (", ".join(f"{k} {v}" for k, v in r.traces.items()) or "-"))
        for w in r.warnings:
            console.print(f"[yellow]warning:[/] {w}", highlight=False)
    if r.fio_returncode:
        raise typer.Exit(2)


@app.command(epilog=epilog("captures"))
def captures(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """List the live captures."""
    from pipelines.capture import list_captures

    caps = list_captures(data_dir_of(data_dir))
    if as_json:
        print_json(caps)
        return
    if not caps:
        console.print("no captures yet: run `tiercast capture --fio JOBFILE`")
        return
    t = table("capture_id", "started", "devices", "fio", "iostat dataset", "traces")
    for c in caps:
        t.add_row(c["capture_id"], c["started_at"], ",".join(c["devices"]) or "-", c["versions"].get("fio") or "-",
                      c["datasets"].get("iostat", "-"), str(len(c["traces"])))
    out.print(t)
