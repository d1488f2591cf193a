"""An object-store data root: an S3-compatible server (moto's ThreadedMotoServer, a real HTTP
server) holds ``s3://tiercast/root``. The DAG steps run on it through ``pipelines.object_store``
(each stages its declared inputs into a scratch directory and uploads what it wrote), and give
the same warehouse as the same steps on a local data root; DuckDB reads the trace Parquet in the
store through the registered fsspec filesystem."""

from __future__ import annotations

import json
import logging
import urllib.request

import pytest
from conftest import require_module, shared_path
from standalone import free_port
from test_celery import INTERVALS, PER_VOLUME, SCENARIOS, WHATIF, in_process, landed_traces

from pipelines import object_store
from pipelines.analytics import skew_trace
from pipelines.catalog import list_traces
from pipelines.load import load, query
from pipelines.orchestrate import (
    LOAD_INPUTS,
    PLAN_INPUTS,
    ingest_inputs,
    ingest_landed,
    replay_config,
    replay_inputs,
    replay_pair,
    replay_plan,
    split_inputs,
    split_landed,
    under_root,
)

URL = "s3://tiercast/root"
SLICE = 1 << 20
SKEW = "select trace_id, slice_bytes, slices, ios, skew_io_share, flash_bytes_80pct from skew order by 1"


@pytest.fixture()
def s3(monkeypatch):
    """A moto S3 server on a free port with an empty bucket ``tiercast``; the fsspec filesystem."""
    server_mod = require_module("moto.server", "moto[server] is installed by `make venv` (extra 'dev')")
    require_module("s3fs", "s3fs is installed by `make venv` (extra 'airflow')")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                 object_store.ENV_ENDPOINT: f"http://127.0.0.1:{port}"}.items():
        monkeypatch.setenv(k, v)
    # the server's state lives in this process (moto's backends): start from an empty store
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/moto-api/reset", method="POST")).close()
    fs, _ = object_store.filesystem(URL)
    fs.mkdir("tiercast")
    try:
        yield fs
    finally:
        fs.clear_instance_cache()
        server.stop()


def dag_steps_on_the_store(url: str, sources) -> None:
    """What the ingest and replay DAGs' tasks do, each staged on its own scratch directory."""
    fs, base = object_store.filesystem(url)
    for src in sources:
        fs.put_file(str(src), f"{base}/landing/{src.name}")
    for src in sources:
        with object_store.staged(url, ingest_inputs(f"landing/{src.name}")) as local:
            ingest_landed(local / "landing" / src.name, local, under_root(local, "", "quarantine", "q"),
                          under_root(local, "", "archive", "a"), supersede=False)  # as the DAG does on a store
    with object_store.staged(url, PLAN_INPUTS) as local:
        pairs, _, _ = replay_plan(local, replay_config(local))
    assert len(pairs) == 4
    for pair in pairs:
        with object_store.staged(url, replay_inputs([pair])) as local:
            replay_pair(local, pair)
    with object_store.staged(url, LOAD_INPUTS) as local:
        load(local)


def test_dag_steps_on_an_s3_data_root_equal_a_local_root(s3, tmp_path):
    sources = landed_traces(tmp_path / "src", 2, 20_000)
    expected = in_process(tmp_path / "local", sources, SCENARIOS)
    s3.pipe("tiercast/root/replay.toml", f"scenarios = {SCENARIOS!r}\n".replace("'", '"').encode())
    dag_steps_on_the_store(URL, sources)

    assert [object_store.query(URL, WHATIF).rows(), object_store.query(URL, INTERVALS).rows()] == expected
    # the requests stay in the store: DuckDB reads them there through the fsspec filesystem
    in_store = object_store.query(URL, "select count(*), sum(size) from requests").rows()
    assert in_store == object_store.query(URL, "select sum(requests), sum(bytes) from trace_volumes").rows()
    assert in_store[0][0] == 40_000
    names = {p.rsplit("/", 1)[-1] for p in s3.find("tiercast/root")}
    assert not any(p.startswith("tiercast/root/landing/") for p in s3.find("tiercast/root"))  # archived
    assert {"lun0.parquet", "lun1.parquet", "tiercast.duckdb", "summary.json", "manifest.json"} <= names
    # downloaded files keep the objects' mtimes: a second load on another scratch loads nothing
    with object_store.staged(URL, LOAD_INPUTS) as local:
        again = load(local)
    assert again.loaded == {} and again.removed == {} and again.unchanged > 0


def test_a_trace_split_by_volume_on_an_s3_data_root_replays_its_volumes_as_a_local_root(s3, tmp_path):
    """Issue 29 item 4 on an object store: the ingest DAG's split step (``split_by`` "volume") staged
    from ``s3://`` like every task, then the replay plan takes the 16 volumes of the DiskSim TPC-C
    sample, not the whole trace, and the warehouse's per-volume rows equal a local root's."""
    source = shared_path("traces", "disksim", "tpcc-small.trace")
    scenario = ["vnx2-mcx"]
    expected = in_process(tmp_path / "local", [source], scenario, split=True)
    s3.pipe("tiercast/root/replay.toml", f"scenarios = {scenario!r}\n".replace("'", '"').encode())
    fs, base = object_store.filesystem(URL)
    fs.put_file(str(source), f"{base}/landing/{source.name}")
    with object_store.staged(URL, ingest_inputs(f"landing/{source.name}")) as local:
        result = ingest_landed(local / "landing" / source.name, local, under_root(local, "", "quarantine", "q"),
                               under_root(local, "", "archive", "a"), supersede=False)
    with object_store.staged(URL, split_inputs(result)) as local:
        split = split_landed(local, result, "volume")
    assert len(split["parts"]) == 16 and {p["split_from"] for p in split["parts"]} == {result["id"]}
    with object_store.staged(URL, PLAN_INPUTS) as local:
        pairs, _, _ = replay_plan(local, replay_config(local))
    assert sorted(p["trace_id"] for p in pairs) == sorted(p["id"] for p in split["parts"])
    for pair in pairs:
        with object_store.staged(URL, replay_inputs([pair])) as local:
            replay_pair(local, pair)
    with object_store.staged(URL, LOAD_INPUTS) as local:
        load(local)
    assert [object_store.query(URL, PER_VOLUME).rows(), object_store.query(URL, INTERVALS).rows()] == expected
    assert sum(r[4] for r in expected[0]) == 6_999


def test_a_failed_step_uploads_nothing_and_markers_go_last(s3, tmp_path):
    before = sorted(s3.find("tiercast"))
    with pytest.raises(RuntimeError, match="replay failed"):
        with object_store.staged(URL, []) as local:
            (local / "results" / "array_runs" / "r1").mkdir(parents=True)
            (local / "results" / "array_runs" / "r1" / "summary.parquet").write_bytes(b"x")
            raise RuntimeError("replay failed")
    assert sorted(s3.find("tiercast")) == before
    fs, base = object_store.filesystem(URL)
    local = tmp_path / "out"
    (local / "traces" / "t1" / "volume=a").mkdir(parents=True)
    for rel in ("traces/t1/manifest.json", "traces/t1/volume=a/part-0.parquet", "traces/.tmp-x/junk",
                "traces/t1/validation.json"):
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_text("{}")
    done = object_store.push(fs, base, local, {})
    assert done["uploaded"] == ["traces/t1/validation.json", "traces/t1/volume=a/part-0.parquet",
                                "traces/t1/manifest.json"]
    assert done["deleted"] == []


def test_the_dags_run_on_an_s3_data_root_and_equal_a_local_root(s3, tmp_path):
    """``dag.test()`` of the three DAGs with ``TIERCAST_DATA_DIR=s3://...``: every task stages its
    inputs from the store and uploads its outputs (no shared disk), a bad file is quarantined in
    the store, and the warehouse equals the same steps on a local root."""
    require_module("airflow", "apache-airflow is installed by `make venv` (extra 'airflow')")
    from test_dags import run_airflow

    sources = landed_traces(tmp_path / "src", 2, 5_000)
    expected = in_process(tmp_path / "local", sources, SCENARIOS)
    local = tmp_path / "local"
    for t in list_traces(local):  # the skew, per trace in one process
        skew_trace(t, SLICE, data_dir=local)
    load(local)
    expected_skew = query(local, SKEW).rows()
    s3.pipe("tiercast/root/replay.toml", f"scenarios = {SCENARIOS!r}\nskew_slice_bytes = [{SLICE}]\n".replace(
        "'", '"').encode())
    for src in sources:
        s3.put_file(str(src), f"tiercast/root/landing/{src.name}")
    s3.pipe("tiercast/root/landing/garbage.bin", bytes(range(256)) * 12)
    out = run_airflow("""
import json
from airflow.utils import db
db.resetdb()
from airflow.models.pool import Pool
Pool.create_or_update_pool('tiercast_warehouse', 1, 'one DuckDB writer', include_deferred=False)
from airflow.dag_processing.dagbag import DagBag
bag = DagBag()
states = [str(bag.dags[d].test(run_conf=c).state) for d, c in (
    ('tiercast_ingest', {'stable_seconds': 0}), ('tiercast_replay', None), ('tiercast_report', None),
    ('tiercast_replay', None))]
print(json.dumps({'states': states}))
""", tmp_path, URL)
    # the garbage file fails its own ingest, so the ingest run is red; the rest goes on
    assert out["states"] == ["failed", "success", "success", "success"]
    assert [object_store.query(URL, WHATIF).rows(), object_store.query(URL, INTERVALS).rows()] == expected
    # the skew, mapped over the traces' volumes on the workers and merged by the load task
    assert len(expected_skew) == 2 and object_store.query(URL, SKEW).rows() == expected_skew
    listed = sorted(p.removeprefix("tiercast/root/") for p in s3.find("tiercast/root"))
    assert not [p for p in listed if p.startswith("landing/")]
    assert sorted(p.rsplit("/", 1)[-1] for p in listed if p.startswith("archive/")) == ["lun0.parquet", "lun1.parquet"]
    assert [p for p in listed if p.startswith("quarantine/")] == ["quarantine/garbage.bin",
                                                                  "quarantine/garbage.bin.error.json"]
    assert "unknown format" in json.loads(s3.cat("tiercast/root/quarantine/garbage.bin.error.json"))["error"]
    assert "reports/tiercast.html" in listed
    assert not [p for p in listed if ".cache/" in p or "/.tmp-" in p]  # scratch stays on the workers
    # each run's summary is one object; the failed ingest names its failure, recorded as one object too
    summaries = {p.split("/")[1]: json.loads(s3.cat(f"tiercast/root/{p}")) for p in listed
                 if p.startswith("runs/") and p.endswith(".json") and ".failures/" not in p}
    ingest = [v for k, v in summaries.items() if k == "tiercast_ingest"]
    assert len(ingest) == 1 and ingest[0]["new_datasets"] == 2
    assert [f["task_id"] for f in ingest[0]["failed"]] == ["ingest"]
    assert "unknown format" in ingest[0]["failed"][0]["error"]
    assert len([p for p in listed if ".failures/" in p]) == 2  # ingest[i] and its run's summary
