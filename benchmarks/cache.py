"""tiercast's replay engine vs libCacheSim on the same traces: one size, 20-size curves, SHARDS.

One run, same input. For a Zipf(1.0) and a uniform trace of ``--requests`` 4 KiB requests
(default 10 M) written by ``traces.synth`` and ingested as Parquet:

1. single size: LRU, FIFO, ARC at 1 % and 10 % of the footprint. tiercast times
   ``pipelines.simulate.simulate`` end to end (read Parquet, split pages, dense ids, kernel;
   per-interval metrics off); libCacheSim times opening its C reader on an oracleGeneral file
   of the same page sequence (written beforehand, not timed) and ``process_trace`` at its
   default ``hashpower`` (24). Hit counts must agree exactly.
   Each single-size timing is the best of ``--repeat`` runs, for both tools.
2. curve: tiercast's exact LRU curve at 20 log-spaced sizes (1 % .. 100 % of the footprint,
   one pass, end to end) vs libCacheSim running LRU at each of those sizes.
3. SHARDS at 1 % (fixed-rate, estimator chosen per trace): end-to-end time, and the curve computation alone (SHARDS
   sampler + distances on the prepared page sequence vs the exact Fenwick pass on it), with
   the mean absolute error of the hit ratios vs exact.
4. dense ids: ``replay.ids.IdMap`` vs ``polars rank("dense")`` on the trace's page keys.

numba kernels are compiled (or loaded from the on-disk cache) before timing starts, and each
tool replays each trace once untimed first (both then read from the page cache).

``--whole-process`` times what a user runs instead: ``tiercast simulate --policy lru`` and
``tiercast mrc`` (exact, 20 sizes) as fresh processes (``benchmarks/processes.py``: wall time from
start to exit, peak RSS), against a fresh Python process running libCacheSim's LRU on its own
binary file of the same page sequence (``LCS_PROCESS``: import, open the reader, process the
trace). tiercast's *first* run starts without the trace's page stream (deleted before each such
run; that run writes it), a *repeat* run maps it. Each cell is the best of ``--repeat`` runs, with
the range shown (the machine is shared: the spread is the noise).

    .venv/bin/python benchmarks/cache.py                 # 10 M requests per trace
    .venv/bin/python benchmarks/cache.py --requests 1000000
    .venv/bin/python benchmarks/cache.py --whole-process --repeat 5
    .venv/bin/python benchmarks/cache.py --whole-process --requests 100000000 --traces zipf
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
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from benchmarks.processes import TIERCAST, run_timed  # noqa: E402
from pipelines import simulate as sim  # noqa: E402
from pipelines.catalog import find_trace  # noqa: E402
from pipelines.ingest import ingest_file  # noqa: E402
from replay.ids import IdMap  # noqa: E402
from replay.kernels import cache_model  # noqa: E402
from replay.mrc import Shards, StackDistances  # noqa: E402
from replay.pages import DIRECT_MAX_KEYS, SegmentBuilder  # noqa: E402
from schemas.trace import ARROW_SCHEMA  # noqa: E402
from traces import synth  # noqa: E402

PAGE = 4096
ORACLE_RECORD = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"), ("next_access", "<i8")])
LCS = {"lru": "LRU", "fifo": "FIFO", "arc": "ARC"}


def prepare(name: str, distribution: str, requests: int, region_bytes: int, work: Path):
    """Write, ingest and convert one workload (nothing here is timed)."""
    w = synth.Workload(distribution=distribution, requests=requests, region_bytes=region_bytes,
                       block_size_bytes=PAGE, read_pct=70.0, seed=42, volume=name)
    p = work / f"{name}.parquet"
    synth.write(w, p)
    trace = find_trace(work, ingest_file(p, work, validate="off").trace_id)
    segment = SegmentBuilder(PAGE).build(pl.concat(list(sim.read_frames(trace))))
    rec = np.zeros(segment.n_pages, ORACLE_RECORD)
    rec["time"] = segment.ts_ns[segment.page_req] // 1_000_000_000
    rec["obj_id"] = segment.page_id + 1
    rec["size"] = 1
    rec["next_access"] = -1
    oracle = work / f"{name}.oracleGeneral.bin"
    rec.tofile(oracle)
    return trace, segment, oracle


def libcachesim_run(lcs, policy: str, capacity_pages: int, oracle: Path, n: int, readers: list):
    t = time.perf_counter()
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(lcs, LCS[policy])(capacity_pages)  # default hashpower=24
    miss_ratio, _ = cache.process_trace(reader)
    dt = time.perf_counter() - t
    readers.append(reader)  # docs/architecture/pitfalls.md#libcachesim: keep readers alive until the end (double free otherwise)
    return int(round((1 - miss_ratio) * n)), dt


def warm_up() -> None:
    """Compile (or load cached) numba kernels so timings measure runs, not compilation."""
    df = pl.DataFrame({"ts_ns": [0, 1, 2], "volume": ["w", "w", "w"], "op": ["read", "write", "read"],
                       "offset": [0, 4096, 0], "size": [4096, 8192, 4096]})
    for policy in LCS:
        m = cache_model(policy, 20 * PAGE, PAGE)
        m.replay(m.new_state(), SegmentBuilder(PAGE).build(df))
    segment = SegmentBuilder(PAGE).build(df)
    StackDistances().update(segment.page_id, segment.page_bytes)
    Shards(rate=1.0).update(segment.page_no, segment.page_bytes)


def best(fn, repeat: int):
    """(result, best wall time) of ``repeat`` runs: on a shared machine the minimum is the
    figure least disturbed by other work."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, min(times)


def exact_pass(segment, caps):
    """The exact curve computation alone (Fenwick stack distances) on a prepared sequence."""
    sd = StackDistances()
    sd.update(segment.page_id, segment.page_bytes, n_ids=segment.n_ids)
    return sd.hit_ratios(caps)


def shards_pass(keys, nbytes, caps, adjust="auto"):
    """The SHARDS 1 % curve computation alone (hash sampling + sampled distances)."""
    sh = Shards(rate=0.01, adjust=adjust)
    sh.update(keys, nbytes)
    return sh.hit_ratios(caps)


def assign_fresh(factory, keys):
    """Dense ids of ``keys`` from a new, empty map (growth included)."""
    return factory().assign(keys)


def fmt_rate(n: int, dt: float) -> str:
    return f"{n / dt / 1e6:7.2f}"


def run(args) -> dict:
    import libcachesim as lcs

    warm_up()
    work = Path(args.work or tempfile.mkdtemp(prefix="tiercast-bench-cache-"))
    work.mkdir(parents=True, exist_ok=True)
    region = args.region_gib << 30
    report: dict = {"requests": args.requests, "region_bytes": region, "page_size": PAGE, "workloads": {}}
    readers: list = []
    for name, dist in (("zipf", "zipf:1.0"), ("uniform", "uniform")):
        trace, segment, oracle = prepare(name, dist, args.requests, region, work)
        n = segment.n_pages
        footprint = segment.n_ids
        wr: dict = {"pages": n, "footprint_pages": footprint, "single": [], "curve": {}, "shards": {}}
        print(f"\n== {name}: {args.requests:,} requests, {n:,} page accesses, footprint {footprint:,} pages "
              f"({footprint * PAGE / 2**30:.2f} GiB)", flush=True)
        # untimed warm-up of both tools on this trace: files in the page cache, code paths loaded
        sim.simulate(trace, None, "fifo", max(20, footprint // 100) * PAGE, PAGE, interval=None)
        libcachesim_run(lcs, "fifo", max(20, footprint // 100), oracle, n, readers)
        print(f"{'policy':<6} {'size':>5} {'pages':>9}  {'tiercast Mreq/s':>15} {'libCacheSim Mreq/s':>18} "
              f"{'speedup':>7}  {'hit ratio':>9}  equal", flush=True)
        for policy in LCS:
            for frac in (0.01, 0.10):
                cap = max(20, int(footprint * frac))
                s, dt_ours = best(partial(sim.simulate, trace, None, policy, cap * PAGE, PAGE, interval=None),
                                  args.repeat)
                runs = [libcachesim_run(lcs, policy, cap, oracle, n, readers) for _ in range(args.repeat)]
                hits_lcs, dt_lcs = runs[0][0], min(r[1] for r in runs)
                row = {"policy": policy, "fraction": frac, "capacity_pages": cap, "tiercast_s": dt_ours,
                       "libcachesim_s": dt_lcs, "speedup": dt_lcs / dt_ours, "hit_ratio": s["hit_ratio"],
                       "hits_equal": s["hits"] == hits_lcs}
                wr["single"].append(row)
                print(f"{policy:<6} {frac:>5.0%} {cap:>9,}  {fmt_rate(args.requests, dt_ours):>15} "
                      f"{fmt_rate(args.requests, dt_lcs):>18} {row['speedup']:>6.1f}x  {s['hit_ratio']:>9.4f}  "
                      f"{row['hits_equal']}", flush=True)

        # 20-size curve, 1 % .. 100 % of the footprint
        caps = np.unique(np.round(np.geomspace(max(1, footprint // 100), footprint, 20)).astype(np.int64))
        sizes = [int(c) * PAGE for c in caps]
        exact, dt_exact = best(partial(sim.mrc, trace, None, PAGE, sizes=sizes, method="exact"), args.repeat)
        dt_lcs_total = 0.0
        equal = True
        for c, hr in zip(caps, exact["hit_ratio"], strict=True):
            hits_lcs, dt_lcs = libcachesim_run(lcs, "lru", int(c), oracle, n, readers)
            dt_lcs_total += dt_lcs
            equal &= abs(hits_lcs - hr * n) < 0.5
        wr["curve"] = {"sizes": len(caps), "tiercast_exact_s": dt_exact, "libcachesim_s": dt_lcs_total,
                       "speedup": dt_lcs_total / dt_exact, "hit_ratios_equal": bool(equal)}
        print(f"curve  {len(caps)} sizes: tiercast exact {dt_exact:6.2f} s, libCacheSim {dt_lcs_total:7.2f} s "
              f"-> {dt_lcs_total / dt_exact:5.1f}x  (LRU hit counts equal at every size: {equal})", flush=True)

        # SHARDS 1 %: end to end, and the curve computation alone on the prepared sequence
        shards, dt_shards = best(partial(sim.mrc, trace, None, PAGE, sizes=sizes, method="shards", rate=0.01),
                                 args.repeat)
        mae = float((shards["hit_ratio"] - exact["hit_ratio"]).abs().mean())
        byte_mae = float((shards["byte_hit_ratio"] - exact["byte_hit_ratio"]).abs().mean())
        keys = segment.page_no  # one volume: the page key is the page number
        exact_hr, dt_exact_kernel = best(partial(exact_pass, segment, caps), args.repeat)
        _, dt_shards_kernel = best(partial(shards_pass, keys, segment.page_bytes, caps), args.repeat)
        plain_mae = float(np.abs(shards_pass(keys, segment.page_bytes, caps, adjust=False)[0] - exact_hr[0]).mean())
        adj_mae = float(np.abs(shards_pass(keys, segment.page_bytes, caps, adjust=True)[0] - exact_hr[0]).mean())
        wr["shards"] = {"rate": 0.01, "end_to_end_s": dt_shards, "exact_end_to_end_s": dt_exact,
                        "kernel_s": dt_shards_kernel, "exact_kernel_s": dt_exact_kernel,
                        "kernel_speedup": dt_exact_kernel / dt_shards_kernel,
                        "end_to_end_speedup": dt_exact / dt_shards, "mae": mae, "byte_mae": byte_mae,
                        "mae_adj": adj_mae, "mae_plain": plain_mae}
        print(f"SHARDS 1%: curve computation {dt_shards_kernel * 1e3:7.1f} ms vs exact {dt_exact_kernel * 1e3:7.1f} ms "
              f"-> {dt_exact_kernel / dt_shards_kernel:5.1f}x; end to end {dt_shards:5.2f} s vs {dt_exact:5.2f} s "
              f"-> {dt_exact / dt_shards:4.1f}x; MAE {mae:.4f} (bytes {byte_mae:.4f}; estimator chosen by the "
              f"trace; adj {adj_mae:.4f}, plain {plain_mae:.4f})",
              flush=True)

        # dense ids vs polars rank("dense")
        _, dt_ids = best(partial(assign_fresh, IdMap, keys), args.repeat)
        _, dt_direct = best(partial(assign_fresh, partial(IdMap, direct_max=DIRECT_MAX_KEYS), keys), args.repeat)
        _, dt_rank = best(partial(pl.Series(keys).rank, "dense"), args.repeat)
        wr["ids"] = {"idmap_hash_s": dt_ids, "idmap_direct_s": dt_direct, "polars_rank_dense_s": dt_rank}
        print(f"dense ids: IdMap hash table {dt_ids:5.2f} s ({dt_rank / dt_ids:4.1f}x), key-indexed "
              f"{dt_direct:5.2f} s ({dt_rank / dt_direct:4.1f}x) vs polars rank('dense') {dt_rank:5.2f} s",
              flush=True)
        report["workloads"][name] = wr
    return report


#: libCacheSim as a user runs it: a Python process that imports it, opens its reader on the
#: oracleGeneral file and runs one policy at one size; prints the hit ratio.
LCS_PROCESS = """
import sys, libcachesim as lcs
path, policy, capacity = sys.argv[1], sys.argv[2], int(sys.argv[3])
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
miss_ratio, _ = getattr(lcs, policy)(capacity).process_trace(reader)
print(1 - miss_ratio)
"""
PART_REQUESTS = 10_000_000


def prepare_large(name: str, distribution: str, requests: int, region_bytes: int, work: Path):
    """Like ``prepare``, in bounded memory: the trace generated ``PART_REQUESTS`` at a time (one
    seed per part) and the oracleGeneral file written segment by segment from the replay's own segments."""
    import pyarrow.parquet as pq

    src = work / f"{name}-{requests}.parquet"
    if not src.exists():
        with pq.ParquetWriter(src, ARROW_SCHEMA, compression="zstd") as writer:
            next_ts = 0
            for done in range(0, requests, PART_REQUESTS):
                n = min(PART_REQUESTS, requests - done)
                w = synth.Workload(distribution=distribution, requests=n, region_bytes=region_bytes,
                                   block_size_bytes=PAGE, read_pct=70.0, seed=42 + done // PART_REQUESTS, volume=name)
                df = synth.generate(w)
                df = df.with_columns(ts_ns=df["ts_ns"] + next_ts, src_line=df["src_line"] + done)
                next_ts = int(df["ts_ns"].max()) + 1
                writer.write_table(df.to_arrow().cast(ARROW_SCHEMA))
    trace = find_trace(work, ingest_file(src, work, validate="off").trace_id)
    oracle = work / f"{name}-{requests}.oracleGeneral.bin"
    n_pages = n_ids = 0
    if not oracle.exists():
        tmp = oracle.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            for segment in sim.TraceSegments(trace, PAGE, record=False):
                rec = np.zeros(segment.n_pages, ORACLE_RECORD)
                rec["time"] = segment.ts_ns[segment.page_req] // 1_000_000_000
                rec["obj_id"] = segment.page_id + 1
                rec["size"] = 1
                rec["next_access"] = -1
                rec.tofile(f)
        os.replace(tmp, oracle)
    for segment in sim.TraceSegments(trace, PAGE, record=False):
        n_pages += segment.n_pages
        n_ids = segment.n_ids
    return trace, n_pages, n_ids, oracle


def _cell(runs: list[tuple[float, int, str]]) -> dict:
    walls = [r[0] for r in runs]
    return {"best_s": min(walls), "worst_s": max(walls), "peak_rss_bytes": min(r[1] for r in runs),
            "output": runs[0][2]}


def _tiercast(trace, data_dir: Path, argv: list[str], first: bool):
    """``tiercast ARGV --json`` as a process; ``first``: without the trace's page streams."""
    if first:
        shutil.rmtree(trace.path / "pages", ignore_errors=True)
    return run_timed([*TIERCAST, *argv, "--data-dir", str(data_dir), "--json"])


def whole_process(args) -> dict:
    """tiercast simulate / mrc vs libCacheSim, each as fresh processes (see the module doc)."""
    work = Path(args.work or tempfile.mkdtemp(prefix="tiercast-bench-whole-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"requests": args.requests, "repeat": args.repeat, "workloads": {}}
    dists = {"zipf": "zipf:1.0", "uniform": "uniform"}
    print(f"{'trace':<8} {'cache':>5} {'run':<14} {'tiercast s':>16} {'RSS MiB':>8} {'libCacheSim s':>16} "
          f"{'RSS MiB':>8} {'ratio':>6}  equal", flush=True)
    for name in args.traces.split(","):
        trace, n, footprint, oracle = prepare_large(name, dists[name], args.requests, args.region_gib << 30, work)
        tiercast = partial(_tiercast, trace, work)
        wr: dict = {"pages": n, "footprint_pages": footprint, "cells": []}
        for frac in args.fractions:
            cap = max(20, int(footprint * frac))
            sim_args = ["simulate", trace.trace_id, "--policy", "lru", "--cache-size", str(cap * PAGE)]
            lcs_argv = [sys.executable, "-c", LCS_PROCESS, str(oracle), "LRU", str(cap)]
            run_timed(lcs_argv)  # untimed warm-up
            tiercast(sim_args, first=False)
            runs: dict[str, list] = {"lcs": [], "first run": [], "repeat run": []}
            for _ in range(args.repeat):  # interleaved, so that load from other work hits all three alike
                runs["lcs"].append(run_timed(lcs_argv))
                runs["first run"].append(tiercast(sim_args, first=True))
                runs["repeat run"].append(tiercast(sim_args, first=False))
            lcs = _cell(runs["lcs"])
            hits_lcs = round(float(lcs.pop("output")) * n)
            for label in ("first run", "repeat run"):
                ours = _cell(runs[label])
                hits = json.loads(ours.pop("output"))["hits"]
                ratio = lcs["best_s"] / ours["best_s"]
                wr["cells"].append({"fraction": frac, "run": label, "capacity_pages": cap, "tiercast": ours,
                                    "libcachesim": lcs, "speedup": ratio, "hits_equal": hits == hits_lcs})
                print(f"{name:<8} {frac:>5.0%} {label:<14} {ours['best_s']:>6.2f} ({ours['worst_s']:5.2f}) "
                      f"{ours['peak_rss_bytes'] / 2**20:>8,.0f} {lcs['best_s']:>6.2f} ({lcs['worst_s']:5.2f}) "
                      f"{lcs['peak_rss_bytes'] / 2**20:>8,.0f} {ratio:>5.2f}x  {hits == hits_lcs}", flush=True)
        caps = np.unique(np.round(np.geomspace(max(1, footprint // 100), footprint, 20)).astype(np.int64))
        sizes = ",".join(str(int(c) * PAGE) for c in caps)
        lcs_best = min(c["libcachesim"]["best_s"] for c in wr["cells"])
        curve_runs: dict[str, list] = {"first run": [], "repeat run": []}
        for _ in range(args.repeat):
            for label in curve_runs:
                curve_runs[label].append(tiercast(["mrc", trace.trace_id, "--sizes", sizes], label == "first run"))
        for label, runs_ in curve_runs.items():
            ours = _cell(runs_)
            ours.pop("output")
            wr[f"curve_{label.split()[0]}"] = {**ours, "sizes": len(caps), "libcachesim_one_run_s": lcs_best,
                                               "ratio": lcs_best / ours["best_s"]}
            print(f"{name:<8} {'curve':>5} {label:<14} {ours['best_s']:>6.2f} ({ours['worst_s']:5.2f}) "
                  f"{ours['peak_rss_bytes'] / 2**20:>8,.0f} {lcs_best:>6.2f} one run {'':>10} "
                  f"{lcs_best / ours['best_s']:>5.2f}x  ({len(caps)} sizes)", flush=True)
        report["workloads"][name] = wr
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000, help="requests per trace (default 10 M)")
    ap.add_argument("--region-gib", type=int, default=16, help="address range of each trace, GiB (default 16)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing, the best is kept (default 3)")
    ap.add_argument("--work", help="working directory (default: a new temporary one)")
    ap.add_argument("--json", help="also write the figures as JSON to this path")
    ap.add_argument("--whole-process", action="store_true",
                    help="time tiercast simulate / mrc and libCacheSim as whole processes (see above)")
    ap.add_argument("--traces", default="zipf,uniform", help="--whole-process: which traces (zipf,uniform)")
    ap.add_argument("--fractions", default=[0.01, 0.10], type=lambda t: [float(x) for x in t.split(",")],
                    help="--whole-process: cache sizes as fractions of the footprint (default 0.01,0.1)")
    args = ap.parse_args()
    report = whole_process(args) if args.whole_process else run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
