"""Load step: what the data root holds, into the typed warehouse (``pipelines.warehouse``),
incrementally.

The data root is cut into *units*: a trace, a measured dataset, a replay run (summary and its
interval files), one result file (a sweep, a curve, a simulation), a skew result (its row and its
curve), a model vs measured comparison. Each has a
fingerprint (size and mtime of its files). A unit whose fingerprint the warehouse already holds
is skipped, a new or changed one is (re)loaded in one transaction of its own (its old rows
deleted, the new ones inserted, the fingerprint recorded), and one whose files are gone is
removed. So a load is idempotent, an interrupted load leaves whole units only, and a newer model
version, which gives a new run id, is a new run beside the old one.

Result files carry their own columns: a result table has a typed core (``schemas/warehouse.sql``)
and takes any other column a file brings with the file's Parquet type (``ALTER TABLE ADD
COLUMN``), so a new per-interval metric needs no migration.

One writer: the CLI, the demo and the Airflow load task all call :func:`load`. It holds the file
for at most :data:`HOLD_S` at a time, then lets waiting readers in; lock conflicts are retried
with backoff (``warehouse.connect``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipelines.catalog import list_traces
from pipelines.sql import identifier
from pipelines.warehouse import (
    FILE_VIEWS,
    LOCK_TIMEOUT_S,
    connect,
    data_mtime_ns,
    db_path,
    file_paths,
    file_view_sql,
    migrate,
    reader,
)

if TYPE_CHECKING:  # Polars only for query(): `tiercast load` and `tiercast sql` do without it
    import polars as pl

__all__ = ["db_path", "load", "query", "result_datasets", "LoadReport"]

#: the loader holds the file this long at most, then closes it for GAP_S so readers get in
HOLD_S = 0.5
GAP_S = 0.05
#: summary columns that go to ``runs``, not ``run_summary``
RUN_COLUMNS = ("trace_id", "scenario", "scenario_hash", "model_version", "tiercast_version", "mode", "outstanding",
               "started_at", "finished_at", "wall_seconds", "results_dir", "already_done", "not_yet_modelled")
#: per-run result directories (``results/array_<name>/<run_id>.parquet``) and their tables; any
#: other such directory (tiering, snapshots, ...) loads into a table named ``<name>``, typed from
#: its Parquet schema
RUN_TABLES = {"array_volume_intervals": "interval_metrics", "array_rg_intervals": "rg_intervals"}
NOT_PER_RUN = ("array_runs", "array_sweeps")
#: a skew result: its summary row (``results/skew/<trace>/<name>``, written last) and its curve
#: (``results/skew_curve/<trace>/<name>``), loaded together
SKEW_TABLES = ("skew", "skew_curve")
#: a model vs measured comparison (``results/model_vs_measured/<comparison_id>/``, published whole
#: by a rename): its files and tables
COMPARISON_FILES = {"comparison.parquet": "measured_comparisons", "intervals.parquet": "model_vs_measured",
                    "summary.parquet": "model_vs_measured_summary"}
#: result files loaded one by one: table -> (directory under results/, glob)
FILE_TABLES = {
    "sweeps": ("array_sweeps", "*.parquet"),
    "mrc": ("mrc", "*/*.parquet"),
    "simulations": ("simulate", "*/*/summary.parquet"),
    "seed_figure_results": ("seed_figures", "*.parquet"),
    "seed_findings": ("seed_findings", "*.parquet"),
}


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


# --- units ------------------------------------------------------------------------------------


def _stat(paths: list[Path]) -> str:
    return ";".join(f"{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths)


@dataclass
class Unit:
    key: str
    kind: str
    fingerprint: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]


@dataclass
class LoadReport:
    database: Path
    migrations: list[str] = field(default_factory=list)
    loaded: dict[str, int] = field(default_factory=dict)  # kind -> units (re)loaded
    removed: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """Rows per table and view (opens the file read-only)."""
        con = connect(self.database, read_only=True)
        try:
            names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE "
                                               "table_schema = 'main' ORDER BY 1").fetchall()]
            return {n: con.execute(f"SELECT count(*) FROM {identifier(n)}").fetchall()[0][0] for n in names
                    if n not in FILE_VIEWS}
        finally:
            con.close()


def _rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix()


def _ts(value) -> datetime | None:
    """An ISO time as naive UTC (the warehouse's TIMESTAMP columns are UTC)."""
    if not value:
        return None
    t = datetime.fromisoformat(str(value))
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def _trace_units(root: Path) -> Iterator[Unit]:
    for t in list_traces(root):
        manifest = t.path / "manifest.json"
        files = [(f, "requests") for f in t.volume_files] + [(f, "rejects") for f in t.reject_files]

        def apply(con, t=t, files=files):
            m = t.manifest
            vols = m["volumes"]
            con.execute("DELETE FROM traces WHERE trace_id = $1", [t.trace_id])
            con.execute("DELETE FROM trace_volumes WHERE trace_id = $1", [t.trace_id])
            con.execute("DELETE FROM trace_files WHERE trace_id = $1", [t.trace_id])
            con.execute(
                "INSERT INTO traces VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                [t.trace_id, m["format"], m.get("source_path"), m.get("sha256"), (str(m["start_time"]) if m.get("start_time") else None),
                 m.get("rows_read"), m.get("rows_accepted"), m.get("rows_rejected"), m.get("sorted_rows", 0),
                 len(vols), max((v["last_ts_ns"] for v in vols.values()), default=0),
                 json.dumps(m.get("lines_skipped", {})), (m.get("validation") or {}).get("success"),
                 m.get("reader_version"), _ts(m.get("ingested_at")), _rel(root, t.path)])
            cols = ("requests", "reads", "writes", "bytes", "min_offset", "max_end", "first_ts_ns", "last_ts_ns",
                    "span_ns", "capacity_bytes")
            rows = [[t.trace_id, v, *(s.get(c) for c in cols)] for v, s in vols.items()]
            if rows:
                con.executemany("INSERT INTO trace_volumes VALUES (" + ", ".join(["?"] * (len(cols) + 2)) + ")", rows)
            if files:
                con.executemany("INSERT INTO trace_files VALUES (?, ?, ?, ?)",
                                [[_rel(root, f), t.trace_id, kind, f.stat().st_size] for f, kind in files])

        yield Unit(f"trace:{t.trace_id}", "trace", _stat([manifest, *(f for f, _ in files)]), apply)


def _measured_units(root: Path) -> Iterator[Unit]:
    top = root / "measured"
    if not top.is_dir():
        return
    for d in sorted(top.iterdir()):
        manifest = d / "manifest.json"
        if d.name.startswith(".") or not manifest.is_file():
            continue

        def apply(con, d=d, manifest=manifest):
            m = json.loads(manifest.read_text())
            con.execute("DELETE FROM measured WHERE dataset_id = $1", [m["dataset_id"]])
            con.execute(
                "INSERT INTO measured VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, "
                "$17, $18)",
                [m["dataset_id"], m["format"], m.get("tool"), m.get("tool_version"), json.dumps(m.get("hosts", [])),
                 json.dumps(m.get("devices", [])), m.get("intervals"), m.get("source_path"), m.get("source_bytes"),
                 m.get("sha256"), m.get("rows_read"), m.get("rows_accepted"), m.get("rows_rejected"),
                 json.dumps(m.get("tables", {}), default=str), (m.get("validation") or {}).get("success"),
                 m.get("reader_version"), _ts(m.get("ingested_at")), _rel(root, d)])

        yield Unit(f"measured:{d.name}", "measured", _stat([manifest]), apply)


#: (connection, table) -> its columns: information_schema costs ~9 ms a query
_COLUMNS: dict[tuple[int, str], set[str]] = {}


def _table_columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    key = (id(con), table)
    if key not in _COLUMNS:
        _COLUMNS[key] = {r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = $1",
            [table]).fetchall()}
    return _COLUMNS[key]


def insert_parquet(con: duckdb.DuckDBPyConnection, table: str, path: Path, constants: dict | None = None,
                   skip: tuple[str, ...] = ()) -> int:
    """Append the rows of one Parquet file to ``table``: columns matched by name, the table's
    missing ones NULL, the file's new ones added to the table with their Parquet type (all-null
    columns, which have no type, are left out); ``constants`` are set on every row, ``skip``
    columns of the file ignored. Returns the rows inserted."""
    constants = constants or {}
    have = _table_columns(con, table)
    file_cols = con.execute("DESCRIBE SELECT * FROM read_parquet($1)", [str(path)]).fetchall()
    take = []
    for name, kind, *_ in file_cols:
        if name in skip or name in constants or kind.strip('"').startswith("NULL"):  # DuckDB 2.0: '"NULL"'
            continue
        if name not in have:  # IF NOT EXISTS: another loader may have added it since we looked
            con.execute(f"ALTER TABLE {identifier(table)} ADD COLUMN IF NOT EXISTS {identifier(name)} {kind}")
            have.add(name)
        take.append(name)
    cols = [*take, *constants]
    names = ", ".join(identifier(c) for c in cols)
    select = ", ".join([*(identifier(c) for c in take), *(f"${i}" for i in range(2, len(constants) + 2))])
    return con.execute(f"INSERT INTO {identifier(table)} ({names}) SELECT {select} FROM read_parquet($1)",
                       [str(path), *constants.values()]).fetchall()[0][0]


def _scenario_text(record: dict, name: str, scenario_hash: str) -> tuple[str | None, str | None]:
    """(TOML text, source) of a run's scenario: the text the replay recorded, else (runs from
    before it did) the preset of that name when it still hashes the same."""
    if record.get("scenario_toml"):
        return record["scenario_toml"], record.get("scenario_source")
    try:
        from replay.scenario import PRESET_DIR, loads

        text = (PRESET_DIR / f"{name}.toml").read_text()
        if loads(text, name).hash == scenario_hash:
            return text, f"preset {name}"
    except (OSError, ValueError):
        pass
    return None, None


def _mtime_ts(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).replace(tzinfo=None)


def _run_units(root: Path) -> Iterator[Unit]:
    runs = root / "results" / "array_runs"
    if not runs.is_dir():
        return
    per_run = sorted(d for d in (root / "results").glob("array_*") if d.is_dir() and d.name not in NOT_PER_RUN)
    for d in sorted(runs.iterdir()):
        summary_json, summary, record = d / "summary.json", d / "summary.parquet", d / "run.json"
        if d.name.startswith(".") or not (summary_json.is_file() and summary.is_file()):
            continue  # a summary is written last: without one the run is not finished
        rid = d.name
        parts = [(RUN_TABLES.get(sub.name, sub.name.removeprefix("array_")), sub / f"{rid}.parquet")
                 for sub in per_run if (sub / f"{rid}.parquet").is_file()]
        extra = [record] if record.is_file() else []

        def apply(con, d=d, rid=rid, summary_json=summary_json, summary=summary, parts=parts, extra=extra):
            s = json.loads(summary_json.read_text())
            run = json.loads(extra[0].read_text()) if extra else {}
            for table in dict.fromkeys(("runs", "run_summary", *RUN_TABLES.values(), *(t for t, _ in parts))):
                if _table_columns(con, table):
                    con.execute(f"DELETE FROM {identifier(table)} WHERE run_id = $1", [rid])
            wall = run.get("wall_seconds")
            con.execute("INSERT INTO runs (run_id, trace_id, scenario, scenario_hash, model_version, tiercast_version, "
                        "mode, outstanding, status, started_at, finished_at, wall_seconds, requests, requests_per_s, "
                        "path) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'complete', $9, $10, $11, $12, $13, $14)",
                        [rid, s["trace_id"], s["scenario"], s["scenario_hash"], s["model_version"],
                         s.get("tiercast_version"), s.get("mode"), s.get("outstanding"), _ts(run.get("started_at")),
                         _ts(run.get("finished_at")) or _mtime_ts(summary_json), wall, s.get("requests"),
                         s["requests"] / wall if wall else None, _rel(root, d)])
            insert_parquet(con, "run_summary", summary, {"run_id": rid}, skip=RUN_COLUMNS)
            for table, p in parts:
                if not _table_columns(con, table):  # a per-run table this tiercast has no DDL for
                    _COLUMNS.pop((id(con), table), None)
                    con.execute(f"CREATE TABLE {identifier(table)} AS SELECT * FROM read_parquet($1) LIMIT 0", [str(p)])
                    con.execute(f"ALTER TABLE {identifier(table)} ADD COLUMN IF NOT EXISTS run_id VARCHAR")
                insert_parquet(con, table, p, {"run_id": rid})
            if not con.execute("SELECT 1 FROM scenarios WHERE scenario_hash = $1", [s["scenario_hash"]]).fetchall():
                text, source = _scenario_text(run, s["scenario"], s["scenario_hash"])
                con.execute("INSERT INTO scenarios VALUES ($1, $2, $3, $4)",
                            [s["scenario_hash"], s["scenario"], text, source])

        yield Unit(f"run:{rid}", "run", _stat([summary_json, summary, *(p for _, p in parts), *extra]), apply)


def _file_units(root: Path) -> Iterator[Unit]:
    for table, (sub, pattern) in FILE_TABLES.items():
        top = root / "results" / sub
        if not top.is_dir():
            continue
        for f in sorted(top.glob(pattern)):
            if any(x.startswith(".") for x in f.relative_to(top).parts):
                continue
            rel = _rel(root, f)

            def apply(con, table=table, f=f, rel=rel):
                con.execute(f"DELETE FROM {table} WHERE source_file = $1", [rel])
                extra = {"finished_at": _mtime_ts(f)} if table == "sweeps" else {}
                insert_parquet(con, table, f, {"source_file": rel, **extra})

            yield Unit(f"{table}:{rel}", table, _stat([f]), apply)


def _skew_units(root: Path) -> Iterator[Unit]:
    top = root / "results" / SKEW_TABLES[0]
    if not top.is_dir():
        return
    for f in sorted(top.glob("*/*.parquet")):
        if any(x.startswith(".") for x in f.relative_to(top).parts):
            continue
        rel = _rel(root, f)
        curve = root / "results" / SKEW_TABLES[1] / f.relative_to(top)
        files = [f, curve] if curve.is_file() else [f]  # results from before curves were kept: none

        def apply(con, files=files, rel=rel):
            for table in SKEW_TABLES:
                con.execute(f"DELETE FROM {table} WHERE source_file = $1", [rel])
            for table, path in zip(SKEW_TABLES[:len(files)], files, strict=True):
                insert_parquet(con, table, path, {"source_file": rel})

        yield Unit(f"skew:{rel}", "skew", _stat(files), apply)


def _comparison_units(root: Path) -> Iterator[Unit]:
    top = root / "results" / "model_vs_measured"
    if not top.is_dir():
        return
    for d in sorted(top.iterdir()):
        files = [d / name for name in COMPARISON_FILES]
        if d.name.startswith(".") or not all(f.is_file() for f in files):
            continue

        def apply(con, d=d):
            for name, table in COMPARISON_FILES.items():
                con.execute(f"DELETE FROM {table} WHERE comparison_id = $1", [d.name])
                insert_parquet(con, table, d / name)

        yield Unit(f"model_vs_measured:{d.name}", "model_vs_measured", _stat([*files, d / "manifest.json"]), apply)


def _calibration_units(root: Path) -> Iterator[Unit]:
    """Device calibrations (``pipelines.device_store``): their tables are created from the first
    file when this warehouse has none yet."""
    from pipelines.device_store import TABLES, calibrations_root

    top = calibrations_root(root)
    if not top.is_dir():
        return
    for d in sorted(top.iterdir()):
        files = [d / name for name in TABLES]
        if d.name.startswith(".") or not all(f.is_file() for f in files):
            continue

        def apply(con, d=d):
            for name, table in TABLES.items():
                if not _table_columns(con, table):
                    _COLUMNS.pop((id(con), table), None)
                    con.execute(f"CREATE TABLE {identifier(table)} AS SELECT * FROM read_parquet($1) LIMIT 0",
                                [str(d / name)])
                con.execute(f"DELETE FROM {identifier(table)} WHERE calibration_id = $1", [d.name])
                insert_parquet(con, table, d / name)

        yield Unit(f"device_calibration:{d.name}", "device_calibration", _stat([*files, d / "manifest.json"]), apply)


def _remove(con: duckdb.DuckDBPyConnection, key: str) -> None:
    kind, _, ident = key.partition(":")
    deletes = {
        "trace": [("traces", "trace_id"), ("trace_volumes", "trace_id"), ("trace_files", "trace_id")],
        "measured": [("measured", "dataset_id")],
        "run": [(t, "run_id") for (t,) in con.execute(
            "SELECT DISTINCT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE c.table_schema = 'main' AND c.column_name = 'run_id' "
            "AND t.table_type = 'BASE TABLE'").fetchall()],
        "skew": [(t, "source_file") for t in SKEW_TABLES],
        "model_vs_measured": [(t, "comparison_id") for t in COMPARISON_FILES.values()],
        "device_calibration": [("device_calibrations", "calibration_id"),
                               ("device_calibration_holdout", "calibration_id")],
    }.get(kind, [(kind, "source_file")])
    for table, col in deletes:
        con.execute(f"DELETE FROM {identifier(table)} WHERE {identifier(col)} = $1", [ident])


# --- the writer ---------------------------------------------------------------------------------


class _Writer:
    """The read-write connection, held for at most HOLD_S, each unit in its own transaction."""

    def __init__(self, database: Path, root: Path, timeout_s: float):
        self.database, self.root, self.timeout_s = database, root, timeout_s
        self.con: duckdb.DuckDBPyConnection | None = None
        self.since = 0.0
        self.migrations: list[str] | None = None

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.con is not None and time.monotonic() - self.since > HOLD_S:
            self.close()
            time.sleep(GAP_S)
        if self.con is None:
            self.con = connect(self.database, read_only=False, timeout_s=self.timeout_s)
            self.con.execute("SET file_search_path = $1", [str(self.root.resolve())])
            if self.migrations is None:
                self.migrations = migrate(self.con)
            self.since = time.monotonic()
        return self.con

    def transaction(self, work: Callable[[duckdb.DuckDBPyConnection], object]):
        con = self._open()
        con.execute("BEGIN TRANSACTION")
        try:
            result = work(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return result

    def close(self) -> None:
        if self.con is not None:
            for key in [k for k in _COLUMNS if k[0] == id(self.con)]:
                del _COLUMNS[key]
            self.con.close()
            self.con = None


def _fingerprint(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    rows = con.execute("SELECT fingerprint FROM loaded_units WHERE unit = $1", [key]).fetchall()
    return rows[0][0] if rows else None


def _load_unit(con: duckdb.DuckDBPyConnection, unit: Unit) -> bool:
    if _fingerprint(con, unit.key) == unit.fingerprint:  # another loader did it meanwhile
        return False
    unit.apply(con)
    con.execute("INSERT OR REPLACE INTO loaded_units VALUES ($1, $2, $3, now()::TIMESTAMP)", [unit.key, unit.kind, unit.fingerprint])
    return True


def _remove_unit(con: duckdb.DuckDBPyConnection, key: str) -> None:
    _remove(con, key)
    con.execute("DELETE FROM loaded_units WHERE unit = $1", [key])


def _file_views(con: duckdb.DuckDBPyConnection) -> None:
    """The stored ``requests`` / ``rejects`` views, over paths relative to the data root."""
    for view, (kind, _) in FILE_VIEWS.items():
        paths = file_paths(con, kind)
        if paths:
            con.execute(f"CREATE OR REPLACE VIEW {view} AS " + file_view_sql(view, paths))
        else:
            con.execute(f"DROP VIEW IF EXISTS {view}")


def load(data_dir: str | Path, database: Path | None = None, timeout_s: float = LOCK_TIMEOUT_S,
         log: Callable[[str], None] | None = None) -> LoadReport:
    """Bring the warehouse up to date with the data root (see the module docstring)."""
    started = time.monotonic()
    root = Path(data_dir)
    report = LoadReport(Path(database or db_path(root)))
    seen_mtime = data_mtime_ns(root)  # before listing: what changes during the load shows as stale
    units = [*_trace_units(root), *_measured_units(root), *_run_units(root), *_file_units(root), *_skew_units(root),
             *_comparison_units(root), *_calibration_units(root)]
    w = _Writer(report.database, root, timeout_s)
    try:
        known = dict(w.transaction(lambda con: con.execute("SELECT unit, fingerprint FROM loaded_units").fetchall()))
        report.migrations = w.migrations
        keys = {u.key for u in units}
        traces_changed = False
        for u in units:
            if known.get(u.key) == u.fingerprint:
                report.unchanged += 1
                continue
            if w.transaction(lambda con, u=u: _load_unit(con, u)):
                report.loaded[u.kind] = report.loaded.get(u.kind, 0) + 1
                traces_changed |= u.kind == "trace"
                if log:
                    log(f"loaded {u.key}")
        for key in sorted(k for k in known if k not in keys):
            w.transaction(lambda con, key=key: _remove_unit(con, key))
            kind = key.partition(":")[0]
            report.removed[kind] = report.removed.get(kind, 0) + 1
            traces_changed |= kind == "trace"
        if traces_changed or not known:
            w.transaction(_file_views)

        def state(con):
            con.execute("INSERT OR REPLACE INTO load_state VALUES ('data_mtime_ns', $1), ('loaded_at', $2)",
                        [str(seen_mtime), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())])

        w.transaction(state)
    finally:
        w.close()
    report.seconds = time.monotonic() - started
    return report


def query(data_dir: str | Path, sql: str, database: Path | None = None) -> pl.DataFrame:
    """Run SQL against the warehouse (read-only; bring it up to date with :func:`load` first)."""
    database = Path(database or db_path(data_dir))
    if not database.exists():
        raise LookupError(f"no warehouse at {database}: run `tiercast load` first")
    con = reader(database, data_dir, sql)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()

