"""Seed experiments: each seed article's test program as synthetic workloads and scenarios, run as
normal results in a data directory (``pipelines/seed_runs.py``), and the seed table that comes
out of them: every quantitative figure (published vs model, ``pipelines/seed_figures.py``) and the
qualitative findings, written as result files, loaded into DuckDB and reported as HTML.

Quick mode (``tiercast experiments --quick``, ``tiercast demo``) runs the same programs shorter
(:data:`pipelines.seed_figures.QUICK`); its figures are held to :data:`QUICK_TOLERANCE_PCT` where
the shorter runs move them, and the table says which tolerance a row was held to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines import seed_figures as sf
from pipelines.seed_runs import Runs, using

SEEDS = ("000", "001", "002", "003", "004")
#: each seed's test program, as run here
PROGRAMS = {
    "000": "EMC VNX5400, IOMeter's database pattern (8 KB, 67 % read, random) on 2, 15, 80 and 150 GB test "
           "files; outstanding I/Os 3-192; FAST Cache (100 GB) off and on, 75 minutes (ramp 12 -> 192)",
    "001": "Violin 6232: fio 4 KB-1 MB random read / write / 70-30 at 1-192 jobs, sync and QD 32/64 "
           "(the matrix maxima), and a long random write past the write cliff",
    "002": "VNX1 FLARE vs VNX2 MCx: 8 KB unaligned random writes, 16 outstanding, one RAID 5 4+1",
    "003": "QSAN XS5224D: 4 KB random read and write at QD 128 over 2 x 45 GB, HDD only, then QCache "
           "read / read-write caches on 8 SSDs (and 1, 2, 4, 8 SSDs)",
    "004": "VNX5500 pool: 1 MB streaming writes over a 10 GB file, a snapshot before each pass, "
           "redirect-on-write vs none",
}
#: quick mode's tolerance for the figures measured on shortened runs (QCache warm-up and plateau:
#: fewer requests, shorter intervals), else the figure's own
QUICK_TOLERANCE_PCT = {"s003_qc_read_warmup": 30.0, "s003_qc_read_iops": 30.0, "s003_qc_write_iops": 30.0,
                       "s003_qc_write_warmup": 30.0}


@dataclass(frozen=True)
class Finding:
    """A qualitative seed finding and the check of it on the model's runs."""

    seed: str
    text: str
    check: Callable[[], bool]


def _fc_no_worse_while_filling() -> bool:
    on, off = sf.seed000_fastcache_ramp(150, True), sf.seed000_fastcache_ramp(150, False)
    return all(a["latency_mean_ms"] >= b["latency_mean_ms"] for a, b in zip(on[:2], off[:2], strict=True))


def _fc_worse_throughout() -> bool:
    on, off = sf.seed000_fastcache_ramp(150, True), sf.seed000_fastcache_ramp(150, False)
    return all(a["latency_mean_ms"] >= b["latency_mean_ms"] for a, b in zip(on, off, strict=True))


def _fc_small_set_promoted() -> bool:
    """"after loading the hot area in FastCache, the response time decreases": the fill only grows
    and the last interval's response time is well under the worst."""
    small = sf.seed000_fastcache(15, True)
    return small["fill_t"] == sorted(small["fill_t"]) and small["latency_t"][-1] <= 0.85 * max(small["latency_t"])


def _fc_80_fills_faster_than_150() -> bool:
    mid, big = sf.seed000_fastcache(80, True), sf.seed000_fastcache(150, True)
    minute = min(mid["t_s"][-1], big["t_s"][-1]) / 60
    return sf.at_minute(mid, "fill_t", minute) > sf.at_minute(big, "fill_t", minute)


def _qcache_ssd_scaling() -> bool:
    iops = [sf.seed003_qcache_ssds(n)["plateau_iops"] for n in sf.SEED003_SSDS]
    return iops == sorted(iops) and iops[-1] > 4 * iops[0]


def _qcache_read_rises() -> bool:
    r = sf.seed003_qcache("read")
    return r["plateau_iops"] >= 10 * r["iops_t"][0] and r["plateau_iops"] >= 10 * sf.seed003_cached("read")[0]


FINDINGS = (
    Finding("000", "response time rises with outstanding I/Os (15 GB file, 3 -> 192)",
            lambda: (lat := [r["latency_mean_ms"] for _, r in sorted(sf.seed000_curve().items())]) == sorted(lat)),
    Finding("000", "the 2 GB file runs from the SP cache (> 98 % of reads hit)",
            lambda: sf.seed000_2gb()["read_hit_ratio"] > 0.98),
    Finding("000", "FAST Cache on a 15 GB hot set: response time falls as the hot set is promoted",
            _fc_small_set_promoted),
    Finding("000", "FAST Cache fills the 80 GB hot set faster than the 150 GB one", _fc_80_fills_faster_than_150),
    Finding("000", "FAST Cache makes the 150 GB hot set no better while it fills (12, 24 outstanding)",
            _fc_no_worse_while_filling),
    Finding("000", "FAST Cache makes the 150 GB hot set slightly worse at every step of the 75-min ramp",
            _fc_worse_throughout),
    Finding("001", "random writes fall off a cliff to the GC-bound rate",
            lambda: (s := sf.seed001_cliff(4096))["flash_post_cliff_write_mib_per_s"]
            < 0.7 * s["flash_pre_cliff_write_mib_per_s"]),
    Finding("001", "4 KB writes run at peak longer than 32 KB ones",
            lambda: sf.seed001_cliff(4096)["flash_time_to_cliff_s"] > sf.seed001_cliff(32 << 10)["flash_time_to_cliff_s"]),
    Finding("002", "FLARE lives in forced-flush cycles; MCx throttles and never force-flushes",
            lambda: sf.seed002_cached("vnx1-flare")[1]["forced_flush_count"] >= 2
            and sf.seed002_cached("vnx2-mcx")[1]["forced_flush_count"] == 0
            and sf.seed002_cached("vnx2-mcx")[1]["throttle_delay_sum_ms"] > 0),
    Finding("002", "MCx sustains more IOPS than FLARE",
            lambda: sf.seed002_cached("vnx2-mcx")[0] > sf.seed002_cached("vnx1-flare")[0]),
    Finding("003", "QCache read IOPS rise after warm-up, to tens of times the HDD baseline", _qcache_read_rises),
    Finding("003", "QCache read-write cache: write IOPS tens of times the HDD baseline",
            lambda: sf.seed003_qcache("write")["plateau_iops"] >= 10 * sf.seed003_cached("write")[0]),
    Finding("003", "more SSDs, more IOPS (1, 2, 4, 8 SSDs)", _qcache_ssd_scaling),
    Finding("004", "redirect-on-write snapshots, one per pass: no degradation of streaming writes",
            lambda: sf.seed004("row")["mb_per_s"] >= 0.95 * sf.seed004("off")["mb_per_s"]),
)


def tolerance_pct(f: sf.Figure, quick: bool) -> float:
    return max(f.tolerance_pct, QUICK_TOLERANCE_PCT.get(f.key, 0.0)) if quick else f.tolerance_pct


def figure_row(f: sf.Figure, model: float, quick: bool) -> dict:
    e = sf.err(model, f.published)
    tol = tolerance_pct(f, quick)
    return {"seed": f.seed, "figure": f.key, "label": f.label, "published": f.published, "model": model,
            "error_pct": e, "tolerance_pct": tol, "kind": f.kind, "ok": abs(e) <= tol}


@dataclass
class Results:
    figures: pl.DataFrame
    findings: pl.DataFrame
    runs: Runs
    files: list[Path]
    report: Path | None = None
    #: ``--sensitivity``: each figure's move at -/+ 10 % of each fitted parameter (``SENSITIVITY_SCHEMA``)
    sensitivity: pl.DataFrame | None = None
    #: ``--leave-one-out``: each fitted figure predicted by a refit without it (``LOO_SCHEMA``)
    leave_one_out: pl.DataFrame | None = None


def selected(only: list[str] | None) -> tuple[str, ...]:
    """The seeds ``--only`` names (``seed000``, ``000`` or ``0``), in order; every seed without it."""
    if not only:
        return SEEDS
    want = set()
    for o in only:
        s = o.lower().removeprefix("seed").strip()
        if not s.isdigit() or s.zfill(3) not in SEEDS:
            raise ValueError(f"--only {o!r}: no such seed (known: {', '.join('seed' + s for s in SEEDS)})")
        want.add(s.zfill(3))
    return tuple(s for s in SEEDS if s in want)


#: the seeds by cost, dearest first (full mode: seed 000 about half of the whole)
BY_COST = ("000", "003", "002", "001", "004")


def _measure_seed(seed: str, quick: bool) -> tuple[list[dict], list[dict], list[str]]:
    """One seed's figure and finding rows, and its log lines (with the seconds each took)."""
    figures, findings, lines = [], [], [f"seed {seed}: {PROGRAMS[seed]}"]
    for f in (f for f in sf.FIGURES if f.seed == seed):
        t0 = time.monotonic()
        row = figure_row(f, float(f.measure()), quick)
        figures.append(row)
        lines.append(f"  {f.key}: model {f.fmt.format(row['model'])}, published {f.published_text} "
                     f"({row['error_pct']:+.1f} %, {'within' if row['ok'] else 'OUTSIDE'} {row['tolerance_pct']:.0f} %) "
                     f"[{time.monotonic() - t0:.0f} s]")
    for fd in (fd for fd in FINDINGS if fd.seed == seed):
        t0 = time.monotonic()
        findings.append({"seed": seed, "finding": fd.text, "ok": bool(fd.check())})
        lines.append(f"  {'ok  ' if findings[-1]['ok'] else 'MISS'} {fd.text} [{time.monotonic() - t0:.0f} s]")
    return figures, findings, lines


def measure(seeds: tuple[str, ...], runs: Runs, log: Callable[[str], None] = lambda _: None,
            workers: int = 2) -> Results:
    """Every figure and finding of ``seeds``, measured with ``runs``: ``workers`` seeds at a time
    (threads: the replay kernels release the GIL), each seed's lines logged when it is done."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    done = {}
    log(f"measuring seeds {', '.join(seeds)} ({'quick' if runs.quick else 'full'} mode, {workers} at a time)")
    with using(runs), ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(_measure_seed, s, runs.quick): s for s in sorted(seeds, key=BY_COST.index)}
        for fut in as_completed(futures):
            done[futures[fut]] = fut.result()
            for line in done[futures[fut]][2]:
                log(line)
    figures = [r for s in seeds for r in done[s][0]]
    findings = [r for s in seeds for r in done[s][1]]
    return Results(pl.DataFrame(figures, schema=FIGURE_SCHEMA), pl.DataFrame(findings, schema=FINDING_SCHEMA),
                   runs, [])


FIGURE_SCHEMA = {"seed": pl.String, "figure": pl.String, "label": pl.String, "published": pl.Float64,
                 "model": pl.Float64, "error_pct": pl.Float64, "tolerance_pct": pl.Float64, "kind": pl.String,
                 "ok": pl.Boolean}
FINDING_SCHEMA = {"seed": pl.String, "finding": pl.String, "ok": pl.Boolean}
SENSITIVITY_SCHEMA = {"parameter": pl.String, "fitted_to": pl.String, "figure": pl.String, "kind": pl.String,
                      "model": pl.Float64, "minus": pl.String, "minus_pct": pl.Float64, "plus": pl.String,
                      "plus_pct": pl.Float64, "robust": pl.Boolean}


def sensitivity(seeds: tuple[str, ...], quick: bool, log: Callable[[str], None] = lambda _: None) -> pl.DataFrame:
    """:func:`pipelines.seed_figures.fitted_sensitivity` of ``seeds``, measured in memory (the
    perturbed runs are no results to keep); ``robust``: no move beyond ``FRAGILE_PCT``."""
    log(f"sensitivity: each fitted parameter -/+ 10 %, the figures of seeds {', '.join(seeds)} re-measured")
    with using(Runs(None, quick)):
        rows = sf.fitted_sensitivity(seeds, log=lambda line: log("  " + line))
    return pl.DataFrame([{**{k: r[k] for k in SENSITIVITY_SCHEMA if k in r}, "fitted_to": ", ".join(r["fitted_to"]),
                          "robust": not r["fragile"]} for r in rows], schema=SENSITIVITY_SCHEMA)


LOO_SCHEMA = {"parameter": pl.String, "figure": pl.String, "fitted_to": pl.String, "basis": pl.String,
              "refit_on": pl.String, "published": pl.Float64, "model": pl.Float64, "change": pl.String,
              "predicted": pl.Float64, "error_pct": pl.Float64, "within": pl.Boolean, "refit_physical": pl.Boolean}


def leave_one_out(seeds: tuple[str, ...], quick: bool, log: Callable[[str], None] = lambda _: None) -> pl.DataFrame:
    """:func:`pipelines.seed_figures.leave_one_out` of ``seeds``, measured in memory; ``within``:
    the prediction is inside the figure's tolerance, ``refit_physical``: the refitted value inside the
    parameter's physical range (``replay.physical``; both null where nothing else identifies the parameter)."""
    log(f"leave-one-out: each fitted parameter refitted without each of its figures (seeds {', '.join(seeds)})")
    with using(Runs(None, quick)):
        rows = sf.leave_one_out(seeds, log=lambda line: log("  " + line))
    return pl.DataFrame([{**r, "fitted_to": ", ".join(r["fitted_to"]), "refit_on": ", ".join(r.get("refit_on", []))}
                         for r in rows], schema=LOO_SCHEMA)


def write_results(data_dir: Path, res: Results, quick: bool) -> list[Path]:
    """The figure and finding rows as result files (``results/seed_figures/``,
    ``results/seed_findings/``), one per (model version, mode, seeds), for the loader."""
    from pipelines.files import write_parquet
    from pipelines.replay import array_model_version

    version = array_model_version()
    mode = "quick" if quick else "full"
    seeds = "-".join(sorted(set(res.figures["seed"]) | set(res.findings["seed"])))
    extra = [pl.lit(version).alias("model_version"), pl.lit(mode).alias("mode"),
             pl.lit(datetime.now(UTC)).alias("measured_at")]
    out = []
    for sub, df in (("seed_figures", res.figures), ("seed_findings", res.findings)):
        path = Path(data_dir) / "results" / sub / f"{version}-{mode}-{seeds}.parquet"
        write_parquet(df.with_columns(extra), path)
        out.append(path)
    return out


def run_experiments(data_dir: Path, only: list[str] | None = None, quick: bool = False,
                    report: Path | None = Path("reports/seeds.html"),
                    log: Callable[[str], None] = lambda _: None, with_sensitivity: bool = False,
                    workers: int = 2, with_leave_one_out: bool = False) -> Results:
    """Run the seeds' programs into ``data_dir``, write the figure and finding rows, load the
    warehouse and write ``report`` (unless None); ``with_sensitivity``: and the sensitivity table;
    ``workers`` seeds at a time; ``with_leave_one_out``: and the leave-one-out table."""
    from pipelines.load import load

    seeds = selected(only)
    res = measure(seeds, Runs(Path(data_dir), quick), log, workers)
    if with_sensitivity:
        res.sensitivity = sensitivity(seeds, quick, log)
    if with_leave_one_out:
        res.leave_one_out = leave_one_out(seeds, quick, log)
    res.files = write_results(data_dir, res, quick)
    load(data_dir)
    if report is not None:
        res.report = write_seed_report(data_dir, report, res, quick)
    return res


def write_seed_report(data_dir: Path, out: Path, res: Results, quick: bool) -> Path:
    """``reports/seeds.html``: the seed table and findings first, then the runs behind them."""
    from pipelines import report

    title = "tiercast: the seed articles reproduced" + (" (quick mode)" if quick else "")
    intro = "\n".join(f"seed {s}: {PROGRAMS[s]}" for s in sorted(set(res.figures["seed"])))
    run_ids = sorted({r.run_id for r in res.runs.ran if r.run_id})
    sweep_ids = sorted({r.sweep_id for r in res.runs.ran if r.sweep_id})
    return report.write_report(data_dir, out, title, run_ids=run_ids, sweep_ids=sweep_ids, figures=res.figures,
                               findings=res.findings, intro=intro, sensitivity=res.sensitivity,
                               leave_one_out=res.leave_one_out)


def table_rows(res: Results) -> list[tuple[str, ...]]:
    """The printed seed table: seed | figure | published | model | error % | tolerance | kind."""
    by_key = sf.BY_KEY
    rows = []
    for r in res.figures.iter_rows(named=True):
        f = by_key[r["figure"]]
        rows.append((r["seed"], f.label, f.published_text, f.fmt.format(r["model"]), f"{r['error_pct']:+.1f}",
                     f"{r['tolerance_pct']:.0f} %" + ("" if r["ok"] else " OUTSIDE"), r["kind"]))
    return rows
