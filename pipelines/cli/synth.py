"""``tiercast synth``: write an IOMeter/fio-style synthetic workload as an ingestable trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import JsonOpt, app, out, print_json
from schemas.units import parse_size
from traces import synth as synth_mod


@app.command()
def synth(
    out_path: Annotated[Path, typer.Option("--out", help="Output file (.parquet, canonical columns).")],
    pattern: Annotated[str, typer.Option(help=f"Base pattern: {', '.join(synth_mod.PATTERNS)}.")] = "database",
    region: Annotated[str | None, typer.Option(help="Region (test file) size, e.g. 15GiB.")] = None,
    requests: Annotated[int | None, typer.Option(help="Number of requests.")] = None,
    duration: Annotated[float | None, typer.Option(help="Seconds of I/O at --iops (instead of --requests).")] = None,
    iops: Annotated[float | None, typer.Option(help="Open-loop arrival rate (Poisson) for timestamps.")] = None,
    block_size: Annotated[str | None, typer.Option("--block-size", help="Request size, e.g. 8KiB.")] = None,
    read_pct: Annotated[float | None, typer.Option("--read-pct", help="Percent reads.")] = None,
    random_pct: Annotated[float | None, typer.Option("--random-pct", help="Percent random (rest sequential).")] = None,
    distribution: Annotated[
        str | None, typer.Option(help="uniform, zipf:THETA or zoned:ACCESS/RANGE:... (fio syntax).")
    ] = None,
    outstanding: Annotated[int | None, typer.Option(help="Outstanding I/Os for closed-loop replay.")] = None,
    volume: Annotated[str | None, typer.Option(help="Volume name.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Generate a synthetic workload (seed 000's database pattern by default)."""
    w = synth_mod.pattern(
        pattern,
        region_bytes=parse_size(region) if region else None,
        requests=requests,
        iops=iops,
        block_size_bytes=parse_size(block_size) if block_size else None,
        read_pct=read_pct,
        random_pct=random_pct,
        distribution=distribution,
        outstanding=outstanding,
        volume=volume,
        seed=seed,
    )
    if duration is not None:
        from dataclasses import replace

        w = replace(w, requests=max(1, int(duration * w.iops)))
    n = synth_mod.write(w, out_path)
    if as_json:
        print_json({"path": str(out_path), "requests": n, "workload": w.describe()})
    else:
        out.print(f"wrote {n:,} requests to {out_path} ({pattern}: {w.describe()})")
