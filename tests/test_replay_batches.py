"""The replay DAG's batches: the (trace, scenario) pairs one mapped replay task runs, so that short
replays do not each pay Airflow's per-task cost (``pipelines.orchestrate.replay_batches``)."""

from __future__ import annotations

import dataclasses

import pytest
from test_scheduler import data_root

from pipelines.orchestrate import (
    DEFAULT_TASK_REQUESTS,
    InputError,
    replay_batch,
    replay_batches,
    replay_config,
    replay_inputs,
    replay_plan,
)


def _pairs(*spec: tuple[str, int, int]) -> list[dict]:
    """(trace, requests, scenarios) -> the pairs replay_plan lists, trace by trace."""
    return [{"trace_id": t, "scenario": f"s{i}", "requests": n} for t, n, k in spec for i in range(k)]


def _shape(batches: list[list[dict]]) -> list[list[str]]:
    return [[f"{p['trace_id']}/{p['scenario']}" for p in b] for b in batches]


def test_pairs_of_one_trace_share_a_task_up_to_the_request_budget():
    # 4 traces of 1 M requests x 3 scenarios (the orchestration benchmark): one task per trace
    pairs = _pairs(("a", 1_000_000, 3), ("b", 1_000_000, 3), ("c", 1_000_000, 3), ("d", 1_000_000, 3))
    assert _shape(replay_batches(pairs, 4_000_000)) == [[f"{t}/s0", f"{t}/s1", f"{t}/s2"] for t in "abcd"]
    # 1.5 M each: 2 pairs fit in 4 M (3 M), a third would not (4.5 M)
    assert _shape(replay_batches(_pairs(("a", 1_500_000, 3)), 4_000_000)) == [["a/s0", "a/s1"], ["a/s2"]]
    # exactly at the budget still fits; a pair over it is a task alone; never across traces
    assert _shape(replay_batches(_pairs(("a", 2_000_000, 2), ("b", 9_000_000, 2), ("c", 1, 1)), 4_000_000)) == [
        ["a/s0", "a/s1"], ["b/s0"], ["b/s1"], ["c/s0"]]
    # 0: one task per pair, as the issue first asked
    assert _shape(replay_batches(pairs[:4], 0)) == [["a/s0"], ["a/s1"], ["a/s2"], ["b/s0"]]
    assert replay_batches([], 4_000_000) == []
    # the volumes of one trace split by volume share tasks too; another trace's never
    vols = [dict(p, split_from="w") for p in _pairs(("v1", 1_000, 2), ("v2", 1_000, 2), ("v3", 3_999_000, 1))]
    assert _shape(replay_batches([*vols, *_pairs(("x", 1, 1))], 4_000_000)) == [
        ["v1/s0", "v1/s1", "v2/s0", "v2/s1"], ["v3/s0"], ["x/s0"]]
    assert _shape(replay_batches(vols, 0)) == [["v1/s0"], ["v1/s1"], ["v2/s0"], ["v2/s1"], ["v3/s0"]]
    assert DEFAULT_TASK_REQUESTS == 4_000_000


def test_task_requests_is_read_and_checked_before_anything_is_mapped(tmp_path):
    assert replay_config(tmp_path).task_requests == DEFAULT_TASK_REQUESTS
    (tmp_path / "replay.toml").write_text("task_requests = 0\n")
    assert replay_config(tmp_path).task_requests == 0
    for bad in ("-1", '"4M"', "true", "1.5"):
        (tmp_path / "replay.toml").write_text(f"task_requests = {bad}\n")
        with pytest.raises(InputError, match=r"^replay configuration refused before any replay: task_requests: "
                                             r"expected an integer >= 0 \(0: one replay task per pair\), got "):
            replay_config(tmp_path)


def test_a_batch_runs_every_pair_and_reports_the_bad_ones_together(tmp_path):
    root = tmp_path / "data"
    data_root(root, traces=2, requests=2_000, scenarios=["vnx1-flare", "vnx2-mcx"])
    pairs, done, left = replay_plan(root, replay_config(root))
    assert (len(pairs), done, left) == (4, 0, 0) and {p["requests"] for p in pairs} == {2_000}
    batches = replay_batches(pairs, replay_config(root).task_requests)
    assert [len(b) for b in batches] == [2, 2] and all(len({p["trace_id"] for p in b}) == 1 for b in batches)
    # a run's limit counts the tasks the pairs make (Airflow's map length), not the pairs
    assert replay_plan(root, replay_config(root), limit=1) == (batches[0], 0, 2)
    one_each = dataclasses.replace(replay_config(root), task_requests=0)
    assert replay_plan(root, one_each, limit=3) == (pairs[:3], 0, 1)
    assert replay_inputs(batches[0]) == [f"traces/{batches[0][0]['trace_id']}/", "scenarios/",
                                         "results/array_runs/*/summary.json"]
    # an input error in the middle of a batch: the pairs after it still run, then it is raised
    bad = {"trace_id": batches[0][0]["trace_id"], "scenario": "../outside.toml", "requests": 2_000}
    with pytest.raises(InputError, match=r"^" + bad["trace_id"] + r" x \.\./outside\.toml: ") as e:
        replay_batch(root, [batches[0][0], bad, batches[0][1]])
    assert ";" not in str(e.value)  # one bad pair, one error
    assert len(list((root / "results" / "array_runs").glob("*/summary.json"))) == 2
    out = replay_batch(root, batches[0])  # the retry: both found done
    assert [r["already_done"] for r in out] == [True, True]
    assert [r["scenario"] for r in out] == ["vnx1-flare", "vnx2-mcx"]
    assert replay_plan(root, replay_config(root))[:2] == (batches[1], 2)
