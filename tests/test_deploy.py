"""deploy/: the scheduler under a supervisor (docs/operations/supervisor.md).

The systemd unit passes ``systemd-analyze verify`` (its paths pointed at this checkout, as an
install at /opt/tiercast would have them), restarts whatever stops it and stops its processes with
SIGTERM; the environment file sets what the DAGs need; the start script runs exactly the Airflow
processes it names; the compose file parses, restarts every long-running service, and gives every
Airflow service the same settings and data root.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import yaml
from conftest import require

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "tiercast-airflow@.service"
START = DEPLOY / "systemd" / "airflow-process"


def unit_sections(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    cp.optionxform = str  # systemd keys are case-sensitive
    cp.read_string(text)
    return cp


def env_file(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep and key.isidentifier(), f"{path.name}: not KEY=value: {line!r}"
            out[key] = value
    return out


def test_the_unit_restarts_the_process_and_stops_it_with_sigterm():
    unit = unit_sections(UNIT.read_text())
    svc = unit["Service"]
    assert svc["Restart"] == "always" and int(svc["RestartSec"]) > 0
    assert svc["KillSignal"] == "SIGTERM"  # not `airflow standalone`, which needs SIGINT
    assert svc["ExecStart"] == "/opt/tiercast/deploy/systemd/airflow-process %i"
    assert svc["EnvironmentFile"] == "/etc/tiercast/airflow.env"
    assert int(unit["Unit"]["StartLimitBurst"]) >= 5
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_systemd_analyze_verifies_the_unit(tmp_path):
    require(shutil.which("systemd-analyze"), "systemd-analyze missing (apt-get install systemd)")
    text = UNIT.read_text().replace("/opt/tiercast", str(ROOT))
    text = text.replace("EnvironmentFile=/etc/tiercast/airflow.env",
                        f"EnvironmentFile={DEPLOY / 'systemd' / 'airflow.env'}")
    for instance in ("scheduler", "dag-processor", "api-server", "celery-worker"):
        unit = tmp_path / f"tiercast-airflow@{instance}.service"
        unit.write_text(text)
        out = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Unknown" not in out.stderr and "ignoring" not in out.stderr, out.stderr


def test_the_environment_file_sets_what_the_dags_need():
    env = env_file(DEPLOY / "systemd" / "airflow.env")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/tiercast/dags"
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["TIERCAST_DATA_DIR"] and env["AIRFLOW_HOME"]
    assert env["AIRFLOW__CORE__EXECUTOR"] in ("LocalExecutor", "CeleryExecutor")


def test_the_start_script_runs_the_named_airflow_process(tmp_path):
    require(shutil.which("sh"), "no sh")
    # a stand-in airflow on PATH records its arguments instead of starting Airflow
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "airflow").write_text('#!/bin/sh\necho "airflow $*"\n')
    (fake / "airflow").chmod(0o755)
    copy = tmp_path / "repo" / "deploy" / "systemd"
    copy.mkdir(parents=True)
    shutil.copy(START, copy / START.name)  # no .venv beside it: the airflow on PATH runs
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "TIERCAST_WORKER_NAME": "w7"}

    def run(*args):
        return subprocess.run(["sh", str(copy / START.name), *args], capture_output=True, text=True, env=env,
                              timeout=30)

    for name in ("scheduler", "dag-processor", "api-server", "triggerer"):
        out = run(name)
        assert out.returncode == 0 and out.stdout.strip() == f"airflow {name}", out
    out = run("celery-worker")
    assert out.stdout.strip() == "airflow celery worker --concurrency 1 --celery-hostname w7@%h", out
    out = run("standalone")
    assert out.returncode == 2 and "usage" in out.stderr
    assert os.access(START, os.X_OK), "deploy/systemd/airflow-process must be executable"


def test_the_compose_file_restarts_every_long_running_service_with_one_data_root():
    spec = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = spec["services"]
    assert {"scheduler", "dag-processor", "api-server", "worker", "redis", "postgres", "airflow-init"} <= set(services)
    for name, svc in services.items():
        if name == "airflow-init":
            assert svc["restart"] == "no"
            continue
        assert svc["restart"] in ("always", "unless-stopped"), name
    airflow = {n: s for n, s in services.items() if n in ("scheduler", "dag-processor", "api-server", "worker")}
    envs = [s["environment"] for s in airflow.values()]
    for env in envs:
        assert env["TIERCAST_DATA_DIR"] == "/srv/tiercast-data"
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://redis:")
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
    for name, svc in airflow.items():
        assert "tiercast-data:/srv/tiercast-data" in svc["volumes"], name
        assert svc["command"][:1] == ["deploy/systemd/airflow-process"], name
        assert svc["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
    assert "healthcheck" in services["scheduler"]
    assert services["worker"]["environment"]["TIERCAST_WORKER_CONCURRENCY"] == "1"
    dockerfile = (ROOT / services["scheduler"]["build"]["context"].replace("..", ".") /
                  services["scheduler"]["build"]["dockerfile"])
    assert dockerfile.is_file() and "tiercast warm" in dockerfile.read_text()
