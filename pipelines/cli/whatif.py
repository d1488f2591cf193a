"""``tiercast compare`` (one trace through several scenarios, side by side, with a report) and
``tiercast size`` (the cheapest configuration that meets a target)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.choices import MAX_OUTSTANDING
from pipelines.cli.common import (
    DataDirOpt,
    JobsOpt,
    JsonOpt,
    WideOpt,
    app,
    check_out_option,
    data_dir_of,
    decision_table,
    mode_text,
    out,
    print_findings,
    print_json,
    progress_bar,
)
from pipelines.cli.examples import epilog
from pipelines.cli.replay import SetOpt, bounded

OutOpt = Annotated[Path | None, typer.Option("--out", help="HTML report to write (default: reports/<command>-<trace "
                                                           "id prefix>.html).")]
NoReportOpt = Annotated[bool, typer.Option("--no-report", help="Do not write the HTML report.")]
OutstandingOpt = Annotated[int | None, typer.Option(
    help=f"Replay every scenario closed loop with this many I/Os in flight, 1 to {MAX_OUTSTANDING} (default: the "
         "trace's own timing, open loop; runs of different modes are never put side by side).",
    callback=bounded(1, MAX_OUTSTANDING, integer=True))]


def _f(v, fmt: str = ",.2f") -> str:
    return "-" if v is None else format(v, fmt)


def _progress(label: str):
    """A progress callback factory: one transient bar per replay (rich shows one live display at
    a time, so a new bar closes the last)."""
    bars = []

    def close() -> None:
        while bars:
            bars.pop().__exit__(None, None, None)

    def make(name: str):
        close()
        cm = progress_bar(f"{label} {name}", "requests")
        bars.append(cm)
        return cm.__enter__()

    return make, close


def _report(d: Path, out_path: Path | None, command: str, trace, title: str, run_ids: list[str], summary: dict,
            meets: dict[str, bool] | None = None) -> Path:
    from pipelines.report import write_report  # loads the warehouse when it is older than the data

    path = out_path or Path("reports") / f"{command}-{trace.trace_id[:12]}.html"
    return write_report(d, path, title, trace_id=trace.trace_id, run_ids=run_ids, summary=summary, meets=meets)


#: ``compare``'s table: (header, decision column); the others only with ``--wide``
COMPARE_COLUMNS = [("scenario", True), ("IOPS", True), ("mean ms", True), ("p95 ms", True), ("p99 ms", True),
                   ("p95 vs 1st", True), ("DRAM read hit", False), ("SSD hit", False), ("SSD fill %", False),
                   ("flush MB/s", False), ("forced flushes", False), ("throttle s", False), ("warm-up s", False),
                   ("per month", False), ("run", False)]


#: ``size --cloud``'s table: (header, decision column)
CLOUD_SIZE_COLUMNS = [("configuration", True), ("per month", True), ("meets", True), ("p99 ms", True), ("IOPS", False),
                      ("mean ms", False), ("token waits s", False), ("why not", True)]


def _compare_cells(r: dict) -> list[str]:
    """One ``compare`` row's cells, in ``COMPARE_COLUMNS``' order."""
    return [r["scenario"], _f(r["iops"], ",.0f"), _f(r["latency_mean_ms"]), _f(r["latency_p95_ms"]),
            _f(r["latency_p99_ms"]), _f(r["latency_p95_ms_change_pct"], "+.1f") + " %",
            _f(r["dram_read_hit_ratio"], ".3f"), _f(r["ssd_hit_ratio"], ".3f"), _f(r["ssd_fill_pct_end"], ".1f"),
            _f(r["flush_mb_per_s"]), f"{r['forced_flush_count']:,}", _f(r["throttle_delay_sum_ms"] / 1000, ",.1f"),
            _f(r["warmup_s"], ",.0f"), _cost(r), r["run_id"] + (" (reused)" if r["reused"] else "")]


def _cost(r: dict) -> str:
    """A cloud volume's list price per month ("-" for an array: no price table for it yet)."""
    return f"{r['cost_per_month']:,.2f} {r['currency']}" if r.get("cost_per_month") is not None else "-"


@app.command(epilog=epilog("compare"))
def compare(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    scenario: Annotated[list[str], typer.Option(
        "--scenario", "-s", help="Preset name or .toml path, optionally followed by overrides of its own: "
        "'vnx5400-fastcache ssd_cache.capacity_bytes=200GB' (repeatable; the first is the baseline).")],
    overrides: SetOpt = None,
    measured: Annotated[list[str] | None, typer.Option(
        "--measured", metavar="CAPTURE", help="A capture (tiercast captures) to compare every run with, model vs "
        "measured (repeatable). Default: every capture that recorded this trace itself.")] = None,
    outstanding: OutstandingOpt = None,
    jobs: JobsOpt = None,
    out_path: OutOpt = None,
    no_report: NoReportOpt = False,
    wide: WideOpt = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through several scenarios (reusing runs already made by this model version)
    and show them side by side: hit ratios per cache tier, flushes, forced flushes and
    throttling, IOPS, response time mean/p95/p99, warm-up, SSD fill; each run against the
    captures that measured the trace; the trace's skew; plus an HTML report."""
    import warnings

    from pipelines import whatif
    from pipelines.catalog import find_trace
    from pipelines.summary import compare_summary, summary_lines
    from pipelines.workers import default_jobs

    if out_path is not None:
        check_out_option(out_path, "--out")
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    scs = [whatif.scenario_of(s, overrides or ()) for s in scenario]
    notes: list[str] = []
    make, close = _progress("replay")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = whatif.compare(trace, d, scs, progress=make, measured=measured, warn=notes.append,
                                  outstanding=outstanding, jobs=jobs or default_jobs())
            skews = whatif.trace_skews(trace, d, scs)
    finally:
        close()
    summary = compare_summary(trace, scs, rows)
    title = f"compare {len(rows)} configurations on trace {trace.name}"
    report = None if no_report else _report(d, out_path, "compare", trace, title, [r["run_id"] for r in rows],
                                             summary)
    for r in rows:
        r["report"] = str(report) if report else None
    if as_json:
        for n in notes:
            sys.stderr.write(f"note: {n}\n")
        print_json({"trace_id": trace.trace_id, "trace": trace.name, "mode": rows[0]["mode"],
                    "outstanding": rows[0]["outstanding"], "summary": summary, "rows": rows,
                    "report": str(report) if report else None})
        return
    out.print(f"trace {trace.name} ({trace.trace_id}), mode {mode_text(rows[0])}")
    for line in summary_lines(summary):
        out.print(line)
    for r in rows:
        print_findings(r["warnings"], r["scenario"])
    priced = any(r.get("cost_per_month") is not None for r in rows)  # money decides when a price is known
    columns = [(h, d or (priced and h == "per month")) for h, d in COMPARE_COLUMNS]
    out.print(decision_table(columns, [_compare_cells(r) for r in rows], wide))
    for r in rows:
        if r.get("tier_request_share"):
            out.print(f"{r['scenario']}: FAST VP share of the I/O per tier: " + ", ".join(
                f"{tier} {100 * share:.1f} %" for tier, share in r["tier_request_share"].items()))
    for r in rows:
        for c in r["model_vs_measured"]:
            for dev, e in c["devices"].items():
                out.print(f"{r['scenario']} vs capture {c['capture_id']} ({dev}): IOPS MAPE {_f(e['iops_mape_pct'], '.1f')} "
                          f"%, mean latency MAPE {_f(e['latency_mean_ms_mape_pct'], '.1f')} % (bias "
                          f"{_f(e['latency_mean_ms_bias_pct'], '+.1f')} %)")
    for k in skews:
        out.print(f"trace skew ({k['slice_bytes'] >> 20} MiB slices): {100 * k['skew_io_share']:.1f} % of the I/O on "
                  f"{100 * k['skew_capacity_share']:.1f} % of the capacity; 80 % of the I/O in "
                  f"{k['flash_bytes_80pct'] / (1 << 30):,.2f} GiB")
    for n in notes:
        out.print(f"note: {n}")
    if report:
        out.print(f"report {report}")


@app.command(epilog=epilog("size"))
def size(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    target: Annotated[list[str], typer.Option(
        "--target", help="What the configuration must meet, e.g. 'p95_ms<=5', 'iops>=20000' (repeatable: all).")],
    base: Annotated[str | None, typer.Option("--base", help="Preset name or .toml path the variants start from.")] = None,
    vary: Annotated[list[str] | None, typer.Option(
        "--vary", metavar="KEY=V1,V2,...", help="A scenario key and its values, cheapest first, e.g. "
        "ssd_cache.capacity_bytes=0,50GB,100GB (0: no SSD cache). Repeatable: every combination is a variant.")] = None,
    cloud: Annotated[str | None, typer.Option(
        "--cloud", help="Instead of --base / --vary: the cheapest volume of this cloud (aws, azure, gcp) over its "
        "volume types, sizes and provisioned IOPS and MiB/s, at list prices (pipelines.cloud_sizing).")] = None,
    overrides: SetOpt = None,
    prune: Annotated[bool, typer.Option(help="Skip a variant whose run is provably the same as a cheaper one that "
                                              "failed (only an SSD cache larger than the trace's footprint).")] = True,
    exhaustive: Annotated[bool, typer.Option(help="Replay every variant (to check the search).")] = False,
    headroom: Annotated[bool, typer.Option(help="Also replay the answer time-compressed (1.25x, 1.5x, 2x ... its "
                                                "load, then bisected) for the load at which it stops meeting the "
                                                "targets (open loop only).")] = True,
    growth: Annotated[str | None, typer.Option(
        "--growth", metavar="RATE", help="A yearly load growth such as 30%/year: the headroom as the month it runs "
        "out.")] = None,
    outstanding: OutstandingOpt = None,
    jobs: JobsOpt = None,
    out_path: OutOpt = None,
    no_report: NoReportOpt = False,
    wide: WideOpt = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The cheapest configuration that meets every target: variants replayed cheapest first until
    one meets them, skipping only those whose run would be the same as a cheaper one that failed;
    then its headroom (the load it carries before missing them)."""
    import warnings

    from pipelines import whatif
    from pipelines.catalog import find_trace
    from pipelines.summary import size_summary, summary_lines

    if out_path is not None:
        check_out_option(out_path, "--out")
    targets = [whatif.parse_target(t) for t in target]
    from pipelines.headroom import parse_growth

    try:
        growth_pct = parse_growth(growth) if growth is not None else None
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--growth") from None
    if cloud is not None:
        if base is not None or vary:
            raise typer.BadParameter("--cloud searches the cloud's volume types itself: give no --base or --vary",
                                     param_hint="--cloud")
        _size_cloud(trace_id, cloud, targets, overrides or (), outstanding, data_dir, as_json, wide)
        return
    if base is None or not vary:
        raise typer.BadParameter("give --base and --vary (or --cloud aws|azure|gcp)", param_hint="--base")
    from pipelines.workers import default_jobs

    varies = [whatif.parse_vary(v) for v in vary]
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    make, close = _progress("replay")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = whatif.size(trace, d, base, varies, targets, overrides or (), prune=prune, exhaustive=exhaustive,
                              progress=make, outstanding=outstanding, growth_pct=growth_pct, headroom=headroom,
                              jobs=jobs or default_jobs())
    finally:
        close()
    run_ids = [v.row["run_id"] for v in res.variants if v.row]
    summary = size_summary(trace, res, targets)
    meets = {v.row["run_id"]: bool(v.meets) for v in res.variants if v.row}
    report = None if no_report or not run_ids else _report(
        d, out_path, "size", trace, f"size {base} for {' and '.join(res.targets)} on trace {trace.name}", run_ids,
        summary, meets)
    doc = {**res.as_dict(), "summary": summary, "report": str(report) if report else None}
    if as_json:
        print_json(doc)
        return
    out.print(f"trace {trace.name} ({trace.trace_id}), mode {mode_text(res.mode)}")
    for line in summary_lines(summary):
        out.print(line)
    chunks = sorted({v.ssd_chunk_bytes for v in res.variants if v.ssd_bytes})
    curve = f"LRU hit @{'/'.join(f'{c >> 10}K' for c in chunks)}" if chunks else "LRU hit"
    cells = []
    for v in res.variants:
        r = v.row or {}
        meets = {True: "yes", False: "no", None: "-"}[v.meets] + (" (same run)" if v.skipped == "identical" else "")
        cells.append([v.label, meets, _f(r.get("latency_p95_ms")), _f(r.get("latency_p99_ms")),
                      _f(r.get("latency_mean_ms")), _f(r.get("iops"), ",.0f"), _f(v.curve_hit_ratio, ".4f"),
                      ("reused" if r.get("reused") else "yes") if v.row else f"no: {v.skipped}"])
    columns = [("variant", True), ("meets", True), ("p95 ms", True), ("p99 ms", True), ("mean ms", True),
               ("IOPS", True), (curve, False), ("replayed", False)]
    out.print(decision_table(columns, cells, wide))
    if chunks:
        out.print(f"{curve}: the trace's exact LRU hit ratio at each SSD cache's capacity, in its own chunks, every "
                  "miss admitted (an estimate: the replay applies the cache's admission rule behind the DRAM cache)")
    for v in res.variants:
        print_findings((v.row or {}).get("warnings"), v.label)
    c = res.counts()
    out.print(f"{c['replayed']} of {c['variants']} variants replayed ({c['replayed_now']} new); skipped "
              f"{c['identical_skipped']} whose run would equal a cheaper failed one and {c['not_needed']} costlier "
              "than the answer")
    if report:
        out.print(f"report {report}")


def _size_cloud(trace_id: str, provider: str, targets, overrides, outstanding, data_dir, as_json: bool,
                wide: bool = False) -> None:
    """``size --cloud``: the cheapest cloud volume meeting the targets, the runner-up, why cheaper ones fail."""
    import time
    import warnings

    from pipelines.catalog import find_trace
    from pipelines.cloud_sizing import size_cloud
    from replay.mech.cloud.types import PROVIDERS

    if provider not in PROVIDERS:
        raise typer.BadParameter(f"{provider!r}: one of {', '.join(PROVIDERS)}", param_hint="--cloud")
    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    make, close = _progress("replay")
    t0 = time.time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = size_cloud(trace, d, provider, targets, overrides, progress=make, outstanding=outstanding)
    finally:
        close()
    doc = {**res.as_dict(), "wall_seconds": time.time() - t0}
    if as_json:
        print_json(doc)
        return
    out.print(f"trace {trace.trace_id}, mode {mode_text(res.mode)}, footprint {res.footprint_bytes / (1 << 30):,.1f} "
              f"GiB; {doc['replayed']} of {doc['candidates']} {provider} configurations replayed "
              f"({doc['dominated_skipped']} skipped: a cheaper one with higher rates failed), {doc['wall_seconds']:,.1f} s")
    # the answer, the runner-up, and per volume type its best configuration that failed (all in --json)
    shown = [c for c in (res.chosen, res.runner_up) if c is not None]
    best_failed = {}
    for c in res.candidates:
        if c.meets is False and c.summary is not None and (res.chosen is None or c.cost < res.chosen.cost):
            best_failed[c.volume_type] = c
    shown += sorted(best_failed.values(), key=lambda c: -c.cost)
    cells = []
    for c in shown:
        s = c.summary or {}
        cells.append([c.label, f"{c.cost:,.2f} {c.currency}", {True: "yes", False: "no", None: "-"}[c.meets],
                      _f(s.get("latency_p99_ms")), _f(s.get("iops"), ",.0f"), _f(s.get("latency_mean_ms")),
                      _f((s.get("throttle_delay_sum_ms") or 0) / 1e3 if s else None, ",.1f"), c.why or ""])
    out.print(decision_table(CLOUD_SIZE_COLUMNS, cells, wide, wrap=(0, 7)))
    failed = sum(c.meets is False for c in res.candidates)
    out.print(f"{failed} cheaper configurations failed; above, each volume type's costliest one (--json lists all)")
    goal = " and ".join(res.targets)
    if res.chosen is None:
        out.print(f"no {provider} configuration tried meets {goal}")
        return
    ch = res.chosen
    out.print(f"cheapest meeting {goal}: {ch.label} at {ch.cost:,.2f} {ch.currency}/month "
              f"(p99 {ch.summary['latency_p99_ms']:,.2f} ms)")
    if res.runner_up is not None:
        ru = res.runner_up
        out.print(f"runner-up: {ru.label} at {ru.cost:,.2f} {ru.currency}/month "
                  f"(p99 {ru.summary['latency_p99_ms']:,.2f} ms)")
