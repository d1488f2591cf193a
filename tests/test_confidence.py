"""Confidence (pipelines/confidence.py): per-window percentiles from the per-interval histogram,
worked by hand; the spread of a metric across windows; when a trace is too short."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.confidence import HOUR_NS, confidence, confidence_line, window_ns, windows
from pipelines.replay import LAT_BASE, _percentiles

S = 10**9


def _mid_ms(bucket: int) -> float:
    """The latency a histogram bucket stands for (its log middle), in ms."""
    return LAT_BASE ** (bucket + 0.5) / 1e6


def test_window_length_hours_for_long_traces_tenths_for_short():
    assert window_ns(0, 12 * HOUR_NS, 60 * S) == HOUR_NS
    assert window_ns(0, 2 * HOUR_NS, 60 * S) == 12 * 60 * S  # two hours: tenths, not two windows
    assert window_ns(0, 50 * S, S // 5) == 5 * S  # a tenth of 50 s, whole 0.2 s intervals
    assert window_ns(0, 7 * S, 2 * S) == 2 * S  # a tenth (0.7 s) rounded up to one interval


def test_windows_from_the_interval_histogram_hand_worked():
    """20 one-second intervals, two volumes: window 0 (0-2 s) has 100 requests, 95 at bucket 100
    and 5 at bucket 200; every later window 10 requests at bucket 150. p95 of window 0 is bucket
    100 (the 95th request), p99 bucket 200; the mean is the request-weighted mean of the volumes'."""
    hist = pl.DataFrame({
        "interval_start_ns": [0, 0, S, *[k * S for k in range(2, 20)]],
        "volume": [0, 1, 0, *[0] * 18], "rg": [0] * 21,
        "lat_bucket": [100, 200, 100, *[150] * 18], "n": [50, 5, 45, *[5] * 18]})
    vol = pl.DataFrame({"interval_start_ns": [0, 0, S, *[k * S for k in range(2, 20)]],
                        "volume": [0, 1, 0, *[0] * 18], "requests": [50, 5, 45, *[5] * 18],
                        "latency_mean_ms": [1.0, 10.0, 1.0, *[2.0] * 18]})
    ws = windows(hist, vol, S, _percentiles)
    assert [w["window"] for w in ws] == list(range(10)) and ws[0]["start_s"] == 0 and ws[0]["end_s"] == 2
    first = ws[0]
    assert first["requests"] == 100 and first["iops"] == 50
    assert first["latency_p95_ms"] == pytest.approx(_mid_ms(100)) and first["latency_p99_ms"] == pytest.approx(
        _mid_ms(200))
    assert first["latency_mean_ms"] == pytest.approx((50 * 1 + 5 * 10 + 45 * 1) / 100)
    assert all(w["requests"] == 10 and w["latency_p95_ms"] == pytest.approx(_mid_ms(150)) for w in ws[1:])


def test_confidence_spread_worst_window_and_too_short():
    run = {"latency_p95_ms": 3.0, "iops": 900.0, "measured_requests": 5_000,
           "windows": [{"start_s": 10.0 * k, "end_s": 10.0 * (k + 1), "requests": 500,
                        "latency_p95_ms": 2.0 + k, "iops": 1000.0 - 10 * k} for k in range(4)],
           "warnings": [{"check": "fast_vp_window", "severity": "caveat", "message": "..."}]}
    c = confidence(run, ["latency_p95_ms", "iops", "latency_p99_ms"])
    assert c["windows"] == 4 and c["window_s"] == 10.0
    p95 = c["metrics"]["latency_p95_ms"]
    assert (p95["whole"], p95["worst_window"], p95["worst_window_s"], p95["best_window"], p95["range"]) == \
        (3.0, 5.0, [30.0, 40.0], 2.0, 3.0)
    iops = c["metrics"]["iops"]  # fewer IOPS is worse
    assert (iops["worst_window"], iops["worst_window_s"], iops["range"]) == (970.0, [30.0, 40.0], 30.0)
    assert "latency_p99_ms" not in c["metrics"]  # no window reports it
    assert len(c["warnings"]) == 2  # p95 rests on 250 requests: enough; p99 on 50: not
    assert c["warnings"][0].startswith("trace too short for p99: it rests on 50 requests above it (fewer than 100)")
    assert c["warnings"][1].startswith("trace too short for FAST VP: the run is shorter than one relocation window")
    lines = confidence_line(c)
    assert lines[0].startswith("confidence (4 windows of 10 s): p95 3.00 ms over the run, 5.00 ms in the worst "
                               "window (30 s to 40 s), range 3.00 ms; iops 900.00 IOPS over the run, 970.00 IOPS")
    assert lines[1:] == [f"caution: {w}" for w in c["warnings"]]


@pytest.mark.parametrize(("sample", "fmt", "n_windows", "cautions"), [
    # 6,999 requests: the p99 rests on 70 of them; tenths of a 0.1 s trace, not all with requests
    (("traces", "disksim", "tpcc-small.trace"), "disksim", None, ["trace too short for p99: it rests on 70 requests"]),
    # 113,872 requests over two hours: tenths (13 min), enough requests in every tail
    (("traces", "vscsi", "cloudPhysicsIO.vscsi"), "vscsi", 10, []),
])
def test_compare_summary_confidence_on_the_real_traces(tmp_path, sample, fmt, n_windows, cautions):
    """The decision block of ``compare`` on the TPC-C and CloudPhysics traces: the answer's windows
    hold every request, the worst window's p95 is the largest window p95, and the short trace is
    said to be too short for its p99."""
    from conftest import shared_path

    from pipelines import whatif
    from pipelines.catalog import find_trace
    from pipelines.ingest import ingest_file
    from pipelines.summary import compare_summary

    data = tmp_path / "data"
    trace = find_trace(data, ingest_file(shared_path(*sample), data, fmt=fmt).trace_id)
    scs = [whatif.scenario_of("vnx5400"), whatif.scenario_of("vnx5400-fastcache")]
    rows = whatif.compare(trace, data, scs)
    s = compare_summary(trace, scs, rows)
    best = min(rows, key=lambda r: r["latency_p95_ms"])
    assert s["recommendation"].startswith(f"{best['scenario']} has the lowest p95 response time: p95 "
                                          f"{best['latency_p95_ms']:,.2f} ms")
    c = s["confidence"]
    assert c["windows"] == len([w for w in best["windows"] if w["requests"]]) == (n_windows or c["windows"]) <= 10
    assert sum(w["requests"] for w in best["windows"]) == best["requests"]
    assert c["metrics"]["latency_p95_ms"]["worst_window"] == max(
        w["latency_p95_ms"] for w in best["windows"] if w["requests"])
    assert [w[:len(p)] for w, p in zip(c["warnings"], cautions, strict=True)] == cautions


def test_percentiles_are_the_lowest_bucket_whose_running_count_reaches_q():
    """Unsorted rows of several key groups against a per-group count by hand: a group of 100 with
    50 at bucket 3 reaches p50 there (exactly 50), not at the next bucket."""
    hist = pl.DataFrame({"interval_start_ns": [S, 0, 0, S, 0, S], "rg": [1, 0, 0, 1, 0, 0],
                         "lat_bucket": [9, 7, 3, 2, 1000, 5], "n": [1, 45, 50, 99, 5, 1]})
    got = _percentiles(hist, ["interval_start_ns", "rg"]).sort("interval_start_ns", "rg")
    assert got.columns == ["interval_start_ns", "rg", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms"]
    # (0, 0): 50 at bucket 3, 45 at 7, 5 at 1000; (1 s, 0): one at 5; (1 s, 1): 99 at 2, one at 9
    want = [(3, 7, 1000), (5, 5, 5), (2, 2, 2)]
    assert got.select("interval_start_ns", "rg").rows() == [(0, 0), (S, 0), (S, 1)]
    for row, buckets in zip(got.iter_rows(), want, strict=True):
        assert list(row[2:]) == pytest.approx([_mid_ms(b) for b in buckets], rel=1e-12)
    assert _percentiles(hist.clear(), ["interval_start_ns", "rg"]).height == 0


def test_percentiles_with_a_name_key_sorted_or_not():
    """FAST VP's per-tier table keys on tier names; a one-interval histogram is sorted on its first
    key, so only the names decide the order."""
    hist = pl.DataFrame({"interval_start_ns": [0, 0, 0], "tier": ["performance", "capacity", "performance"],
                         "lat_bucket": [4, 9, 2], "n": [1, 1, 3]})
    got = _percentiles(hist, ["interval_start_ns", "tier"]).sort("tier")
    assert got["tier"].to_list() == ["capacity", "performance"]
    assert got["latency_p50_ms"].to_list() == pytest.approx([_mid_ms(9), _mid_ms(2)])
    assert got["latency_p99_ms"].to_list() == pytest.approx([_mid_ms(9), _mid_ms(4)])
