"""``tiercast simulate`` (one cache policy, one size) and ``tiercast mrc`` (hit-ratio curves)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pipelines import simulate as sim
from pipelines.catalog import find_trace
from pipelines.cli.common import DataDirOpt, JsonOpt, app, console, data_dir_of, out, print_json
from replay.kernels import POLICIES
from schemas.units import format_bytes, parse_size, parse_sizes


@contextmanager
def _row_progress(label: str):
    """A rich progress bar over trace rows (chunks) on a terminal; yields a callback or None."""
    if not console.is_terminal:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                  TimeRemainingColumn(), console=console, transient=True) as p:
        task = p.add_task(label, total=None)
        yield lambda done, total: p.update(task, completed=done, total=total)


@app.command()
def simulate(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    policy: Annotated[str, typer.Option(help=f"Cache policy: {', '.join(POLICIES)}.")] = "lru",
    cache_size: Annotated[str, typer.Option("--cache-size", help="Cache size, e.g. 8GiB.")] = "8GiB",
    page_size: Annotated[str, typer.Option("--page-size", help="Cache page size, 512B..1GiB, power of 2.")] = "4KiB",
    interval: Annotated[str, typer.Option(help="Per-interval metrics window, e.g. 60s, 5min.")] = "60s",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through one cache policy at one size; write summary and per-interval Parquet."""
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    with _row_progress(f"{policy} {cache_size}") as cb:
        s = sim.simulate(trace, d, policy, parse_size(cache_size), parse_size(page_size), interval=interval,
                         progress=cb)
    if as_json:
        print_json(s)
        return
    out.print(f"trace {s['trace_id']}  policy {s['policy']}  cache {format_bytes(s['cache_bytes'])} "
              f"({s['capacity_pages']:,} pages of {format_bytes(s['page_size'])})")
    out.print(f"requests       {s['requests']:>14,}")
    out.print(f"pages          {s['pages']:>14,}   (distinct {s['distinct_pages']:,})")
    out.print(f"hits           {s['hits']:>14,}")
    out.print(f"hit_ratio      {s['hit_ratio']:>14.4f}")
    out.print(f"byte_hit_ratio {s['byte_hit_ratio']:>14.4f}")
    out.print(f"results        {s['results_dir']}")


@app.command()
def mrc(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    page_size: Annotated[str, typer.Option("--page-size", help="Cache page size, 512B..1GiB, power of 2.")] = "4KiB",
    sizes: Annotated[str | None, typer.Option(help="Cache sizes, e.g. 1GiB,2GiB,4GiB [default: 20 "
                                                   "log-spaced sizes up to the footprint].")] = None,
    method: Annotated[str, typer.Option(help="exact (stack distances) or shards (sampled).")] = "exact",
    rate: Annotated[float | None, typer.Option(help="SHARDS sampling rate [default: 0.01; with "
                                                    "--max-pages, the starting rate, default 1].")] = None,
    max_pages: Annotated[int, typer.Option("--max-pages", help="SHARDS fixed-size: at most this many "
                                                               "sampled pages (0: fixed-rate).")] = 0,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """LRU hit ratio at every cache size in one pass (exact Mattson stack distances, or SHARDS)."""
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    size_list = parse_sizes(sizes) if sizes else None
    with _row_progress(f"mrc {method}") as cb:
        rows = sim.mrc(trace, d, parse_size(page_size), size_list, method=method, rate=rate, max_pages=max_pages,
                       progress=cb)
    if as_json:
        print_json(rows.select("cache_bytes", "hit_ratio", "byte_hit_ratio").to_dicts())
        return
    method_name = rows["method"][0] if rows.height else method
    rate_txt = f" at sample rate {rows['sample_rate'][0]:.4g}" if rows.height and method != "exact" else ""
    out.print(f"trace {trace.trace_id}  {method_name}{rate_txt}  page {format_bytes(parse_size(page_size))}")
    out.print(f"{'cache':>12}  {'hit_ratio':>9}  {'byte_hit_ratio':>14}")
    for r in rows.iter_rows(named=True):
        out.print(f"{format_bytes(r['cache_bytes']):>12}  {r['hit_ratio']:>9.4f}  {r['byte_hit_ratio']:>14.4f}")
