"""Per-volume work mapped over the volumes of a real multi-volume trace (DiskSim's TPC-C sample,
16 devices): each volume's I/O skew counts are made on a scratch copy holding only that task's
declared inputs (as a worker with no shared disk would), merged by the load step, and equal to
``tiercast skew`` of the whole trace in one process."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import shared_path

from pipelines.analytics import skew_paths, skew_trace
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from pipelines.load import load, query
from pipelines.orchestrate import (
    InputError,
    merge_skew,
    replay_config,
    skew_inputs,
    skew_plan,
    skew_volume,
)

SLICES = [1 << 20, 64 << 20]


def copy_inputs(root: Path, patterns: list[str], dest: Path) -> Path:
    """Only what ``patterns`` (a file, or ``dir/``) name, copied from ``root`` to ``dest``."""
    for pattern in patterns:
        src = root / pattern
        if pattern.endswith("/"):
            shutil.copytree(src, dest / pattern, dirs_exist_ok=True)
        else:
            (dest / pattern).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / pattern)
    return dest


@pytest.fixture(scope="module")
def tpcc(tmp_path_factory):
    root = tmp_path_factory.mktemp("per-volume") / "data"
    trace_id = ingest_file(shared_path("traces", "disksim", "tpcc-small.trace"), root, fmt="disksim",
                           validate="off").trace_id
    return root, find_trace(root, trace_id)


def test_skew_mapped_over_volumes_equals_the_whole_trace_in_one_process(tpcc, tmp_path):
    root, trace = tpcc
    assert len(trace.manifest["volumes"]) == 16
    (root / "replay.toml").write_text(f"scenarios = ['vnx2-mcx']\nskew_slice_bytes = {SLICES}\n")
    items = skew_plan(root, replay_config(root))
    assert len(items) == 16 * len(SLICES)
    assert {i["volume"] for i in items} == set(trace.manifest["volumes"])
    counted = []
    for k, item in enumerate(items):  # each on its own "worker": only its declared inputs
        worker = copy_inputs(root, skew_inputs(item), tmp_path / f"worker{k}")
        assert len(list(worker.rglob("part-*.parquet"))) == len(list(
            (trace.path / Path(skew_inputs(item)[1]).name).glob("part-*.parquet")))
        done = skew_volume(worker, item)
        (root / done["part"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(worker / done["part"], root / done["part"])
        counted.append(done)
    assert sum(c["rows"] for c in counted) == len(SLICES) * trace.manifest["rows_accepted"] == 2 * 6999
    written = merge_skew(root, counted)
    assert written == [skew_paths(root, trace, s)["summary"].relative_to(root).as_posix() for s in SLICES]
    assert not (root / "results" / ".skew_parts").exists()  # the parts are gone once merged
    single = tmp_path / "single"
    for s in SLICES:
        whole = skew_trace(trace, s, data_dir=single)
        mapped = {k: pl.read_parquet(p) for k, p in skew_paths(root, trace, s).items()}
        for k, p in skew_paths(single, trace, s).items():
            assert mapped[k].drop("computed_at", strict=False).equals(pl.read_parquet(p).drop("computed_at", strict=False)), k
        mapped = mapped["summary"]
        assert mapped["ios"][0] == whole.ios and mapped["slices"][0] == whole.slices
    # the merged skew is what the warehouse loads; a second plan has nothing left to count
    load(root)
    assert query(root, "select slice_bytes, ios from skew order by 1").rows() == [
        (s, skew_trace(trace, s).ios) for s in SLICES]
    assert skew_plan(root, replay_config(root)) == []


def test_a_missing_volume_keeps_the_trace_waiting_and_bad_slices_are_refused(tpcc, tmp_path):
    root = copy_inputs(tpcc[0], ["traces/"], tmp_path / "data")
    (root / "replay.toml").write_text("skew_slice_bytes = [1048576]\n")
    items = skew_plan(root, replay_config(root))
    counted = [skew_volume(root, item) for item in items[:-1]]  # one volume's task failed
    assert merge_skew(root, counted) == []
    assert len(list((root / "results" / ".skew_parts").rglob("*.parquet"))) == 15
    counted.append(skew_volume(root, items[-1]))  # its retry
    assert len(merge_skew(root, counted)) == 1
    (root / "replay.toml").write_text("skew_slice_bytes = [0]\n")
    with pytest.raises(InputError, match=r"skew_slice_bytes: expected a list of positive integers \(bytes\), got \[0\]"):
        replay_config(root)
