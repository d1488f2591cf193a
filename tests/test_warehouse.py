"""The typed warehouse: tables and views from real replays, incremental and idempotent loading,
tolerance of new result columns, a moved data root, the upgrade of a file in the layout before
schema versions, and concurrency with real processes (two loaders racing, a reader during a load,
a loader killed half-way)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipelines.analytics import skew_trace
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from pipelines.load import load, query
from pipelines.replay import replay_trace, sweep_trace
from pipelines.simulate import mrc
from pipelines.warehouse import (
    DUCKDB_HEADER_BYTES,
    MIGRATIONS,
    SCHEMA_VERSION,
    WarehouseBusy,
    connect,
    db_path,
    reader,
    schema_version,
    staleness,
)
from replay.scenario import PRESET_DIR
from replay.scenario import load as load_scenario
from replay.version import SKEW_MODEL, model_version
from traces import synth

ROOT = Path(__file__).resolve().parent.parent
TIERCAST = [sys.executable, "-c", "from pipelines.cli import main; main()"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    """A data root with two traces, two replays of trace a, a sweep, a curve and a skew."""
    root = tmp_path_factory.mktemp("wh") / "data"
    ids = {}
    for name, pat in (("a", "database"), ("b", "randread-4k")):
        p = root.parent / f"{name}.parquet"
        synth.write(synth.pattern(pat, requests=4000, region_bytes=1 << 30, volume=f"lun-{name}", seed=7), p)
        ids[name] = ingest_file(p, root, validate="off").trace_id
    a = find_trace(root, ids["a"])
    ids["runs"] = {sc: replay_trace(a, root, load_scenario(sc))["run_id"] for sc in ("vnx2-mcx", "vnx1-flare")}
    ids["sweep"] = sweep_trace(a, root, load_scenario("vnx2-mcx"), [16], max_requests=2000)
    mrc(find_trace(root, ids["b"]), root, page_size=4096)
    skew_trace(a, 64 << 20, data_dir=root)
    return root, ids


@pytest.fixture
def data(built, tmp_path) -> tuple[Path, dict]:
    root, ids = built
    shutil.copytree(root, tmp_path / "data")
    return tmp_path / "data", ids


def rows(root: Path, sql: str) -> list[tuple]:
    return query(root, sql).rows()


def parquet_rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def test_typed_tables_and_views_from_real_results(data):
    root, ids = data
    report = load(root)
    assert report.migrations == [f"created schema {SCHEMA_VERSION}"]
    assert report.loaded == {"trace": 2, "run": 2, "sweeps": 1, "mrc": 1, "skew": 1}
    counts = report.counts()
    assert (counts["traces"], counts["trace_volumes"], counts["runs"], counts["run_summary"]) == (2, 2, 2, 2)
    assert rows(root, "select count(*) from requests") == [(8000,)]
    # every interval row of both runs, as many as the Parquet files hold (counted by pyarrow)
    for table, sub in (("interval_metrics", "array_volume_intervals"), ("rg_intervals", "array_rg_intervals")):
        expect = sum(parquet_rows(root / "results" / sub / f"{rid}.parquet") for rid in ids["runs"].values())
        assert rows(root, f"select count(*) from {table}") == [(expect,)] and expect > 0
    # typed: the declared core, and the files' other columns with their Parquet types
    types = dict(rows(root, "select column_name, data_type from information_schema.columns "
                            "where table_name = 'interval_metrics'"))
    assert types["interval_start_ns"] == "BIGINT" and types["iops"] == "DOUBLE"
    assert types["flush_pages_per_s"] == "DOUBLE"  # not in the DDL: taken from the file
    # runs: identity, timing (recorded by the replay) and the scenario's exact TOML text
    run = query(root, "select * from runs join scenarios using (scenario_hash) where scenario = 'vnx2-mcx'").row(0, named=True)
    assert run["run_id"] == ids["runs"]["vnx2-mcx"] and run["status"] == "complete"
    assert run["wall_seconds"] > 0 and run["requests_per_s"] == pytest.approx(4000 / run["wall_seconds"])
    assert run["finished_at"] > run["started_at"]
    assert run["toml"] == (PRESET_DIR / "vnx2-mcx.toml").read_text()
    assert run["path"] == f"results/array_runs/{run['run_id']}"  # relative to the data root
    # whatif: both scenarios on trace a, the summaries' numbers, best = 1.0
    summaries = {sc: json.loads((root / "results/array_runs" / rid / "summary.json").read_text())
                 for sc, rid in ids["runs"].items()}
    w = query(root, "select scenario, iops, latency_mean_ms, iops_vs_best from whatif").rows_by_key("scenario")
    assert set(w) == {"vnx2-mcx", "vnx1-flare"}
    for sc, s in summaries.items():
        (iops, lat, vs_best), = w[sc]
        assert (iops, lat) == (pytest.approx(s["iops"]), pytest.approx(s["latency_mean_ms"]))
        assert vs_best == pytest.approx(s["iops"] / max(x["iops"] for x in summaries.values()))
    # skew and mrc rows as written
    [(sb, io_share)] = rows(root, "select slice_bytes, skew_io_share from skew")
    assert sb == 64 << 20 and 0.5 < io_share <= 1
    assert rows(root, "select count(*) from mrc") == [(parquet_rows(next((root / "results/mrc").rglob("*.parquet"))),)]


def _snapshot(root: Path) -> dict:
    con = connect(db_path(root), read_only=True)
    try:
        tables = [r[0] for r in con.execute("select table_name from information_schema.tables where "
                                            "table_schema = 'main' and table_type = 'BASE TABLE'").fetchall()]
        return {t: sorted(map(repr, con.execute(f'select * from "{t}"').fetchall())) for t in tables
                if t != "load_state"}
    finally:
        con.close()


def test_loading_again_changes_nothing_and_removed_results_go(data):
    root, ids = data
    load(root)
    before = _snapshot(root)
    again = load(root)
    assert again.loaded == {} and again.removed == {} and again.unchanged == 7
    assert _snapshot(root) == before
    shutil.rmtree(root / "results/array_runs" / ids["runs"]["vnx1-flare"])
    gone = load(root)
    assert gone.removed == {"run": 1}
    assert rows(root, "select scenario from runs") == [("vnx2-mcx",)]
    assert rows(root, "select count(distinct run_id) from interval_metrics") == [(1,)]


def clone_run(root: Path, rid: str, **changes) -> str:
    """A copy of run ``rid`` under a new run id, its summary changed by ``changes`` (a stand-in
    for a run by another model version or scenario); returns the new id."""
    new = uuid.uuid4().hex[:16]
    res = root / "results"
    shutil.copytree(res / "array_runs" / rid, res / "array_runs" / new)
    for sub in ("array_volume_intervals", "array_rg_intervals"):
        shutil.copy(res / sub / f"{rid}.parquet", res / sub / f"{new}.parquet")
    path = res / "array_runs" / new / "summary.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "run_id": new, **changes}))
    return new


def test_a_newer_model_version_is_a_new_run_and_new_columns_load(data):
    root, ids = data
    load(root)
    old = ids["runs"]["vnx2-mcx"]
    time.sleep(0.01)
    new = clone_run(root, old, model_version="f" * 16)
    run_json = root / "results/array_runs" / new / "run.json"
    rec = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**rec, "finished_at": "2099-01-01T00:00:00+00:00"}))
    # the lead's tiering adds per-interval columns: a result file with one more column loads as is
    f = root / "results/array_volume_intervals" / f"{new}.parquet"
    pl.read_parquet(f).with_columns(flash_iops=pl.lit(12.5), tier_moves=pl.lit(3, pl.Int64)).write_parquet(f)
    # ... and per-run tables of their own (results/array_<name>/<run>.parquet): typed from the file
    tiers = root / "results/array_tier_intervals" / f"{new}.parquet"
    tiers.parent.mkdir()
    pl.DataFrame({"interval_start_ns": [0, 60_000_000_000], "tier": ["flash", "nl-sas"],
                  "moved_bytes": [1 << 30, 0]}).write_parquet(tiers)
    assert load(root).loaded == {"run": 1}
    assert rows(root, "select run_id, tier, moved_bytes from tier_intervals order by tier") == [
        (new, "flash", 1 << 30), (new, "nl-sas", 0)]
    assert rows(root, "select data_type from information_schema.columns where table_name = 'tier_intervals' "
                      "and column_name = 'moved_bytes'") == [("BIGINT",)]
    assert rows(root, "select count(*) from runs where scenario = 'vnx2-mcx'") == [(2,)]
    assert rows(root, "select run_id, model_version from latest_runs where scenario = 'vnx2-mcx'") == [(new, "f" * 16)]
    assert rows(root, "select distinct run_id, flash_iops, tier_moves from interval_metrics where flash_iops is not null") \
        == [(new, 12.5, 3)]
    assert rows(root, "select count(*) from interval_metrics where run_id = $1 and flash_iops is null".replace(
        "$1", f"'{old}'")) == [(parquet_rows(root / "results/array_volume_intervals" / f"{old}.parquet"),)]
    shutil.rmtree(root / "results/array_runs" / new)  # the run removed: its rows go from every table
    assert load(root).removed == {"run": 1}
    assert rows(root, "select count(*) from tier_intervals") == [(0,)]
    assert rows(root, "select count(*) from interval_metrics where flash_iops is not null") == [(0,)]


def test_moving_the_data_root_keeps_requests_queryable(data, tmp_path):
    root, ids = data
    load(root)
    moved = tmp_path / "elsewhere" / "mounted data"
    moved.parent.mkdir()
    shutil.move(root, moved)
    assert rows(moved, "select trace_id, count(*) from requests group by 1 order by 1") == sorted(
        [(ids["a"], 4000), (ids["b"], 4000)])
    p = subprocess.run([*TIERCAST, "sql", "select count(*) as n from requests", "--data-dir", str(moved), "--format",
                        "csv"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["n", "8000"]
    # the stored view names paths relative to the data root: DuckDB itself, opened from there
    p = subprocess.run([sys.executable, "-c", "import duckdb; print(duckdb.connect('tiercast.duckdb', read_only=True)"
                        ".sql('select count(*) from main.requests').fetchall()[0][0])"], capture_output=True, text=True,
                       cwd=moved)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "8000"


def test_a_file_in_the_layout_before_versions_is_upgraded(data):
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    try:
        import legacy_load
    finally:
        sys.path.pop(0)
    root, ids = data
    legacy_load.load(root)
    con = duckdb.connect(str(db_path(root)), read_only=True)
    assert schema_version(con) == 0
    assert con.sql("select count(*) from array_runs").fetchall() == [(2,)]  # a view over absolute paths
    con.close()
    p = subprocess.run([*TIERCAST, "sql", "select count(*) from runs", "--data-dir", str(root)], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"error: {db_path(root)} holds the unversioned layout, this tiercast reads schema {SCHEMA_VERSION}: "
        "run `tiercast load` to upgrade it"]
    report = load(root)
    assert report.migrations[0].startswith(f"schema 0 -> {SCHEMA_VERSION}: from the unversioned layout")
    assert report.loaded == {"trace": 2, "run": 2, "sweeps": 1, "mrc": 1, "skew": 1}
    assert rows(root, "select version from schema_version") == [(SCHEMA_VERSION,)]
    assert rows(root, "select count(*) from whatif") == [(2,)]
    assert rows(root, "select count(*) from requests") == [(8000,)]


def test_a_schema_2_file_is_upgraded_and_its_skew_loaded_again_with_the_curve(data):
    """A file as schema 2's loader left it (skew rows without key, no curve or model-vs-measured
    tables, the skew unit marked loaded) is upgraded in place, and the next load reloads the skew
    result with its key and curve; nothing else is loaded again."""
    root, ids = data
    load(root)
    con = duckdb.connect(str(db_path(root)))
    for t in ("skew_curve", "measured_comparisons", "model_vs_measured", "model_vs_measured_summary"):
        con.execute(f"DROP TABLE {t}")
    for c in ("skew_key", "data_version", "model_version", "computed_at"):
        con.execute(f"ALTER TABLE skew DROP COLUMN {c}")
    con.execute("UPDATE schema_version SET version = 2")
    con.close()
    report = load(root)
    assert report.migrations == [f"schema 2 -> 3: {MIGRATIONS[2][0]}", f"schema 3 -> 4: {MIGRATIONS[3][0]}"]
    # schema 4 rebuilt the derived tables: every unit is loaded again
    assert report.loaded["skew"] == 1 and report.loaded["run"] == len(ids["runs"])
    assert rows(root, "select max(version) from schema_version") == [(4,)]
    [(key, version)] = rows(root, "select skew_key, model_version from skew")
    curve = pl.read_parquet(next((root / "results" / "skew_curve").rglob("*.parquet")))
    assert key == curve["skew_key"][0] and version == model_version(SKEW_MODEL)
    assert rows(root, "select count(*), max(io_share) from skew_curve") == [(curve.height, 1.0)]
    assert rows(root, "select count(*) from measured_comparisons") == [(0,)]


def test_a_schema_3_file_is_rebuilt_with_the_replay_mode_and_the_checks(data):
    """Schema 4 puts each run's replay mode in ``runs`` and its physics checks in
    ``run_summary.warnings`` (a typed list, not JSON text): a schema 3 file is rebuilt and refilled."""
    root, ids = data
    load(root)
    con = duckdb.connect(str(db_path(root)))
    con.execute("ALTER TABLE runs DROP COLUMN mode")
    con.execute("UPDATE schema_version SET version = 3")
    con.close()
    report = load(root)
    assert report.migrations == [f"schema 3 -> 4: {MIGRATIONS[3][0]}"] and report.loaded["run"] == len(ids["runs"])
    got = rows(root, "select r.scenario, r.mode, r.outstanding, typeof(s.warnings), len(s.warnings) from runs r "
                     "join run_summary s using (run_id) order by r.scenario")
    assert [g[:3] for g in got] == [("vnx1-flare", "open", None), ("vnx2-mcx", "open", None)]
    assert {g[3] for g in got} == {'STRUCT("check" VARCHAR, severity VARCHAR, message VARCHAR)[]'}
    assert rows(root, "select mode, outstanding from whatif order by scenario") == [("open", None), ("open", None)]


def test_sql_never_loads_and_says_when_the_data_is_newer(data, tmp_path):
    root, ids = data
    load(root)
    con = reader(db_path(root), root)
    assert staleness(con, root) is None
    con.close()
    time.sleep(0.01)
    clone_run(root, ids["runs"]["vnx2-mcx"], scenario="later")
    p = subprocess.run([*TIERCAST, "sql", "select count(*) as n from runs", "--data-dir", str(root), "--format", "csv"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.splitlines() == ["n", "2"]  # not loaded by sql
    assert "the warehouse is older than the data" in p.stderr and "tiercast load" in p.stderr
    # parquet and the schema listing
    out = tmp_path / "w.parquet"
    p = subprocess.run([*TIERCAST, "sql", "select scenario, iops from whatif order by scenario", "--data-dir",
                        str(root), "--format", "parquet", "--output", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert pl.read_parquet(out)["scenario"].to_list() == ["vnx1-flare", "vnx2-mcx"]
    p = subprocess.run([*TIERCAST, "sql", "--schema", "--data-dir", str(root), "--json"], capture_output=True, text=True)
    schema = {(r["table"], r["column"]): (r["type"], r["unit"]) for r in json.loads(p.stdout)}
    assert schema[("interval_metrics", "latency_p99_ms")] == ("DOUBLE", "ms")
    assert schema[("whatif", "iops")] == ("DOUBLE", "I/Os per s")
    assert schema[("skew", "flash_bytes_80pct")] == ("BIGINT", "bytes")
    assert schema[("runs", "finished_at")][1] == "timestamp"
    p = subprocess.run([*TIERCAST, "sql", "selec * from whatif", "--data-dir", str(root)], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == ['error: Parser Error: syntax error at or near "selec"']  # before any note


# --- concurrency, with real processes ----------------------------------------------------------

LOADER = """
import json, sys
from pipelines.load import load
r = load(sys.argv[1])
print(json.dumps(r.loaded))
"""


def _loader(root: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", LOADER, str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)


def _many_runs(root: Path, rid: str, n: int) -> None:
    for i in range(n):
        clone_run(root, rid, scenario=f"clone-{i:03d}")


def test_connect_waits_for_a_warehouse_another_process_is_creating(tmp_path):
    """DuckDB refuses a file shorter than its header ("not a valid DuckDB database file"): for the
    moment another loader has created it and not yet written the header, ``connect`` retries (here
    the file goes away after 0.2 s and the retry creates the warehouse); one that stays short
    times out naming the file; a longer invalid file is refused at once."""
    import threading

    short = tmp_path / "a.duckdb"
    short.write_bytes(b"")
    threading.Timer(0.2, short.unlink).start()
    connect(short, read_only=False, timeout_s=10).close()
    assert short.stat().st_size >= DUCKDB_HEADER_BYTES
    stuck = tmp_path / "b.duckdb"
    stuck.write_bytes(b"\0" * 100)
    with pytest.raises(WarehouseBusy, match="b.duckdb.*shorter than a DuckDB header"):
        connect(stuck, read_only=True, timeout_s=0.3)
    bad = tmp_path / "c.duckdb"
    bad.write_bytes(b"\0" * (2 * DUCKDB_HEADER_BYTES))
    t = time.monotonic()
    with pytest.raises(duckdb.IOException, match="not a valid DuckDB database file"):
        connect(bad, read_only=True, timeout_s=10)
    assert time.monotonic() - t < 5


def test_two_loaders_racing_load_each_run_once(data):
    root, ids = data
    _many_runs(root, ids["runs"]["vnx2-mcx"], 60)
    procs = [_loader(root), _loader(root)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    loaded = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert sum(x.get("run", 0) for x in loaded) == 62  # every run loaded exactly once between them
    assert sum(x.get("trace", 0) for x in loaded) == 2
    assert rows(root, "select count(*), count(distinct run_id) from runs") == [(62, 62)]
    per_run = parquet_rows(root / "results/array_volume_intervals" / f"{ids['runs']['vnx2-mcx']}.parquet")
    assert rows(root, "select count(*) from interval_metrics") == [(per_run * 61 + parquet_rows(
        root / "results/array_volume_intervals" / f"{ids['runs']['vnx1-flare']}.parquet"),)]


def test_a_reader_during_a_load_sees_whole_runs_only(data):
    root, ids = data
    rid = ids["runs"]["vnx2-mcx"]
    load(root)
    per_run = parquet_rows(root / "results/array_volume_intervals" / f"{rid}.parquet")
    other = parquet_rows(root / "results/array_volume_intervals" / f"{ids['runs']['vnx1-flare']}.parquet")
    _many_runs(root, rid, 150)
    loader = _loader(root)
    seen = []
    while loader.poll() is None:
        con = reader(db_path(root), root)  # retries while the loader holds the file
        try:
            n_runs, n_rows = con.execute("select (select count(*) from runs), (select count(*) from interval_metrics)"
                                         ).fetchone()
        finally:
            con.close()
        seen.append((n_runs, n_rows))
    _, err = loader.communicate()
    assert loader.returncode == 0, err
    assert seen, "the reader never got in while the loader ran"
    for n_runs, n_rows in seen:  # a run is in with all its interval rows, or not at all
        assert n_rows == other + per_run * (n_runs - 1)
    assert [n for n, _ in seen] == sorted(n for n, _ in seen)
    assert rows(root, "select count(*) from runs") == [(152,)]


def test_a_loader_killed_half_way_leaves_a_file_the_next_load_completes(data):
    root, ids = data
    load(root)
    rid = ids["runs"]["vnx2-mcx"]
    _many_runs(root, rid, 150)
    loader = _loader(root)
    while loader.poll() is None:
        con = reader(db_path(root), root)
        try:
            n = con.execute("select count(*) from runs").fetchone()[0]
        finally:
            con.close()
        if n > 10:
            os.kill(loader.pid, signal.SIGKILL)
            break
    loader.wait()
    [(k,)] = rows(root, "select count(*) from runs")  # what the killed loader committed
    report = load(root)
    assert report.loaded.get("run", 0) == 152 - k
    assert rows(root, "select count(*), count(distinct run_id) from runs") == [(152, 152)]
    per_run = parquet_rows(root / "results/array_volume_intervals" / f"{rid}.parquet")
    other = parquet_rows(root / "results/array_volume_intervals" / f"{ids['runs']['vnx1-flare']}.parquet")
    assert rows(root, "select count(*) from interval_metrics") == [(other + per_run * 151,)]
