"""``tiercast calibrate``: back-end parameters of a device from its measured iostat rows, as a
scenario fragment (drive class) and a complete single-device scenario."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.choices import CALIBRATE_BASES as BASES
from pipelines.choices import CALIBRATE_KINDS as KINDS
from pipelines.choices import CALIBRATE_SUITE_JOB_S, MIN_RPM
from pipelines.choices import CALIBRATE_WINDOWS as WINDOWS
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    bounded,
    check_out_option,
    console,
    data_dir_of,
    one_of,
    out,
    print_json,
    progress_bar,
    table,
    write_text,
)
from pipelines.cli.examples import epilog


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f} ms"


@app.command(epilog=epilog("calibrate"))
def calibrate(
    measured: Annotated[list[str], typer.Option("--measured", help="Capture id (its iostat dataset) or measured "
                                                                   "iostat dataset id (or unambiguous prefix); "
                                                                   "repeat it to fit a [device] from several "
                                                                   "captures (calibrate-suite's).")],
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
    holdout: Annotated[bool, typer.Option("--holdout", help="Several captures: leave each out, fit on the rest, "
                                                            "predict it; the errors go into the scenario.")] = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Derive a drive class (service time at low queue depth, max IOPS, read/write asymmetry,
    queue gain) from measured iostat rows; print it as a scenario fragment. With several
    --measured captures: a [device] (service per direction, queue law, media rate, cap, write
    cache), with --holdout its out-of-sample error."""
    from pipelines.calibrate import calibrate as run_calibrate

    if len(measured) > 1 or holdout:
        _calibrate_device(measured, holdout, name, scenario_out, out_file, data_dir, as_json)
        return
    measured = measured[0]

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


def _calibrate_device(measured: list[str], holdout: bool, name: str | None, scenario_out: Path | None,
                      out_file: Path | None, data_dir, as_json: bool) -> None:
    """``calibrate --measured A --measured B ...``: a [device] scenario from several captures."""
    from pipelines.device_calibration import calibrate_device
    from pipelines.device_store import store_calibration

    if out_file:
        raise typer.BadParameter("a [device] is a whole scenario: use --scenario-out (--out writes a drive "
                                 "class, from one capture)", param_hint="'--out'")
    if holdout and len(measured) < 2:
        raise typer.BadParameter("--holdout needs at least 2 --measured captures", param_hint="'--holdout'")
    if scenario_out:
        check_out_option(scenario_out, "--scenario-out")
    dd = data_dir_of(data_dir)
    with progress_bar("calibrate", "fits") as cb:
        f = calibrate_device(dd, measured, with_holdout=holdout, name=name or "device", progress=cb)
    f.stored = str(store_calibration(dd, f))
    if scenario_out:
        write_text(scenario_out, f.scenario_toml, "--scenario-out")
    if as_json:
        print_json(f.summary())
        return
    p = f.params
    out.print(f"[device] from {len(f.workloads)} captures: host {p['host_us']:.1f} us (writes "
                  f"{p.get('write_host_us', p['host_us']):.1f}), read {p['read_latency_us']:.1f} us + "
                  f"{p['read_mib_per_s']:,.0f} MiB/s, write {p['write_latency_us']:.1f} us + "
                  f"{p['write_mib_per_s']:,.0f} MiB/s, gain min(q, {p['parallelism']}) ** "
                  f"{p['parallel_exponent']:.3f}" + (f" (writes {p['write_parallel_exponent']:.3f})"
                                                       if p.get("write_parallel_exponent") is not None else "")
                  + (f", cap {p['max_mib_per_s']:,.0f} MiB/s" if p.get("max_mib_per_s") else "")
                  + (f", write cache >= {p['write_cache_bytes'] / (1 << 20):,.0f} MiB"
                     if p.get("write_cache_bytes") else ""), highlight=False, markup=False)
    for m in f.not_identified:
        out.print(f"not identified: {m['parameter']} = default {m['default']} ({m['why']})", highlight=False,
                  markup=False)
    if f.holdout:
        h = f.holdout
        t = table("left out", "capture", "IOPS fio", "IOPS model", "error %", "latency fio ms", "model ms",
                  "error %", "lost")
        for r in h["captures"]:
            t.add_row(r["workload"], r["capture_id"], f"{r['iops_measured']:,.0f}", f"{r['iops_model']:,.0f}",
                      f"{r['iops_error_pct']:+.1f}", f"{r['lat_mean_ms_measured']:.4f}",
                      f"{r['lat_mean_ms_model']:.4f}", f"{r['lat_error_pct']:+.1f}", ",".join(r["lost"]) or "-")
        out.print(t)
        cov = (f"; over the {h['covered_captures']} captures the others span: IOPS "
               f"{h['covered_mean_abs_iops_error_pct']:.1f} %, latency {h['covered_mean_abs_lat_error_pct']:.1f} %"
               if h["covered_captures"] else "")
        out.print(f"calibration.holdout_error_pct: IOPS {h['mean_abs_iops_error_pct']:.1f} %, mean latency "
                      f"{h['mean_abs_lat_error_pct']:.1f} % (mean absolute){cov}", highlight=False, markup=False)
    out.print(f"kept in {f.stored}", highlight=False, markup=False)
    if scenario_out:
        out.print(f"scenario written to {scenario_out}", highlight=False, markup=False)
    else:
        sys.stdout.write(f.scenario_toml)


@app.command("calibrate-suite", epilog=epilog("calibrate-suite"))
def calibrate_suite(
    target: Annotated[str, typer.Option("--target", help="Directory (a file is created there), file or block "
                                                         "device to run the fio jobs on.")],
    job_seconds: Annotated[int, typer.Option(help="Seconds per fio job (>= 3: two whole iostat intervals "
                                                  "inside each).", callback=bounded(3, 3600, integer=True))] = CALIBRATE_SUITE_JOB_S,
    rounds: Annotated[int, typer.Option(help="Run the set this many times over (1-10): on a shared machine each "
                                             "kind of run samples the drifting load more often.",
                                        callback=bounded(1, 10, integer=True))] = 1,
    size: Annotated[str, typer.Option(help="Size of the file (or of the device's region) the jobs use, e.g. "
                                           "256MiB.")] = "256MiB",
    i_know: Annotated[bool, typer.Option("--i-know", help="Write to a block device that holds a file system "
                                                          "(destroys it).")] = False,
    keep: Annotated[bool, typer.Option(help="Keep the file the suite created.")] = False,
    only: Annotated[str | None, typer.Option(help="Run only these jobs of the suite (comma-separated names, e.g. "
                                                  "randread-4k-qd1,read-128k-qd1).")] = None,
    validate: Annotated[str, typer.Option(help="Great Expectations contract of each capture's datasets: auto, "
                                               "full, sample, off.",
                                          callback=lambda v: one_of(v, ("auto", "full", "sample", "off")))] = "off",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the calibration suite (random reads at depth 1, 4 and 32, random writes at 1 and 32,
    sequential 128 KiB reads and writes, sequential reads at depth 16, a 50/50 mix) through
    `capture`; list the capture ids."""
    from pipelines.calibrate_suite import JOBS, run_suite
    from schemas.units import parse_size

    try:
        size_bytes = parse_size(size)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="'--size'") from None
    jobs = JOBS
    if only is not None:
        names = [n.strip() for n in only.split(",") if n.strip()]
        unknown = [n for n in names if n not in {j[0] for j in JOBS}]
        if unknown or not names:
            raise typer.BadParameter(f"unknown job(s) {', '.join(unknown) or '(none given)'}; the suite's jobs: "
                                     f"{', '.join(j[0] for j in JOBS)}", param_hint="'--only'")
        jobs = tuple(j for j in JOBS if j[0] in names)
    log = None if as_json else (lambda m: console.print(m, highlight=False, markup=False))
    r = run_suite(target, data_dir_of(data_dir), job_seconds=job_seconds, size_bytes=size_bytes, i_know=i_know,
                  keep=keep, validate=validate, jobs=jobs, rounds=rounds, log=log)
    if as_json:
        print_json(r.summary())
        return
    console.print(f"{len(r.captures)} captures in {r.seconds:.0f} s, {r.size_bytes / (1 << 20):,.0f} MiB of "
                  f"{r.file}; next: tiercast calibrate " + " ".join(f"--measured {c}" for c in r.captures)
                  + " --holdout --scenario-out device.toml", highlight=False, markup=False)
    for w in r.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
