"""Load step: the data directory's manifests and Parquet results into one DuckDB file.

One writer only (DuckDB allows one read-write process per file): the CLI, the demo and the
Airflow load task all call :func:`load`, which rebuilds small tables from manifests in one
transaction and (re)creates views over the Parquet datasets, so large tables (every request
of every trace) are queried in place, never copied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipelines.catalog import list_traces
from pipelines.sql import identifier, path_list

if TYPE_CHECKING:  # Polars only for query(): `tiercast load` and `tiercast sql` do without it
    import polars as pl

DB_NAME = "tiercast.duckdb"

#: the tables made from manifests: column -> DuckDB type
TRACE_COLUMNS = {
    "trace_id": "VARCHAR", "format": "VARCHAR", "source_path": "VARCHAR", "sha256": "VARCHAR",
    "start_time": "VARCHAR", "rows_read": "BIGINT", "rows_accepted": "BIGINT", "rows_rejected": "BIGINT",
    "sorted_rows": "BIGINT", "volumes": "BIGINT", "span_ns": "BIGINT", "lines_skipped": "VARCHAR",
    "validation_success": "BOOLEAN", "reader_version": "VARCHAR", "ingested_at": "VARCHAR", "path": "VARCHAR",
}
VOLUME_COLUMNS = {
    "trace_id": "VARCHAR", "volume": "VARCHAR", "requests": "BIGINT", "reads": "BIGINT", "writes": "BIGINT",
    "bytes": "BIGINT", "min_offset": "BIGINT", "max_end": "BIGINT", "first_ts_ns": "BIGINT",
    "last_ts_ns": "BIGINT", "span_ns": "BIGINT", "capacity_bytes": "BIGINT",
}


def db_path(data_dir: Path) -> Path:
    return Path(data_dir) / DB_NAME


def _trace_tables(data_dir: Path) -> tuple[list[dict], list[dict]]:
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
        volumes += [{**s, "trace_id": t.trace_id, "volume": v} for v, s in m["volumes"].items()]
    return traces, volumes


def _create_table(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, str], rows: list[dict]) -> None:
    """``CREATE OR REPLACE TABLE name`` with ``columns`` (name -> DuckDB type) holding ``rows``
    (missing keys are NULL): one list parameter per column, unnested side by side."""
    select = ", ".join(f"unnest(${i}::{kind}[]) AS {identifier(c)}" for i, (c, kind) in enumerate(columns.items(), 1))
    con.execute(f"CREATE OR REPLACE TABLE {identifier(name)} AS SELECT {select}",
                [[r.get(c) for r in rows] for c in columns])


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


def load(data_dir: Path, database: Path | None = None, count: bool = True) -> dict[str, int]:
    """Refresh the warehouse; returns the row count of every table and view it made (``count``;
    else {}: ``tiercast sql`` only needs the refresh)."""
    data_dir = Path(data_dir)
    database = Path(database or db_path(data_dir))
    traces, volumes = _trace_tables(data_dir)
    con = duckdb.connect(str(database))
    counts: dict[str, int] = {}
    try:
        con.execute("BEGIN TRANSACTION")
        _create_table(con, "traces", TRACE_COLUMNS, traces)
        _create_table(con, "trace_volumes", VOLUME_COLUMNS, volumes)
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
        names = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall() if count else []
        for (name,) in names:
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
