"""Ingest throughput and memory: `tiercast ingest` vs bare Polars CSV -> Parquet, same file.

Writes a synthetic MSR-format CSV (the format's real field widths), then in one run:
1. ``polars.scan_csv(schema=...).sink_parquet(...)`` of the file (the floor: no validation,
   no rejects, no partitioning);
2. ``tiercast ingest`` of the same file in a fresh process (everything included: format
   detection, sha256, row checks and rejects, partitioned Parquet, manifest, GX contract);
and prints MB/s of both and the ratio (goal >= 0.7). With ``--rss-gb`` it also ingests a larger
file and reports the peak RSS of the ingest process (goal < 2 GB).

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
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

FILETIME_2007 = 128166372003061629
SCHEMA = {
    "Timestamp": pl.Int64, "Hostname": pl.String, "DiskNumber": pl.Int64, "Type": pl.String,
    "Offset": pl.Int64, "Size": pl.Int64, "ResponseTime": pl.Int64,
}


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


def run_ingest(path: Path, data_dir: Path, validate: str) -> tuple[float, dict, int]:
    """Wall seconds, the JSON summary and the peak RSS (bytes) of a fresh ingest process."""
    code = (
        "import resource, sys, json; from pipelines.cli import main; "
        "sys.argv=['tiercast','ingest',sys.argv[1],'--json','--validate',sys.argv[3],'--data-dir',sys.argv[2]]; "
        "\ntry:\n    main()\nfinally:\n    print(json.dumps({'maxrss_kb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}), file=sys.stderr)"
    )
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, str(path), str(data_dir), validate],
                       capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"ingest failed: {p.stderr}")
    rss_kb = json.loads(p.stderr.strip().splitlines()[-1])["maxrss_kb"]
    return wall, json.loads(p.stdout.strip().splitlines()[-1]), rss_kb * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the throughput file (GB)")
    ap.add_argument("--rss-gb", type=float, default=0.0, help="size of the peak-RSS file (GB); 0 skips")
    ap.add_argument("--validate", default="auto", help="ingest --validate mode (auto|full|sample|off)")
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
    t = time.perf_counter()
    pl.scan_csv(csv, has_header=False, schema=SCHEMA).sink_parquet(out)
    polars_s = time.perf_counter() - t

    dd = work / "data"
    shutil.rmtree(dd, ignore_errors=True)
    wall, summary, rss = run_ingest(csv, dd, a.validate)
    print(f"\nfile: {csv.name}  {size_mb:,.0f} MB  {summary['rows_read']:,} rows  (validate={a.validate})")
    print(f"{'':28}{'seconds':>10}{'MB/s':>10}")
    print(f"{'polars scan_csv->parquet':28}{polars_s:>10.2f}{size_mb / polars_s:>10.1f}")
    print(f"{'tiercast ingest':28}{wall:>10.2f}{size_mb / wall:>10.1f}")
    print(f"ratio tiercast/polars = {polars_s / wall:.2f}  (goal >= 0.7)")
    print(f"peak RSS of that ingest: {rss / 2**20:,.0f} MiB")

    if a.rss_gb:
        big = work / f"msr_{a.rss_gb:g}gb.csv"
        if not big.exists():
            print(f"generating {big} ...", flush=True)
            make_msr_csv(big, int(a.rss_gb * 1e9), seed=1)
        shutil.rmtree(dd, ignore_errors=True)
        wall, summary, rss = run_ingest(big, dd, a.validate)
        print(f"\n{big.name}: {big.stat().st_size / 1e6:,.0f} MB, {summary['rows_read']:,} rows in {wall:.1f} s "
              f"({big.stat().st_size / 1e6 / wall:.0f} MB/s); peak RSS {rss / 2**20:,.0f} MiB (goal < 2048 MiB)")
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    _ = resource, os


if __name__ == "__main__":
    main()
