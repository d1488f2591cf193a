"""iostat text parse throughput: tiercast's vectorized reader vs jc's iostat parser, same file.

Writes an iostat log in the sysstat 12.x extended layout (``iostat -x 1``, the header and
column widths of sysstat's own ``expected.iostat-x`` outputs; device name first and no ``-t``,
so that jc parses it correctly and both produce the same rows), ``--mb`` megabytes of reports
with 14 devices each and values varied per line, then in one run:

1. ``IostatReader`` over the file (parse only: classification, report/time state, typed and
   unit-normalized columns, rejects), rows/s;
2. ``jc.parse("iostat", text)`` on the same file (jc 1.26, line-by-line Python), rows/s;
3. for context, ``ingest_log_file`` (parse + Parquet + manifest, GX off) in MB/s.

It checks that both parsers return the same number of device rows and the same values on a
sample, then prints the figures and the ratio.

    .venv/bin/python benchmarks/logs.py --mb 100
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/array.py (named as the issue asks) would shadow the standard library's ``array``
# module for any script in this folder: put the repository root first on sys.path instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = ("Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm "
          "w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util")
#: column widths of sysstat 12's extended report after the 12-character device name
WIDTHS = (8, 9, 8, 6, 7, 8, 8, 9, 8, 6, 7, 8, 8, 9, 8, 6, 7, 8, 8, 7, 7, 6)
DEVICES = ("sda", "sdb", "sdc", "sdd", "sde", "sdf", "nvme0n1", "nvme1n1", "dm-0", "dm-1", "dm-2", "md127",
           "loop0", "sr0")


def make_log(path: Path, target_bytes: int, seed: int = 0) -> tuple[int, int]:
    """Write reports until the file reaches ``target_bytes``; returns (reports, device rows)."""
    rng = np.random.default_rng(seed)
    # a pool of device value lines, each value scaled like a real column (rates, %, ms, KiB)
    scale = np.array([5000, 200000, 50, 100, 20, 256, 5000, 200000, 50, 100, 20, 256, 100, 5000, 5, 100, 20, 256,
                      50, 20, 64, 100], dtype=float)
    pool_n = 4096
    vals = rng.random((pool_n, len(WIDTHS))) * scale * (rng.random((pool_n, 1)) < 0.7)
    vals[:, [3, 9, 15, 21]] = np.minimum(vals[:, [3, 9, 15, 21]], 100.0)
    # sysstat prints each value as " %*.2f": a space, then the value right-aligned in its width
    pool = ["".join(f" {v:{w - 1}.2f}" for v, w in zip(row, WIDTHS, strict=True)) for row in vals]
    banner = "Linux 5.15.0-91-generic (bench-host) \t01/15/2024 \t_x86_64_\t(32 CPU)\n\n"
    written = reports = rows = 0
    with open(path, "w") as f:
        f.write(banner)
        written += len(banner)
        while written < target_bytes:
            cpu = rng.random(6) * np.array([40, 5, 20, 10, 1, 0])
            cpu[5] = max(0.0, 100 - cpu[:5].sum())
            pick = rng.integers(0, pool_n, len(DEVICES))
            block = ["avg-cpu:  %user   %nice %system %iowait  %steal   %idle",
                     "        " + "".join(f"{c:8.2f}" for c in cpu), "", HEADER]
            block += [f"{d:<12s}{pool[i]}" for d, i in zip(DEVICES, pick, strict=True)]
            text = "\n".join(block) + "\n\n\n"
            f.write(text)
            written += len(text)
            reports += 1
            rows += len(DEVICES)
    return reports, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=100.0, help="size of the generated log (default 100)")
    ap.add_argument("--keep", type=Path, help="write the log here and keep it")
    args = ap.parse_args()

    import jc

    from pipelines.ingest_logs import ingest_log_file
    from traces.iostat import IostatReader
    from traces.measured import read_all

    tmp = Path(tempfile.mkdtemp(prefix="tiercast-logs-bench-"))
    try:
        path = args.keep or tmp / "iostat-x.log"
        t0 = time.perf_counter()
        reports, rows = make_log(path, int(args.mb * 1e6))
        size = path.stat().st_size
        print(f"generated {size / 1e6:.1f} MB: {reports:,} reports, {rows:,} device rows, "
              f"{reports:,} cpu rows ({time.perf_counter() - t0:.1f} s)")

        t0 = time.perf_counter()
        out = read_all(IostatReader(), path)
        t_ours = time.perf_counter() - t0
        dev = sum(out.tables[t].height for t in ("iostat_device", "iostat_device_boot"))
        assert dev == rows and not out.rejects, (dev, rows, out.rejects)

        t0 = time.perf_counter()
        ref = jc.parse("iostat", path.read_text(), quiet=True)
        t_jc = time.perf_counter() - t0
        ref_dev = [r for r in ref if r["type"] == "device"]
        assert len(ref_dev) == rows, (len(ref_dev), rows)
        mine = pl.concat([out.tables[t] for t in ("iostat_device_boot", "iostat_device")]).sort("src_line")
        for k in (0, rows // 2, rows - 1):
            a, b = mine.row(k, named=True), ref_dev[k]
            assert a["device"] == b["device"] and abs(a["w_await_ms"] - b["w_await"]) < 1e-9, (a, b)
        del ref, ref_dev

        dd = tmp / "data"
        t0 = time.perf_counter()
        r = ingest_log_file(path, dd, validate="off")
        t_ingest = time.perf_counter() - t0

        ours_rows_s = rows / t_ours
        jc_rows_s = rows / t_jc
        print(f"tiercast IostatReader : {t_ours:7.2f} s  {ours_rows_s:12,.0f} device rows/s  "
              f"{size / 1e6 / t_ours:7.1f} MB/s")
        print(f"jc.parse('iostat')    : {t_jc:7.2f} s  {jc_rows_s:12,.0f} device rows/s  "
              f"{size / 1e6 / t_jc:7.1f} MB/s")
        print(f"ratio tiercast / jc   : {ours_rows_s / jc_rows_s:.1f}x")
        print(f"tiercast ingest (Parquet + manifest, GX off): {t_ingest:.2f} s, {size / 1e6 / t_ingest:.1f} MB/s, "
              f"{r.rows_accepted:,} rows")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
