"""``tiercast experiments``: the seed articles' test programs run, and the seed table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import (
    DataDirOpt,
    JobsOpt,
    JsonOpt,
    WideOpt,
    app,
    check_out_option,
    console,
    data_dir_of,
    decision_table,
    out,
    print_json,
)
from pipelines.cli.examples import epilog

DEFAULT_REPORT = Path("reports/seeds.html")


@app.command(epilog=epilog("experiments"))
def experiments(
    only: Annotated[list[str] | None, typer.Option(help="Run only this seed (seed000 ... seed004); repeatable.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Shorter runs (the demo's; docs/models/seed-figures.md).")] = False,
    report: Annotated[Path, typer.Option(help="HTML report to write, in a directory that exists (reports/ is "
                                              "created for the default).")] = DEFAULT_REPORT,
    jobs: JobsOpt = None,
    with_sensitivity: Annotated[bool, typer.Option("--sensitivity", help="Also move each fitted parameter by -/+ "
                                                   "10 % and measure the figures again: a table in the report and "
                                                   "here, fragile figures (a move over 30 %) flagged. Long: every "
                                                   "parameter re-measures its seeds twice.")] = False,
    with_leave_one_out: Annotated[bool, typer.Option("--leave-one-out", help="Also refit each fitted parameter "
                                                     "without each figure it was fitted to (on the other figures "
                                                     "that move with it) and predict that figure: a table in the "
                                                     "report and here. Long: a few measurements of its seeds per refit.")] = False,
    json_out: JsonOpt = False,
    wide: WideOpt = False,
    data_dir: DataDirOpt = None,
) -> None:
    """Run each seed's test program as synthetic workloads through the seed presets, load the
    results into DuckDB, write the seed report and print the seed table: every quantitative figure
    (published vs model, error, tolerance, kind: calibration, validation or identity) and the qualitative findings."""
    from pipelines.experiments import selected

    seeds = selected(only)  # an unknown seed is refused before any work
    check_out_option(report, "--report", DEFAULT_REPORT)
    from pipelines.workers import default_jobs

    res = run(data_dir_of(data_dir), seeds, quick, report, log=None if json_out else console.print,
              with_sensitivity=with_sensitivity, workers=jobs or default_jobs(), with_leave_one_out=with_leave_one_out)
    sens = res.sensitivity.to_dicts() if res.sensitivity is not None else []
    loo = res.leave_one_out.to_dicts() if res.leave_one_out is not None else []
    if json_out:
        print_json(res.figures.drop("label").to_dicts() + res.findings.to_dicts() + sens + loo)
        return
    show(res, wide)
    if sens:
        out.print(decision_table([("parameter", True), ("figure", True), ("-10 %", True), ("+10 %", True),
                                  ("fragile", True), ("change -10 %", False), ("change +10 %", False)],
                                 [[r["parameter"], r["figure"], f"{r['minus_pct']:+.1f} %", f"{r['plus_pct']:+.1f} %",
                                   "" if r["robust"] else "FRAGILE", r["minus"], r["plus"]] for r in sens], wide))
    if loo:
        out.print(decision_table([("parameter", True), ("left out", True), ("predicted", True), ("error", True),
                                  ("refitted on", False), ("refit", False)],
                                 [[r["parameter"], r["figure"],
                                   "-" if r["predicted"] is None else f"{r['predicted']:,.4g}",
                                   r["basis"] if r["error_pct"] is None else
                                   f"{r['error_pct']:+.1f} %{'' if r['within'] else ' OUTSIDE'}",
                                   r["refit_on"], r["change"] or ""] for r in loo], wide))


def run(data_dir: Path, seeds: tuple[str, ...], quick: bool, report: Path | None, log=None,
        with_sensitivity: bool = False, workers: int = 2, with_leave_one_out: bool = False):
    """The experiments, logging progress (``log``) when given; also the demo's first step. ``workers``
    seeds at a time (threads: the kernels release the GIL)."""
    from pipelines.experiments import run_experiments

    return run_experiments(data_dir, list(seeds), quick=quick, report=report, log=log or (lambda _: None),
                           with_sensitivity=with_sensitivity, workers=workers,
                           with_leave_one_out=with_leave_one_out)


def show(res, wide: bool = False) -> None:
    """The seed table and the findings, as the terminal shows them: in 80 columns each figure by its
    key (``s000_rt24``, as in ``seed_figures``), its description with ``wide``."""
    import polars as pl

    from pipelines.experiments import table_rows

    columns = [("figure", True), ("seed", False), ("what", False), ("published", True), ("model", True),
               ("error %", True), ("tolerance", True), ("kind", True)]
    rows = [[key, *r] for key, r in zip(res.figures["figure"], table_rows(res), strict=True)]
    out.print(decision_table(columns, rows, wide, wrap=(2, 3)))
    out.print(decision_table([("seed", True), ("finding", True), ("ok", True)],
                             [[r["seed"], r["finding"], "yes" if r["ok"] else "NO"]
                              for r in res.findings.iter_rows(named=True)], wrap=(1,)))
    bad = (~res.figures["ok"]).sum()
    kinds = res.figures.group_by("kind", maintain_order=True).agg(n=pl.len(), ok=pl.col("ok").sum())
    by_kind = ", ".join(f"{r['kind']} {r['ok']} of {r['n']} within" for r in kinds.sort("kind").iter_rows(named=True))
    out.print(f"{res.figures.height} figures, {bad} outside their tolerance ({by_kind}); {res.findings['ok'].sum()} of "
              f"{res.findings.height} findings shown by the model"
              + (f"; report {res.report}" if res.report else ""))
