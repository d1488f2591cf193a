"""A real Airflow (``airflow standalone``: scheduler, DAG processor, triggerer, API server) with the
LocalExecutor, started in a private AIRFLOW_HOME for tests/test_scheduler.py and
benchmarks/orchestration.py; stopped with SIGINT to its process group (the only signal on which
it stops its children, PITFALLS.md), then SIGTERM / SIGKILL if it lingers.

DAG runs are triggered with the ``airflow`` CLI; their state is read from the metadata database
(SQLite) directly, since every CLI call costs seconds of start-up.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standalone:
    def __init__(self, home: Path, data_dir: Path, parallelism: int = 2, numba_cache: Path | None = None):
        """``numba_cache``: the workers' NUMBA_CACHE_DIR (default: the tasks' own, in the data root,
        compiled by the first replays)."""
        self.home, self.data_dir = Path(home), Path(data_dir)
        port = free_port()
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            # the task supervisor's calls to the API server time out after 5 s by default, and a
            # loaded 2-core machine (the suite next to the scheduler) answers slower: the task then
            # dies before it runs (SIGKILL, "httpcore.ReadTimeout" in the scheduler's log)
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            "TIERCAST_DATA_DIR": str(self.data_dir),
            "TIERCAST_INGEST_CRON": "",  # runs only when triggered here
            "TIERCAST_REPLAY_CRON": "",
        }
        self.env.pop("NUMBA_CACHE_DIR", None)  # the tasks put it in the data root
        if numba_cache is not None:
            self.env["NUMBA_CACHE_DIR"] = str(numba_cache)
        self.proc: subprocess.Popen | None = None
        self.log = self.home / "standalone.log"

    def airflow(self, *args: str) -> str:
        p = subprocess.run([str(BIN / "airflow"), *args], env=self.env, capture_output=True, text=True, timeout=300)
        if p.returncode:
            raise RuntimeError(f"airflow {' '.join(args)}: {p.stderr[-2000:]}")
        return p.stdout

    def __enter__(self) -> Standalone:
        self.home.mkdir(parents=True, exist_ok=True)
        self.airflow("db", "migrate")
        self.airflow("pools", "set", "tiercast_warehouse", "1", "one DuckDB writer")
        self.proc = subprocess.Popen([str(BIN / "airflow"), "standalone"], env=self.env, stdout=open(self.log, "w"),
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=self.home)
        try:
            self._wait(lambda: {"tiercast_ingest", "tiercast_replay", "tiercast_report"} <= set(self.dags()), 600,
                       "the DAGs to be parsed")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        for sig, wait_s in ((signal.SIGINT, 60), (signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait_s)
                time.sleep(1)  # its children leave after it
                os.killpg(self.proc.pid, 0)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                continue
        self.proc = None

    def _wait(self, ready, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"airflow standalone exited: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; log: {self.log}")
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
