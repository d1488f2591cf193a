"""``tiercast replay``, ``tiercast sweep`` and ``tiercast scenarios`` end to end on ingested traces."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from test_array import flood_and_app, two_groups
from typer.testing import CliRunner

from pipelines.catalog import find_trace
from pipelines.cli import app
from pipelines.ingest import ingest_file
from pipelines.replay import array_model_version, replay_frames, run_id
from replay.scenario import load, loads
from traces import synth

SUMMARY_KEYS = ("run_id", "requests", "iops", "mb_per_s", "latency_mean_ms", "latency_p95_ms", "latency_p99_ms",
                "read_hit_ratio", "write_hit_ratio", "flush_mb_per_s", "forced_flush_count",
                "forced_flush_stall_ms", "throttle_delay_sum_ms", "throttled_requests", "throttle_delay_mean_ms",
                "stall_delay_sum_ms", "stalled_requests", "stall_delay_mean_ms", "model_version")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """Two volumes: a database-pattern LUN and a random-write LUN, open loop at 2,000 + 600 IOPS."""
    d = tmp_path_factory.mktemp("array-cli")
    a = synth.pattern("database", requests=30_000, region_bytes=4 << 30, volume="lun-db", seed=1, iops=2000)
    b = synth.pattern("randwrite-8k", requests=9_000, region_bytes=2 << 30, volume="lun-rw", seed=2, iops=600)
    df = pl.concat([synth.generate(a), synth.generate(b)]).sort("ts_ns", "volume")
    df.write_parquet(d / "two.parquet")
    res = ingest_file(d / "two.parquet", d, validate="off")
    return d, res.trace_id, df


def _run(*args):
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r


def test_replay_json_parquet_and_idempotent_reruns(trace):
    d, tid, df = trace
    s = json.loads(_run("replay", tid[:10], "--scenario", "vnx5400", "--data-dir", str(d), "--json").stdout)
    for k in SUMMARY_KEYS:
        assert k in s, k
    sc = load("vnx5400")
    assert s["run_id"] == run_id(tid, sc, find_trace(d, tid).data_version) and s["scenario_hash"] == sc.hash and not s["already_done"]
    assert s["requests"] == 39_000 and s["reads"] + s["writes"] == 39_000
    assert s["not_yet_modelled"] == ""
    # the same replay through the plain function, without the catalog, gives the same numbers
    direct = replay_frames([df], sc, tid, total=df.height).summary
    for k in ("iops", "latency_mean_ms", "latency_p99_ms", "read_hit_ratio", "write_hit_ratio", "flush_mb_per_s"):
        assert direct[k] == pytest.approx(s[k], rel=1e-12), k
    root = d / "results"
    summary = pl.read_parquet(root / "array_runs" / s["run_id"] / "summary.parquet")
    assert summary["requests"][0] == 39_000 and summary["run_id"][0] == s["run_id"]
    vol = pl.read_parquet(root / "array_volume_intervals" / f"{s['run_id']}.parquet")
    rg = pl.read_parquet(root / "array_rg_intervals" / f"{s['run_id']}.parquet")
    assert set(vol["volume"].unique()) == {"lun-db", "lun-rw"}
    assert set(rg["rg"].unique()) == {"rg0", "rg1", "rg2"}
    # per-interval sums add up to the run's totals
    for t in (vol, rg):
        assert t["requests"].sum() == 39_000
        assert t["write_hit_pages"].sum() == s["write_hit_pages"]
        assert t["read_hit_pages"].sum() == s["read_hit_pages"]
    assert vol.filter(pl.col("volume") == "lun-rw")["reads"].sum() == 0
    assert rg["flush_pages"].sum() == s["flush_pages"] and rg["backend_write_ios"].sum() == s["backend_write_ios"]
    for col in ("iops", "mb_per_s", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms",
                "dirty_pct_max", "flush_pages_per_s", "flush_mb_per_s", "stall_delay_sum_ms", "stalled_requests",
                "throttle_delay_sum_ms", "throttled_requests",
                "forced_flushes", "forced_flush_stall_ms", "utilization", "pre_cleaning_age_ms"):
        assert col in rg.columns, col
    assert (rg["latency_p50_ms"] <= rg["latency_p99_ms"] * 1.0001).all()
    assert (rg["latency_p99_ms"] <= rg["latency_max_ms"] * 1.011).all()  # histogram buckets are 1 % wide
    # a re-run finds the finished run
    again = json.loads(_run("replay", tid, "--scenario", "vnx5400", "--data-dir", str(d), "--json").stdout)
    assert again["already_done"] and again["run_id"] == s["run_id"] and again["iops"] == s["iops"]
    text = _run("replay", tid, "--scenario", "vnx5400", "--data-dir", str(d)).stdout
    for word in ("iops", "latency", "read_hit_ratio", "forced flushes", "throttled requests / delay sum ms",
                 "already done"):
        assert word in text


def test_replay_from_a_scenario_file_and_errors(trace, tmp_path):
    d, tid, _ = trace
    text = open(load("vnx1-flare").source).read()
    f = tmp_path / "mine.toml"
    f.write_text(text.replace('cache_bytes = "4GiB"', 'cache_bytes = "1GiB"'))
    s = json.loads(_run("replay", tid, "--scenario", str(f), "--data-dir", str(d), "--json").stdout)
    assert s["dram_mode"] == "flare" and s["write_cache_pages"] == (512 << 20) // 8192  # 1 GiB - 512 MiB read
    assert s["read_cache_pages"] == (512 << 20) // 8192
    f.write_text(text.replace('cache_bytes = "4GiB"', 'cache_bytes = "256MiB"'))
    r = CliRunner().invoke(app, ["replay", tid, "--scenario", str(f), "--data-dir", str(d)])
    assert r.exit_code != 0 and "read cache 536870912 B leaves no write cache" in str(r.exception)
    r = CliRunner().invoke(app, ["replay", tid, "--scenario", "nosuch", "--data-dir", str(d)])
    assert r.exit_code != 0 and "no scenario preset 'nosuch'" in str(r.exception)


def test_sweep_json_rows(trace):
    d, tid, _ = trace
    res = json.loads(_run("sweep", tid, "--scenario", "vnx2-mcx", "--outstanding", "1,8", "--requests", "20000",
                          "--data-dir", str(d), "--json").stdout)
    rows = res["rows"]
    assert [r["outstanding"] for r in rows] == [1, 8]
    for r in rows:
        assert set(r) >= {"outstanding", "iops", "mb_per_s", "latency_mean_ms", "latency_p95_ms"}
        # sanity check (an identity of any closed loop, not a model result): Little's law N = IOPS x
        # response time holds only if IOPS and latency are measured over the same requests
        assert r["iops"] * r["latency_mean_ms"] / 1000 == pytest.approx(r["outstanding"], rel=0.05)
    assert rows[1]["iops"] > rows[0]["iops"]
    saved = list((d / "results" / "array_sweeps").glob("*.parquet"))
    assert [str(p) for p in saved] == [res["results_path"]] and res["results_path"].endswith(f"{res['sweep_id']}.parquet")
    stored = pl.read_parquet(saved[0])
    assert stored["outstanding"].to_list() == [1, 8] and set(stored["model_version"]) == {array_model_version()}
    text = _run("sweep", tid, "--scenario", "vnx2-mcx", "--outstanding", "1,8", "--requests", "20000",
                "--data-dir", str(d)).stdout
    assert text.rstrip().splitlines()[-1] == f"results {res['results_path']}"
    lines = text.splitlines()  # the decision columns in 80 columns; --wide adds MB/s and the hit ratios
    head = next(i for i, ln in enumerate(lines) if ln.startswith("outstanding"))
    assert lines[head].split() == ["outstanding", "IOPS", "mean", "ms", "p95", "ms", "p99", "ms"]
    assert lines[head + 2].split()[:2] == ["1", f"{rows[0]['iops']:,.0f}"] and lines[head - 1].startswith("vnx2-mcx on ")
    assert all(len(ln) <= 80 for ln in lines[head:head + 4])
    wide = _run("sweep", tid, "--scenario", "vnx2-mcx", "--outstanding", "1,8", "--requests", "20000",
                "--data-dir", str(d), "--wide").stdout
    assert "MB/s" in wide and "write hit" in wide and "MB/s" not in text


def test_scenarios_lists_the_presets():
    rows = json.loads(_run("scenarios", "--json").stdout)
    by = {r["name"]: r for r in rows}
    assert {"vnx5400", "vnx1-flare", "vnx2-mcx", "xs5224d"} <= set(by)
    assert by["vnx5400"]["drives"] == {"sas10k": 15} and by["vnx1-flare"]["dram_mode"] == "flare"
    text = _run("scenarios").stdout  # 80 columns: name, mode, cache, description; --wide the RAID groups
    assert "vnx2-mcx" in text and "RAID 5 x5" not in text and max(len(ln) for ln in text.splitlines()) <= 80
    assert "RAID 5 x5" in _run("scenarios", "--wide").stdout
    params = _run("scenarios", "vnx2-mcx").stdout
    assert "overhead_us" in params and "seed-fit" in params and max(len(ln) for ln in params.splitlines()) <= 80
    assert "s000_2gb" in _run("scenarios", "vnx2-mcx", "--wide").stdout  # the reference names the fitted figure


def _one_line(output: str) -> str:
    """The CLI's error text without the box drawing and line wrapping of the terminal."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", output)


@pytest.mark.parametrize("args, message", [
    (["replay", "--outstanding", "0"], "Invalid value for '--outstanding': must be an integer from 1 to 1048576, got 0"),
    (["replay", "--outstanding", "-4"], "Invalid value for '--outstanding': must be an integer from 1 to 1048576, got -4"),
    (["sweep", "--warmup", "150"], "Invalid value for '--warmup': must be a number from 0 to 99, got 150"),
    (["sweep", "--warmup", "-50"], "Invalid value for '--warmup': must be a number from 0 to 99, got -50"),
    (["sweep", "--warmup", "nan"], "Invalid value for '--warmup': must be a finite number from 0 to 99, got nan"),
    (["sweep", "--outstanding", "0,4"],
     "Invalid value for '--outstanding': expects integers from 1 to 1048576 such as 12,24,48, got '0,4'"),
    (["sweep", "--outstanding", ""],
     "Invalid value for '--outstanding': expects integers from 1 to 1048576 such as 12,24,48, got ''"),
    (["sweep", "--requests", "0"], "Invalid value for '--requests': must be an integer >= 1, got 0"),
])
def test_nonsense_options_are_refused_with_exit_2_and_nothing_stored(trace, tmp_path, args, message):
    _, tid, _ = trace
    d = tmp_path / "empty-data"  # the trace is not even looked up: options are checked first
    r = CliRunner().invoke(app, [args[0], tid, "--scenario", "vnx2-mcx", *args[1:], "--data-dir", str(d)])
    assert r.exit_code == 2, r.output
    assert message in _one_line(r.output)
    assert not d.exists()


def test_delay_sums_counts_and_means_agree():
    """A write flood that MCx throttles: the summary's delay sum, count and mean agree with each
    other and with the per-interval tables (no warm-up: one window)."""
    rows, _ = flood_and_app(5000)
    df = pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")
    res = replay_frames([df], loads(two_groups("mcx"), "flood.toml"), "flood", total=df.height)
    s = res.summary
    assert 1000 < s["throttled_requests"] < s["measured_requests"] == df.height
    assert s["throttle_delay_sum_ms"] > 1000  # more than the 0.5 s the flood lasts: a sum over requests
    assert s["throttle_delay_mean_ms"] == pytest.approx(s["throttle_delay_sum_ms"] / s["throttled_requests"])
    assert s["throttle_delay_sum_ns"] == pytest.approx(s["throttle_delay_sum_ms"] * 1e6)  # the model's counter
    for t in (res.volume_intervals, res.rg_intervals):
        assert t["throttled_requests"].sum() == s["throttled_requests"]
        assert t["throttle_delay_sum_ms"].sum() == pytest.approx(s["throttle_delay_sum_ms"])
        assert t["stalled_requests"].sum() == s["stalled_requests"] == 0  # MCx never stalls the array
    assert s["stall_delay_mean_ms"] == 0.0
    assert "throttled_ms" not in s and "throttled_ms" not in res.volume_intervals.columns
