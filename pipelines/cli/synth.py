"""``tiercast synth``: write an IOMeter/fio-style synthetic workload as an ingestable trace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from pipelines.choices import MAX_OUTSTANDING, SYNTH_MAX_IOPS, SYNTH_MAX_SPAN_S, SYNTH_PATTERNS
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    atomic_output,
    bounded,
    check_out_option,
    exclusive,
    out,
    print_json,
)
from pipelines.cli.examples import epilog
from schemas.units import format_bytes, parse_size

SECTOR = 512
MAX_BLOCK = (2**31 - 1) // SECTOR * SECTOR  # the canonical size column is int32


def _size(text: str | None, option: str, lo: int = 1, hi: int | None = None, multiple: int = 1) -> int | None:
    """A size option in bytes, or a usage error naming ``option`` and the allowed values."""
    if text is None:
        return None
    try:
        n = parse_size(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=f"'{option}'") from None
    rule = f"a multiple of {multiple} B, " if multiple > 1 else ""
    rng = f"{lo:,} B" + (f" to {hi:,} B" if hi else " or more")
    if n < lo or (hi is not None and n > hi) or n % multiple:
        raise typer.BadParameter(f"{text} ({n:,} B) is not allowed: {rule}{rng}", param_hint=f"'{option}'")
    return n


def _memory_bytes() -> int | None:
    """This machine's physical memory, when the platform says."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@app.command(epilog=epilog("synth"))
def synth(
    out_path: Annotated[Path, typer.Option("--out", help="Output file (.parquet, canonical columns).")],
    pattern: Annotated[str, typer.Option(help=f"Base pattern: {', '.join(SYNTH_PATTERNS)}.")] = "database",
    region: Annotated[str | None, typer.Option(help="Region (test file) size, e.g. 15GiB; a multiple of 512 B "
                                                    "and at least the block size.")] = None,
    requests: Annotated[int | None, typer.Option(help="Number of requests (>= 1; or --duration).",
                                                 callback=bounded(1, integer=True))] = None,
    duration: Annotated[float | None, typer.Option(help=f"Seconds of I/O at --iops (> 0, at most "
                                                        f"{SYNTH_MAX_SPAN_S:.0e}; instead of --requests).",
                                                   callback=bounded(0, SYNTH_MAX_SPAN_S, lo_open=True))] = None,
    iops: Annotated[float | None, typer.Option(help=f"Open-loop arrival rate (Poisson) for timestamps (> 0, at "
                                                    f"most {SYNTH_MAX_IOPS:.0e}: one per ns).",
                                               callback=bounded(0, SYNTH_MAX_IOPS, lo_open=True))] = None,
    block_size: Annotated[str | None, typer.Option("--block-size", help="Request size, e.g. 8KiB: a multiple "
                                                                        "of 512 B, at most 2 GiB - 512 B.")] = None,
    read_pct: Annotated[float | None, typer.Option("--read-pct", help="Percent reads (0-100).",
                                                   callback=bounded(0, 100))] = None,
    random_pct: Annotated[float | None, typer.Option("--random-pct", help="Percent random, the rest sequential "
                                                                          "(0-100).", callback=bounded(0, 100))] = None,
    distribution: Annotated[
        str | None, typer.Option(help="uniform, zipf:THETA (THETA > 0) or zoned:ACCESS/RANGE:... (fio syntax).")
    ] = None,
    outstanding: Annotated[int | None, typer.Option(help=f"Outstanding I/Os for closed-loop replay (1 to "
                                                         f"{MAX_OUTSTANDING}).",
                                                    callback=bounded(1, MAX_OUTSTANDING, integer=True))] = None,
    volume: Annotated[str | None, typer.Option(help="Volume name.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed (>= 0).", callback=bounded(0, integer=True))] = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Generate a synthetic workload (seed 000's database pattern by default). Writes only --out
    (atomically); --data-dir is accepted like on every command and not used."""
    from dataclasses import replace

    if pattern not in SYNTH_PATTERNS:
        raise typer.BadParameter(f"{pattern!r} is not one of {', '.join(SYNTH_PATTERNS)}", param_hint="'--pattern'")
    from traces import synth as synth_mod

    if requests is not None and duration is not None:
        raise exclusive("--requests", "--duration", "give a number of requests, or seconds of I/O at --iops")
    if distribution is not None:
        try:
            synth_mod.parse_distribution(distribution)
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint="'--distribution'") from None
    bs = _size(block_size, "--block-size", lo=SECTOR, hi=MAX_BLOCK, multiple=SECTOR)
    base = synth_mod.PATTERNS[pattern]
    rg = _size(region, "--region", lo=bs or base.block_size_bytes, multiple=SECTOR)
    if volume is not None and not volume.strip():
        raise typer.BadParameter("must not be empty", param_hint="'--volume'")
    w = synth_mod.pattern(
        pattern,
        region_bytes=rg,
        requests=requests,
        iops=iops,
        block_size_bytes=bs,
        read_pct=read_pct,
        random_pct=random_pct,
        distribution=distribution,
        outstanding=outstanding,
        volume=volume,
        seed=seed,
    )
    if w.region_bytes < w.block_size_bytes:
        raise typer.BadParameter(f"the region ({w.region_bytes:,} B) is smaller than the block size "
                                 f"({w.block_size_bytes:,} B)", param_hint="'--region'")
    if duration is not None:
        w = replace(w, requests=max(1, int(duration * w.iops)))
    if w.requests / w.iops > SYNTH_MAX_SPAN_S:
        raise typer.BadParameter(f"{w.requests:,} requests at {w.iops:g} IO/s last {w.requests / w.iops:.3g} s, more "
                                 f"than the {SYNTH_MAX_SPAN_S:.0e} s a synthetic trace may span",
                                 param_hint="'--requests' / '--iops'")
    need, have = w.requests * synth_mod.PEAK_BYTES_PER_REQUEST, _memory_bytes()
    if have and need > have:
        raise typer.BadParameter(f"{w.requests:,} requests need about {format_bytes(need)} of memory to generate, "
                                 f"more than the {format_bytes(have)} of this machine",
                                 param_hint="'--requests' / '--duration'")
    check_out_option(out_path, "--out")
    with atomic_output(out_path, "--out") as tmp:
        n = synth_mod.write(w, tmp)
    if as_json:
        print_json({"path": str(out_path), "requests": n, "workload": w.describe()})
    else:
        out.print(f"wrote {n:,} requests to {out_path} ({pattern}: {w.describe()})")
