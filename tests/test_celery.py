"""Scale-out on real parts: the CeleryExecutor with Debian's redis-server as the broker and two
Celery workers (tests/standalone.py ``CeleryCluster``). Files land, ``tiercast_ingest`` runs on
the workers, its dataset events trigger ``tiercast_replay`` (mapped over both workers), and the
warehouse equals the same steps run one after another in this process: two traces x two
scenarios, and one real multi-volume trace split by volume (issue 29: one replay per volume)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import require, require_module, shared_path
from standalone import CeleryCluster

from pipelines.catalog import list_traces
from pipelines.ingest import ingest_file, split_by_volume
from pipelines.load import load, query
from pipelines.orchestrate import replay_config, replay_pair, replay_plan
from traces import synth

SCENARIOS = ["vnx1-flare", "vnx2-mcx"]
WHATIF = "select trace_id, scenario, run_id, iops, latency_mean_ms, read_hit_ratio from whatif order by 1, 2"
INTERVALS = "select run_id, count(*), sum(iops) from interval_metrics group by 1 order by 1"
#: per volume of a split trace: its run's requests, hit ratios and latency summary
PER_VOLUME = ("select v.volume, w.trace_id, w.scenario, w.run_id, r.requests, w.read_hit_ratio, w.write_hit_ratio, "
              "w.iops, w.latency_mean_ms, w.latency_p95_ms, w.latency_p99_ms "
              "from whatif w join runs r on r.run_id = w.run_id join trace_volumes v on v.trace_id = w.trace_id order by 1, 3")


def landed_traces(folder: Path, n: int, requests: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        src = folder / f"lun{i}.parquet"
        synth.write(synth.pattern(("database", "randwrite-8k")[i % 2], requests=requests, region_bytes=1 << 30,
                                  volume=f"lun{i}", seed=i), src)
        out.append(src)
    return out


def replay_toml(scenarios: list[str], task_requests: int | None = None) -> str:
    return (f"scenarios = {scenarios!r}\n".replace("'", '"')
            + (f"task_requests = {task_requests}\n" if task_requests is not None else ""))


def in_process(root: Path, sources: list[Path], scenarios: list[str], split: bool = False) -> list[list[tuple]]:
    """The two DAGs' steps in this process, one after another (``split``: each trace also split
    by volume, as the ingest DAG's ``split_by`` "volume" does): the warehouse rows compared."""
    for src in sources:
        r = ingest_file(src, root, validate="off")
        if split:
            split_by_volume(r.trace_id, root, validate="off")
    (root / "replay.toml").write_text(replay_toml(scenarios))
    pairs, _, _ = replay_plan(root, replay_config(root))
    for pair in pairs:
        replay_pair(root, pair)
    load(root)
    return [query(root, q).rows() for q in (PER_VOLUME if split else WHATIF, INTERVALS)]


def received(log: str) -> int:
    """Tasks a Celery worker took, from its log."""
    return len(re.findall(r"Task \S*execute_workload\S*\[[0-9a-f-]+\] received", log))


def on_celery(tmp_path: Path, sources: list[Path], config: str, conf: dict) -> tuple[Path, str, list, list[int]]:
    """``sources`` landed in a fresh data root with ``replay.toml`` ``config``; ``tiercast_ingest``
    triggered with ``conf`` on a Celery cluster of two workers, and the ``tiercast_replay`` run its
    dataset events start. Returns the root, that run's state and task instances, and the tasks
    each worker took."""
    require_module("airflow.providers.celery", "apache-airflow-providers-celery is installed by `make venv`")
    require(shutil.which("redis-server"), "redis-server is not installed (.ci/run installs Debian's redis-server)")
    root = tmp_path / "data"
    (root / "landing").mkdir(parents=True)
    (root / "replay.toml").write_text(config)
    for src in sources:
        shutil.copy(src, root / "landing" / src.name)
    with CeleryCluster(tmp_path / "airflow", root, workers=2) as af:
        af.airflow("dags", "unpause", "tiercast_replay")
        ingest = af.trigger("tiercast_ingest", {"stable_seconds": 0, **conf})
        assert af.wait("tiercast_ingest", ingest) == "success", af.task_instances("tiercast_ingest", ingest)
        replay = af.wait_for_run("tiercast_replay")
        state = af.wait("tiercast_replay", replay)
        tis = af.task_instances("tiercast_replay", replay)
        print("tiercast_ingest", af.run_times("tiercast_ingest", ingest), "tiercast_replay", af.run_times(
            "tiercast_replay", replay))
        return root, state, tis, [received(af.worker_log(i)) for i in range(2)]


@pytest.mark.slow
def test_dags_on_celery_workers_with_redis_equal_an_in_process_run(tmp_path):
    sources = landed_traces(tmp_path / "src", 2, 20_000)
    expected = in_process(tmp_path / "serial", sources, SCENARIOS)
    # one task per (trace, scenario) pair here (task_requests 0): 4 replays for the two workers
    root, state, tis, took = on_celery(tmp_path, sources, replay_toml(SCENARIOS, 0), {})
    assert state == "success", tis
    replays = [t for t in tis if t[0] == "replay"]
    assert len(replays) == 4 and {t[2] for t in replays} == {"success"}
    # both workers took tasks from the broker
    assert all(n > 0 for n in took), took
    # ingest: discover, 2 ingest, validate, publish, summary; replay: plan, volumes, 4 replay, load, summary
    # (skew, mapped over no volume, is skipped by the scheduler)
    assert sum(took) == 6 + 8
    assert sorted(p.name for p in (root / "archive").rglob("*.parquet")) == ["lun0.parquet", "lun1.parquet"]
    rows, intervals = query(root, WHATIF).rows(), query(root, INTERVALS).rows()
    assert len(rows) == 4 and len(intervals) == 4
    assert [rows, intervals] == expected


@pytest.mark.slow
def test_a_trace_split_by_volume_replays_each_volume_on_celery_workers_as_in_one_process(tmp_path):
    """Issue 29 item 4: the DiskSim TPC-C sample (16 devices, 6,999 requests) lands, the ingest DAG
    (``split_by`` "volume") makes one dataset per volume, and the replay DAG maps the volumes' replays
    over the two workers, a few small volumes to a task (``task_requests`` 1,000; 437 requests a
    volume on average): fewer tasks than volumes, more than one; every volume's requests, hit ratios
    and latency summary equal replaying the same split datasets in this process."""
    source = shared_path("traces", "disksim", "tpcc-small.trace")
    scenario = ["vnx2-mcx"]
    expected = in_process(tmp_path / "serial", [source], scenario, split=True)
    root, state, tis, took = on_celery(tmp_path, [source], replay_toml(scenario, 1_000), {"split_by": "volume"})
    assert state == "success", tis
    [whole] = [t for t in list_traces(root) if t.split_from is None]
    volumes = sorted(whole.manifest["volumes"])
    assert len(volumes) == 16 and sorted(t.split_from for t in list_traces(root) if t.split_from) == [whole.trace_id] * 16
    # the volumes packed into 7-15 replay tasks (<= 1,000 requests each but a larger volume alone), none
    # of the whole trace, on both workers
    replays = [t for t in tis if t[0] == "replay"]
    assert 7 <= len(replays) < len(volumes) and {t[2] for t in replays} == {"success"}
    assert all(n > 0 for n in took), took
    # ingest: discover, ingest (and split), validate, publish, summary; replay: plan, volumes, the replays, load,
    # summary
    assert sum(took) == 5 + 4 + len(replays)
    rows, intervals = query(root, PER_VOLUME).rows(), query(root, INTERVALS).rows()
    assert [r[0] for r in rows] == volumes and len(intervals) == len(volumes)
    assert sum(r[4] for r in rows) == whole.manifest["rows_accepted"] == 6_999
    assert [rows, intervals] == expected
