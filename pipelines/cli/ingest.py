"""``tiercast ingest`` and ``tiercast traces``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.catalog import list_traces
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    WideOpt,
    app,
    console,
    data_dir_of,
    decision_table,
    one_of,
    out,
    print_json,
    progress_bar,
)
from pipelines.cli.examples import epilog
from pipelines.dataset import VALIDATE_MODES, is_current
from schemas.units import format_bytes
from traces.registry import READERS


def _options(pairs: list[str]) -> dict:
    opts = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep:
            raise ValueError(f"--option expects KEY=VALUE, got {p!r}")
        opts[k.strip().replace("-", "_")] = v.strip()
    return opts


def _order_policies() -> tuple[str, ...]:
    from traces.base import ORDER_POLICIES  # Polars: imported when ingest runs, not for --help

    return ORDER_POLICIES


@app.command(epilog=epilog("ingest"))
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Raw trace files (gzip/zstd/xz/bzip2 read transparently).")],
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help=f"Force a format: {', '.join(READERS)}.")
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Reader option KEY=VALUE (repeatable); --format generic needs -o mapping=FILE (a TOML mapping of the file's columns).")
    ] = None,
    order: Annotated[
        str, typer.Option(help="Timestamps going backwards within a volume: 'sort' (and record it) or 'reject'.",
                          callback=lambda v: one_of(v, _order_policies()))
    ] = "sort",
    validate: Annotated[
        str, typer.Option(help="Contract: auto (exact checks of every rule on every row; the Great Expectations "
                               "suite later, once for many traces: tiercast validate), full / sample (also GX "
                               "now, on every row / a sample), off.",
                          callback=lambda v: one_of(v, VALIDATE_MODES))
    ] = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Read the file again even when already ingested; replaces the dataset.")
    ] = False,
    split_by: Annotated[
        str | None, typer.Option("--split-by", help="'volume': also one dataset per volume of each trace (its own "
                                                     "trace id; independent replays a DAG maps over workers).",
                                 callback=lambda v: v if v is None else one_of(v, ("volume",)))
    ] = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Turn raw trace files into validated Parquet datasets (one trace per file). A file ingested
    by an older reader version is read again."""
    from pipelines.cli.measured import print_ingested
    from pipelines.ingest import IngestResult, ingest_trace_or_log

    dd = data_dir_of(data_dir)
    opts = _options(option or [])
    opts["order"] = order
    failed = 0
    for p in paths:
        try:
            with progress_bar(f"ingest {p.name}", enabled=not as_json) as cb:
                r = ingest_trace_or_log(p, dd, fmt, opts, cb, validate, force=force)
        except Exception as e:
            if len(paths) == 1:
                raise
            failed += 1
            console.print(f"[bold red]error:[/] {e}", highlight=False)
            continue
        parts = []
        if split_by and isinstance(r, IngestResult):
            from pipelines.ingest import split_by_volume

            parts = split_by_volume(r.trace_id, dd, validate, force)
        if as_json:
            print_json({**r.summary(), **({"split_by": split_by, "parts": [x.summary() for x in parts]}
                                          if split_by and isinstance(r, IngestResult) else {})})
        elif not isinstance(r, IngestResult):
            print_ingested(p, r)
        else:
            state = "already ingested (no-op)" if r.already_ingested else "ingested"
            out.print(
                f"{p}: {state} as trace {r.trace_id} [{r.format}]: read {r.rows_read:,}, "
                f"accepted {r.rows_accepted:,}, rejected {r.rows_rejected:,}, volumes {len(r.volumes)}"
                + (f", sorted {r.sorted_rows:,} out-of-order rows" if r.sorted_rows else "")
            )
            for x in parts:
                out.print(f"  volume {next(iter(x.volumes))}: trace {x.trace_id}, {x.rows_accepted:,} requests")
    if failed:
        raise typer.Exit(2)


@app.command(epilog=epilog("traces"))
def traces(data_dir: DataDirOpt = None, as_json: JsonOpt = False,
           du: Annotated[bool, typer.Option("--du", help="Also show each trace's size on disk and that of "
                                                          "its page streams (replay-ready pages, rebuilt "
                                                          "when deleted).")] = False,
           wide: WideOpt = False) -> None:
    """List the ingested traces, with the reader version that made each (stale: an older one)."""
    rows = []
    for t in list_traces(data_dir_of(data_dir)):
        m = t.manifest
        span = max((v["last_ts_ns"] for v in m["volumes"].values()), default=0)
        rows.append(
            {
                "trace_id": t.trace_id,
                "format": m["format"],
                "source_path": m["source_path"],
                "rows_accepted": m["rows_accepted"],
                "rows_rejected": m["rows_rejected"],
                "volumes": len(m["volumes"]),
                "span_s": span / 1e9,
                "start_time": m.get("start_time"),
                "reader_version": m.get("reader_version"),
                "current": is_current(m),
                **(t.disk_usage() if du else {}),
            }
        )
    if as_json:
        print_json(rows)
        return
    columns = [("trace_id", True), ("source", True), ("format", True), ("requests", True), ("rejected", True),
               ("span s", True), ("volumes", False), ("reader", not all(r["current"] for r in rows)),  # stale: shown
               *((("size", True), ("page streams", True)) if du else ())]
    cells = []
    for r in rows:
        reader = (r["reader_version"] or "none") + ("" if r["current"] else " (stale)")
        sizes = (format_bytes(r["trace_bytes"]), format_bytes(r["page_stream_bytes"])) if du else ()
        cells.append([r["trace_id"], Path(r["source_path"]).name, r["format"], f"{r['rows_accepted']:,}",
                      f"{r['rows_rejected']:,}", f"{r['span_s']:.1f}", str(r["volumes"]), reader, *sizes])
    t = decision_table(columns, cells, wide, wrap=(1,))
    if not all(r["current"] for r in rows):
        console.print("stale: ingested by an older reader version; `tiercast ingest FILE` reads it again")
    out.print(t) if rows else console.print("no traces ingested yet: run `tiercast ingest FILE`")


@app.command(epilog=epilog("validate"))
def validate(
    trace_ids: Annotated[list[str] | None, typer.Argument(help="Traces to check (ids or prefixes); default: "
                                                               "every trace whose GX run is pending.")] = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the Great Expectations contract once over many traces. `tiercast ingest` publishes a
    trace only when the exact checks of every contract rule pass on every row; the GX suite
    (~9 s to import) runs here for all of them at once. A trace GX fails is moved to
    <data dir>/quarantine/datasets/ (exit 2)."""
    from pipelines.catalog import find_trace
    from pipelines.contract import pending_traces, validate_datasets

    dd = data_dir_of(data_dir)
    ids = [find_trace(dd, t).trace_id for t in trace_ids] if trace_ids else pending_traces(dd)
    checked = validate_datasets(dd, [("trace", i) for i in ids], dd / "quarantine")
    result = {"valid": [i for _, i in checked["valid"]],
              "invalid": [{"trace_id": i, "error": e} for _, i, e in checked["invalid"]]}
    if as_json:
        print_json(result)
    else:
        for i in result["valid"]:
            out.print(f"{i}: meets the contract (Great Expectations)")
        for r in result["invalid"]:
            out.print(f"{r['trace_id']}: fails the contract, moved to {dd / 'quarantine' / 'datasets'}: {r['error']}")
        if not ids:
            console.print("no trace waits for the Great Expectations contract")
    if result["invalid"]:
        raise typer.Exit(2)
