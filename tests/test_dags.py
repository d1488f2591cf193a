"""Airflow: the DAG folder imports cleanly and cheaply, and a run ingests and loads for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_module

from traces import synth

ROOT = Path(__file__).resolve().parent.parent
DAGS = ROOT / "dags"



@pytest.fixture(scope="module", autouse=True)
def _airflow():
    require_module("airflow", "apache-airflow is installed by `make venv` (extra 'airflow')")


def run_airflow(script: str, tmp_path: Path) -> dict:
    """Run ``script`` in a fresh interpreter with a private AIRFLOW_HOME (set before airflow is
    imported, so nothing touches ~/airflow); it prints one JSON line last."""
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(tmp_path / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    })
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_dagbag_imports_without_errors_and_stays_light(tmp_path):
    out = run_airflow(
        """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[0] if False else __import__('os').environ['AIRFLOW__CORE__DAGS_FOLDER'])
heavy = sorted(m for m in ('polars', 'duckdb', 'numba', 'great_expectations', 'pipelines.ingest') if m in sys.modules)
dag = bag.dags['tiercast_pipeline']
print(json.dumps({'errors': {k: str(v) for k, v in bag.import_errors.items()}, 'dags': sorted(bag.dags),
                  'tasks': sorted(t.task_id for t in dag.tasks), 'heavy': heavy}))
""",
        tmp_path,
    )
    assert out["errors"] == {}
    assert out["dags"] == ["tiercast_pipeline"]
    assert out["tasks"] == ["discover", "ingest", "load", "pairs", "replay"]
    # parsing the DAG file must not pull in the data stack (the scheduler parses it often)
    assert out["heavy"] == []


def test_dag_run_ingests_landing_folder_and_loads_duckdb(tmp_path):
    data = tmp_path / "data"
    landing = data / "landing"
    landing.mkdir(parents=True)
    synth.write(synth.pattern("database", requests=2000, region_bytes=1 << 30, volume="lun0"), landing / "db.parquet")
    (landing / "usr_0.csv").write_text(
        "128166372003061629,usr,0,Read,7014609920,24576,41286\n"
        "128166372003061630,usr,0,Write,7014609920,4096,100\n"
        "128166372003061631,usr,0,Write,oops,4096,100\n"
    )
    out = run_airflow(
        f"""
import json
from airflow.utils import db
db.resetdb()
from airflow.dag_processing.dagbag import DagBag
dag = DagBag(dag_folder={str(DAGS)!r}).dags['tiercast_pipeline']
run = dag.test(run_conf={{'data_dir': {str(data)!r}, 'scenarios': ['vnx2-mcx']}})
import duckdb
con = duckdb.connect({str(data / 'tiercast.duckdb')!r}, read_only=True)
rows = con.sql('select format, rows_read, rows_accepted, rows_rejected from traces order by format').fetchall()
n = con.sql('select count(*) from requests').fetchall()[0][0]
runs = con.sql('select requests from array_runs order by requests').fetchall()
print(json.dumps({{'state': str(run.state), 'traces': rows, 'requests': n, 'runs': runs}}))
""",
        tmp_path,
    )
    assert out["state"].endswith("success")
    assert out["traces"] == [["msr", 3, 2, 1], ["tiercast-parquet", 2000, 2000, 0]]
    assert out["requests"] == 2002
    # each trace replayed through the scenario, the run summaries loaded as a view
    assert out["runs"] == [[2], [2000]]
