"""``tiercast skew`` and ``tiercast snapshots`` as processes: requests/s and peak RSS.

The trace: ``--requests`` 8 KiB requests (default 4 M; ``--requests 100000000`` for 100 M),
Zipf(1.0) over 1 TiB, 67 % reads, at 20,000 IOPS (4 M requests: 3.3 min of trace; 100 M:
1.4 h), written by ``traces.synth`` in parts of at most 5 M requests (each part its own seed,
so memory stays bounded while generating; the hot set differs per part) and ingested as one
trace (not timed). Then, each in a fresh process: ``tiercast skew TRACE --json`` (256 MiB
slices) and ``tiercast snapshots TRACE --every 1min --keep 1h --json`` (8 KiB blocks), timed
wall-clock from start to exit (Python and Polars start-up included), with the peak RSS of that
process (``ru_maxrss`` from ``os.wait4``, measured by a small launcher process: ``benchmarks/processes.py``).

    .venv/bin/python benchmarks/skew.py                       # 4 M requests
    .venv/bin/python benchmarks/skew.py --requests 100000000  # 100 M (~4 GB of Parquet)
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/array.py would shadow the standard library's ``array`` module for any script in
# this folder: put the repository root first on sys.path instead.
ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402

from benchmarks.processes import TIERCAST, run_timed  # noqa: E402
from pipelines.ingest import ingest_file  # noqa: E402
from schemas.trace import ARROW_SCHEMA  # noqa: E402
from traces import synth  # noqa: E402

PART_REQUESTS = 5_000_000
IOPS = 20_000.0


def make_trace(path: Path, requests: int) -> None:
    """``requests`` synthetic requests in one Parquet file, generated ``PART_REQUESTS`` at a time."""
    with pq.ParquetWriter(path, ARROW_SCHEMA, compression="zstd") as writer:
        done = 0
        while done < requests:
            n = min(PART_REQUESTS, requests - done)
            w = synth.pattern("database", requests=n, region_bytes=1 << 40, distribution="zipf:1.0", iops=IOPS,
                              seed=done // PART_REQUESTS, volume="bench")
            df = synth.generate(w)
            shift = int(done * 1e9 / IOPS)
            df = df.with_columns(ts_ns=df["ts_ns"] + shift, src_line=df["src_line"] + done)
            writer.write_table(df.to_arrow().cast(ARROW_SCHEMA))
            done += n


def timed(args: list[str], data_dir: Path) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS bytes, JSON output) of ``tiercast ARGS`` in a fresh process."""
    wall, rss, stdout = run_timed([*TIERCAST, *args, "--data-dir", str(data_dir), "--json"])
    return wall, rss, json.loads(stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=4_000_000)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the trace here (reused when present)")
    a = ap.parse_args()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="tiercast-bench-skew-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"zipf-{a.requests}.parquet"
    if not src.exists():
        print(f"generating {a.requests:,} requests ...", flush=True)
        make_trace(src, a.requests)
    print("ingesting (not timed) ...", flush=True)
    tid = ingest_file(src, work / "data", validate="off").trace_id
    runs = {
        "skew --slice 256MiB": ["skew", tid, "--slice", "256MiB"],
        "snapshots --every 1min --keep 1h": ["snapshots", tid, "--every", "1min", "--keep", "1h", "--block", "8KiB"],
    }
    print(f"\n{a.requests:,} requests, Zipf 1.0 over 1 TiB, 8 KiB, 67 % reads")
    print(f"{'command':36}{'seconds':>9}{'M req/s':>9}{'peak RSS MiB':>14}  result")
    for name, args in runs.items():
        wall, rss, doc = timed(args, work / "data")
        if "skew_point" in doc:
            what = f"skew point {doc['skew_point']['io_share']:.3f} / {doc['skew_point']['capacity_share']:.3f}"
        else:
            what = f"peak {doc['peak']['snapshot_bytes'] / 2**30:.2f} GiB"
        print(f"{name:36}{wall:>9.2f}{a.requests / wall / 1e6:>9.2f}{rss / 2**20:>14,.0f}  {what}", flush=True)
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
