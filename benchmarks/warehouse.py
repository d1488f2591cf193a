"""The warehouse with 100 runs: ``tiercast load`` per run, and ``tiercast sql`` of a ``whatif``
query as a whole process (start-up included).

The data root: ``--traces`` synthetic traces (seed 000's database pattern, ``--requests`` each,
2 GiB regions) ingested, each replayed for real through vnx2-mcx, and each run copied under
``--runs-per-trace`` scenario names (the copies are real result files, so the load reads what a
replay writes). Then: the first ``tiercast load`` (every run new: seconds per run), a second one
(nothing new), and ``tiercast sql`` of a what-if question (median of ``--repeat`` processes).

    .venv/bin/python benchmarks/warehouse.py              # 10 traces x 10 scenarios = 100 runs
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)  # benchmarks/array.py would shadow the standard library's ``array``
sys.path.insert(1, str(ROOT / "tests"))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from test_warehouse import clone_run  # noqa: E402

from pipelines.catalog import find_trace  # noqa: E402
from pipelines.ingest import ingest_file  # noqa: E402
from pipelines.replay import replay_trace  # noqa: E402
from replay.scenario import load as load_scenario  # noqa: E402
from traces import synth  # noqa: E402

TIERCAST = [sys.executable, "-c", "from pipelines.cli import main; main()"]


def timed(args: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise SystemExit(p.stderr)
    return time.perf_counter() - t, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10)
    ap.add_argument("--runs-per-trace", type=int, default=10)
    ap.add_argument("--requests", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        first = None
        for i in range(args.traces):
            src = Path(tmp) / f"t{i}.parquet"
            synth.write(synth.pattern("database", requests=args.requests, region_bytes=2 << 30, volume=f"lun{i}",
                                      seed=i), src)
            trace = find_trace(root, ingest_file(src, root, validate="off").trace_id)
            first = first or trace.trace_id
            rid = replay_trace(trace, root, load_scenario("vnx2-mcx"))["run_id"]
            for k in range(1, args.runs_per_trace):
                clone_run(root, rid, scenario=f"variant-{k:02d}")
        runs = args.traces * args.runs_per_trace
        t_load, out = timed([*TIERCAST, "load", "--data-dir", str(root), "--json"])
        loaded = json.loads(out)
        t_again, _ = timed([*TIERCAST, "load", "--data-dir", str(root), "--json"])
        q = f"select scenario, iops, latency_mean_ms, iops_vs_best from whatif where trace_id = '{first}'"
        times = [timed([*TIERCAST, "sql", q, "--data-dir", str(root)])[0] for _ in range(args.repeat)]
        t_req = statistics.median(timed([*TIERCAST, "sql", "select count(*) from requests", "--data-dir", str(root)])[0]
                                  for _ in range(args.repeat))
        t_one = statistics.median(timed([*TIERCAST, "sql", "select 1", "--data-dir", str(root)])[0]
                                  for _ in range(args.repeat))
        print(json.dumps({
            "runs": runs, "interval_rows": loaded["tables"]["interval_metrics"],
            "load_s": round(t_load, 2), "load_in_process_s": loaded["seconds"],
            "load_ms_per_run": round(1000 * loaded["seconds"] / runs, 1), "reload_nothing_new_s": round(t_again, 2),
            "sql_whatif_s_median": round(statistics.median(times), 3), "sql_whatif_s_max": round(max(times), 3),
            "sql_select1_s_median": round(t_one, 3), "sql_requests_count_s_median": round(t_req, 3),
            "database_bytes": (root / "tiercast.duckdb").stat().st_size,
        }, indent=1))


if __name__ == "__main__":
    main()
