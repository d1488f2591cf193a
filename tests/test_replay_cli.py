"""``tiercast simulate`` and ``tiercast mrc`` end to end on an ingested synthetic trace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import ingest_file
from replay.kernels import cache_model
from replay.pages import SegmentBuilder
from replay.version import CACHE_MODEL, model_version
from traces import synth


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-data")
    w = synth.Workload(distribution="zipf:1.0", requests=20_000, region_bytes=1 << 30, block_size_bytes=8192,
                       align_bytes=4096, seed=3, volume="vol0")
    synth.write(w, d / "w.parquet")
    res = ingest_file(d / "w.parquet", d, validate="off")
    return d, res.trace_id, synth.generate(w)


def _oracle(df: pl.DataFrame, policy: str, cache_bytes: int) -> dict:
    model = cache_model(policy, cache_bytes, 4096)
    state = model.new_state()
    model.replay(state, SegmentBuilder(4096).build(df))
    return model.counters(state)


def test_simulate_json_and_parquet(trace):
    d, tid, df = trace
    r = CliRunner().invoke(app, ["simulate", tid[:8], "--policy", "s3fifo", "--cache-size", "8MiB",
                                 "--page-size", "4KiB", "--data-dir", str(d), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    want = _oracle(df, "s3fifo", 8 << 20)
    assert s["requests"] == 20_000 and s["pages"] == want["pages"] == 40_000  # 8 KiB on 4 KiB alignment
    assert s["hits"] == want["hits"] and 0 < s["hit_ratio"] < 1
    assert s["byte_hit_ratio"] == want["byte_hit_ratio"] and s["policy"] == "s3fifo"
    out = d / "results" / "simulate" / tid / "s3fifo-8388608-4096"
    stored = pl.read_parquet(out / "summary.parquet")
    assert stored["hits"][0] == s["hits"]
    assert stored["model_version"][0] == s["model_version"] == model_version(CACHE_MODEL)
    iv = pl.read_parquet(out / "intervals.parquet")
    assert iv["requests"].sum() == 20_000 and iv["hits"].sum() == s["hits"]
    # text output names the figures a user asked for
    r = CliRunner().invoke(app, ["simulate", tid, "--cache-size", "8MiB", "--data-dir", str(d)])
    assert r.exit_code == 0
    for word in ("requests", "pages", "hits", "hit_ratio", "byte_hit_ratio"):
        assert word in r.stdout


def test_mrc_json_matches_simulate(trace):
    d, tid, df = trace
    r = CliRunner().invoke(app, ["mrc", tid, "--page-size", "4KiB", "--sizes", "1MiB,8MiB,64MiB",
                                 "--data-dir", str(d), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    curve = res["rows"]
    assert [c["cache_bytes"] for c in curve] == [1 << 20, 8 << 20, 64 << 20]
    assert res["results_path"] == str(d / "results" / "mrc" / tid / "exact-4096.parquet")
    assert pl.read_parquet(res["results_path"])["model_version"].to_list() == [res["model_version"]] * 3
    for c in curve:
        want = _oracle(df, "lru", c["cache_bytes"])
        assert c["hit_ratio"] == want["hit_ratio"] and c["byte_hit_ratio"] == want["byte_hit_ratio"]
    r = CliRunner().invoke(app, ["mrc", tid, "--data-dir", str(d), "--method", "shards", "--rate", "0.1"])
    assert r.exit_code == 0, r.output
    assert "shards at sample rate 0.1" in r.stdout and len(r.stdout.splitlines()) == 2 + 20 + 1
    path = d / "results" / "mrc" / tid / "shards-4096-0.1.parquet"
    assert r.stdout.splitlines()[-1] == f"results {path}"
    rows = pl.read_parquet(path)
    assert rows.height == 20 and set(rows["method"]) == {"shards"}
    r = CliRunner().invoke(app, ["mrc", tid, "--data-dir", str(d), "--method", "shards", "--rate", "0.1",
                                 "--seeds", "3", "--sizes", "1MiB,8MiB,64MiB", "--json"])
    assert r.exit_code == 0, r.output
    averaged = json.loads(r.stdout)["rows"]
    assert [abs(a["hit_ratio"] - c["hit_ratio"]) < 0.05 for a, c in zip(averaged, curve, strict=True)] == [True] * 3


def test_errors_are_one_line(trace):
    d, tid, _ = trace
    env = {**os.environ, "TIERCAST_DATA_DIR": str(d)}
    p = subprocess.run([sys.executable, "-c", "from pipelines.cli import main; main()", "simulate", tid,
                        "--policy", "lfu"], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "unknown cache policy 'lfu'; choose one of lru, fifo, clock, arc, s3fifo" in p.stderr
    r = CliRunner().invoke(app, ["mrc", "nosuchtrace", "--data-dir", str(d)])
    assert isinstance(r.exception, LookupError) and "no ingested trace 'nosuchtrace'" in str(r.exception)


def _one_line(output: str) -> str:
    """The CLI's error text without the box drawing and line wrapping of the terminal."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", output)


@pytest.mark.parametrize("args, message", [
    (["mrc", "--rate", "0.1"], "Invalid value for '--rate': applies to --method shards only"),
    (["mrc", "--max-pages", "4096"], "Invalid value for '--max-pages': applies to --method shards only"),
    (["mrc", "--seeds", "3"], "Invalid value for '--seeds': applies to --method shards only"),
    (["mrc", "--method", "shards", "--seeds", "0"], "Invalid value for '--seeds': must be an integer >= 1, got 0"),
    (["mrc", "--method", "shards", "--seeds", "2", "--max-pages", "100"],
     "Invalid value for '--seeds': applies to fixed-rate SHARDS only (not with --max-pages)"),
    (["mrc", "--method", "shards", "--seeds", "3", "--rate", "0.5"],
     "Invalid value for '--seeds': --seeds x --rate must be at most 1"),
    (["mrc", "--sizes", ""], "Invalid value for '--sizes': expects one or more sizes such as 1GiB,2GiB,4GiB, got ''"),
    (["mrc", "--sizes", ","], "Invalid value for '--sizes': expects one or more sizes such as 1GiB,2GiB,4GiB, got ','"),
    (["mrc", "--method", "shards", "--rate", "0"], "Invalid value for '--rate': must be a number > 0 and <= 1, got 0"),
    (["mrc", "--method", "shards", "--rate", "1.5"], "Invalid value for '--rate': must be a number > 0 and <= 1, got 1.5"),
    (["mrc", "--method", "shards", "--max-pages", "-1"], "Invalid value for '--max-pages': must be an integer >= 0, got -1"),
    (["mrc", "--page-size", "3000"],
     "Invalid value for '--page-size': page size 3000 B must be a power of two from 512 B to 1 GiB"),
    (["simulate", "--cache-size", "-8GiB"], "Invalid value for '--cache-size': not a size: '-8GiB'"),
    (["simulate", "--cache-size", "0"], "Invalid value for '--cache-size': must be a positive size such as 8GiB, got '0'"),
    (["simulate", "--interval", "0s"], "Invalid value for '--interval': must be a positive duration such as 60s"),
])
def test_nonsense_options_are_refused_with_exit_2_and_nothing_stored(trace, tmp_path, args, message):
    _, tid, _ = trace
    d = tmp_path / "empty-data"  # the trace is not even looked up: options are checked first
    r = CliRunner().invoke(app, [args[0], tid, *args[1:], "--data-dir", str(d)])
    assert r.exit_code == 2, r.output
    assert message in _one_line(r.output)
    assert not d.exists()
