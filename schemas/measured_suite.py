"""The declared contract of every measured-log table: one Great Expectations suite per table.

Rows are routed to rejects in Polars while reading (negative values, unparsable fields,
malformed lines); these suites check the result. Up to ``FULL_ROWS`` rows per table GX sees
every row; above, an evenly spaced sample of ``SAMPLE_ROWS`` rows (the same exact-count
approach as schemas/trace_suite.py would cost a second pass for little gain: measured logs are
small next to traces).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from schemas.gx import run_suite, summarize
from schemas.measured import TABLES

FULL_ROWS = int(os.environ.get("TIERCAST_GX_FULL_ROWS", 2_000_000))
SAMPLE_ROWS = int(os.environ.get("TIERCAST_GX_SAMPLE_ROWS", 500_000))

#: columns that must never be null, per table
NOT_NULL: dict[str, tuple[str, ...]] = {
    "iostat_device": ("run", "report", "since_boot", "device", "is_group", "src_line"),
    "iostat_cpu": ("run", "report", "since_boot", "src_line"),
    "vxstat": ("report", "cumulative", "typ", "name", "reads", "writes", "src_line"),
    "vxdmp": ("report", "cumulative", "name", "src_line"),
    "fio_job": ("doc", "job_index", "jobname", "error", "dir", "fio_version"),
    "fio_percentile": ("doc", "job_index", "dir", "kind", "pct", "latency_ns"),
    "fio_lat_bucket": ("doc", "job_index", "bucket", "bucket_ns", "pct"),
    "fio_clat_bins": ("doc", "job_index", "dir", "kind", "latency_ns", "count"),
    "fio_disk_util": ("doc", "name"),
    "fio_log": ("log_kind", "time_ms", "dir", "src_line"),
    "fio_hist": ("log_kind", "time_ms", "dir", "samples", "src_line"),
    "iometer": ("result_block", "target_type", "src_line"),
}
PERCENT_COLUMNS = ("user_pct", "nice_pct", "system_pct", "iowait_pct", "steal_pct", "idle_pct",
                   "rrqm_pct", "wrqm_pct", "drqm_pct")
DIRS = ["read", "write", "trim"]


def _base(table: str) -> str:
    return table.removesuffix("_boot")


def expectations_for(table: str):
    """A suite builder (``gx -> [expectations]``) for one table."""
    cols = TABLES[table]

    def spec(gx) -> list:
        E = gx.expectations
        out = [E.ExpectColumnValuesToNotBeNull(column=c) for c in NOT_NULL.get(_base(table), ())]
        for c, (dtype, _) in cols.items():
            if dtype in (pl.Float64, pl.Int64, pl.Int32):
                out.append(E.ExpectColumnValuesToBeBetween(column=c, min_value=0))
            if c in PERCENT_COLUMNS or (c == "pct"):
                out.append(E.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=100))
            if c == "dir":
                out.append(E.ExpectColumnValuesToBeInSet(column=c, value_set=DIRS))
        if table.startswith("iostat_"):
            out.append(E.ExpectColumnValuesToBeInSet(column="since_boot", value_set=[table.endswith("_boot")]))
        if table == "iostat_device" or table == "iostat_device_boot":
            out.append(E.ExpectCompoundColumnsToBeUnique(column_list=["run", "report", "device", "is_group"]))
        if "src_line" in cols and table not in ("fio_job", "fio_percentile", "fio_lat_bucket", "fio_clat_bins",
                                                "fio_disk_util"):
            out.append(E.ExpectColumnValuesToBeUnique(column="src_line"))
        return out

    return spec


def validate_measured_dir(path: Path, manifest: dict, mode: str = "auto") -> dict:
    """Run each table's suite on the accepted rows written under ``path``."""
    results: dict[str, dict] = {}
    all_ok = True
    failed: list[str] = []
    used_mode = "full"
    for table, stats in manifest["tables"].items():
        files = sorted((Path(path) / table).glob("part-*.parquet"))
        if not files:
            continue
        n = stats["rows_accepted"]
        full = mode == "full" or (mode == "auto" and n <= FULL_ROWS)
        lf = pl.scan_parquet(files)
        if not full:
            used_mode = "sample"
            lf = lf.gather_every(max(1, n // SAMPLE_ROWS))
        df = lf.collect()
        df = df.select(c for c, t in df.schema.items() if not isinstance(t, pl.List))
        res = run_suite(f"measured_{table}", expectations_for(table), df)
        ok, rows, summary = summarize(res)
        results[table] = {"success": ok, "rows_validated": df.height, "summary": summary, "expectations": rows}
        if not ok:
            all_ok = False
            failed.append(f"{table}: {summary}")
    return {
        "mode": used_mode,
        "success": all_ok,
        "summary": "; ".join(failed) or "all expectations met",
        "tables": results,
    }
