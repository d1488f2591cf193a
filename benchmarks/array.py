"""Array model throughput: requests/s per core of ``vnx5400-fastcache`` (DRAM + FAST Cache + back
end + latency), ``vnx5400-fastvp`` (FAST VP: as is, and relocating every 30 minutes),
``vnx5400`` (FAST Cache off), ``vnx2-mcx``, ``vnx1-flare``, the all-flash ``violin6232`` (no
cache: controller, media, flash servers, free space and GC) and the cloud volumes ``aws-gp3`` and
``aws-gp2`` (token buckets, I/O accounting, service-time draws) on one trace, with libCacheSim's LRU
on the same page sequence as the yardstick.

The trace: seed 000's IOMeter database pattern (8 KiB, 67 % read, 100 % random) over a 15 GiB
test file, ``--requests`` requests (default 10 M), written by ``traces.synth`` and ingested as
Parquet (not timed). Each scenario replays it closed loop at 16 outstanding I/Os (``OUTSTANDING``:
every request gets a full timing: SP queue, cache, flushers, drive queues). The presets replay a
timed trace in open loop by default (since 2026-11-26); at this trace's 2,000 IOPS that overloads
the five-drive MCx and FLARE presets (queues, and latencies, growing for the whole run), so the
benchmark sets the loop itself, as its runs before that date had it:

* ``kernel``: ``ArrayModel.replay`` over segments built beforehand (one thread; page split and
  dense ids included, segment building not), per wall second and per CPU second of the process,
  with the request tables tallied in its loop as the end-to-end replay has them (``replay.tally``,
  at the automatic interval); ``without tally``: the same kernel handed no tally, per CPU second
  (what the kernel alone cost before 2026-11-28, when the tables were a pass after it);
* ``end to end``: ``pipelines.replay.replay_trace`` from the Parquet dataset to the written
  per-interval tables and summary (reading, segment building in a prefetch thread, kernel,
  Polars aggregation, Parquet). Per core = requests / process CPU seconds (all threads).

libCacheSim: ``LRU`` with the scenario's cache size (4 GiB of 8 KiB pages) on an oracleGeneral
file of the same page ids (written beforehand, not timed), driven through its C reader and
``process_trace`` at the default ``hashpower`` (24), as docs/architecture/pitfalls.md#libcachesim prescribes; its rate is in
page accesses per second (a request here is one page: 8 KiB aligned). Best of ``--repeat``.

    .venv/bin/python benchmarks/array.py                  # 10 M requests
    .venv/bin/python benchmarks/array.py --requests 1000000
    .venv/bin/python benchmarks/array.py --requests 2000000 --against main   # before / after
    .venv/bin/python benchmarks/array.py --scenarios vnx5400-fastcache,vnx5400,vnx5400-fastvp

``--against REV``: only the kernel, of git revision REV and of this tree, on the same segments, each
run in its own process, alternated (REV, this, REV, this, ...) so that both see the same load on
a shared machine; best of ``--repeat``, and whether latency sums and flush counts are identical.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named array.py (as the issue asks): run as a script, its folder would come first on
# sys.path and shadow the standard library's ``array`` module. Put the repository root there.
ROOT = Path(__file__).resolve().parent.parent
#: ``--kernel-child TREE CHUNKS LABEL`` (``--against``'s child process): TREE's code, not this one's
TREE = Path(sys.argv[sys.argv.index("--kernel-child") + 1]) if "--kernel-child" in sys.argv else ROOT
sys.path[0] = str(TREE)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from pipelines import replay as rp  # noqa: E402
from pipelines import simulate as sim  # noqa: E402
from pipelines.catalog import find_trace  # noqa: E402
from pipelines.ingest import ingest_file  # noqa: E402
from replay.array import ArrayModel  # noqa: E402
from replay.intervals import AUTO_INTERVALS_NS  # noqa: E402
from replay.pages import SegmentBuilder  # noqa: E402
from replay.scenario import load  # noqa: E402
from replay.tally import RequestTally  # noqa: E402
from traces import synth  # noqa: E402

ORACLE_RECORD = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"), ("next_access", "<i8")])
#: label -> (preset, --set overrides). FAST VP relocates in a nightly window the benchmark's hour of
#: simulated time never reaches; its "relocating" variant opens a window every 30 minutes.
SCENARIOS = {
    "vnx5400-fastcache": ("vnx5400-fastcache", ()),
    "vnx5400-fastvp": ("vnx5400-fastvp", ()),
    "vnx5400-fastvp relocating": ("vnx5400-fastvp", ("tiering.window_start_h=0.25", "tiering.window_every_h=0.5",
                                                     "tiering.window_hours=0.25",
                                                     "tiering.rank_interval_s=300")),
    "vnx5400": ("vnx5400", ()),
    "vnx2-mcx": ("vnx2-mcx", ()),
    "vnx1-flare": ("vnx1-flare", ()),
    "violin6232": ("violin6232", ()),
    "aws-gp3": ("aws-gp3", ()),  # cloud volumes (issue 28): token buckets and service times, no cache
    "aws-gp2": ("aws-gp2", ()),
}


#: I/Os in flight in every scenario's closed loop
OUTSTANDING = 16


def scenario(label: str):
    preset, overrides = SCENARIOS[label]
    return load(preset, overrides).with_replay(mode="closed", outstanding=OUTSTANDING)


def prepare(requests: int, work: Path):
    w = synth.pattern("database", requests=requests, region_bytes=15 << 30, seed=42, volume="db15g")
    p = work / "db15g.parquet"
    synth.write(w, p)
    trace = find_trace(work, ingest_file(p, work, validate="off").trace_id)
    frames = list(sim.read_frames(trace, rp.ARRAY_BATCH_ROWS))  # the end-to-end replay's segments
    builder = SegmentBuilder(8192)
    segments = [builder.build(df) for df in frames]
    rec = np.zeros(sum(c.n_pages for c in segments), ORACLE_RECORD)
    rec["time"] = np.concatenate([c.ts_ns[c.page_req] for c in segments]) // 1_000_000_000
    rec["obj_id"] = np.concatenate([c.page_id for c in segments]) + 1
    rec["size"] = 1
    rec["next_access"] = -1
    oracle = work / "db15g.oracleGeneral.bin"
    rec.tofile(oracle)
    return trace, segments, builder, oracle, len(rec)


def kernel_run(name: str, segments, names, tally: bool = True) -> tuple[float, float, dict]:
    """The kernel as the end-to-end replay runs it: with its request tally (``replay.tally``), at
    the automatic interval."""
    m = ArrayModel(scenario(name))
    st = m.new_state()
    counter = RequestTally.for_model(m, st) if tally else None
    interval_ns = AUTO_INTERVALS_NS[0]
    t, cpu = time.perf_counter(), time.process_time()
    for c in segments:
        st.volume_names = names
        if counter is not None:
            counter.start(c.n_requests, interval_ns, True)
        m.replay(st, c, counter)
        if counter is not None:
            interval_ns = counter.tables(0)[0]
        m.drain_records(st)
    return time.perf_counter() - t, time.process_time() - cpu, m.counters(st)


def compile_kernels(label: str) -> None:
    kernel_run(label, [SegmentBuilder(8192).build(pl.DataFrame(
        {"ts_ns": [0], "volume": ["w"], "op": ["write"], "offset": [0], "size": [8192]}))], ["w"])


def kernel_child(segments_file: Path, label: str) -> None:
    """``--against``'s child: this process's tree (TREE) replays the pickled segments twice (the
    first run also compiles for their types); prints the second run's CPU seconds and latency sum."""
    segments, names = pickle.loads(segments_file.read_bytes())
    compile_kernels(label)
    kernel_run(label, segments, names)
    _, cpu, c = kernel_run(label, segments, names)
    print(json.dumps({"cpu_s": cpu, "latency_sum_ns": c["latency_sum_ns"], "flush_ops": c["flush_ops"]}))


def against(rev: str, segments, names, n: int, repeat: int, work: Path, labels: list[str]) -> list[dict]:
    """Kernel CPU time of git revision ``rev`` and of this tree on the same segments, alternated
    (old, new, old, new, ... per scenario, each run its own process), best of ``repeat``."""
    old = work / "against"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    segments_file = work / "segments.pickle"
    segments_file.write_bytes(pickle.dumps((segments, names)))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    rows = []
    for label in labels:
        best: dict[str, dict] = {}
        for _ in range(repeat):
            for tree in (old, ROOT):
                out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--kernel-child", str(tree),
                                      str(segments_file), label], check=True, capture_output=True, text=True, env=env)
                r = json.loads(out.stdout.splitlines()[-1])
                if str(tree) not in best or r["cpu_s"] < best[str(tree)]["cpu_s"]:
                    best[str(tree)] = r
        b, a = best[str(old)], best[str(ROOT)]
        rows.append({"scenario": label, "before_req_per_cpu_s": n / b["cpu_s"], "after_req_per_cpu_s": n / a["cpu_s"],
                     "speedup": b["cpu_s"] / a["cpu_s"],
                     "identical": (b["latency_sum_ns"], b["flush_ops"]) == (a["latency_sum_ns"], a["flush_ops"])})
    return rows


def end_to_end(name: str, trace, work: Path) -> tuple[float, float, dict]:
    t, cpu = time.perf_counter(), time.process_time()
    s = rp.replay_trace(trace, work, scenario(name), force=True)
    return time.perf_counter() - t, time.process_time() - cpu, s


def libcachesim_lru(oracle: Path, capacity_pages: int, n: int, readers: list) -> tuple[float, float]:
    import libcachesim as lcs

    t = time.perf_counter()
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = lcs.LRU(capacity_pages)  # default hashpower=24
    miss_ratio, _ = cache.process_trace(reader)
    dt = time.perf_counter() - t
    readers.append(reader)  # docs/architecture/pitfalls.md#libcachesim: keep readers alive until the end (double free otherwise)
    return dt, 1 - miss_ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--scenarios", type=lambda v: v.split(","), default=list(SCENARIOS),
                    help=f"comma-separated labels among {', '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--against", metavar="REV",
                    help="instead: kernel CPU time of git revision REV vs this tree, alternated, best of --repeat")
    ap.add_argument("--kernel-child", nargs=3, metavar=("TREE", "CHUNKS", "LABEL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    unknown = sorted(set(args.scenarios) - set(SCENARIOS))
    if unknown:
        ap.error(f"--scenarios: unknown {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
    warnings.simplefilter("ignore")
    if args.kernel_child:
        kernel_child(Path(args.kernel_child[1]), args.kernel_child[2])
        return
    readers: list = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="tiercast-bench-array-") as tmp:
        work = Path(tmp)
        trace, segments, builder, oracle, n_pages = prepare(args.requests, work)
        names = list(builder.volumes)
        n = args.requests
        if args.against:
            ab = against(args.against, segments, names, n, args.repeat, work, args.scenarios)
            print(json.dumps(ab, indent=1) if args.json else "\n".join(
                f"{r['scenario']:28s} kernel per CPU-s: {args.against} {r['before_req_per_cpu_s']:>12,.0f}  this tree "
                f"{r['after_req_per_cpu_s']:>12,.0f}  {r['speedup']:.2f}x  results identical: {r['identical']}"
                for r in ab))
            return
        for label in args.scenarios:
            compile_kernels(label)
        for name in args.scenarios:
            kt, kcpu, c = min((kernel_run(name, segments, names) for _ in range(args.repeat)), key=lambda r: r[1])
            bare = min(kernel_run(name, segments, names, tally=False)[1] for _ in range(args.repeat))
            wall, cpu, s = min((end_to_end(name, trace, work) for _ in range(args.repeat)), key=lambda r: r[0])
            rows.append({"tool": f"tiercast {name}", "kernel_req_per_s": n / kt, "kernel_req_per_cpu_s": n / kcpu,
                         "kernel_without_tally_req_per_cpu_s": n / bare,
                         "end_to_end_req_per_s": n / wall,
                         "end_to_end_req_per_cpu_s": n / cpu, "simulated_iops": s["iops"],
                         "latency_mean_ms": s["latency_mean_ms"], "read_hit_ratio": c["read_hit_ratio"],
                         "flush_ops": c["flush_ops"], "forced_flushes": c["forced_flush_count"],
                         "ssd_promotions": c.get("ssd_promotions", 0), "ssd_read_hits": c.get("ssd_read_hits", 0),
                         "tier_moves": c.get("tier_moves", 0)})
        cap = scenario("vnx5400-fastcache").dram.cache_bytes // 8192
        lt, hit = min((libcachesim_lru(oracle, cap, n_pages, readers) for _ in range(args.repeat)), key=lambda r: r[0])
        rows.append({"tool": "libCacheSim LRU (C reader)", "kernel_req_per_s": n_pages / lt,
                     "kernel_req_per_cpu_s": n_pages / lt, "hit_ratio": hit})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"trace: database pattern, {n:,} requests of 8 KiB (67 % read, uniform over 15 GiB); "
          f"best of {args.repeat}; {os.cpu_count()} cores")
    print(f"{'':32s} {'kernel req/s':>14s} {'per CPU-s':>12s} {'no tally':>12s} {'end-to-end req/s':>17s} "
          f"{'per CPU-s':>12s} {'ratio':>6s}  simulated")
    lru = rows[-1]["kernel_req_per_cpu_s"]
    for r in rows:
        extra = (f"{r['simulated_iops']:,.0f} IOPS, {r['latency_mean_ms']:.1f} ms, read hits "
                 f"{r['read_hit_ratio']:.3f}, {r['flush_ops']:,} flushes, {r['ssd_promotions']:,} promotions, {r['tier_moves']:,} relocations, "
                 f"kernel {r['kernel_req_per_cpu_s'] / lru:.2f}x libCacheSim" if "simulated_iops" in r
                 else f"hit ratio {r['hit_ratio']:.3f} (pages)")
        e2e = (f"{r['end_to_end_req_per_s']:>17,.0f} {r['end_to_end_req_per_cpu_s']:>12,.0f} "
               f"{r['end_to_end_req_per_cpu_s'] / r['kernel_req_per_cpu_s']:>5.2f}x") \
            if "end_to_end_req_per_s" in r else f"{'':>17s} {'':>12s} {'':>6s}"
        bare = f"{r['kernel_without_tally_req_per_cpu_s']:>12,.0f}" if "kernel_without_tally_req_per_cpu_s" in r \
            else f"{'':>12s}"
        print(f"{r['tool']:32s} {r['kernel_req_per_s']:>14,.0f} {r['kernel_req_per_cpu_s']:>12,.0f} {bare} {e2e}  {extra}")


if __name__ == "__main__":
    main()
