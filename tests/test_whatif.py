"""What-if answers: ``compare`` (scenarios side by side, runs reused, one replay mode) and ``size``
(the cheapest variant meeting a target; skipping only provably identical runs, checked against an
exhaustive search on random grids)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    assert vs[0].scenario.ssd_cache is None and vs[0].ssd_bytes == 0
    assert vs[2].scenario.ssd_cache is not None and vs[2].ssd_bytes == 100 * GIB  # tiercast sizes: GB = GiB
    assert vs[2].ssd_chunk_bytes == 64 << 10
    assert vs[0].scenario.name == "vnx5400-fastcache [ssd_cache.capacity_bytes=0, dram.mode=flare]"
    assert vs[0].family == vs[2].family == (("dram.mode", "flare"),)
    with pytest.raises(ValueError, match="--vary 'dram.mode' given twice"):
        whatif.variants("vnx5400", [("dram.mode", ["flare"]), ("dram.mode", ["mcx"])])
    with pytest.raises(ValueError, match="--vary 'replay.outstanding': every variant replays in one mode"):
        whatif.variants("vnx5400", [("replay.outstanding", ["8", "16"])])


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


def test_compare_replays_every_scenario_in_one_mode(zipf):
    """The trace's own timing for all by default; ``outstanding`` puts all in closed loop; a
    scenario asking for closed loop beside open ones is refused, naming both."""
    data, trace = zipf
    rows = whatif.compare(trace, data, [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx2-mcx")])
    assert [(r["mode"], r["outstanding"]) for r in rows] == [("open", None), ("open", None)]
    rows = whatif.compare(trace, data, [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx2-mcx")],
                          outstanding=8)
    assert [(r["mode"], r["outstanding"]) for r in rows] == [("closed", 8), ("closed", 8)]
    with pytest.raises(ValueError, match=r"different replay modes \(vnx5400: open; vnx2-mcx \[replay.mode=closed\]: "
                                         r"closed 16\)"):
        whatif.compare(trace, data, [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx2-mcx replay.mode=closed")])


def test_size_stops_at_the_cheapest_variant_and_prunes_no_dram_size(zipf):
    """A DRAM grid is never pruned (a larger cache can change the answer either way): the search
    replays cheapest first and stops at the first variant that meets the target, as the
    exhaustive search chooses."""
    data, trace = zipf
    vary = [whatif.parse_vary(DRAM_SIZES)]
    full = whatif.size(trace, data, "vnx5400", vary, [whatif.parse_target("mean_ms<=1e9")], exhaustive=True)
    lat = {v.label: v.row["latency_mean_ms"] for v in full.variants}
    assert full.counts()["replayed"] == 8 and full.mode == {"mode": "open", "outstanding": None}
    # a target between the fastest and the slowest variant
    target = f"mean_ms<={sorted(lat.values())[3]:.6f}"
    full = whatif.size(trace, data, "vnx5400", vary, [whatif.parse_target(target)], exhaustive=True)
    fast = whatif.size(trace, data, "vnx5400", vary, [whatif.parse_target(target)])
    cheapest = next(v.label for v in full.variants if v.meets)
    assert fast.chosen.label == full.chosen.label == cheapest
    c = fast.counts()
    assert c["identical_skipped"] == 0 and c["replayed"] + c["not_needed"] == 8
    assert all(v.curve_hit_ratio is None for v in fast.variants)  # no SSD cache: no curve


def test_ssd_caches_above_the_footprint_are_the_same_run(zipf):
    """Past the trace's footprint (at 64 KiB chunks) an SSD cache never evicts, so 16, 32 and 64 GiB
    give the same run: the exhaustive search shows it, and ``size`` skips the larger two once the
    first failed, as identical, with the footprint in the note."""
    data, trace = zipf
    vary = [whatif.parse_vary("ssd_cache.capacity_bytes=16GiB,32GiB,64GiB")]
    never = [whatif.parse_target("mean_ms<=0.001")]
    full = whatif.size(trace, data, "vnx5400-fastcache", vary, never, exhaustive=True)
    runs = [v.row for v in full.variants]
    keys = ("latency_mean_ms", "latency_p99_ms", "iops", "ssd_hit_ratio", "flush_mb_per_s")
    assert all({k: r[k] for k in keys} == {k: runs[0][k] for k in keys} for r in runs)
    assert len({r["run_id"] for r in runs}) == 3  # three scenarios, one behaviour
    fp = full.variants[0].footprint_bytes
    assert 0 < fp <= 8 * GIB and all(v.above_footprint for v in full.variants)
    fast = whatif.size(trace, data, "vnx5400-fastcache", vary, never)
    assert [v.skipped for v in fast.variants] == [None, "identical", "identical"]
    assert fast.chosen is None and fast.counts()["identical_skipped"] == 2
    assert f"both SSD caches hold the trace's whole footprint ({fp:,} B at 64 KiB chunks)" in fast.variants[1].notes[0]
    # a target on the cache's fill differs between the twins: nothing is skipped then
    fill = whatif.size(trace, data, "vnx5400-fastcache", vary, [whatif.parse_target("ssd_fill_pct>=99")])
    assert fill.counts()["identical_skipped"] == 0


def test_curve_prediction_far_from_the_replay_is_a_caveat(zipf):
    """The LRU curve admits every miss; FAST Cache promotes after 3 accesses behind the DRAM cache,
    so its replayed hit ratio is far below the curve's: a ``size_curve`` caveat says so."""
    data, trace = zipf
    res = whatif.size(trace, data, "vnx5400-fastcache", [whatif.parse_vary("ssd_cache.capacity_bytes=16GiB")],
                      [whatif.parse_target("mean_ms<=1e9")])
    [v] = res.variants
    assert abs(v.curve_hit_ratio - v.row["ssd_hit_ratio"]) > whatif.CURVE_MISS
    [w] = [w for w in v.row["warnings"] if w["check"] == "size_curve"]
    assert "FAST Cache promotes a chunk after 3 accesses" in w["message"] and w["severity"] == "caveat"


GRID_SSD = ["0", "1GiB", "4GiB", "16GiB", "32GiB"]
GRID_DRAM = ["256MiB", "1GiB"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ssd=st.lists(st.sampled_from(GRID_SSD), min_size=1, max_size=4, unique=True),
       dram=st.lists(st.sampled_from(GRID_DRAM), min_size=1, max_size=2, unique=True),
       metric=st.sampled_from(["mean_ms", "p95_ms", "p99_ms"]), quantile=st.floats(0.0, 1.0))
def test_size_and_exhaustive_choose_the_same_variant(zipf, ssd, dram, metric, quantile):
    """Property: on any grid of SSD and DRAM sizes and any latency target between the best and
    the worst variant, ``size`` and ``size --exhaustive`` choose the same variant (runs are shared
    through their run ids, so each scenario replays once over all examples)."""
    data, trace = zipf
    vary = [("ssd_cache.capacity_bytes", ssd), ("dram.cache_bytes", dram)]
    probe = whatif.size(trace, data, "vnx5400-fastcache", vary, [whatif.parse_target("mean_ms<=1e9")],
                        exhaustive=True)
    key = whatif.TARGET_ALIASES[metric]
    values = sorted(v.row[key] for v in probe.variants)
    target = [whatif.parse_target(f"{metric}<={values[0] + quantile * (values[-1] - values[0]):.9f}")]
    full = whatif.size(trace, data, "vnx5400-fastcache", vary, target, exhaustive=True)
    fast = whatif.size(trace, data, "vnx5400-fastcache", vary, target)
    assert (fast.chosen.label if fast.chosen else None) == (full.chosen.label if full.chosen else None)
    for v, w in zip(fast.variants, full.variants, strict=True):
        if v.skipped == "identical":  # a skipped twin really failed when replayed
            assert w.meets is False


def test_cli_compare_and_size_json(zipf):
    from pipelines.cli import app

    data, trace = zipf
    r = CliRunner().invoke(app, ["compare", trace.trace_id[:8], "-s", "vnx5400", "-s", "vnx5400 dram.cache_bytes=64MiB",
                                 "--no-report", "--data-dir", str(data), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rows = doc["rows"]
    assert [x["scenario"] for x in rows] == ["vnx5400", "vnx5400 [dram.cache_bytes=64MiB]"]
    # the decision block: the lower p95 of the two, the other as the runner-up, the hardware assumed
    s = doc["summary"]
    best, other = sorted(rows, key=lambda x: x["latency_p95_ms"])
    assert s["question"].startswith(f"Which of 2 configurations gives trace rr ({trace.trace_id[:12]}, 100,000 "
                                    "requests over ")
    assert s["question"].endswith("the lowest p95 response time, replayed open loop (the trace's own timing)?")
    assert s["recommendation"] == (f"{best['scenario']} has the lowest p95 response time: p95 "
                                   f"{best['latency_p95_ms']:,.2f} ms, p99 {best['latency_p99_ms']:,.2f} ms, mean "
                                   f"{best['latency_mean_ms']:,.2f} ms, {best['iops']:,.0f} IOPS.")
    assert s["runner_up"].startswith(f"{other['scenario']}: p95 {other['latency_p95_ms']:,.2f} ms")
    assert s["assumptions"] == ["replay: open loop (the trace's own timing), every configuration alike",
                                "vnx5400: 15 sas10k drives (3 x RAID 5 x5 sas10k), DRAM cache 4.0 GiB (mcx)",
                                "vnx5400 [dram.cache_bytes=64MiB]: 15 sas10k drives (3 x RAID 5 x5 sas10k), DRAM "
                                "cache 64.0 MiB (mcx)"]
    assert s["cost_per_month"] is None and s["currency"] is None  # an array has no price table yet
    # confidence: the answer's p95 / p99 / mean in each tenth of the 50 s trace (every request in one window)
    c = s["confidence"]
    assert c["windows"] == 10 and c["window_s"] == pytest.approx(5.0) and c["warnings"] == []
    assert sum(w["requests"] for w in best["windows"]) == best["requests"] == 100_000
    p95 = c["metrics"]["latency_p95_ms"]
    assert p95["whole"] == best["latency_p95_ms"]
    assert p95["worst_window"] == max(w["latency_p95_ms"] for w in best["windows"])
    assert p95["range"] == pytest.approx(p95["worst_window"] - min(w["latency_p95_ms"] for w in best["windows"]))
    assert {"iops", "latency_p95_ms", "latency_p99_ms", "dram_read_hit_ratio", "ssd_hit_ratio", "ssd_fill_pct_end",
            "flush_mb_per_s", "forced_flush_count", "throttle_delay_sum_ms", "warmup_s", "report"} <= set(rows[0])
    r = CliRunner().invoke(app, ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", DRAM_SIZES,
                                 "--target", "mean_ms<=6.5", "--no-report", "--data-dir", str(data), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["mode"] == "open" and doc["outstanding"] is None and len(doc["variants"]) == 8
    assert doc["chosen"] == next(v["variant"] for v in doc["variants"] if v["meets"])
    chosen = next(v for v in doc["variants"] if v["meets"])
    before = [v for v in doc["variants"][:doc["variants"].index(chosen)] if v["meets"] is False and "run_id" in v][-1]
    s = doc["summary"]
    assert s["recommendation"] == (f"{doc['chosen']} is the cheapest variant meeting mean_ms<=6.5: mean "
                                   f"{chosen['latency_mean_ms']:,.2f} ms meets mean_ms<=6.5 by "
                                   f"{6.5 - chosen['latency_mean_ms']:,.2f} ms.")
    assert s["runner_up"] == (f"the next cheaper replayed variant, {before['variant']}, misses: mean "
                              f"{before['latency_mean_ms']:,.2f} ms, {before['latency_mean_ms'] - 6.5:,.2f} ms over "
                              "mean_ms<=6.5")
    assert s["assumptions"][-1] == "varied: dram.cache_bytes over " + DRAM_SIZES.split("=")[1].replace(",", ", ")
    # confidence of the answer on the target's metric: its mean in the worst tenth of the trace
    mean = s["confidence"]["metrics"]["latency_mean_ms"]
    assert list(s["confidence"]["metrics"]) == ["latency_mean_ms"] and mean["whole"] == chosen["latency_mean_ms"]
    assert mean["worst_window"] == pytest.approx(max(w["latency_mean_ms"] for w in chosen["windows"]))
    r = CliRunner().invoke(app, ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", DRAM_SIZES,
                                 "--target", "p95<5", "--data-dir", str(data)])
    assert r.exit_code != 0 and "target 'p95<5': no metric 'p95'; use one of mean_ms, p50_ms" in str(r.exception)


def test_demo_whatif_part_writes_the_compare_and_size_reports(tmp_path):
    """``make demo``'s what-if part: three configurations compared, the DRAM cache sized (512 MiB,
    in the trace's own timing: 6.41 ms, where the cache holds the Zipf set's footprint), two reports."""
    from pipelines.demo import whatif_demo

    lines: list[str] = []
    reports = whatif_demo(tmp_path / "data", tmp_path / "reports", log=lines.append)
    assert [p.name for p in reports] == ["compare.html", "size.html"] and all(p.stat().st_size > 100_000 for p in reports)
    assert [ln.split(":")[0] for ln in lines] == [
        "what-if trace randread-4k-zipf-100000 (" + lines[0].split("(")[1].split(")")[0] + ")",
        "compare vnx5400 [dram.cache_bytes=64MiB]", "compare vnx5400", "compare vnx5400-fastcache",
        "size vnx5400, mean_ms<=6.5"]
    assert lines[0].endswith(": 100,000 4 KiB Zipf 0.9 random reads over 8.0 GiB, in its own timing; the compare and "
                             "size lines below replay it")
    assert "dram.cache_bytes=512MiB (6 of 8 variants replayed, 2 saved)" in lines[-1]
    assert "(+0.0 %)" in lines[1]


def test_demo_ends_with_what_its_numbers_mean_and_the_disk_space_it_used(tmp_path):
    """``tiercast demo``'s last lines: seeds, calibration / identity and validation in three lines,
    then the bytes under the data directory, by top-level folder, largest first."""
    from pipelines.demo import EXPLAIN, disk_line, disk_usage_bytes, where

    d = tmp_path / "data"
    (d / "traces" / "t1").mkdir(parents=True)
    (d / "traces" / "t1" / "a.parquet").write_bytes(b"x" * 3 * 1024 * 1024)
    (d / "results").mkdir()
    (d / "results" / "r.parquet").write_bytes(b"x" * 1536)
    (d / "tiercast.duckdb").write_bytes(b"x" * 512 * 1024)
    assert disk_usage_bytes(d) == {"traces": 3 << 20, "tiercast.duckdb": 512 << 10, "results": 1536}
    assert disk_line(d).startswith(f"disk: 3.5 MiB under {d}/ (traces 3.0 MiB, tiercast.duckdb 512.0 KiB, "
                                   "results 1.5 KiB;")
    lines = where(d, [])
    assert lines[-4:] == [*EXPLAIN, disk_line(d)] and len(EXPLAIN) == 3
    assert [x.split(":")[0] for x in EXPLAIN] == ["seeds", "calibration", "validation"]


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


def test_compare_on_worker_processes_gives_the_same_rows(zipf, tmp_path):
    """``compare --jobs 2``: the replays run in two spawned worker processes and give the rows of
    one process, in the scenarios' order (the progress counts scenarios)."""
    data, trace = zipf
    scs = [whatif.scenario_of("vnx5400 dram.cache_bytes=128MiB"), whatif.scenario_of("vnx2-mcx"),
           whatif.scenario_of("vnx5400-fastcache ssd_cache.capacity_bytes=2GiB")]
    one = whatif.compare(trace, data, scs)
    other = tmp_path / "data"
    trace2 = find_trace(other, ingest_file(data.parent / "rr.parquet", other).trace_id)
    seen = []
    two = whatif.compare(trace2, other, scs, jobs=2, progress=lambda label: lambda k, n: seen.append((label, k, n)))
    assert [r["scenario"] for r in two] == [sc.name for sc in scs] and not any(r["reused"] for r in two)
    assert [{k: v for k, v in r.items() if k != "reused"} for r in two] == \
        [{k: v for k, v in r.items() if k != "reused"} for r in one]
    # the workers' progress in requests, summed over the three replays, out of 3 x the trace's 100,000
    assert {label for label, _, _ in seen} == {"3 scenarios on 2 processes"}
    assert {n for _, _, n in seen} == {300_000} and seen[-1][1] == 300_000
    assert seen[0][1] < 300_000 and [k for _, k, _ in seen] == sorted(k for _, k, _ in seen)


def test_size_on_worker_processes_gives_the_same_answer(zipf, tmp_path):
    """``size --jobs 2`` (issue 29): variants replayed two at a time in worker processes, judged in
    order as with one job: the same chosen variant, the same rows, the same skipped twins and
    counts, on a fresh data directory (nothing reused)."""
    data, trace = zipf
    vary = [whatif.parse_vary("ssd_cache.capacity_bytes=0,1GiB,16GiB,32GiB,64GiB")]
    one = whatif.size(trace, data, "vnx5400-fastcache", vary, [whatif.parse_target("mean_ms<=1e9")], headroom=False)
    never = whatif.size(trace, data, "vnx5400-fastcache", vary, [whatif.parse_target("mean_ms<=0.001")],
                        headroom=False)
    other = tmp_path / "data"
    trace2 = find_trace(other, ingest_file(data.parent / "rr.parquet", other).trace_id)
    for want, target in ((one, "mean_ms<=1e9"), (never, "mean_ms<=0.001")):
        got = whatif.size(trace2, other, "vnx5400-fastcache", vary, [whatif.parse_target(target)], jobs=2,
                          headroom=False)
        assert (got.chosen.label if got.chosen else None) == (want.chosen.label if want.chosen else None)
        assert [(v.label, v.meets, v.skipped) for v in got.variants] == [
            (v.label, v.meets, v.skipped) for v in want.variants]
        strip = ("reused",)
        assert [{k: x for k, x in (v.row or {}).items() if k not in strip} for v in got.variants] == [
            {k: x for k, x in (v.row or {}).items() if k not in strip} for v in want.variants]
        assert got.counts() == {**want.counts(), "replayed_now": got.counts()["replayed_now"]}
    assert never.counts()["identical_skipped"] >= 1  # twins skipped with two jobs as with one


def test_compare_progress_names_the_scenario_and_counts_the_trace_requests(zipf, tmp_path):
    """One replay after another: a bar per scenario, ``scenario k of n: NAME``, counting requests out
    of the trace's total from the start (0 of 100,000 before the first segment, not an unknown total)."""
    data, trace = zipf
    other = tmp_path / "data"
    trace2 = find_trace(other, ingest_file(data.parent / "rr.parquet", other).trace_id)
    scs = [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx5400 dram.cache_bytes=64MiB"),
           whatif.scenario_of("vnx2-mcx")]
    seen: list[tuple[str, int, int]] = []
    whatif.compare(trace2, other, scs, jobs=1, progress=lambda label: lambda k, n: seen.append((label, k, n)))
    labels = list(dict.fromkeys(label for label, _, _ in seen))
    assert labels == ["scenario 1 of 3: vnx5400", "scenario 2 of 3: vnx5400 [dram.cache_bytes=64MiB]",
                      "scenario 3 of 3: vnx2-mcx"]
    for label in labels:
        counts = [(k, n) for x, k, n in seen if x == label]
        assert counts[0] == (0, 100_000) and counts[-1] == (100_000, 100_000)


def test_cli_tables_fit_80_columns_with_the_decision_columns(zipf):
    """``compare`` and ``size`` print the decision columns (p95, p99, mean, IOPS) in at most 80
    columns with every number whole; ``--wide`` adds the rest (hit ratios, flushes, run ids).
    FAST VP's share of the I/O per tier is printed under the table."""
    from pipelines.cli import app

    data, trace = zipf
    args = ["compare", trace.trace_id[:8], "-s", "vnx5400", "-s", "vnx5400-fastcache ssd_cache.capacity_bytes=1GiB",
            "-s", "vnx5400-fastvp", "--no-report", "-j", "1", "--data-dir", str(data)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    rows = doc["rows"]
    lines = r.stdout.splitlines()
    # the summary block opens the output: question, answer, runner-up, assumptions (as in --json)
    assert lines[1:4] == [f"question: {doc['summary']['question']}", f"answer: {doc['summary']['recommendation']}",
                          f"runner-up: {doc['summary']['runner_up']}"]
    head = next(i for i, ln in enumerate(lines) if ln.startswith("scenario"))
    body = lines[head:head + 2 + 4]  # header, rule, three rows (one wraps)
    assert all(len(ln) <= 80 for ln in body), "\n".join(body)
    assert lines[head].split() == ["scenario", "IOPS", "mean", "ms", "p95", "ms", "p99", "ms", "p95", "vs", "1st"]
    for x in rows:  # every p99 whole, on its scenario's first line
        first = next(ln for ln in body if ln.startswith(x["scenario"][:7]) and f"{x['latency_p99_ms']:.2f}" in ln)
        assert f"{x['iops']:,.0f}" in first
    fastvp = rows[2]["tier_request_share"]
    assert (f"vnx5400-fastvp: FAST VP share of the I/O per tier: extreme_performance "
            f"{100 * fastvp['extreme_performance']:.1f} %") in r.stdout
    wide = CliRunner().invoke(app, [*args, "--wide"]).stdout
    assert "forced flushes" in wide and rows[0]["run_id"] in wide and rows[0]["run_id"] not in r.stdout
    r = CliRunner().invoke(app, ["size", trace.trace_id[:8], "--base", "vnx5400", "--vary", DRAM_SIZES,
                                 "--target", "mean_ms<=6.5", "--no-report", "--data-dir", str(data)])
    lines = r.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("variant"))
    table_lines = lines[head:head + 2 + 8]
    assert lines[head].split() == ["variant", "meets", "p95", "ms", "p99", "ms", "mean", "ms", "IOPS"]
    assert all(len(ln) <= 80 for ln in table_lines)
    assert table_lines[2].startswith("dram.cache_bytes=16MiB") and table_lines[2].split()[1] == "no"


def test_sweep_on_worker_processes_gives_the_same_rows(zipf):
    """``sweep --jobs 2``: each queue depth in a worker process, the rows of one process, in order."""
    from pipelines.replay import sweep_trace

    data, trace = zipf
    sc = whatif.scenario_of("vnx5400 dram.cache_bytes=64MiB")
    one = sweep_trace(trace, None, sc, [4, 16, 64], max_requests=30_000)
    seen = []
    two = sweep_trace(trace, None, sc, [4, 16, 64], max_requests=30_000, jobs=2,
                      progress=lambda k, n: seen.append((k, n)))
    assert [r["outstanding"] for r in two] == [4, 16, 64] and two == one
    assert one[0]["iops"] < one[2]["iops"] and seen[-1] == (3, 3)
