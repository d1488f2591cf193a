"""Ingest throughput and memory: `tiercast ingest` vs bare Polars CSV -> Parquet, same file.

Writes a synthetic MSR-format CSV (the format's real field widths), then in one run, each a
fresh process timed from start to exit (imports included):
1. ``polars.scan_csv(schema=...).sink_parquet(...)`` of the file (the floor: no validation,
   no rejects, no partitioning), with Polars' default zstd level (3) and, like for like, at
   tiercast's level (``pipelines.ingest.PARQUET_COMPRESSION_LEVEL``, 1);
2. ``tiercast ingest`` of the same file (everything included: format detection, sha256, row
   checks and rejects, partitioned Parquet, manifest, the exact contract checks of
   ``--validate auto``);
and prints wall seconds, CPU seconds (user + system, all threads), MB/s and peak RSS of both
and the ratios (goal >= 0.7). ``--repeat N`` alternates the three N times and keeps each one's
best wall time and best CPU time (the machine is shared: the best of several is the least
disturbed). With ``--rss-gb`` it also ingests a larger file and reports the peak RSS of the
ingest process (goal < 2 GB).

    .venv/bin/python benchmarks/ingest.py --gb 1 --rss-gb 4
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/array.py (named as the issue asks) would shadow the standard library's ``array``
# module for any script in this folder: put the repository root first on sys.path instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

FILETIME_2007 = 128166372003061629


def make_msr_csv(path: Path, target_bytes: int, seed: int = 0) -> int:
    """Append 1 M-row slices until the file reaches ``target_bytes``; returns the row count."""
    rng = np.random.default_rng(seed)
    rows, t = 0, FILETIME_2007
    with open(path, "wb") as f:
        while f.tell() < target_bytes:
            n = 1_000_000
            ts = t + np.cumsum(rng.integers(0, 20_000, n))
            t = int(ts[-1])
            df = pl.DataFrame({
                "Timestamp": ts,
                "Hostname": rng.choice(["usr", "proj", "src1", "web"], n),
                "DiskNumber": rng.integers(0, 3, n),
                "Type": np.where(rng.random(n) < 0.6, "Read", "Write"),
                "Offset": rng.integers(0, 1 << 27, n) * 512,
                "Size": rng.integers(1, 129, n) * 512,
                "ResponseTime": rng.integers(100, 200_000, n),
            })
            df.write_csv(f, include_header=False)
            rows += n
    return rows


POLARS_CODE = (
    "import sys, polars as pl; "
    "schema = dict(Timestamp=pl.Int64, Hostname=pl.String, DiskNumber=pl.Int64, Type=pl.String, "
    "Offset=pl.Int64, Size=pl.Int64, ResponseTime=pl.Int64); "
    "level = int(sys.argv[3]) if sys.argv[3] else None; "
    "pl.scan_csv(sys.argv[1], has_header=False, schema=schema).sink_parquet(sys.argv[2], compression_level=level)"
)


#: children run as installed: with bytecode caches (PYTHONDONTWRITEBYTECODE=1 would make every
#: ingest compile tiercast's modules again, ~1.4 CPU-s that no installed copy pays)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system of the process and its threads), peak RSS
    (bytes) and stdout of a fresh process (``os.wait4``: that child's own resource usage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen(args, stdout=out, stderr=err, text=True, env=CHILD_ENV)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode:
            raise SystemExit(f"{args[:3]} failed: {err.read()}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.read()


def run_polars(path: Path, out: Path, level: int | None = None) -> tuple[float, float, int]:
    wall, cpu, rss, _ = timed([sys.executable, "-c", POLARS_CODE, str(path), str(out), str(level or "")])
    return wall, cpu, rss


def run_ingest(path: Path, data_dir: Path, validate: str) -> tuple[float, float, dict, int]:
    """Wall and CPU seconds, the JSON summary and the peak RSS (bytes) of a fresh ingest process."""
    shutil.rmtree(data_dir, ignore_errors=True)
    wall, cpu, rss, out = timed([sys.executable, "-c", "from pipelines.cli import main; main()", "ingest", str(path),
                                 "--json", "--validate", validate, "--data-dir", str(data_dir)])
    return wall, cpu, json.loads(out.strip().splitlines()[-1]), rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the throughput file (GB)")
    ap.add_argument("--rss-gb", type=float, default=0.0, help="size of the peak-RSS file (GB); 0 skips")
    ap.add_argument("--validate", default="auto", help="ingest --validate mode (auto|full|sample|off)")
    ap.add_argument("--repeat", type=int, default=1, help="alternate the two runs N times, keep each one's best")
    ap.add_argument("--workdir", type=Path, default=None)
    a = ap.parse_args()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="tiercast-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    csv = work / f"msr_{a.gb:g}gb.csv"
    if not csv.exists():
        print(f"generating {csv} ...", flush=True)
        make_msr_csv(csv, int(a.gb * 1e9))
    size_mb = csv.stat().st_size / 1e6

    out = work / "polars.parquet"
    dd = work / "data"
    from pipelines.ingest import PARQUET_COMPRESSION_LEVEL as level

    polars, polars_level, tiercast = [], [], []
    for _ in range(a.repeat):
        polars.append(run_polars(csv, out))
        polars_level.append(run_polars(csv, out, level))
        tiercast.append(run_ingest(csv, dd, a.validate))
    summary = tiercast[-1][2]
    best = {name: (min(r[0] for r in runs), min(r[1] for r in runs), max(r[-1] for r in runs))
            for name, runs in [("polars", polars), ("polars_level", polars_level), ("tiercast", tiercast)]}
    print(f"\nfile: {csv.name}  {size_mb:,.0f} MB  {summary['rows_read']:,} rows  (validate={a.validate}, "
          f"best of {a.repeat} for wall and CPU apart; load average {os.getloadavg()[0]:.1f})")
    print(f"{'':36}{'wall s':>9}{'CPU s':>9}{'MB/s':>9}{'peak RSS MiB':>14}")
    for name, label in [("polars", "polars scan_csv->parquet (zstd 3)"),
                        ("polars_level", f"polars ... at zstd {level} (tiercast's)"), ("tiercast", "tiercast ingest")]:
        wall, cpu, rss = best[name]
        print(f"{label:36}{wall:>9.2f}{cpu:>9.2f}{size_mb / wall:>9.1f}{rss / 2**20:>14,.0f}")
    for name, label in [("polars", "polars defaults (goal >= 0.7)"), ("polars_level", f"like for like, zstd {level}")]:
        print(f"ratio tiercast/{label}: wall {best[name][0] / best['tiercast'][0]:.2f}, "
              f"CPU {best[name][1] / best['tiercast'][1]:.2f}")
    for name, runs in [("polars", polars), ("polars_level", polars_level), ("tiercast", tiercast)]:
        print(f"all runs {name} (wall s / CPU s): " + ", ".join(f"{r[0]:.1f}/{r[1]:.1f}" for r in runs))

    if a.rss_gb:
        big = work / f"msr_{a.rss_gb:g}gb.csv"
        if not big.exists():
            print(f"generating {big} ...", flush=True)
            make_msr_csv(big, int(a.rss_gb * 1e9), seed=1)
        wall, _, summary, rss = run_ingest(big, dd, a.validate)
        print(f"\n{big.name}: {big.stat().st_size / 1e6:,.0f} MB, {summary['rows_read']:,} rows in {wall:.1f} s "
              f"({big.stat().st_size / 1e6 / wall:.0f} MB/s); peak RSS {rss / 2**20:,.0f} MiB (goal < 2048 MiB)")
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
