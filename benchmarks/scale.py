"""The whole path at scale (issue 29): synth -> ingest -> mrc (SHARDS and exact) -> simulate ->
replay (an array preset) -> load -> report, each step a fresh process, with its wall time, CPU time
(user + system, all threads) and peak RSS; libCacheSim's on the same page sequence where it has the
step (LRU at the simulated size; one LRU run for the exact curve's 20 sizes).

    .venv/bin/python benchmarks/scale.py                 # 100 M requests
    .venv/bin/python benchmarks/scale.py 10000000 --keep /tmp/scale-10m
    .venv/bin/python benchmarks/scale.py 1000000000 --drop-after-use --keep /tmp/scale-1b
    .venv/bin/python benchmarks/scale.py --pairs 6      # and 6 more simulate / libCacheSim pairs

``--pairs N``: after the path's own ``simulate`` and libCacheSim runs, N more of each, alternated
(the machine's speed drifts between minutes: only a run and its partner are compared), with each
pair's wall ratio and their mean. ``--cold`` drops the kernel's page cache before each of those
runs (root only): both read their input from the disk, as with a trace larger than the machine's
memory (at a billion requests the 4 KiB page stream is 25 GB, libCacheSim's file 24 GB).

The trace: Zipf(1.0) 4 KiB requests, 70 % reads, over ``--region-gib`` (default 64), generated in
10 M-request parts (``traces.synth``, one seed per part, appended to one Parquet file: bounded
memory). libCacheSim reads an oracleGeneral file of the trace's 4 KiB page ids through its C reader
(written beforehand from the page stream, not timed; 24 B per request on disk). ``tiercast warm``
runs first, not timed, so no step's time includes compiling.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from benchmarks.processes import child_env  # noqa: E402

PART_REQUESTS = 10_000_000
PAGE_BYTES = 4096
PRESET = "vnx5400-fastcache"

#: launcher: runs argv, reports wall, CPU (children's user + system) and peak RSS from wait4
LAUNCHER = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
out = p.stdout.read()
_, status, u = os.wait4(p.pid, 0)
sys.stdout.buffer.write(out)
sys.stderr.write(f"\\nLAUNCHER {time.perf_counter() - t} {u.ru_utime + u.ru_stime} {u.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""

SYNTH = f"""
import sys, pyarrow.parquet as pq
from traces import synth
path, n, region = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with pq.ParquetWriter(path, synth.ARROW_SCHEMA, compression="zstd") as w:
    next_ts = 0
    for done in range(0, n, {PART_REQUESTS}):
        k = min({PART_REQUESTS}, n - done)
        wl = synth.Workload(distribution="zipf:1.0", requests=k, region_bytes=region, block_size_bytes={PAGE_BYTES},
                            read_pct=70.0, seed=42 + done // {PART_REQUESTS}, volume="zipf")
        df = synth.generate(wl)
        df = df.with_columns(ts_ns=df["ts_ns"] + next_ts, src_line=df["src_line"] + done)
        next_ts = int(df["ts_ns"].max()) + 1
        w.write_table(df.to_arrow().cast(synth.ARROW_SCHEMA))
"""

ORACLE = f"""
import sys, numpy as np
from pipelines import simulate as sim
from pipelines.catalog import find_trace
rec_t = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"), ("next_access", "<i8")])
trace = find_trace(sys.argv[1], sys.argv[2])
with open(sys.argv[3], "wb") as f:
    for s in sim.TraceSegments(trace, {PAGE_BYTES}, record=False):
        rec = np.zeros(s.n_pages, rec_t)
        rec["time"] = s.ts_ns[s.page_req] // 1_000_000_000
        rec["obj_id"] = s.page_id + 1
        rec["size"] = 1
        rec["next_access"] = -1
        rec.tofile(f)
"""

LCS = """
import sys, libcachesim as lcs
reader = lcs.TraceReader(sys.argv[1], lcs.TraceType.ORACLE_GENERAL_TRACE)
miss_ratio, _ = lcs.LRU(int(sys.argv[2])).process_trace(reader)  # default hashpower (24)
print(1 - miss_ratio)
"""

TIERCAST = [sys.executable, "-c", "from pipelines.cli import main; main()"]


def timed(argv: list[str]) -> dict:
    """Wall s, CPU s and peak RSS bytes of ``argv`` as a fresh process, and its stdout."""
    p = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, cwd=ROOT,
                       env=child_env())
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])} failed ({p.returncode}): {p.stdout[-1500:]} {p.stderr[-3000:]}")
    wall, cpu, rss_kib = p.stderr.rpartition("\nLAUNCHER ")[2].split()
    return {"wall_s": float(wall), "cpu_s": float(cpu), "peak_rss_bytes": int(rss_kib) * 1024, "stdout": p.stdout}


def disk_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (the work directory after a step)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def drop_page_cache(really: bool) -> None:
    """Write back and drop the kernel's page cache (``--cold``), so the next run reads from disk."""
    if really:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("requests", type=int, nargs="?", default=100_000_000)
    ap.add_argument("--region-gib", type=int, default=64)
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one, deleted)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--pairs", type=int, default=0, help="then this many more simulate / libCacheSim runs, alternated")
    ap.add_argument("--cold", action="store_true",
                    help="drop the page cache before each simulate / libCacheSim pair run (root only)")
    ap.add_argument("--drop-after-use", action="store_true",
                    help="delete the synthesized Parquet after ingest and the 4 KiB page stream after simulate "
                         "(a billion requests: the peak work directory ~56 instead of ~88 GB)")
    args = ap.parse_args()
    n = args.requests
    work = args.keep or Path(tempfile.mkdtemp(prefix="tiercast-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    src = work / f"zipf-{n}.parquet"
    rows: list[dict] = []

    def step(name: str, argv: list[str], peer: bool = False) -> dict:
        r = {"step": name, "peer": peer, **timed(argv), "work_bytes": disk_bytes(work)}
        rows.append(r)
        print(f"{name:44s} {r['wall_s']:9.1f} s {r['cpu_s']:9.1f} CPU-s {r['peak_rss_bytes'] / 2**30:7.2f} GiB  "
              f"{n / r['cpu_s'] / 1e6:7.2f} M req/CPU-s  (work dir {r['work_bytes'] / 2**30:.1f} GiB)", flush=True)
        return r

    def tc(*a: str) -> list[str]:
        return [*TIERCAST, *a, "--data-dir", str(data)]

    try:
        # every step's compiled code loaded, not compiled, in its timed run: a cold cache once made
        # the first replay at 100 M 115.7 s instead of ~40 (2026-11-27)
        subprocess.run([*TIERCAST, "warm"], check=True, cwd=ROOT, env=child_env(), capture_output=True)
        step("synth (10 M parts)", [sys.executable, "-c", SYNTH, str(src), str(n), str(args.region_gib << 30)])
        ing = step("ingest", tc("ingest", str(src), "--json"))
        trace_id = json.loads(ing["stdout"])["trace_id"]
        if args.drop_after_use:
            src.unlink()
        step("mrc --method shards --rate 0.01", tc("mrc", trace_id, "--method", "shards", "--rate", "0.01",
                                                   "--page-size", "4KiB", "--json"))
        exact = step("mrc exact (20 sizes, writes the page stream)", tc("mrc", trace_id, "--page-size", "4KiB",
                                                                         "--json"))
        foot = max(r["cache_bytes"] for r in json.loads(exact["stdout"])["rows"])
        cache = max(PAGE_BYTES, foot // 100 // PAGE_BYTES * PAGE_BYTES)
        simulate = tc("simulate", trace_id, "--policy", "lru", "--cache-size", str(cache), "--page-size", "4KiB",
                      "--json")
        sim = step("simulate lru 1 % (page stream there)", simulate)
        oracle = work / "pages.oracleGeneral.bin"
        subprocess.run([sys.executable, "-c", ORACLE, str(data), trace_id, str(oracle)], check=True, cwd=ROOT,
                       env=child_env())
        peer = [sys.executable, "-c", LCS, str(oracle), str(cache // PAGE_BYTES)]
        lcs = step("libCacheSim LRU 1 % (C reader)", peer, peer=True)
        ratios = [lcs["wall_s"] / sim["wall_s"]]
        for i in range(args.pairs):
            cold = " (cold)" if args.cold else ""
            drop_page_cache(args.cold)
            a = step(f"  pair {i + 1}: simulate{cold}", simulate)
            drop_page_cache(args.cold)
            b = step(f"  pair {i + 1}: libCacheSim{cold}", peer, peer=True)
            ratios.append(b["wall_s"] / a["wall_s"])
        print(f"  simulate vs libCacheSim, wall, each run against its partner: "
              f"{', '.join(f'{r:.1f}x' for r in ratios)} (mean {sum(ratios) / len(ratios):.1f}x)", flush=True)
        oracle.unlink()
        if args.drop_after_use:
            for stream in (data / "traces").glob(f"*/pages/{PAGE_BYTES}-*"):
                shutil.rmtree(stream)
        hit = json.loads(sim["stdout"])["hit_ratio"]
        print(f"  hit ratio tiercast {hit:.6f}, libCacheSim {float(lcs['stdout']):.6f}", flush=True)
        step(f"replay {PRESET} (first: writes the 8 KiB stream)", tc("replay", trace_id, "--scenario", PRESET,
                                                                    "--json"))
        step(f"replay {PRESET} (again, --force)", tc("replay", trace_id, "--scenario", PRESET, "--force", "--json"))
        step("load", tc("load", "--json"))
        step("report", tc("report", "--out", str(work / "report.html")))
        du = disk_bytes(work)
        print(f"work directory {work}: {du / 2**30:.1f} GiB; report {(work / 'report.html').stat().st_size / 2**20:.1f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "stdout"} for r in rows], indent=1))


if __name__ == "__main__":
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    main()
