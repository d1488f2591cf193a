"""The demo on the embedded default: the seed experiments in quick mode (:func:`demo`), and the
sample data set of the seed articles' workloads replayed through the seed arrays
(:func:`run_demo`, what the report's tests build)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pipelines.catalog import find_trace
from pipelines.files import atomic_output
from pipelines.ingest import IngestResult, ingest_file
from pipelines.load import load
from pipelines.replay import replay_trace, sweep_trace
from pipelines.report import write_report
from pipelines.simulate import mrc
from replay.scenario import load as load_scenario
from schemas.units import format_bytes
from traces import synth

#: (name, pattern, overrides, request multiplier): seed 000's database pattern on a 2 GB test file
#: (long enough to warm the cache) and a 15 GB one, seed 002's sustained 8 KB random writes
#: (enough to fill a 4 GB write cache many times), seed 003's 4 KB random reads (Zipf-skewed).
DEMO_WORKLOADS = (
    ("database-2g", "database", {"region_bytes": 2 << 30, "volume": "lun-db2g"}, 4),
    ("database-15g", "database", {"region_bytes": 15 << 30, "volume": "lun-db15g"}, 1),
    # seed 002: IOMeter's unaligned (512 B) random writes over a whole 1 TiB LUN
    ("randwrite-8k", "randwrite-8k", {"region_bytes": 1 << 40, "align_bytes": 512, "volume": "lun-rw"}, 6),
    ("randread-4k", "randread-4k", {"region_bytes": 100 << 30, "volume": "lun-rr", "distribution": "zipf:0.9"}, 1),
)
#: workload -> scenarios it is replayed through (seed 000: vnx5400 without and with FAST Cache; seed
#: 002: FLARE vs MCx)
DEMO_REPLAYS = {
    "database-2g": ["vnx5400"],
    "database-15g": ["vnx5400", "vnx5400-fastcache"],
    "randwrite-8k": ["vnx1-flare", "vnx2-mcx"],
}
#: (workload, page size): exact LRU hit-ratio curves
DEMO_CURVES = (("database-15g", 8192), ("randread-4k", 4096))
#: seed 000's IOPS / response time against IOMeter streams
DEMO_SWEEP = ("database-15g", "vnx5400", [12, 24, 48, 96, 192])


#: what the demo suggests to try on the warehouse it leaves
EXAMPLE_QUERIES = (
    "select seed, figure, published, model, error_pct, tolerance_pct, kind, ok from seed_figures order by seed, figure",
    "select seed, finding, ok from seed_findings order by seed",
    "select scenario, outstanding, iops, latency_mean_ms from sweeps where scenario = 'vnx5400' order by outstanding",
)


#: the what-if part: seed 003's 4 KB Zipf random reads (100,000 over 8 GiB) compared on three
#: configurations, and the smallest DRAM cache (cheapest first) whose mean response time is <= 6.5 ms
WHATIF_WORKLOAD = ("randread-4k", {"requests": 100_000, "region_bytes": 8 << 30, "volume": "lun-zipf",
                                   "distribution": "zipf:0.9"})
WHATIF_COMPARE = ("vnx5400 dram.cache_bytes=64MiB", "vnx5400", "vnx5400-fastcache")
WHATIF_SIZE = ("vnx5400", "dram.cache_bytes=16MiB,32MiB,64MiB,128MiB,256MiB,512MiB,1GiB,2GiB", "mean_ms<=6.5")


def whatif_demo(data_dir: Path, reports: Path, log: Callable[[str], None] = print) -> list[Path]:
    """One ``compare`` and one ``size`` on a synthetic Zipf trace; returns their reports."""
    from pipelines import whatif
    from pipelines.summary import compare_summary, size_summary

    pattern, over = WHATIF_WORKLOAD
    path = Path(data_dir) / "synth" / f"{pattern}-zipf-{over['requests']}.parquet"
    if not path.exists():
        with atomic_output(path, "synthetic workload") as tmp:
            synth.write(synth.pattern(pattern, **over), tmp)
    trace = find_trace(data_dir, ingest_file(path, data_dir).trace_id)
    log(f"what-if trace {trace.name} ({trace.trace_id[:12]}): {over['requests']:,} 4 KiB Zipf "
        f"{over['distribution'].partition(':')[2]} random reads over {format_bytes(over['region_bytes'])}, in its "
        "own timing; the compare and size lines below replay it")
    scs = [whatif.scenario_of(s) for s in WHATIF_COMPARE]
    rows = whatif.compare(trace, data_dir, scs)
    for r in rows:
        log(f"compare {r['scenario']}: {r['iops']:,.0f} IOPS, mean {r['latency_mean_ms']:.2f} ms, "
            f"p95 {r['latency_p95_ms']:.2f} ms ({r['latency_p95_ms_change_pct']:+.1f} %)")
    base, vary, target = WHATIF_SIZE
    targets = [whatif.parse_target(target)]
    res = whatif.size(trace, data_dir, base, [whatif.parse_vary(vary)], targets)
    c = res.counts()
    log(f"size {base}, {target}: {res.chosen.label if res.chosen else 'none meets it'} "
        f"({c['replayed']} of {c['variants']} variants replayed, {c['saved']} saved)")
    compare_html = write_report(data_dir, reports / "compare.html",
                                f"compare {len(rows)} configurations on trace {trace.name} (Zipf 4 KiB reads)",
                                trace_id=trace.trace_id, run_ids=[r["run_id"] for r in rows],
                                summary=compare_summary(trace, scs, rows))
    size_html = write_report(data_dir, reports / "size.html", f"size {base} for {target} on trace {trace.name}",
                             trace_id=trace.trace_id, run_ids=[v.row["run_id"] for v in res.variants if v.row],
                             summary=size_summary(trace, res, targets),
                             meets={v.row["run_id"]: bool(v.meets) for v in res.variants if v.row})
    return [compare_html, size_html]


def demo(data_dir: Path, reports: Path = Path("reports"), log: Callable[[str], None] = print):
    """The seed experiments in quick mode into ``data_dir`` (report ``<reports>/seeds.html``),
    then one compare and one size (``whatif_demo``); returns (experiment results, what-if reports)."""
    from pipelines.experiments import run_experiments

    res = run_experiments(data_dir, quick=True, report=reports / "seeds.html", log=log)
    return res, whatif_demo(Path(data_dir), reports, log)


#: what the demo's numbers are, in three lines (docs/models/seed-figures.md says it at length)
EXPLAIN = (
    "seeds: five published articles that measured real arrays (seed 000-004); the demo replays each one's test program "
    "as a synthetic workload through the matching preset.",
    "calibration: a figure a preset parameter was fitted to (it shows the fit holds, not that the model is right); "
    "identity: a figure the model gives by construction.",
    "validation: a figure no parameter was fitted to, the only evidence of fidelity (bar: 15 % error); misses are "
    "listed with their cause.",
)


def disk_usage_bytes(data_dir: Path) -> dict[str, int]:
    """Bytes of the files under ``data_dir``, by its top-level entry (``traces``, ``results``,
    ``tiercast.duckdb``, ...), largest first."""
    root = Path(data_dir)
    sizes: dict[str, int] = {}
    for dirpath, _, files in os.walk(root):
        top = Path(dirpath).relative_to(root).parts[:1]
        for f in files:
            try:
                n = os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:  # removed while we walked
                continue
            key = top[0] if top else f
            sizes[key] = sizes.get(key, 0) + n
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def disk_line(data_dir: Path) -> str:
    """``disk: 1.2 GiB under tiercast-data/ (traces 900.0 MiB, results ...)``: what the demo wrote."""
    sizes = disk_usage_bytes(data_dir)
    parts = ", ".join(f"{k} {format_bytes(v)}" for k, v in list(sizes.items())[:4])
    return (f"disk: {format_bytes(sum(sizes.values()))} under {data_dir}/ ({parts}; remove the folder to free it, "
            "tiercast demo makes it again)")


def where(data_dir: Path, reports: list[Path]) -> list[str]:
    """Where the demo left the warehouse and the reports, what to ask the warehouse, what its numbers
    mean and the disk space it used."""
    return [f"warehouse: {(Path(data_dir) / 'tiercast.duckdb').resolve()}",
            *(f"report: {r.resolve()} (tables as CSV in {r.parent.resolve() / (r.stem + '_tables')})" for r in reports),
            "try:", *(f'  tiercast sql --data-dir {data_dir} "{q}"' for q in EXAMPLE_QUERIES),
            *EXPLAIN, disk_line(data_dir)]


def run_demo(
    data_dir: Path, requests: int = 200_000, log: Callable[[str], None] = print, report: Path | None = None
) -> dict[str, IngestResult]:
    data_dir = Path(data_dir)
    src = data_dir / "synth"
    src.mkdir(parents=True, exist_ok=True)
    results: dict[str, IngestResult] = {}
    for name, pat, over, mult in DEMO_WORKLOADS:
        path = src / f"{name}-{requests * mult}.parquet"
        if not path.exists():
            with atomic_output(path, "synthetic workload") as tmp:  # never a half-written file reused
                synth.write(synth.pattern(pat, requests=requests * mult, **over), tmp)
            log(f"generated {name}: {requests * mult:,} requests -> {path}")
        results[name] = ingest_file(path, data_dir)
    traces = {name: find_trace(data_dir, r.trace_id) for name, r in results.items()}
    for name, page in DEMO_CURVES:
        curve = mrc(traces[name], data_dir, page_size=page)
        log(f"hit-ratio curve {name}: {curve.height} sizes, {curve['hit_ratio'].max():.3f} at the footprint")
    for name, scenarios in DEMO_REPLAYS.items():
        for sc in scenarios:
            s = replay_trace(traces[name], data_dir, load_scenario(sc))
            log(f"replay {name} on {sc}: {s['iops']:,.0f} IOPS, mean {s['latency_mean_ms']:.2f} ms, "
                f"forced flushes {s['forced_flush_count']}, throttled {s['throttle_delay_sum_ms'] / 1000:,.1f} s")
    name, sc, outstanding = DEMO_SWEEP
    rows = sweep_trace(traces[name], data_dir, load_scenario(sc), outstanding)
    log("sweep " + name + " on " + sc + ": " + ", ".join(f"{r['outstanding']}: {r['iops']:,.0f} IOPS" for r in rows))
    counts = load(data_dir).counts()
    log(f"warehouse {data_dir / 'tiercast.duckdb'}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
    if report is not None:
        log(f"report {write_report(data_dir, report, 'tiercast demo: the seed articles replayed')}")
    return results
