"""``tiercast replay`` (a trace through an array scenario), ``tiercast sweep`` (closed-loop IOPS and
response time against outstanding I/Os) and ``tiercast scenarios`` (the presets)."""

from __future__ import annotations

import warnings
from typing import Annotated

import typer

from pipelines.catalog import find_trace
from pipelines.choices import MAX_OUTSTANDING, MAX_WARMUP_PCT
from pipelines.cli.common import (
    DataDirOpt,
    JobsOpt,
    JsonOpt,
    WideOpt,
    app,
    bounded,
    console,
    data_dir_of,
    decision_table,
    mode_text,
    out,
    print_findings,
    print_json,
    progress_bar,
)
from pipelines.cli.examples import epilog
from schemas.units import format_bytes

ScenarioOpt = Annotated[str, typer.Option("--scenario", "-s", help="Preset name (see `tiercast scenarios`) "
                                                                   "or path to a scenario .toml file.")]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", help="Change a value of the scenario before it is validated, e.g. "
    "dram.cache_bytes=8GiB or raid_groups[0].width=6 (repeatable; the value is TOML, else text). Checked like "
    "the file and part of the scenario hash.")]


def _outstanding_list(text: str) -> list[int]:
    """``--outstanding 12,24,48`` of ``sweep`` as a list of counts, each from 1 to MAX_OUTSTANDING."""
    expect = f"integers from 1 to {MAX_OUTSTANDING} such as 12,24,48"
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expects {expect}, got {text!r}") from None
    if not counts or not all(1 <= n <= MAX_OUTSTANDING for n in counts):
        raise typer.BadParameter(f"expects {expect}, got {text!r}")
    return counts


def _check_outstanding(text: str) -> str:
    _outstanding_list(text)
    return text


def _scenario(ref: str, overrides: list[str] | None):
    from replay.scenario import load

    return load(ref, overrides or ())


def _warn_to_console(scenario) -> None:
    if scenario.ignored_sections:
        console.print(f"[yellow]note:[/] {scenario.name}: {', '.join(scenario.ignored_sections)} not yet "
                      "modelled, ignored", markup=True, highlight=False)


@app.command(epilog=epilog("replay"))
def replay(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    scenario: ScenarioOpt,
    overrides: SetOpt = None,
    outstanding: Annotated[int | None, typer.Option(
        help=f"Closed loop with this many I/Os in flight, 1 to {MAX_OUTSTANDING} (default: the trace's own "
             "timing, open loop; a trace without timestamps goes closed loop at the scenario's outstanding).",
        callback=bounded(1, MAX_OUTSTANDING, integer=True))] = None,
    force: Annotated[bool, typer.Option(help="Replay again even if this run exists.")] = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through an array scenario (DRAM cache, RAID back end, queueing); write the run
    summary and per-interval metrics per volume and RAID group."""
    from pipelines import replay as rp

    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    sc = _scenario(scenario, overrides)
    if outstanding is not None:
        sc = sc.with_replay(mode="closed", outstanding=outstanding)
    _warn_to_console(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with progress_bar(f"replay {sc.name}", "requests") as cb:
            s = rp.replay_trace(trace, d, sc, progress=cb, force=force)
    s = {**s, "scenario_source": sc.source}
    if as_json:
        print_json(s)
        return
    out.print(f"run {s['run_id']}  trace {s['trace_id']}  scenario {s['scenario']} ({s['dram_mode']})"
              f"  mode {mode_text(s)}  model {s['model_version']}{'  [already done]' if s.get('already_done') else ''}")
    print_findings(s.get("warnings"))
    if overrides:
        out.print(f"scenario {sc.source}")
    for k, v in _lines(s):
        out.print(f"{k:<30} {v:>20}")
    if s.get("results_dir"):
        out.print(f"results {s['results_dir']}")


def _lines(s: dict) -> list[tuple[str, str]]:
    """The summary lines of the mechanisms the run ran (``s["mechanisms"]``), each as its
    ``replay/mech/<name>/outputs.py`` declares them (``LINES``)."""
    from replay.mech import BY_NAME
    from replay.outputs import render

    return [row for m in s["mechanisms"] for row in render(BY_NAME[m].module("outputs").LINES, s)]


@app.command(epilog=epilog("sweep"))
def sweep(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id: supplies the address/op sequence.")],
    scenario: ScenarioOpt,
    overrides: SetOpt = None,
    outstanding: Annotated[str, typer.Option(help="Outstanding I/O counts, e.g. 12,24,48,96,192.",
                                             callback=_check_outstanding)] = "12,24,48,96,192",
    requests: Annotated[int | None, typer.Option(help="Replay at most this many requests per point (>= 1).",
                                                 callback=bounded(1, integer=True))] = None,
    warmup: Annotated[float, typer.Option(help=f"Percent of the requests to skip before measuring, 0 to "
                                               f"{MAX_WARMUP_PCT:g}.", callback=bounded(0, MAX_WARMUP_PCT))] = 20.0,
    jobs: JobsOpt = None,
    wide: WideOpt = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Closed-loop curve: IOPS and response time at each number of outstanding I/Os (IOMeter
    workers x outstanding, fio numjobs x iodepth). The trace gives addresses and ops, the model
    the timing."""
    from pipelines import replay as rp
    from pipelines.workers import default_jobs

    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    sc = _scenario(scenario, overrides)
    _warn_to_console(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = _outstanding_list(outstanding)
        jobs = jobs or default_jobs()
        parallel = jobs > 1 and len(counts) > 1
        with progress_bar(f"sweep {sc.name}", "queue depths" if parallel else "requests") as cb:
            rows = rp.sweep_trace(trace, d, sc, counts, max_requests=requests, warmup_pct=warmup, progress=cb,
                                  jobs=jobs)
    path = rp.sweep_path(d, rows[0]["sweep_id"])
    if as_json:
        print_json({"sweep_id": rows[0]["sweep_id"], "results_path": str(path),
                    "model_version": rows[0]["model_version"], "scenario_source": sc.source,
                    "rows": [{k: r[k] for k in ("outstanding", "iops", "mb_per_s", "latency_mean_ms", "latency_p95_ms",
                                                "latency_p99_ms", "read_hit_ratio", "write_hit_ratio", "warnings")}
                             for r in rows]})
        return
    for r in rows:
        print_findings(r["warnings"], f"at {r['outstanding']} outstanding")
    out.print(f"{sc.name} on {trace.name} ({trace.trace_id[:12]}), closed loop")
    columns = [("outstanding", True), ("IOPS", True), ("mean ms", True), ("p95 ms", True), ("p99 ms", True),
               ("MB/s", False), ("read hit", False), ("write hit", False)]
    out.print(decision_table(columns, [[str(r["outstanding"]), f"{r['iops']:,.0f}", f"{r['latency_mean_ms']:.2f}",
                                        f"{r['latency_p95_ms']:.2f}", f"{r['latency_p99_ms']:.2f}",
                                        f"{r['mb_per_s']:,.1f}", f"{r['read_hit_ratio']:.3f}",
                                        f"{r['write_hit_ratio']:.3f}"] for r in rows], wide))
    if overrides:
        out.print(f"scenario {sc.source}")
    out.print(f"results {path}")


@app.command(epilog=epilog("scenarios"))
def scenarios(
    name: Annotated[str | None, typer.Argument(help="A preset or scenario file: list every parameter of it, "
                                                    "resolved, with its unit and source")] = None,
    overrides: SetOpt = None,
    data_dir: DataDirOpt = None,  # accepted, unused
    wide: WideOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the array scenario presets (replay/scenarios/*.toml); --json: all that
    Scenario.describe() gives for each. With NAME: every parameter of that scenario as resolved
    (after --set), its unit, and where its value comes from: source (doc, seed, seed-fit,
    datasheet, measured, estimate, choice, derived, set) and reference (seed-fit: the seed figures
    it was fitted to, in brackets)."""
    from replay.scenario import load, preset_names

    if name is not None:
        from replay.provenance import parameters

        params = parameters(name, overrides or ())
        if as_json:
            print_json(params)
            return
        out.print(f"{name}: resolved parameters")
        out.print(decision_table([("table", True), ("parameter", True), ("value", True), ("unit", True),
                                  ("source", True), ("reference", False)],
                                 [[r["table"], r["name"], str(r["value"]), r["unit"], r["source"], r["reference"]]
                                  for r in params], wide, wrap=(0, 1, 2)))
        if not wide:
            out.print("--wide adds each value's reference (the datasheet, document or seed figure)")
        return
    rows = [load(n).describe() for n in preset_names()]
    if as_json:
        print_json(rows)
        return
    out.print("array scenario presets")
    out.print(decision_table(
        [("name", True), ("mode", True), ("cache", True), ("description", True), ("RAID groups", False),
         ("features", False), ("replay", False), ("hash", False)],
        [[r["name"], r["dram_mode"], format_bytes(r["cache_bytes"]),
          r["description"] + (f" (not yet modelled: {', '.join(r['not_yet_modelled'])})" if r["not_yet_modelled"] else ""),
          "\n".join(r["raid_groups"]), ", ".join(map(str, r.get("features") or [])) or "-",
          f"{r['mode']} {r['outstanding'] if r['mode'] == 'closed' else ''}".strip(), r["hash"]] for r in rows],
        wide, wrap=(3, 4, 5)))
