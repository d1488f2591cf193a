"""Load step: the data directory's manifests and Parquet results into one DuckDB file.

One writer only (DuckDB allows one read-write process per file): the CLI, the demo and the
Airflow load task all call :func:`load`, which rebuilds small tables from manifests in one
transaction and (re)creates views over the Parquet datasets, so large tables (every request
of every trace) are queried in place, never copied.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl

from pipelines.catalog import list_traces
from pipelines.sql import identifier, path_list

DB_NAME = "tiercast.duckdb"


def db_path(data_dir: Path) -> Path:
    return Path(data_dir) / DB_NAME


def _trace_tables(data_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    traces, volumes = [], []
    for t in list_traces(data_dir):
        m = t.manifest
        traces.append({
            "trace_id": t.trace_id,
            "format": m["format"],
            "source_path": m["source_path"],
            "sha256": m["sha256"],
            "start_time": m.get("start_time"),
            "rows_read": m["rows_read"],
            "rows_accepted": m["rows_accepted"],
            "rows_rejected": m["rows_rejected"],
            "sorted_rows": m.get("sorted_rows", 0),
            "volumes": len(m["volumes"]),
            "span_ns": max((v["last_ts_ns"] for v in m["volumes"].values()), default=0),
            "lines_skipped": json.dumps(m.get("lines_skipped", {})),
            "validation_success": (m.get("validation") or {}).get("success"),
            "reader_version": m.get("reader_version"),
            "ingested_at": m["ingested_at"],
            "path": str(t.path.resolve()),
        })
        for v, s in m["volumes"].items():
            volumes.append({"trace_id": t.trace_id, "volume": v, **{k: s.get(k) for k in (
                "requests", "reads", "writes", "bytes", "min_offset", "max_end", "first_ts_ns",
                "last_ts_ns", "span_ns", "capacity_bytes")}})
    tschema = {
        "trace_id": pl.String, "format": pl.String, "source_path": pl.String, "sha256": pl.String,
        "start_time": pl.String, "rows_read": pl.Int64, "rows_accepted": pl.Int64, "rows_rejected": pl.Int64,
        "sorted_rows": pl.Int64, "volumes": pl.Int64, "span_ns": pl.Int64, "lines_skipped": pl.String,
        "validation_success": pl.Boolean, "reader_version": pl.String, "ingested_at": pl.String, "path": pl.String,
    }
    vschema = {
        "trace_id": pl.String, "volume": pl.String, "requests": pl.Int64, "reads": pl.Int64, "writes": pl.Int64,
        "bytes": pl.Int64, "min_offset": pl.Int64, "max_end": pl.Int64, "first_ts_ns": pl.Int64,
        "last_ts_ns": pl.Int64, "span_ns": pl.Int64, "capacity_bytes": pl.Int64,
    }
    return pl.DataFrame(traces, schema=tschema), pl.DataFrame(volumes, schema=vschema)


def result_datasets(data_dir: Path) -> dict[str, list[Path]]:
    """Parquet result datasets under ``results/<table>/**`` (written by replay steps), by table."""
    root = Path(data_dir) / "results"
    out: dict[str, list[Path]] = {}
    if root.is_dir():
        for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            files = sorted(f for f in d.rglob("*.parquet") if not any(x.startswith(".") for x in f.parts))
            if files:
                out[d.name] = files
    return out


def load(data_dir: Path, database: Path | None = None) -> dict[str, int]:
    """Refresh the warehouse; returns the row count of every table and view it made."""
    data_dir = Path(data_dir)
    database = Path(database or db_path(data_dir))
    traces, volumes = _trace_tables(data_dir)
    con = duckdb.connect(str(database))
    counts: dict[str, int] = {}
    try:
        con.execute("BEGIN TRANSACTION")
        for name, df in (("traces", traces), ("trace_volumes", volumes)):
            con.register("_df", df)
            con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _df")
            con.unregister("_df")
        parts = [f for t in list_traces(data_dir) for f in t.volume_files]
        rejects = [f for t in list_traces(data_dir) for f in t.reject_files]
        if parts:
            con.execute(
                "CREATE OR REPLACE VIEW requests AS SELECT regexp_extract(filename, '/traces/([^/]+)/volume=', 1) "
                f"AS trace_id, * EXCLUDE (filename) FROM read_parquet({path_list(p.resolve() for p in parts)}, filename=true, "
                "hive_partitioning=false)"
            )
        else:
            con.execute("DROP VIEW IF EXISTS requests")
        if rejects:
            con.execute(
                "CREATE OR REPLACE VIEW rejects AS SELECT regexp_extract(filename, '/traces/([^/]+)/rejects', 1) "
                f"AS trace_id, * EXCLUDE (filename) FROM read_parquet({path_list(p.resolve() for p in rejects)}, filename=true, hive_partitioning=false)"
            )
        else:
            con.execute("DROP VIEW IF EXISTS rejects")
        for table, files in result_datasets(data_dir).items():
            con.execute(
                f"CREATE OR REPLACE VIEW {identifier(table)} AS SELECT * FROM read_parquet({path_list(p.resolve() for p in files)}, "
                "union_by_name=true, hive_partitioning=false)"
            )
        con.execute("COMMIT")
        for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall():
            counts[name] = con.execute(f"SELECT count(*) FROM {identifier(name)}").fetchone()[0]
    finally:
        con.close()
    return counts


def query(data_dir: Path, sql: str, database: Path | None = None) -> pl.DataFrame:
    """Run SQL against the warehouse (read-only; refresh it with :func:`load` first)."""
    database = Path(database or db_path(data_dir))
    if not database.exists():
        raise LookupError(f"no warehouse at {database}: run `tiercast load` first")
    con = duckdb.connect(str(database), read_only=True)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()
