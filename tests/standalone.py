"""A real Airflow started in a private AIRFLOW_HOME for tests/test_scheduler.py, tests/test_celery.py
and benchmarks/orchestration.py:

- :class:`Standalone`: ``airflow standalone`` (scheduler, DAG processor, triggerer, API server)
  with the LocalExecutor; stopped with SIGINT to its process group (the only signal on which it
  stops its children, docs/architecture/pitfalls.md#airflow), then SIGTERM / SIGKILL if it lingers;
- :class:`CeleryCluster`: a Redis server (the broker), scheduler, DAG processor and API server
  with the CeleryExecutor, and ``workers`` Celery workers (``airflow standalone`` would force the
  LocalExecutor); each process stopped with SIGTERM, then SIGKILL.

DAG runs are triggered with the ``airflow`` CLI; their state is read from the metadata database
(SQLite) directly, since every CLI call costs seconds of start-up.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DAG_IDS = {"tiercast_ingest", "tiercast_replay", "tiercast_report"}


def _die_with_the_test_process() -> None:
    """In the child: SIGTERM when the pytest process dies (Linux ``prctl(PR_SET_PDEATHSIG)``), so
    a killed test run leaves no scheduler, worker or redis behind (``__exit__`` never runs then)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, signals=((signal.SIGTERM, 30), (signal.SIGKILL, 10))) -> None:
    """Stop ``proc``'s process group (started with ``start_new_session``): each signal in turn
    until the group is gone."""
    for sig, wait_s in signals:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait_s)
            time.sleep(1)  # its children leave after it
            os.killpg(proc.pid, 0)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            continue


class Airflow:
    """What both set-ups share: a private AIRFLOW_HOME, the environment of every process, the CLI,
    and the metadata database read directly."""

    executor = "LocalExecutor"

    def __init__(self, home: Path, data_dir: Path | str, parallelism: int = 2, numba_cache: Path | None = None,
                 preload: bool = True):
        """``data_dir``: the data root (a path, or an object-store URL); ``numba_cache``: the
        workers' NUMBA_CACHE_DIR (default: none set here, so they find the cache every entry point
        finds, ``replay.numba_cache``);
        ``preload``: the data stack imported before the task processes fork
        (``pipelines.airflow_preload``, hooked in by ``airflow_local_settings.py``)."""
        self.home, self.data_dir, self.preload = Path(home), str(data_dir), preload
        port = free_port()
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__EXECUTOR": self.executor,
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            # one secret for the processes that sign and check the workers' tokens
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
            # a busy shared machine answers the workers' API calls slowly (5 s timed out at load 15)
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            # a worker's supervisor notices its task process's exit late when the process closes its
            # sockets before it is reaped: it then sleeps up to this many seconds (default 5) on an
            # empty selector; measured, replays ended ~3-5 s after their last log line
            "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.25",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # the DAG files do not change while it runs: parse them once, not every 30 s beside the tasks
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
            "TIERCAST_DATA_DIR": self.data_dir,
            "TIERCAST_INGEST_CRON": "",  # runs only when triggered here
            "TIERCAST_REPLAY_CRON": "",
        }
        if numba_cache is not None:
            self.env["NUMBA_CACHE_DIR"] = str(numba_cache)
        self.port = port
        self.procs: list[subprocess.Popen] = []
        self.logs: dict[int, Path] = {}  # pid -> its output

    def airflow(self, *args: str) -> str:
        p = subprocess.run([str(BIN / "airflow"), *args], env=self.env, capture_output=True, text=True, timeout=300)
        if p.returncode:
            raise RuntimeError(f"airflow {' '.join(args)}: {p.stderr[-2000:]}")
        return p.stdout

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        """Start ``argv`` in its own process group, its output in ``<home>/<name>.log``."""
        log = self.home / f"{name}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    cwd=self.home, preexec_fn=_die_with_the_test_process)
        self.procs.append(proc)
        self.logs[proc.pid] = log
        return proc

    def start(self, name: str, *args: str) -> subprocess.Popen:
        return self.spawn(name, [str(BIN / "airflow"), *args])

    def start_processes(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.home.mkdir(parents=True, exist_ok=True)
        if self.preload:
            (self.home / "config").mkdir(exist_ok=True)
            (self.home / "config" / "airflow_local_settings.py").write_text(
                "from pipelines.airflow_preload import preload\n\npreload()\n")
        try:
            self.airflow("db", "migrate")
            self.airflow("pools", "set", "tiercast_warehouse", "1", "one DuckDB writer")
            self.start_processes()
            self._wait(lambda: DAG_IDS <= set(self.dags()), 600, "the DAGs to be parsed")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        while self.procs:
            stop_group(self.procs.pop())

    def _wait(self, ready, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{' '.join(map(str, proc.args))} exited: {self.logs[proc.pid].read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; logs in {self.home}")
            time.sleep(1)

    def query(self, sql: str, *params) -> list[tuple]:
        db = self.home / "airflow.db"
        if not db.exists():
            return []
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()

    def dags(self) -> list[str]:
        return [r[0] for r in self.query("select dag_id from dag")]

    def trigger(self, dag_id: str, conf: dict | None = None) -> str:
        """Unpause and trigger ``dag_id`` from the CLI; returns the run id."""
        self.airflow("dags", "unpause", dag_id)
        out = self.airflow("dags", "trigger", dag_id, "--output", "json", *(["--conf", json.dumps(conf)] if conf else []))
        doc = next(line for line in reversed(out.splitlines()) if line.startswith("["))  # after any warnings
        return json.loads(doc)[0]["dag_run_id"]

    def wait_for_run(self, dag_id: str, timeout_s: float = 600) -> str:
        """The id of ``dag_id``'s first run (one an asset event created), once it exists."""
        self._wait(lambda: self.query("select run_id from dag_run where dag_id = ?", dag_id), timeout_s,
                   f"a run of {dag_id}")
        return self.query("select run_id from dag_run where dag_id = ? order by id limit 1", dag_id)[0][0]

    def wait(self, dag_id: str, run_id: str, timeout_s: float = 1800) -> str:
        """The run's final state."""
        def state():
            rows = self.query("select state from dag_run where dag_id = ? and run_id = ?", dag_id, run_id)
            return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

        self._wait(state, timeout_s, f"{dag_id} {run_id}")
        return state()

    def run_times(self, dag_id: str, run_id: str) -> tuple[str, str]:
        return self.query("select start_date, end_date from dag_run where dag_id = ? and run_id = ?", dag_id, run_id)[0]

    def task_instances(self, dag_id: str, run_id: str) -> list[tuple]:
        """(task id, map index, state, start, end) of a run."""
        return self.query("select task_id, map_index, state, start_date, end_date from task_instance "
                          "where dag_id = ? and run_id = ? order by start_date", dag_id, run_id)


class Standalone(Airflow):
    """``airflow standalone`` with the LocalExecutor and ``parallelism`` task processes."""

    def start_processes(self) -> None:
        self.start("standalone", "standalone")

    def __exit__(self, *exc) -> None:
        while self.procs:
            stop_group(self.procs.pop(), ((signal.SIGINT, 60), (signal.SIGTERM, 20), (signal.SIGKILL, 10)))


class CeleryCluster(Airflow):
    """The CeleryExecutor on one machine: ``redis-server`` (Debian's) on a free port as the broker
    and result backend, scheduler, DAG processor and API server, and ``workers`` Celery workers
    (``airflow celery worker``, concurrency 1 each, their own host names, no log server: they
    would all take port 8793). ``worker_log(i)`` is worker i's output."""

    executor = "CeleryExecutor"

    def __init__(self, home: Path, data_dir: Path | str, workers: int = 2, numba_cache: Path | None = None,
                 preload: bool = True):
        super().__init__(home, data_dir, parallelism=2 * workers, numba_cache=numba_cache, preload=preload)
        self.workers = workers
        self.redis_port = free_port()
        redis = f"redis://127.0.0.1:{self.redis_port}"
        self.env.update({
            "AIRFLOW__CELERY__BROKER_URL": f"{redis}/0",
            "AIRFLOW__CELERY__RESULT_BACKEND": f"{redis}/1",
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": "1",
            "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
        })

    def start_processes(self) -> None:
        redis = shutil.which("redis-server")
        if redis is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.spawn("redis", [redis, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(self.home)])
        self._wait(lambda: _accepts(self.redis_port), 60, "redis-server")
        for name in ("scheduler", "dag-processor"):
            self.start(name, name)
        self.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(self.port))
        for i in range(self.workers):
            self.start(f"worker{i}", "celery", "worker", "--celery-hostname", f"w{i}@%h", "--skip-serve-logs")
        self._wait(lambda: all(" ready." in self.worker_log(i) for i in range(self.workers)), 300,
                   "the Celery workers")

    def worker_log(self, i: int) -> str:
        path = self.home / f"worker{i}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False
