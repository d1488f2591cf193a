"""Airflow: the DAG folder imports cleanly and cheaply, and the three DAGs run for real with
``dag.test()`` on a landing folder with good and bad files (quarantine, archive, asset events,
replay, load, report; a second run changes nothing), and a file landed in two steps is one trace,
also when the copy stalled past ``stable_seconds`` and was sent again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_module

ROOT = Path(__file__).resolve().parent.parent
DAGS = ROOT / "dags"


@pytest.fixture(scope="module", autouse=True)
def _airflow():
    require_module("airflow", "apache-airflow is installed by `make venv` (extra 'airflow')")


def run_airflow(script: str, tmp_path: Path, data: Path | None = None) -> dict:
    """Run ``script`` in a fresh interpreter with a private AIRFLOW_HOME (set before airflow is
    imported, so nothing touches ~/airflow) and ``TIERCAST_DATA_DIR=data``; it prints one JSON
    line last."""
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(tmp_path / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    })
    if data is not None:
        env["TIERCAST_DATA_DIR"] = str(data)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    # Great Expectations logs ~216 of these per import unless quieted (issue 11)
    out["gx_noise_lines"] = (p.stdout + p.stderr).count("Skipping registering function")
    return out


def test_dagbag_imports_without_errors_and_stays_light(tmp_path):
    out = run_airflow(
        """
import json, os, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=os.environ['AIRFLOW__CORE__DAGS_FOLDER'])
heavy = sorted(m for m in ('polars', 'duckdb', 'numba', 'numpy', 'pyarrow', 'great_expectations', 'pipelines.ingest',
                           'pipelines.replay', 'pipelines.load') if m in sys.modules)
tasks = {d: {t.task_id: {'timeout': t.execution_timeout.total_seconds() if t.execution_timeout else None,
                         'retries': t.retries, 'pool': t.pool, 'callback': bool(t.on_failure_callback),
                         'trigger': str(getattr(t.trigger_rule, 'value', t.trigger_rule))} for t in dag.tasks} for d, dag in bag.dags.items()}
sched = {d: type(dag.timetable).__name__ for d, dag in bag.dags.items()}
parse = {s.file: s.duration.total_seconds() for s in bag.dagbag_stats}
print(json.dumps({'errors': {k: str(v) for k, v in bag.import_errors.items()}, 'tasks': tasks, 'heavy': heavy,
                  'sched': sched, 'parse': parse, 'params': bag.dags['tiercast_replay'].params.dump(),
                  'ingest_params': bag.dags['tiercast_ingest'].params.dump()}))
""",
        tmp_path,
    )
    assert out["errors"] == {}
    tasks = out["tasks"]
    assert {d: sorted(t) for d, t in tasks.items()} == {
        "tiercast_ingest": ["discover", "ingest", "publish", "summary", "validate"],
        "tiercast_replay": ["load", "plan", "replay", "skew", "summary", "volumes"],
        "tiercast_report": ["report"],
    }
    # parsing must not pull in the data stack (the scheduler parses these files often)
    assert out["heavy"] == []
    # every task has a time limit and records its failure; input checks never retry
    assert all(t["timeout"] and t["callback"] for d in tasks.values() for t in d.values())
    assert tasks["tiercast_ingest"]["discover"]["retries"] == 0 and tasks["tiercast_replay"]["plan"]["retries"] == 0
    assert tasks["tiercast_replay"]["volumes"]["retries"] == 0
    assert tasks["tiercast_replay"]["load"]["pool"] == "tiercast_warehouse"
    assert tasks["tiercast_replay"]["load"]["trigger"] == "all_done"  # a failed replay does not block the load
    assert tasks["tiercast_ingest"]["validate"]["trigger"] == "all_done"  # nor a bad file the good ones
    assert out["sched"] == {"tiercast_ingest": "AssetOrTimeSchedule", "tiercast_replay": "AssetOrTimeSchedule",
                            "tiercast_report": "AssetTriggeredTimetable"}
    assert out["params"]["scenarios"] == []  # the config file or the default list decides, never nothing
    assert out["ingest_params"]["split_by"] == ""  # each landed trace kept whole unless asked ($TIERCAST_SPLIT_BY)
    print("DAG file parse seconds:", out["parse"])


COMMON = """
import json, os, sys, time, gzip
from pathlib import Path
data = Path(os.environ['TIERCAST_DATA_DIR'])
landing = data / 'landing'
landing.mkdir(parents=True, exist_ok=True)
def landed_long_ago(*names):
    old = time.time() - 3600
    for n in names:
        os.utime(landing / n, (old, old))
from airflow.utils import db
db.resetdb()
from airflow.models.pool import Pool
Pool.create_or_update_pool('tiercast_warehouse', 1, 'one DuckDB writer', include_deferred=False)
from airflow.dag_processing.dagbag import DagBag
from airflow.models.asset import AssetEvent
from airflow.models.taskinstance import TaskInstance
from airflow.utils.session import create_session
bag = DagBag(dag_folder=os.environ['AIRFLOW__CORE__DAGS_FOLDER'])
def run(dag_id, **conf):
    return str(bag.dags[dag_id].test(run_conf=conf or None).state)
def events():
    with create_session() as s:
        return sorted([e.asset.name.split(':')[0], json.dumps(e.extra, sort_keys=True)] for e in s.query(AssetEvent))
def tis():
    with create_session() as s:
        return sorted([t.dag_id, t.task_id, t.map_index, str(t.state), t.try_number] for t in s.query(TaskInstance))
def warehouse():
    import duckdb
    con = duckdb.connect(str(data / 'tiercast.duckdb'), read_only=True)
    try:
        return {t: con.sql(f'select count(*) from {t}').fetchall()[0][0] for t in ('traces', 'runs', 'interval_metrics')} | {
            'runs_by_trace': con.sql('select t.source_path, count(*) from runs r join traces t using (trace_id) '
                                     'group by 1 order by 1').fetchall(),
            'loaded_at': con.sql('select max(loaded_at)::varchar from loaded_units').fetchall()[0][0]}
    finally:
        con.close()
def listing(sub):
    d = data / sub
    return sorted(str(p.relative_to(d)) for p in d.rglob('*') if p.is_file()) if d.is_dir() else []
"""


def test_dags_end_to_end_with_bad_files_then_a_second_run_changes_nothing(tmp_path):
    data = tmp_path / "data"
    out = run_airflow(COMMON + """
from traces import synth
synth.write(synth.pattern('database', requests=3000, region_bytes=1 << 30, volume='lun0'), landing / 'db.parquet')
T0 = 128166372003061629
lines = [f"{T0 + i * 1000},usr,0,{'Read' if i % 3 else 'Write'},{(i * 7919 % 100000) * 4096},4096,100"
         for i in range(20000)]
(landing / 'usr_0.csv').write_text('\\n'.join(lines[:2000]) + '\\n')
(landing / 'garbage.bin').write_bytes(bytes(range(256)) * 12)
gz = gzip.compress(('\\n'.join(lines) + '\\n').encode())
(landing / 'cut.csv.gz').write_bytes(gz[: len(gz) // 2])
landed_long_ago('db.parquet', 'usr_0.csv', 'garbage.bin', 'cut.csv.gz')
first = [run('tiercast_ingest'), run('tiercast_replay'), run('tiercast_report')]
after_first = {'events': events(), 'warehouse': warehouse(), 'archive': listing('archive'),
               'quarantine': listing('quarantine'), 'landing': listing('landing'), 'reports': listing('reports'),
               'errors': {p.name: json.loads(p.read_text())['error'] for p in (data / 'quarantine').glob('*.error.json')},
               'tis': tis(), 'report_mtime': (data / 'reports' / 'tiercast.html').stat().st_mtime_ns}
second = [run('tiercast_ingest'), run('tiercast_replay')]
summary = json.loads(sorted((data / 'runs' / 'tiercast_replay').glob('*.json'))[-1].read_text())
import replay.array
print(json.dumps({'first': first, 'second': second, 'after_first': after_first, 'events': events(),
                  'kernel_cache': replay.array.run_requests._cache.cache_path,
                  'warehouse': warehouse(), 'archive': listing('archive'), 'quarantine': listing('quarantine'),
                  'second_replay_summary': summary,
                  'report_mtime': (data / 'reports' / 'tiercast.html').stat().st_mtime_ns}))
""", tmp_path, data)
    a = out["after_first"]
    # the bad files fail their own ingest (so the ingest run is red, with a summary); the rest goes on
    assert out["first"] == ["failed", "success", "success"]
    failed = [t for t in a["tis"] if t[3].endswith("failed")]
    assert sorted((t[1], t[4]) for t in failed) == [("ingest", 1), ("ingest", 1), ("summary", 1)]  # no retries
    assert a["quarantine"] == ["cut.csv.gz", "cut.csv.gz.error.json", "garbage.bin", "garbage.bin.error.json"]
    assert "truncated gzip data" in a["errors"]["cut.csv.gz.error.json"]
    assert "unknown format" in a["errors"]["garbage.bin.error.json"]
    assert [Path(p).name for p in a["archive"]] == ["db.parquet", "usr_0.csv"] and a["landing"] == []
    # one dataset event per new trace, one results event for the load
    kinds = [e[0] for e in a["events"]]
    assert kinds.count("tiercast-datasets") == 2 and kinds.count("tiercast-results") == 1
    assert sorted(json.loads(e[1])["source"] for e in a["events"] if e[0] == "tiercast-datasets") == [
        "db.parquet", "usr_0.csv"]
    # both traces replayed through the default scenarios (vnx1-flare, vnx2-mcx) and loaded
    w = a["warehouse"]
    assert (w["traces"], w["runs"]) == (2, 4) and w["interval_metrics"] > 0
    assert [n for _, n in w["runs_by_trace"]] == [2, 2]
    # the what-if report of the 4 runs: the charts that apply to FLARE / MCx replays, each with its CSV
    assert a["reports"] == ["tiercast.html"] + [f"tiercast_tables/{n}.csv" for n in (
        "hit_ratio", "latency", "latency_points", "rg_balance", "runs", "traces", "write_cache")]
    # the second round: nothing landed, nothing to replay, nothing loaded, no event, no report
    assert out["second"] == ["success", "success"]
    assert out["events"] == a["events"] and out["warehouse"] == w
    assert out["archive"] == a["archive"] and out["quarantine"] == a["quarantine"]
    assert out["second_replay_summary"]["pairs"] == 0 and out["second_replay_summary"]["load"]["loaded"] == {}
    assert out["report_mtime"] == a["report_mtime"]
    assert out["gx_noise_lines"] == 0
    # the tasks' kernels came from the cache every entry point finds (replay.numba_cache), this
    # test's too, and nothing went into the data root
    from replay import jit

    assert Path(out["kernel_cache"]).is_relative_to(jit.cache_dir())
    assert not (data / ".cache").exists()


def test_a_file_landed_in_two_steps_is_one_trace_and_bad_params_are_refused(tmp_path):
    data = tmp_path / "data"
    out = run_airflow(COMMON + """
T0 = 128166372003061629
lines = [f"{T0 + i * 1000},usr,0,Read,{i * 4096},4096,100" for i in range(4000)]
target = landing / 'usr_1.csv'
target.write_text('\\n'.join(lines[:1500]) + '\\n')  # half landed: its mtime is fresh
half = [run('tiercast_ingest'), listing('landing'), listing('archive')]
target.write_text('\\n'.join(lines) + '\\n')  # the copy finished...
landed_long_ago('usr_1.csv')  # ... and has been unchanged for an hour
whole = [run('tiercast_ingest'), listing('landing'), len(listing('archive'))]
marked = landing / 'usr_2.csv'
marked.write_text('\\n'.join(lines[:100]) + '\\n')
(landing / 'usr_2.csv.done').write_text('')  # fresh, but the producer says it is complete
done = [run('tiercast_ingest'), listing('landing'), len(listing('archive'))]
from pipelines.catalog import list_traces
stalled = landing / 'usr_3.csv'
lines3 = [line.replace(',usr,0,', ',usr,3,') for line in lines]
stalled.write_text('\\n'.join(lines3[:2500]) + '\\n')
landed_long_ago('usr_3.csv')  # the copy stalled for an hour: taken as it is
partial = [run('tiercast_ingest'), sorted(t.manifest['rows_read'] for t in list_traces(data))]
stalled.write_text('\\n'.join(lines3) + '\\n')  # sent again, whole
landed_long_ago('usr_3.csv')
resent = [run('tiercast_ingest'), json.loads(sorted((data / 'runs' / 'tiercast_ingest').glob('*.json'))[-1].read_text())]
rows = sorted(t.manifest['rows_read'] for t in list_traces(data))
refused = [run('tiercast_ingest', landing_dir='../elsewhere'), run('tiercast_ingest', landing_dir='landng'),
           run('tiercast_replay', scenarios=['vnx2-mxc'])]
failures = {p.parent.name + '/' + p.name: [json.loads(p.read_text())['error']]
            for p in (data / 'runs').glob('*/*.failures/*.json')}
print(json.dumps({'half': half, 'whole': whole, 'done': done, 'partial': partial, 'resent': resent, 'rows': rows,
                  'refused': refused,
                  'errors': sorted(e for v in failures.values() for e in v), 'tis': tis()}))
""", tmp_path, data)
    assert out["half"] == ["success", ["usr_1.csv"], []]  # waited: not ingested half
    assert out["whole"][0] == "success" and out["whole"][1:] == [[], 1]
    assert out["done"][0] == "success" and out["done"][1:] == [[], 2]
    assert out["partial"] == ["success", [100, 2500, 4000]]
    assert out["resent"][0] == "success"
    [superseded] = out["resent"][1]["superseded"]  # the run summary names the withdrawn partial trace
    assert superseded["source"] == "usr_3.csv" and superseded["moved_to"] == f"quarantine/superseded/{superseded['id']}"
    assert out["rows"] == [100, 4000, 4000]  # one trace of each whole file, none of a first half
    assert out["refused"] == ["failed"] * 3
    errors = out["errors"]
    assert any("outside the data root" in e for e in errors)
    assert any("landng does not exist (misspelled?)" in e for e in errors)
    assert any("replay configuration refused before any replay: vnx2-mxc" in e for e in errors)
    # refused at once: no retries, and no replay mapped
    assert not [t for t in out["tis"] if t[4] > 1]
    assert [t[3] for t in out["tis"] if t[0] == "tiercast_replay" and t[1] == "replay"] == ["upstream_failed"]


def test_a_failed_task_that_ran_no_callback_still_fails_the_run(tmp_path):
    """A task instance that never started (its process killed, or its first API call timed out)
    runs no failure callback; the run's summary still counts it from Airflow's task states."""
    from pipelines.airflow_support import failures

    folder = tmp_path / "runs" / "tiercast_replay" / "manual_1.failures"
    folder.mkdir(parents=True)
    (folder / "replay.1.1.json").write_text(json.dumps({"task_id": "replay", "map_index": 1, "try_number": 1,
                                                         "error": "boom"}))
    states = {"plan": "success", "replay_0": "success", "replay_1": "failed", "replay_2": "failed",
              "load": "success", "summary": "running", "volumes": "failed"}
    found = failures(tmp_path, "tiercast_replay", "manual_1", states)
    assert [(f["task_id"], f["map_index"], f["error"][:24]) for f in found] == [
        ("replay", 1, "boom"),
        ("replay_2", -1, "failed without running i"),
        ("volumes", -1, "failed without running i")]
    assert failures(tmp_path, "tiercast_replay", "manual_2", {"plan": "success"}) == []


def test_preload_imports_the_data_stack_only_where_tasks_fork(monkeypatch, tmp_path):
    from pipelines.airflow_preload import TASK_MODULES, preload

    monkeypatch.setenv("TIERCAST_DATA_DIR", str(tmp_path))
    assert preload(["api-server"]) == [] and preload(["dags", "test", "tiercast_replay"]) == []
    assert preload(["celery", "worker", "--concurrency", "1"]) == list(TASK_MODULES)
    assert preload(["scheduler"]) == list(TASK_MODULES) and all(m in sys.modules for m in TASK_MODULES)
    monkeypatch.delenv("TIERCAST_DATA_DIR")  # the root in a Variable only: numba's cache does not depend on it
    assert preload(["scheduler"]) == list(TASK_MODULES)


def test_supervisor_notices_a_task_exit_at_once():
    """Pins what ``notice_task_exit_at_once`` relies on in Airflow's private supervisor: with every
    socket of the task closed, ``_service_subprocess`` waits on the process (psutil) and reaps it,
    and its select no longer sleeps the heartbeat interval (here 600 s); with a socket open, the
    select still gets the caller's timeout."""
    import selectors
    import socket
    import weakref

    import psutil
    import structlog
    from airflow.sdk.execution_time.supervisor import PsutilTracker, WatchedSubprocess

    from pipelines.airflow_preload import notice_task_exit_at_once

    assert notice_task_exit_at_once() and notice_task_exit_at_once()  # idempotent

    class Recording(selectors.DefaultSelector):
        timeouts: list = []

        def select(self, timeout=None):
            self.timeouts.append(timeout)
            return super().select(timeout=0)

    def watched(proc) -> WatchedSubprocess:
        w = object.__new__(WatchedSubprocess)  # the attrs fields the method reads, without a task
        for name, value in (("pid", proc.pid), ("_process", PsutilTracker(psutil.Process(proc.pid))), ("_exit_code", None),
                            ("_process_exit_monotonic", None), ("_open_sockets", weakref.WeakKeyDictionary()),
                            ("selector", Recording()), ("process_log", structlog.get_logger())):
            object.__setattr__(w, name, value)
        return w

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    w = watched(proc)
    assert w._service_subprocess(max_wait_time=600) == 0 and w._exit_code == 0
    assert w.selector.timeouts == [0.01]  # the method's floor, not 600 s

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    w = watched(proc)
    a, b = socket.socketpair()
    w.selector.register(a, selectors.EVENT_READ, (lambda s: True, lambda s: None))
    w._open_sockets[a] = "requests"
    w.selector.timeouts.clear()
    assert w._service_subprocess(max_wait_time=7) is None and w.selector.timeouts == [7]
    proc.wait()
    a.close(), b.close()


def test_load_kernels_reads_numbas_private_cache_index(tmp_path):
    """Pins the numba internal ``load_kernels`` relies on (``Dispatcher._cache._cache_file.
    _load_index``): a kernel compiled and cached by one process is loaded, with its signature, by
    ``load_kernels`` in a fresh one without being called. If numba renames it, this fails (the
    preload itself would only silently load nothing)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    compile_ = "import numpy as np; from replay.ids import slot; slot(np.int64(7), np.int64(60), np.int64(15))"
    load = ("import replay.ids as m; from pipelines.airflow_preload import load_kernels; "
            "n = load_kernels(); print(n, [str(s) for s in m.slot.signatures])")
    subprocess.run([sys.executable, "-c", compile_], check=True, env=env, cwd=ROOT, timeout=300)
    out = subprocess.run([sys.executable, "-c", load], check=True, env=env, cwd=ROOT, timeout=300,
                         capture_output=True, text=True).stdout.split(" ", 1)
    assert int(out[0]) >= 1
    assert out[1].strip() == "['(int64, int64, int64)']"
