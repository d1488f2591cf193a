"""What the second core gives a replay on this machine: the array kernel's time alone, beside a
busy loop that computes without touching memory, beside a loop that streams memory, and beside a
second copy of itself (what ``compare --jobs 2`` runs). The last gives the ceiling of ``--jobs 2``
over ``--jobs 1`` for kernel-bound replays: ``2 x alone / beside itself``.

The kernels are bound by memory latency (random access to cache state far larger than the L3), and
both cores of a virtual machine share the host's memory system, so a neighbour that streams memory
might slow them. On the build machine, at their best, none of the three did (docs/performance.md,
*What the second core gives a kernel*); single runs moved with the host's other tenants.

    .venv/bin/python benchmarks/contention.py                       # 4 M requests, vnx5400-fastcache
    .venv/bin/python benchmarks/contention.py --scenario vnx5400 --requests 2000000 --repeat 3

Each case runs in fresh processes started together (``multiprocessing`` spawn, a barrier before
the timed run); the kernel replays the segments of seed 000's database pattern
(``benchmarks/array.py``'s trace), compiled and run once before timing. The cases alternate, round
after round (the host's speed drifts from minute to minute); best of ``--repeat`` rounds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402

#: the neighbours: what runs on the other core while the kernel is timed
NEIGHBOURS = ("none", "compute", "memory", "itself")
#: the memory neighbour sums an array this large, over and over (far larger than any L3)
STREAM_BYTES = 1 << 29


def _compute_loop(stop) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x * 1_103_515_245 + i) & 0xFFFFFFFF


def _memory_loop(stop) -> None:
    import numpy as np

    a = np.ones(STREAM_BYTES // 8)
    while not stop.is_set():
        a.sum()


def _kernel(segments_file: str, label: str, barrier, out) -> None:
    warnings.simplefilter("ignore")
    from benchmarks import array as bench

    segments, names = pickle.loads(Path(segments_file).read_bytes())
    bench.kernel_run(label, segments, names)  # compiles (or loads) and touches everything once
    barrier.wait()
    out.put(bench.kernel_run(label, segments, names)[:2])


def measure(segments_file: Path, label: str, neighbour: str) -> tuple[float, float]:
    """The kernel's (wall, CPU) seconds with ``neighbour`` on the other core."""
    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    kernels = 2 if neighbour == "itself" else 1
    barrier = ctx.Barrier(kernels)
    procs = [ctx.Process(target=_kernel, args=(str(segments_file), label, barrier, out))
             for _ in range(kernels)]
    if neighbour in ("compute", "memory"):
        procs.append(ctx.Process(target=_compute_loop if neighbour == "compute" else _memory_loop, args=(stop,)))
    for p in procs:
        p.start()
    results = [out.get() for _ in range(kernels)]
    stop.set()
    for p in procs:
        p.join()
    return max(results)  # beside itself: the slower of the two (what the pair's wall time waits for)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=4_000_000)
    ap.add_argument("--scenario", default="vnx5400-fastcache", help="a benchmarks/array.py label")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from benchmarks import array as bench

    if args.scenario not in bench.SCENARIOS:
        ap.error(f"--scenario: unknown {args.scenario} (known: {', '.join(bench.SCENARIOS)})")
    rows = []
    with tempfile.TemporaryDirectory(prefix="tiercast-bench-contention-") as tmp:
        work = Path(tmp)
        _, segments, builder, _, _ = bench.prepare(args.requests, work)
        segments_file = work / "segments.pickle"
        segments_file.write_bytes(pickle.dumps((segments, list(builder.volumes))))
        del segments
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):  # the cases alternated, round after round: all see the same drift
            for neighbour in NEIGHBOURS:
                best[neighbour] = min(best.get(neighbour, (float("inf"), 0.0)),
                                      measure(segments_file, args.scenario, neighbour))
        for neighbour, (wall, cpu) in best.items():
            rows.append({"neighbour": neighbour, "kernel_wall_s": wall, "kernel_cpu_s": cpu,
                         "req_per_s": args.requests / wall})
    alone = rows[0]["kernel_wall_s"]
    for r in rows:
        r["slowdown"] = r["kernel_wall_s"] / alone
    jobs2 = 2 * alone / rows[-1]["kernel_wall_s"]
    if args.json:
        print(json.dumps({"scenario": args.scenario, "requests": args.requests, "cores": os.cpu_count(),
                          "rows": rows, "jobs2_ceiling": jobs2}, indent=1))
        return
    print(f"{args.scenario}, {args.requests:,} requests (seed 000 database pattern), best of {args.repeat}, "
          f"{os.cpu_count()} cores")
    print(f"{'on the other core':20s} {'kernel wall s':>14s} {'CPU s':>8s} {'req/s':>12s} {'slowdown':>9s}")
    for r in rows:
        print(f"{r['neighbour']:20s} {r['kernel_wall_s']:>14.2f} {r['kernel_cpu_s']:>8.2f} {r['req_per_s']:>12,.0f} "
              f"{r['slowdown']:>8.2f}x")
    print(f"ceiling of --jobs 2 over --jobs 1 for this kernel: {jobs2:.2f}x")


if __name__ == "__main__":
    main()
