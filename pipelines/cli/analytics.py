"""``tiercast skew`` (I/O skew over slices, for tiering) and ``tiercast snapshots`` (space held by
redirect-on-write snapshots)."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.catalog import find_trace
from pipelines.cli.common import DataDirOpt, JsonOpt, app, checked, data_dir_of, out, print_json, progress_bar
from pipelines.cli.examples import epilog
from schemas.units import format_bytes, parse_duration_ns, parse_size

_size = checked(parse_size, lambda n: n > 0, "must be a positive size such as 256MiB")
_duration = checked(parse_duration_ns, lambda n: n > 0, "must be a positive duration such as 1h or 4d")
TraceArg = Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")]
#: capacity shares of the short curve table
CURVE_TABLE_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)


def _run(trace_id: str, data_dir, label: str, compute, as_json: bool):
    """(trace, result, its JSON document) of ``compute(trace, progress)``; with ``as_json`` the
    document is printed and the result is None (nothing else to show)."""
    trace = find_trace(data_dir_of(data_dir), trace_id)
    with progress_bar(label, "rows") as cb:
        result = compute(trace, cb)
    doc = result.summary()
    if as_json:
        print_json(doc)
        return trace, None, doc
    return trace, result, doc


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


@app.command(epilog=epilog("skew"))
def skew(
    trace_id: TraceArg,
    slice_size: Annotated[str, typer.Option("--slice", help="Slice size (FAST VP: 256MiB on VNX2, 1GiB on VNX1).",
                                            callback=_size)] = "256MiB",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """I/O skew: slices sorted by I/O count, the skew point and the flash capacity for 80/90/95 % of the I/O."""
    from pipelines.analytics import skew_trace
    from replay.skew import NO_SKEW_IO_SHARE

    trace, s, doc = _run(trace_id, data_dir, f"skew {slice_size}",
                         lambda t, cb: skew_trace(t, parse_size(slice_size), progress=cb,
                                                  data_dir=data_dir_of(data_dir)), as_json)
    if s is None:
        return
    point = doc["skew_point"]
    out.print(f"trace {trace.trace_id}  {s.slices:,} slices of {format_bytes(s.slice_bytes)}  {s.ios:,} I/Os "
              f"({len(s.counts):,} slices touched)")
    out.print(f"skew point      {_pct(point['io_share'])} of the I/O on {_pct(point['capacity_share'])} "
              "of the capacity")
    for share, nbytes in doc["capacity_for_io_share"].items():
        out.print(f"flash for {float(share) * 100:>3.0f} % of the I/O  {format_bytes(nbytes):>12}  "
                  f"({_pct(nbytes / (s.slices * s.slice_bytes))} of the capacity)")
    if point["io_share"] <= NO_SKEW_IO_SHARE:
        out.print("no skew: the I/O is spread about evenly over the capacity (a skew point near 50 %), so tiering cannot help")
    out.print(f"{'capacity':>9}  {'I/O':>7}")
    for share in CURVE_TABLE_SHARES:
        p = s.at_capacity(share)
        out.print(f"{_pct(p['capacity_share']):>9}  {_pct(p['io_share']):>7}")


@app.command(epilog=epilog("snapshots"))
def snapshots(
    trace_id: TraceArg,
    every: Annotated[str, typer.Option(help="A snapshot every this long from the trace start, e.g. 1h.",
                                       callback=_duration)] = "1h",
    keep: Annotated[str, typer.Option(help="Each snapshot is kept this long, e.g. 4d.", callback=_duration)] = "4d",
    block: Annotated[str, typer.Option(help="Pool block size: the unit a snapshot keeps.", callback=_size)] = "8KiB",
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pool space held by redirect-on-write snapshots taken every --every and kept --keep."""
    from pipelines.analytics import snapshots_trace

    trace, t, doc = _run(trace_id, data_dir, f"snapshots every {every}",
                         lambda tr, cb: snapshots_trace(tr, parse_duration_ns(every), parse_duration_ns(keep),
                                                        parse_size(block), progress=cb), as_json)
    if t is None:
        return
    out.print(f"trace {trace.trace_id}  a snapshot every {every}, kept {keep} ({t.retained_max} at most)  "
              f"block {format_bytes(t.block_bytes)}")
    out.print(f"{'start':>10}  {'writes':>10}  {'overwritten':>11}  {'new space':>10}  {'snaps':>5}  {'space':>10}")
    for r in doc["intervals"]:
        out.print(f"{_hours(r['start_ns']):>10}  {r['writes']:>10,}  {r['blocks_overwritten']:>11,}  "
                  f"{format_bytes(r['new_snapshot_bytes']):>10}  {r['retained_snapshots']:>5}  "
                  f"{format_bytes(r['snapshot_bytes']):>10}")
    peak = doc["peak"]
    out.print(f"peak snapshot space {format_bytes(peak['snapshot_bytes'])} ({peak['snapshot_bytes']:,} bytes) "
              f"at the end of the interval starting {_hours(peak['start_ns'])}")


def _hours(ns: int) -> str:
    """A time since the trace start as +H:MM:SS."""
    s = ns // 1_000_000_000
    return f"+{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
