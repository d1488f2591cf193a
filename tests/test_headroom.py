"""Headroom (``pipelines.headroom``): time-compressed replays, the search, the growth date, ``size``."""

from __future__ import annotations

import datetime as dt
import json
import math

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.catalog import find_trace
from pipelines.headroom import STEPS, headroom, headroom_line, lasts, parse_growth
from pipelines.ingest import ingest_file
from pipelines.replay import replay_frames
from pipelines.whatif import parse_target
from replay.scenario import load
from traces import synth

GIB = 1 << 30


def test_growth_rates_and_the_month_a_headroom_lasts_to():
    assert parse_growth("30%/year") == 30.0 and parse_growth(" 12.5 % ") == 12.5
    with pytest.raises(ValueError, match=r"growth 'fast': expected a yearly rate such as 30%/year"):
        parse_growth("fast")
    # hand: 2x at 30 %/year is ln 2 / ln 1.3 = 2.64 years: 32 months after November 2026
    years, month = lasts(2.0, 30.0, dt.date(2026, 11, 26))
    assert years == pytest.approx(math.log(2) / math.log(1.3)) and month == "2029-07"
    assert lasts(1.0, 30.0, dt.date(2026, 11, 26)) == (0.0, "2026-11")


def test_the_search_steps_up_then_bisects_between_the_last_met_and_the_first_missed():
    sc = load("vnx5400", ["replay.mode='open'"])
    seen = []

    def replay(s, label):  # a model whose p95 is 2 ms x the load factor
        seen.append(s.replay.load_factor)
        return {"latency_p95_ms": 2.0 * s.replay.load_factor, "run_id": label}

    h = headroom(None, None, sc, [parse_target("p95_ms<=5")], replay, growth_pct=30.0, today=dt.date(2026, 11, 26))
    # 1.25, 1.5, 2 meet (2.5 .. 4 ms), 3 misses (6 ms); then 2.5 meets (5 ms), 2.75 and 2.625 miss
    assert seen == [1.25, 1.5, 2.0, 3.0, 2.5, 2.75, 2.625]
    assert (h.load_factor, h.fails_at) == (2.5, 2.625)
    assert [r["meets"] for r in h.tried] == [True, True, True, True, False, False, False]
    assert h.years == pytest.approx(math.log(2.5) / math.log(1.3)) and h.runs_out == "2030-05"
    assert headroom_line(h.as_dict()) == ("headroom: meets the targets up to 2.5x the trace's load, misses at "
                                          "2.625x; at 30 %/year growth that lasts 3.5 years (to 2030-05)")
    # a configuration that never misses: the last step, said so
    h = headroom(None, None, sc, [parse_target("p95_ms<=100")], replay)
    assert (h.load_factor, h.fails_at) == (STEPS[-1], None)
    assert "8x still meets" in headroom_line(h.as_dict())
    # closed loop: not measured, and why
    h = headroom(None, None, sc.with_replay(mode="closed", outstanding=16), [parse_target("p95_ms<=5")], replay)
    assert h.load_factor is None and "open loop" in h.note


def test_load_factor_replays_the_same_requests_faster():
    n = 500
    df = pl.DataFrame({"ts_ns": [i * 10_000_000 for i in range(n)], "volume": ["v"] * n, "op": ["read"] * n,
                       "offset": [(i * 7919 % 100_000) * 8192 for i in range(n)], "size": [8192] * n})
    sc = load("vnx5400", ["replay.mode='open'"])
    base = replay_frames([df], sc, "t", total=n).summary
    fast = replay_frames([df], sc.with_replay(load_factor=2.0), "t", total=n).summary
    # 10 ms apart: ~100 IOPS (first arrival to last completion); twice the load: the same 500 requests
    # in half the time
    assert base["iops"] == pytest.approx(100, rel=0.01) and fast["iops"] == pytest.approx(2 * base["iops"], rel=0.01)
    assert fast["requests"] == base["requests"] == n
    with pytest.raises(ValueError, match="load_factor must be"):
        sc.with_replay(load_factor=0.0)


def test_size_reports_the_answers_headroom_and_when_growth_uses_it(tmp_path):
    from pipelines.cli import app

    src = tmp_path / "rr.parquet"
    synth.write(synth.pattern("randread-4k", requests=100_000, region_bytes=8 * GIB, volume="lun-rr",
                              distribution="zipf:0.9"), src)
    data = tmp_path / "data"
    trace = find_trace(data, ingest_file(src, data).trace_id)
    args = ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", "dram.cache_bytes=64MiB,512MiB", "--target",
            "mean_ms<=6.5", "--growth", "30%/year", "--no-report", "--data-dir", str(data)]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    h = doc["summary"]["headroom"]
    assert doc["chosen"] == "dram.cache_bytes=512MiB" and h == doc["headroom"]
    # every factor up to load_factor met the target (1.0: the trace itself), the one it names missed it
    met = [t for t in h["tried"] if t["meets"]]
    assert all(t["latency_mean_ms"] <= 6.5 for t in met)
    assert max([1.0] + [t["load_factor"] for t in met]) == h["load_factor"] >= 1.0
    assert h["fails_at"] is None or next(t for t in h["tried"] if t["load_factor"] == h["fails_at"])[
        "latency_mean_ms"] > 6.5
    assert h["growth_pct_per_year"] == 30.0 and len(h["runs_out"]) == 7
    text = CliRunner().invoke(app, args).stdout
    assert f"headroom: meets the targets up to {h['load_factor']:g}x the trace's load" in text
    page = tmp_path / "size.html"
    r = CliRunner().invoke(app, [*(a for a in args if a != "--no-report"), "--out", str(page)])
    assert r.exit_code == 0, r.output
    assert f"<b>Headroom.</b> meets the targets up to {h['load_factor']:g}x the trace&#x27;s load" in page.read_text()
    bad = CliRunner().invoke(app, [*(a if a != "30%/year" else "lots" for a in args)])
    assert bad.exit_code == 2 and "expected a yearly rate such as 30%/year" in bad.output
