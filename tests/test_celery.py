"""Scale-out on real parts: the CeleryExecutor with Debian's redis-server as the broker and two
Celery workers (tests/standalone.py ``CeleryCluster``). Files land, ``tiercast_ingest`` runs on
the workers, its dataset events trigger ``tiercast_replay`` (2 traces x 2 scenarios, mapped over
both workers), and the warehouse equals the same steps run one after another in this process."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import require, require_module
from standalone import CeleryCluster

from pipelines.ingest import ingest_file
from pipelines.load import load, query
from pipelines.orchestrate import replay_config, replay_pair, replay_plan
from traces import synth

SCENARIOS = ["vnx1-flare", "vnx2-mcx"]
WHATIF = "select trace_id, scenario, run_id, iops, latency_mean_ms, read_hit_ratio from whatif order by 1, 2"
INTERVALS = "select run_id, count(*), sum(iops) from interval_metrics group by 1 order by 1"


def landed_traces(folder: Path, n: int, requests: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        src = folder / f"lun{i}.parquet"
        synth.write(synth.pattern(("database", "randwrite-8k")[i % 2], requests=requests, region_bytes=1 << 30,
                                  volume=f"lun{i}", seed=i), src)
        out.append(src)
    return out


def in_process(root: Path, sources: list[Path]) -> tuple[list[tuple], list[tuple]]:
    """The two DAGs' steps in this process, one after another."""
    for src in sources:
        ingest_file(src, root, validate="off")
    (root / "replay.toml").write_text(f"scenarios = {SCENARIOS!r}\n".replace("'", '"'))
    pairs, _, _ = replay_plan(root, replay_config(root))
    for pair in pairs:
        replay_pair(root, pair)
    load(root)
    return query(root, WHATIF).rows(), query(root, INTERVALS).rows()


def received(log: str) -> int:
    """Tasks a Celery worker took, from its log."""
    return len(re.findall(r"Task \S*execute_workload\S*\[[0-9a-f-]+\] received", log))


@pytest.mark.slow
def test_dags_on_celery_workers_with_redis_equal_an_in_process_run(tmp_path):
    require_module("airflow.providers.celery", "apache-airflow-providers-celery is installed by `make venv`")
    require(shutil.which("redis-server"), "redis-server is not installed (.ci/run installs Debian's redis-server)")
    sources = landed_traces(tmp_path / "src", 2, 20_000)
    expected = in_process(tmp_path / "serial", sources)
    root = tmp_path / "data"
    (root / "landing").mkdir(parents=True)
    # one task per (trace, scenario) pair here (task_requests 0): 4 replays for the two workers
    (root / "replay.toml").write_text(f"scenarios = {SCENARIOS!r}\ntask_requests = 0\n".replace("'", '"'))
    for src in sources:
        shutil.copy(src, root / "landing" / src.name)
    with CeleryCluster(tmp_path / "airflow", root, workers=2) as af:
        af.airflow("dags", "unpause", "tiercast_replay")
        ingest = af.trigger("tiercast_ingest", {"stable_seconds": 0})
        assert af.wait("tiercast_ingest", ingest) == "success", af.task_instances("tiercast_ingest", ingest)
        replay = af.wait_for_run("tiercast_replay")
        state = af.wait("tiercast_replay", replay)
        tis = af.task_instances("tiercast_replay", replay)
        logs = [af.worker_log(i) for i in range(2)]
    assert state == "success", tis
    replays = [t for t in tis if t[0] == "replay"]
    assert len(replays) == 4 and {t[2] for t in replays} == {"success"}
    # both workers took tasks from the broker
    assert all(received(log) > 0 for log in logs), [received(log) for log in logs]
    # ingest: discover, 2 ingest, validate, publish, summary; replay: plan, volumes, 4 replay, load, summary
    # (skew, mapped over no volume, is skipped by the scheduler)
    assert sum(received(log) for log in logs) == 6 + 8
    assert sorted(p.name for p in (root / "archive").rglob("*.parquet")) == ["lun0.parquet", "lun1.parquet"]
    rows, intervals = query(root, WHATIF).rows(), query(root, INTERVALS).rows()
    assert len(rows) == 4 and len(intervals) == 4
    assert (rows, intervals) == expected
