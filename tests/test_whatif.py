"""What-if answers: ``compare`` (scenarios side by side, runs reused) and ``size`` (the cheapest
variant meeting a target; the hit-ratio-curve pruning checked against an exhaustive search)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines import whatif
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from traces import synth

GIB = 1 << 30
#: 8 KiB cache sizes of the vnx5400 DRAM cache, cheapest first
DRAM_SIZES = "dram.cache_bytes=16MiB,32MiB,64MiB,128MiB,256MiB,512MiB,1GiB,2GiB"


@pytest.fixture(scope="module")
def zipf(tmp_path_factory):
    """100,000 4 KiB Zipf(0.9) random reads over 8 GiB, ingested."""
    d = tmp_path_factory.mktemp("whatif")
    src = d / "rr.parquet"
    synth.write(synth.pattern("randread-4k", requests=100_000, region_bytes=8 * GIB, volume="lun-rr",
                              distribution="zipf:0.9"), src)
    data = d / "data"
    return data, find_trace(data, ingest_file(src, data).trace_id)


@pytest.mark.parametrize(("text", "expected"), [
    ("p95_ms<=5", ("latency_p95_ms", "<=", 5.0)),
    (" iops >= 2e4 ", ("iops", ">=", 20000.0)),
    ("read_hit_ratio>0.5", ("read_hit_ratio", ">", 0.5)),
])
def test_parse_target(text, expected):
    t = whatif.parse_target(text)
    assert (t.metric, t.op, t.value) == expected
    assert t.met({expected[0]: expected[2]}) == (expected[1] in ("<=", ">="))
    assert not t.met({})  # a metric the run does not have is not met


@pytest.mark.parametrize(("text", "message"), [
    ("p95_ms=<5", r"target 'p95_ms=<5': expected METRIC OP NUMBER such as p95_ms<=5"),
    ("p95_ms<=fast", r"expected METRIC OP NUMBER"),
])
def test_parse_target_errors(text, message):
    with pytest.raises(ValueError, match=message):
        whatif.parse_target(text)


def test_parse_vary_and_variants_cheapest_first():
    assert whatif.parse_vary("ssd_cache.capacity_bytes=0, 50GB,100GB") == ("ssd_cache.capacity_bytes", ["0", "50GB", "100GB"])
    with pytest.raises(ValueError, match=r"--vary 'dram.cache_bytes': expected KEY=V1,V2,..."):
        whatif.parse_vary("dram.cache_bytes")
    vs = whatif.variants("vnx5400-fastcache", [("ssd_cache.capacity_bytes", ["0", "100GB"]),
                                               ("dram.mode", ["flare", "mcx"])])
    # cost = sum of positions: (0, flare) < (0, mcx) = (100GB, flare) -> the earlier list first
    assert [v.label for v in vs] == ["ssd_cache.capacity_bytes=0, dram.mode=flare",
                                     "ssd_cache.capacity_bytes=0, dram.mode=mcx",
                                     "ssd_cache.capacity_bytes=100GB, dram.mode=flare",
                                     "ssd_cache.capacity_bytes=100GB, dram.mode=mcx"]
    # 0 switches the SSD cache off; a size switches it on at that size
    assert vs[0].scenario.ssd is None and vs[0].capacity_bytes == 0
    assert vs[2].scenario.ssd is not None and vs[2].capacity_bytes == 100 * GIB  # tiercast sizes: GB = GiB
    assert vs[0].scenario.name == "vnx5400-fastcache [ssd_cache.capacity_bytes=0, dram.mode=flare]"
    assert vs[0].family == vs[2].family == (("dram.mode", "flare"),)
    with pytest.raises(ValueError, match="--vary 'dram.mode' given twice"):
        whatif.variants("vnx5400", [("dram.mode", ["flare"]), ("dram.mode", ["mcx"])])


def test_warmup_hand_worked():
    """Array-wide mean per interval (requests-weighted over volumes): 10, 6, 4.2, 4, 4 ms; the
    last tenth of the run (from 36 s) is 4 ms; 4.2 is within 10 % -> warm from 20 s."""
    iv = pl.DataFrame({
        "interval_start_ns": [0, 0, 10, 20, 30, 40],
        "volume": ["a", "b", "a", "a", "a", "a"],
        "requests": [10, 10, 20, 20, 20, 20],
        "latency_mean_ms": [12.0, 8.0, 6.0, 4.2, 4.0, 4.0],
    }).with_columns(pl.col("interval_start_ns") * 10**9)
    assert whatif.warmup_s(iv) == 20.0
    assert whatif.warmup_s(iv.head(0)) is None


def test_compare_rows_and_reuse(zipf):
    data, trace = zipf
    scs = [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx5400 dram.cache_bytes=64MiB"),
           whatif.scenario_of("vnx5400-fastcache ssd_cache.capacity_bytes=1GiB")]
    rows = whatif.compare(trace, data, scs)
    assert [r["scenario"] for r in rows] == ["vnx5400", "vnx5400 [dram.cache_bytes=64MiB]",
                                             "vnx5400-fastcache [ssd_cache.capacity_bytes=1GiB]"]
    assert len({r["run_id"] for r in rows}) == 3
    assert all(r["requests"] == 100_000 and not r["reused"] for r in rows)
    base, small, fc = rows
    assert base["iops_change_pct"] == 0 and base["latency_p95_ms_change_pct"] == 0
    # a 64 MiB DRAM cache holds less of the Zipf set: fewer read hits, slower
    assert small["dram_read_hit_ratio"] < base["dram_read_hit_ratio"] and small["latency_mean_ms_change_pct"] > 0
    assert base["ssd_hit_ratio"] is None and fc["ssd_hit_ratio"] is not None and 0 < fc["ssd_fill_pct_end"] <= 100
    assert base["forced_flush_count"] == 0 and base["warmup_s"] is not None
    again = whatif.compare(trace, data, scs[:1])
    assert again[0]["reused"] and again[0]["run_id"] == base["run_id"] and again[0]["iops"] == base["iops"]
    with pytest.raises(ValueError, match="scenario 'vnx5400' given twice"):
        whatif.compare(trace, data, [scs[0], scs[0]])


@pytest.mark.parametrize(("target", "chosen"), [("mean_ms<=5.7", "dram.cache_bytes=512MiB"), ("mean_ms<=5", None)])
def test_size_agrees_with_the_exhaustive_search(zipf, target, chosen):
    """The pruned search picks what replaying all 8 variants picks, with fewer replays: costlier
    variants than the answer are not needed, and sizes past the curve's plateau (the trace's
    footprint, ~0.42 hit ratio from 512 MiB) are skipped once a cheaper one on it failed."""
    data, trace = zipf
    vary = [whatif.parse_vary(DRAM_SIZES)]
    targets = [whatif.parse_target(target)]
    full = whatif.size(trace, data, "vnx5400", vary, targets, exhaustive=True)
    fast = whatif.size(trace, data, "vnx5400", vary, targets)
    assert full.counts()["replayed"] == 8
    got = fast.chosen.label if fast.chosen else None
    assert got == (full.chosen.label if full.chosen else None) == chosen
    c = fast.counts()
    assert c["replayed"] == 6 and c["saved"] == 2
    assert (c["not_needed"], c["pruned_by_curve"]) == ((2, 0) if chosen else (0, 2))
    hr = [v.curve_hit_ratio for v in fast.variants]
    assert hr == sorted(hr) and hr[-1] == hr[-3]  # the LRU curve never falls; flat past 512 MiB
    # the variants' results in the exhaustive run are the same runs (same run ids)
    assert {v.row["run_id"] for v in fast.variants if v.row} <= {v.row["run_id"] for v in full.variants}


def test_cli_compare_and_size_json(zipf):
    from pipelines.cli import app

    data, trace = zipf
    r = CliRunner().invoke(app, ["compare", trace.trace_id[:8], "-s", "vnx5400", "-s", "vnx5400 dram.cache_bytes=64MiB",
                                 "--no-report", "--data-dir", str(data), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [x["scenario"] for x in rows] == ["vnx5400", "vnx5400 [dram.cache_bytes=64MiB]"]
    assert {"iops", "latency_p95_ms", "latency_p99_ms", "dram_read_hit_ratio", "ssd_hit_ratio", "ssd_fill_pct_end",
            "flush_mb_per_s", "forced_flush_count", "throttle_delay_sum_ms", "warmup_s", "report"} <= set(rows[0])
    r = CliRunner().invoke(app, ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", DRAM_SIZES,
                                 "--target", "mean_ms<=5.7", "--no-report", "--data-dir", str(data), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["chosen"] == "dram.cache_bytes=512MiB" and doc["saved"] == 2 and len(doc["variants"]) == 8
    r = CliRunner().invoke(app, ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", DRAM_SIZES,
                                 "--target", "p95<5", "--data-dir", str(data)])
    assert r.exit_code != 0 and "target 'p95<5': no metric 'p95'; use one of mean_ms, p50_ms" in str(r.exception)


def test_demo_whatif_part_writes_the_compare_and_size_reports(tmp_path):
    """``make demo``'s what-if part: three configurations compared, the DRAM cache sized (512 MiB,
    as in ``test_size_agrees_with_the_exhaustive_search`` on the same workload), two reports."""
    from pipelines.demo import whatif_demo

    lines: list[str] = []
    reports = whatif_demo(tmp_path / "data", tmp_path / "reports", log=lines.append)
    assert [p.name for p in reports] == ["compare.html", "size.html"] and all(p.stat().st_size > 100_000 for p in reports)
    assert [ln.split(":")[0] for ln in lines] == ["compare vnx5400 [dram.cache_bytes=64MiB]", "compare vnx5400",
                                                  "compare vnx5400-fastcache", "size vnx5400, mean_ms<=5.7"]
    assert "dram.cache_bytes=512MiB (6 of 8 variants replayed, 2 saved)" in lines[-1]
    assert "(+0.0 %)" in lines[0]


def test_compare_keeps_the_trace_skew_at_the_tiering_slice(zipf):
    """``compare`` keeps the trace's skew at every FAST VP scenario's slice size (256 MiB, VNX2's,
    without one), computed once per key, and a capture that cannot be compared is an error naming it."""
    from pipelines.analytics import skew_trace

    data, trace = zipf
    [k] = whatif.trace_skews(trace, data, [whatif.scenario_of("vnx5400")])
    assert k["slice_bytes"] == 256 << 20  # (kept already when the CLI's compare ran first)
    point = skew_trace(trace, 256 << 20).summary()["skew_point"]
    assert (k["skew_capacity_share"], k["skew_io_share"]) == (point["capacity_share"], point["io_share"])
    both = whatif.trace_skews(trace, data, [whatif.scenario_of("vnx5400"),
                                            whatif.scenario_of("vnx5400-fastvp pools.0.slice_bytes=1GiB")])
    assert [(x["slice_bytes"], x["reused"]) for x in both] == [(1 << 30, False)]
    assert whatif.trace_skews(trace, data, [whatif.scenario_of("vnx5400")])[0]["reused"]
    with pytest.raises(LookupError, match="no capture 'nope'"):
        whatif.compare(trace, data, [whatif.scenario_of("vnx5400")], measured=["nope"])
