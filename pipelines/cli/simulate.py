"""``tiercast simulate`` (one cache policy, one size) and ``tiercast mrc`` (hit-ratio curves)."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.catalog import find_trace
from pipelines.choices import CACHE_POLICIES
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    bounded,
    checked,
    data_dir_of,
    out,
    print_json,
    progress_bar,
)
from pipelines.cli.examples import epilog
from schemas.units import format_bytes, parse_duration_ns, parse_size, parse_sizes


def _check_page_size(text: str) -> int:
    from replay.pages import check_page_size  # numba: imported when simulate or mrc runs, not for --help

    return check_page_size(parse_size(text))  # raises ValueError


_size = checked(parse_size, lambda n: n > 0, "must be a positive size such as 8GiB")
_page_size = checked(_check_page_size, lambda _: True, "")
_sizes = checked(parse_sizes, bool, "expects one or more sizes such as 1GiB,2GiB,4GiB")
_interval = checked(parse_duration_ns, lambda n: n > 0, "must be a positive duration such as 60s or 5min")


@app.command(epilog=epilog("simulate"))
def simulate(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    policy: Annotated[str, typer.Option(help=f"Cache policy: {', '.join(CACHE_POLICIES)}.")] = "lru",
    cache_size: Annotated[str, typer.Option("--cache-size", help="Cache size, e.g. 8GiB.", callback=_size)] = "8GiB",
    page_size: Annotated[str, typer.Option("--page-size", help="Cache page size, 512B..1GiB, power of 2.",
                                           callback=_page_size)] = "4KiB",
    interval: Annotated[str, typer.Option(help="Per-interval metrics window, e.g. 60s, 5min.",
                                          callback=_interval)] = "60s",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through one cache policy at one size; write summary and per-interval Parquet."""
    from pipelines import simulate as sim

    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    with progress_bar(f"{policy} {cache_size}", "rows") as cb:
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


@app.command(epilog=epilog("mrc"))
def mrc(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    page_size: Annotated[str, typer.Option("--page-size", help="Cache page size, 512B..1GiB, power of 2.",
                                           callback=_page_size)] = "4KiB",
    sizes: Annotated[str | None, typer.Option(help="Cache sizes, e.g. 1GiB,2GiB,4GiB (default: 20 "
                                                   "log-spaced sizes up to the footprint).", callback=_sizes)] = None,
    method: Annotated[str, typer.Option(help="exact (stack distances) or shards (sampled).")] = "exact",
    rate: Annotated[float | None, typer.Option(help="SHARDS sampling rate, > 0 and <= 1 (default 0.01; with "
                                                    "--max-pages, the starting rate, default 1).",
                                               callback=bounded(0, 1, lo_open=True))] = None,
    max_pages: Annotated[int, typer.Option("--max-pages", help="SHARDS fixed-size: at most this many "
                                                               "sampled pages (0: fixed-rate).",
                                           callback=bounded(0, integer=True))] = 0,
    seeds: Annotated[int, typer.Option(help="SHARDS fixed-rate: average this many disjoint samples at "
                                            "--rate (less variance, that many times the sampled work).",
                                       callback=bounded(1, integer=True))] = 1,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """LRU hit ratio at every cache size in one pass (exact Mattson stack distances, or SHARDS)."""
    from pipelines import simulate as sim

    if method == "exact":
        for given, name in ((rate is not None, "--rate"), (max_pages != 0, "--max-pages"), (seeds != 1, "--seeds")):
            if given:
                raise typer.BadParameter("applies to --method shards only (exact computes every access)",
                                         param_hint=f"'{name}'")
    if seeds > 1 and max_pages:
        raise typer.BadParameter("applies to fixed-rate SHARDS only (not with --max-pages)", param_hint="'--seeds'")
    if seeds > 1 and (rate if rate is not None else 0.01) * seeds > 1:
        raise typer.BadParameter("--seeds x --rate must be at most 1 (the samples are disjoint)",
                                 param_hint="'--seeds'")
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    size_list = parse_sizes(sizes) if sizes is not None else None
    with progress_bar(f"mrc {method}", "rows") as cb:
        rows = sim.mrc(trace, d, parse_size(page_size), size_list, method=method, rate=rate, max_pages=max_pages,
                       progress=cb, seeds=seeds)
    method_name, sample_rate = rows["method"][0], rows["sample_rate"][0]
    path = sim.mrc_path(d, trace.trace_id, method_name, parse_size(page_size), sample_rate)
    if as_json:
        print_json({"trace_id": trace.trace_id, "method": method_name, "sample_rate": sample_rate,
                    "page_size": parse_size(page_size), "model_version": rows["model_version"][0],
                    "results_path": str(path),
                    "rows": rows.select("cache_bytes", "hit_ratio", "byte_hit_ratio").to_dicts()})
        return
    rate_txt = f" at sample rate {sample_rate:.4g}" if method != "exact" else ""
    out.print(f"trace {trace.trace_id}  {method_name}{rate_txt}  page {format_bytes(parse_size(page_size))}")
    out.print(f"{'cache':>12}  {'hit_ratio':>9}  {'byte_hit_ratio':>14}")
    for r in rows.iter_rows(named=True):
        out.print(f"{format_bytes(r['cache_bytes']):>12}  {r['hit_ratio']:>9.4f}  {r['byte_hit_ratio']:>14.4f}")
    out.print(f"results {path}")
