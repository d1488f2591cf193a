"""``tiercast calibrate``: back-end parameters of a device from its measured iostat rows, as a
scenario fragment (drive class) and a complete single-device scenario."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.choices import CALIBRATE_BASES as BASES
from pipelines.choices import CALIBRATE_KINDS as KINDS
from pipelines.choices import CALIBRATE_WINDOWS as WINDOWS
from pipelines.choices import MIN_RPM
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    bounded,
    check_out_option,
    console,
    data_dir_of,
    one_of,
    print_json,
    write_text,
)
from pipelines.cli.examples import epilog


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f} ms"


@app.command(epilog=epilog("calibrate"))
def calibrate(
    measured: Annotated[str, typer.Option("--measured", help="Capture id (its iostat dataset) or measured "
                                                             "iostat dataset id (or unambiguous prefix).")],
    device: Annotated[str | None, typer.Option(help="Device as iostat names it (default: the capture's "
                                                    "device).")] = None,
    name: Annotated[str | None, typer.Option(help="Drive-class name (default: the device name).")] = None,
    kind: Annotated[str, typer.Option(help="ssd (fixed latency + transfer) or hdd (seek + rotation + "
                                           "transfer; needs --rpm).", callback=lambda v: one_of(v, KINDS))] = "ssd",
    rpm: Annotated[int | None, typer.Option(help=f"Spindle speed for --kind hdd (>= {MIN_RPM}, as in a scenario).",
                                            callback=bounded(MIN_RPM, integer=True))] = None,
    transfer_mb_per_s: Annotated[float | None, typer.Option(help="Media rate (> 0; default 2000 for ssd, 150 for "
                                                                 "hdd: one request size cannot identify it).",
                                                            callback=bounded(0, lo_open=True))] = None,
    basis: Annotated[str, typer.Option(help=f"Service time of: auto (a capture's fio directions, else all), "
                                            f"{', '.join(BASES)}.",
                                       callback=lambda v: one_of(v, ("auto", *BASES)))] = "auto",
    window: Annotated[str, typer.Option(help=f"Intervals used: {', '.join(WINDOWS)} (auto: a capture's fio run, "
                                             "else all).", callback=lambda v: one_of(v, WINDOWS))] = "auto",
    max_queue: Annotated[float, typer.Option(help="Low-queue intervals: aqu-sz at most this (> 0).",
                                             callback=bounded(0, lo_open=True))] = 1.0,
    min_intervals: Annotated[int, typer.Option(help="Fewest interval rows with I/O accepted (>= 1).",
                                               callback=bounded(1, integer=True))] = 3,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write the fragment ([drive_classes.NAME]) "
                                                                "here.")] = None,
    scenario_out: Annotated[Path | None, typer.Option(help="Write a complete single-device scenario here "
                                                           "(for tiercast replay --scenario).")] = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Derive a drive class (service time at low queue depth, max IOPS, read/write asymmetry,
    queue gain) from measured iostat rows; print it as a scenario fragment."""
    from pipelines.calibrate import calibrate as run_calibrate

    if rpm is not None and kind != "hdd":
        raise typer.BadParameter("only with --kind hdd (an ssd has no spindle)", param_hint="'--rpm'")
    if rpm is None and kind == "hdd":
        raise typer.BadParameter("--kind hdd needs it (the half rotation is part of the service time)",
                                 param_hint="'--rpm'")
    for p, what in ((out_file, "--out"), (scenario_out, "--scenario-out")):
        if p:
            check_out_option(p, what)
    c = run_calibrate(data_dir_of(data_dir), measured, device, name=name, kind=kind, rpm=rpm,
                      transfer_mb_per_s=transfer_mb_per_s, basis=basis, window=window, max_queue=max_queue,
                      min_intervals=min_intervals)
    if out_file:
        write_text(out_file, c.fragment_toml, "--out")
    if scenario_out:
        write_text(scenario_out, c.scenario_toml, "--scenario-out")
    if as_json:
        print_json(c.summary())
        return
    console.print(
        f"device {c.device} ({c.source['kind']} {c.source['ref']}): service {_ms(c.service_ms)} ({c.basis}) over "
        f"{c.low_queue_intervals} of {c.intervals_with_io} intervals with aqu-sz <= {c.max_queue:g}; read "
        f"{_ms(c.service_ms_read)}, write {_ms(c.service_ms_write)}"
        + (f" (write/read {c.write_read_ratio:.2f})" if c.write_read_ratio else "")
        + f"; max {c.max_iops['iops']:,.0f} IO/s at aqu-sz {c.max_iops['aqu_sz']}"
        + (f"; host stack {c.host_overhead_us:.1f} us per I/O" if c.host_overhead_us is not None else ""),
        highlight=False, markup=False)
    for w in c.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    for p, what in ((out_file, "fragment"), (scenario_out, "scenario")):
        if p:
            console.print(f"{what} written to {p}", highlight=False, markup=False)
    sys.stdout.write(c.fragment_toml)  # raw: a console would wrap long comment lines and break the TOML
