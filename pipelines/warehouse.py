"""The warehouse file (``<data root>/tiercast.duckdb``): its versioned schema, the one way to open
it (retrying while another process holds it), how readers see it, and when it is out of date.

Schema: ``schemas/warehouse.sql`` is version :data:`SCHEMA_VERSION`; ``schema_version`` records
what a file holds. :func:`migrate` upgrades an older file in place (only the loader does: readers
open read-only and are told to run ``tiercast load``). Version 0 is the layout tiercast wrote
before (tables rebuilt from manifests and views over absolute Parquet paths, no
``schema_version``): all of it was derived from the data root, so its upgrade drops it and the
load that follows fills the typed tables.

DuckDB allows one read-write process per file, and while it has the file open no other process
may open it, not even read-only. So the loader holds the file for short stretches and everyone
retries a lock conflict with backoff (:func:`connect`).

Request data stays in Parquet. Paths are stored relative to the data root; the stored
``requests`` and ``rejects`` views name them relative too (DuckDB resolves them from the working
directory: open the file from the data root), and tiercast's readers shadow them with temporary
views over the absolute paths under wherever the data root is now (:func:`reader`), so a moved
or re-mounted data root keeps working.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.duckdb_engine import engine as duckdb
from pipelines.sql import identifier, path_list

DB_NAME = "tiercast.duckdb"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "warehouse.sql"
SCHEMA_VERSION = 4
#: the lines of ``schemas/warehouse.sql`` after which schema 2's and schema 3's additions begin
SCHEMA_2_MARKER = "-- schema 2: seed experiments"
SCHEMA_3_MARKER = "-- schema 3: skew curves and model vs measured"
#: a lock conflict is retried this long before giving up
LOCK_TIMEOUT_S = 60.0
#: backoff between attempts: doubles from the first to the cap, with jitter
LOCK_BACKOFF_S = (0.01, 0.1)
#: the directories under the data root that the warehouse reads
DATA_DIRS = ("traces", "measured", "results")
#: views over request Parquet files: view -> (trace_files.kind, what the trace id is parsed from)
FILE_VIEWS = {"requests": ("requests", "volume="), "rejects": ("rejects", "rejects")}


class WarehouseBusy(OSError):
    """The file stayed locked by another process for the whole timeout (transient: retry)."""


class SchemaMismatch(ValueError):
    """The file's schema version is not the one this tiercast reads."""


def db_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_NAME


#: DuckDB's file header (a main header and two database headers of 4 KiB): a shorter file is one
#: another process is creating right now
DUCKDB_HEADER_BYTES = 3 * 4096


def _is_lock_error(e: Exception) -> bool:
    text = str(e).lower()
    return "lock" in text and ("could not set" in text or "conflicting" in text)


def _is_being_created(e: Exception, database: str | Path) -> bool:
    """A file another process has created but not yet given its header: DuckDB refuses it as "not
    a valid DuckDB database file" for that moment (two loaders racing to create the warehouse)."""
    if "not a valid duckdb database file" not in str(e).lower():
        return False
    try:
        return Path(database).stat().st_size < DUCKDB_HEADER_BYTES
    except FileNotFoundError:
        return True


def connect(database: str | Path, read_only: bool, timeout_s: float = LOCK_TIMEOUT_S) -> duckdb.DuckDBPyConnection:
    """Open ``database``; while another process holds it or is creating it, retry with jittered
    exponential backoff up to ``timeout_s`` (then :class:`WarehouseBusy`). A caller that wants
    ``con.sql`` relations imports ``duckdb`` (this module uses only the engine:
    pipelines/duckdb_engine.py)."""
    deadline = time.monotonic() + timeout_s
    delay, cap = LOCK_BACKOFF_S
    while True:
        try:
            return duckdb.connect(str(database), read_only=read_only)
        except duckdb.IOException as e:
            if not (_is_lock_error(e) or _is_being_created(e, database)):
                raise
            if time.monotonic() >= deadline:
                raise WarehouseBusy(f"{database}: still locked by another process after {timeout_s:.0f} s "
                                    "(a `tiercast load` or a DuckDB session holding it open), or shorter than a "
                                    "DuckDB header all that time (a creation that never finished: remove the file)"
                                    ) from None
        time.sleep(delay * (0.5 + random.random()))
        delay = min(cap, delay * 2)


# --- schema ----------------------------------------------------------------------------------


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The file's schema version: None for an empty file, 0 for the layout without versions."""
    names = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
    if "schema_version" in names:
        return con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
    return 0 if names else None


def _drop_everything(con: duckdb.DuckDBPyConnection) -> None:
    for name, kind in con.execute("SELECT table_name, table_type FROM information_schema.tables "
                                  "WHERE table_schema = 'main'").fetchall():
        con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {identifier(name)} CASCADE")


def _create(con: duckdb.DuckDBPyConnection, description: str) -> None:
    """The current schema, from scratch."""
    con.execute(SCHEMA_FILE.read_text())
    con.execute("INSERT INTO schema_version VALUES ($1, now(), $2)", [SCHEMA_VERSION, description])


def _schema_part(start: str, end: str | None = None) -> str:
    """The statements of ``schemas/warehouse.sql`` from the line ``start`` to the line ``end``."""
    text = SCHEMA_FILE.read_text()
    return text[text.index(start):text.index(end) if end else None]


def _v1_to_v2(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 1's seed figures (published values in the schema, matched to any sweep) replaced by
    the seed experiments' results: the part of warehouse.sql from :data:`SCHEMA_2_MARKER`."""
    con.execute("DROP VIEW IF EXISTS seed_figures")
    con.execute("DROP TABLE IF EXISTS seed_figure_refs")
    con.execute(_schema_part(SCHEMA_2_MARKER, SCHEMA_3_MARKER))
    con.execute("INSERT INTO schema_version VALUES (2, now(), 'seed experiments: seed_figure_results, seed_findings')")


def _v2_to_v3(con: duckdb.DuckDBPyConnection) -> None:
    """Skew results keyed and with their curve, model vs measured: the part of warehouse.sql from
    :data:`SCHEMA_3_MARKER`. Skew rows loaded before have no key and no curve: their files are
    loaded again (the skew units are forgotten), so the typed columns are filled where they exist."""
    con.execute(_schema_part(SCHEMA_3_MARKER))
    con.execute("DELETE FROM loaded_units WHERE kind = 'skew'")
    con.execute("DELETE FROM skew")
    con.execute("INSERT INTO schema_version VALUES (3, now(), 'skew_curve, measured_comparisons, "
                "model_vs_measured, model_vs_measured_summary; skew keyed')")


#: from-version -> (what the upgrade does, the step); each step leaves the file at a higher version
MIGRATIONS = {
    0: ("from the unversioned layout (views over absolute paths): its derived tables and views dropped, "
        f"schema {SCHEMA_VERSION} created; the load that follows refills it", lambda con: (_drop_everything(con), _create(
            con, "upgraded from the unversioned layout"))),
    1: ("seed_figure_refs and its seed_figures view replaced by the seed experiments' seed_figure_results, "
        "seed_findings and a seed_figures view over them", _v1_to_v2),
    2: ("skew results keyed on (trace, data version, slice size, code version) with their curve (skew_curve); "
        "measured_comparisons, model_vs_measured and model_vs_measured_summary", _v2_to_v3),
    3: ("runs carry their replay mode (open or closed, outstanding) and run_summary the physics checks' "
        "warnings: derived tables dropped, schema 4 created; the load that follows refills it",
        lambda con: (_drop_everything(con), _create(con, "replay mode in runs, warnings in run_summary"))),
}


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Bring the file to :data:`SCHEMA_VERSION` in one transaction; returns what was done."""
    done = []
    con.execute("BEGIN TRANSACTION")
    try:
        version = schema_version(con)
        if version is None:
            _create(con, "created")
            done.append(f"created schema {SCHEMA_VERSION}")
            version = SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            raise SchemaMismatch(f"warehouse schema {version} is newer than this tiercast's {SCHEMA_VERSION}: "
                                 "upgrade tiercast, or load into a new file")
        while version < SCHEMA_VERSION:
            what, step = MIGRATIONS[version]
            step(con)
            new = schema_version(con)
            done.append(f"schema {version} -> {new}: {what}")
            version = new
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return done


# --- freshness -------------------------------------------------------------------------------


def data_mtime_ns(data_dir: str | Path) -> int:
    """The newest change in the data root that a load would see: every dataset and result file
    appears by a rename into a directory (or replaces one there), which changes that directory's
    mtime, so the directories (not the files) are enough."""
    root = Path(data_dir)
    results = root / "results"
    newest = 0
    stack = [root / sub for sub in DATA_DIRS]
    while stack:
        d = stack.pop()
        try:
            newest = max(newest, d.stat().st_mtime_ns)
            if d == results or results in d.parents:
                with os.scandir(d) as it:
                    stack += [Path(e.path) for e in it if not e.name.startswith(".") and e.is_dir()]
        except OSError:
            continue
    return newest


def staleness(con: duckdb.DuckDBPyConnection, data_dir: str | Path) -> str | None:
    """A sentence when the data root changed after the last load, else None."""
    state = dict(con.execute("SELECT key, value FROM load_state").fetchall())
    seen = int(state.get("data_mtime_ns", 0))
    now = data_mtime_ns(data_dir)
    if now <= seen:
        return None
    loaded = state.get("loaded_at", "never")
    return (f"the warehouse is older than the data (last load {loaded}; data changed since): "
            "run `tiercast load` to see the newest datasets and results")


# --- readers ---------------------------------------------------------------------------------


def file_view_sql(view: str, paths: list[str]) -> str:
    """``CREATE ... VIEW`` body over ``paths`` (trace files of one kind), with the trace id column."""
    kind, marker = FILE_VIEWS[view]
    return (f"SELECT regexp_extract(filename, '(?:^|/)traces/([^/]+)/{marker}', 1) AS trace_id, "
            f"* EXCLUDE (filename) FROM read_parquet({path_list(paths)}, filename=true, hive_partitioning=false)")


def file_paths(con: duckdb.DuckDBPyConnection, kind: str) -> list[str]:
    """The trace Parquet files of ``kind`` (requests, rejects), relative to the data root."""
    return [r[0] for r in con.execute("SELECT path FROM trace_files WHERE kind = $1 ORDER BY path", [kind]).fetchall()]


def reader(database: str | Path, data_dir: str | Path, sql: str = "", timeout_s: float = LOCK_TIMEOUT_S,
           allowed: list[Path] | None = None) -> duckdb.DuckDBPyConnection:
    """``database`` opened read-only at the current schema version (else :class:`SchemaMismatch`),
    with the file views that ``sql`` names over absolute paths under ``data_dir``. With
    ``allowed``, sandboxed: file access only under those directories, configuration locked."""
    con = connect(database, read_only=True, timeout_s=timeout_s)
    try:
        version = schema_version(con)
        if version != SCHEMA_VERSION:
            made = "the unversioned layout" if version == 0 else f"schema {version}" if version else "nothing"
            hint = "run `tiercast load` to upgrade it" if (version or 0) < SCHEMA_VERSION else "upgrade tiercast"
            raise SchemaMismatch(f"{database} holds {made}, this tiercast reads schema {SCHEMA_VERSION}: {hint}")
        root = Path(data_dir).resolve()
        for view, (kind, _) in FILE_VIEWS.items():
            if re.search(rf"\b{view}\b", sql, re.IGNORECASE):
                rel = file_paths(con, kind)
                if rel:
                    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS "
                                + file_view_sql(view, [str(root / p) for p in rel])).fetchall()
        if allowed is not None:
            sandbox(con, allowed)
    except BaseException:
        con.close()
        raise
    return con


def sandbox(con: duckdb.DuckDBPyConnection, allowed: list[Path]) -> duckdb.DuckDBPyConnection:
    """File access only under the ``allowed`` directories, external access off, configuration
    locked (SQL cannot turn it back on)."""
    dirs = sorted({str(Path(a).resolve()).rstrip("/") + "/" for a in allowed})
    con.execute("SET allowed_directories = $1", [dirs])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


@contextmanager
def working_directory(directory: Path) -> Iterator[None]:
    """Run the block in ``directory`` (when it exists), so a relative path in a query means a
    file under it. DuckDB 2.0 checks ``allowed_directories`` on a relative path made absolute
    against the process's working directory; ``file_search_path`` changes only where it then
    opens the file, so with it ``read_parquet('traces/...')`` from another folder was still
    refused as outside the data directory. In the data directory the check and the opening
    agree, and ``../x`` is still outside. The previous working directory is restored by
    descriptor (it may have been renamed meanwhile)."""
    if not Path(directory).is_dir():
        yield
        return
    before = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(directory)
        yield
    finally:
        os.fchdir(before)
        os.close(before)


# --- units -----------------------------------------------------------------------------------

#: columns whose unit their name does not say
UNITS = {
    "iops": "I/Os per s", "mb_per_s": "MB/s (10^6 bytes)", "bytes": "bytes", "size": "bytes", "offset": "bytes",
    "min_offset": "bytes", "max_end": "bytes", "page_size": "bytes", "utilization": "fraction 0-1",
    "outstanding": "I/Os in flight", "requests": "requests", "reads": "requests", "writes": "requests",
    "measured_requests": "requests", "warmup_requests": "requests", "ios": "I/Os", "slices": "slices",
    "volumes": "volumes", "intervals": "intervals", "sample_rate": "fraction 0-1",
    "requests_per_s": "requests per s of wall-clock replay", "rows_read": "rows", "rows_accepted": "rows",
    "rows_rejected": "rows", "sorted_rows": "rows", "src_line": "line number", "hottest_slices": "slices",
    "scored_intervals": "intervals", "model_mean": "the metric's unit", "measured_mean": "the metric's unit",
    "model_iops": "I/Os per s", "measured_iops": "I/Os per s", "coverage": "fraction 0-1",
    **{f"flash_bytes_{p}pct": "bytes" for p in (80, 90, 95)},
}
SUFFIX_UNITS = (
    ("_mb_per_s", "MB/s (10^6 bytes)"), ("_per_s", "per s"), ("_ns", "ns"), ("_ms", "ms"), ("_seconds", "s"),
    ("_s", "s"), ("_bytes", "bytes"), ("_pct", "%"), ("_pct_mean", "%"), ("_pct_max", "%"),
    ("_ratio", "fraction 0-1"), ("_share", "fraction 0-1"), ("_pages", "pages"), ("_ios", "I/Os"),
    ("_requests", "requests"), ("_count", "count"), ("_at", "timestamp"), ("_slices", "slot count"),
    ("_last10pct", "fraction 0-1"), ("_pct_fill_s", "s"),
)


def unit_of(column: str) -> str:
    """The unit of a warehouse column, from the table above or its name's suffix ('' if none)."""
    if column in UNITS:
        return UNITS[column]
    name = column.lower()
    if "ratio" in name:
        return "fraction 0-1"
    if "pct" in name and not name.endswith("_s"):
        return "%"
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return ""
