"""``tiercast compare --jobs N`` vs ``--jobs 1`` (issue 29 item 2): four presets on one trace, each
side a fresh process on its own data directory (so no run is reused), wall and CPU time, and
whether the comparison rows are the same.

    .venv/bin/python benchmarks/jobs.py                      # 2 M requests, --jobs 2 vs 1
    .venv/bin/python benchmarks/jobs.py --requests 500000 --jobs 4

The trace: seed 000's database pattern (8 KiB, 67 % read) over 15 GiB, open loop (its own timing).
The page stream is written by an ``mrc`` call first in each data directory (not timed), so both sides
read it (workers share it on disk; each loads the compiled kernels from the numba cache).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from benchmarks.processes import child_env  # noqa: E402
from benchmarks.scale import LAUNCHER, TIERCAST  # noqa: E402

PRESETS = ("vnx5400-fastcache", "vnx5400", "vnx2-mcx", "vnx5400-fastvp")
DROP = ("reused", "run_id")  # the same run ids; reused differs only if a run existed


def timed(argv: list[str]) -> tuple[float, float, str]:
    p = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, cwd=ROOT,
                       env=child_env(), check=True)
    wall, cpu, _ = p.stderr.rpartition("\nLAUNCHER ")[2].split()
    return float(wall), float(cpu), p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tiercast-bench-jobs-"))
    try:
        src = work / "db.parquet"
        subprocess.run([*TIERCAST, "synth", "--out", str(src), "--requests", str(args.requests)], check=True,
                       cwd=ROOT, env=child_env(), capture_output=True)
        out = {}
        for rep in range(args.repeat):
            for jobs in (1, args.jobs):
                d = work / f"d{rep}-{jobs}"
                ing = subprocess.run([*TIERCAST, "ingest", str(src), "--validate", "off", "--json", "--data-dir",
                                      str(d)], check=True, cwd=ROOT, env=child_env(), capture_output=True, text=True)
                tid = json.loads(ing.stdout)["trace_id"]
                subprocess.run([*TIERCAST, "replay", tid, "--scenario", "vnx5400", "--data-dir", str(d), "--json"],
                               check=True, cwd=ROOT, env=child_env(), capture_output=True)  # writes the 8 KiB stream
                shutil.rmtree(d / "results", ignore_errors=True)
                argv = [*TIERCAST, "compare", tid, *(x for p in PRESETS for x in ("--scenario", p)), "--jobs",
                        str(jobs), "--no-report", "--json", "--data-dir", str(d)]
                wall, cpu, stdout = timed(argv)
                rows = [{k: v for k, v in r.items() if k not in DROP} for r in json.loads(stdout)["rows"]]
                best = out.get(jobs)
                if best is None or wall < best[0]:
                    out[jobs] = (wall, cpu, rows)
                print(f"--jobs {jobs}: {wall:6.1f} s wall, {cpu:6.1f} CPU-s", flush=True)
        (w1, c1, r1), (wn, cn, rn) = out[1], out[args.jobs]
        print(f"{len(PRESETS)} presets, {args.requests:,} requests: --jobs 1 {w1:.1f} s ({c1:.1f} CPU-s), --jobs "
              f"{args.jobs} {wn:.1f} s ({cn:.1f} CPU-s): {w1 / wn:.2f}x wall; rows identical: {r1 == rn}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
