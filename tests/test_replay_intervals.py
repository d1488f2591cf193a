"""Per-interval metrics: hand-worked sums and ratios, keys, and segment boundaries inside intervals."""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from replay.intervals import (
    AUTO_INTERVALS_NS,
    AUTO_MAX_INTERVALS,
    IntervalAggregator,
    auto_interval_ns,
    group_sums,
    outcome_frame,
)
from replay.kernels import cache_model
from replay.pages import SegmentBuilder

S = 1_000_000_000


def _reqs():
    # LRU, 2 pages of 4 KiB. t=0 read p0 (miss); t=10s write p0 (hit); t=59s read p1..p2 (8 KiB, 2 misses)
    # t=61s read p0 (distance 3 > 2: miss); t=70s read p2 (hit); t=130s flush (no access)
    return pl.DataFrame({
        "ts_ns": [0, 10 * S, 59 * S, 61 * S, 70 * S, 130 * S],
        "volume": ["a", "a", "b", "a", "b", "a"],
        "op": ["read", "write", "read", "read", "read", "flush"],
        "offset": [0, 0, 4096, 0, 8192, 0],
        "size": [4096, 4096, 8192, 4096, 4096, 0],
    })


def _run(cuts, **kw):
    df = _reqs()
    model = cache_model("lru", 2 * 4096, 4096)
    state = model.new_state()
    builder = SegmentBuilder(4096)
    agg = IntervalAggregator(**kw)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        segment = builder.build(df.slice(a, b - a))
        agg.add(outcome_frame(segment, model.replay(state, segment)))
    return agg.result()


def test_minute_intervals_hand_worked():
    r = _run([0, 6])
    assert r["interval_start_ns"].to_list() == [0, 60 * S, 120 * S]
    assert r["requests"].to_list() == [3, 2, 1]
    assert r["reads"].to_list() == [2, 2, 0] and r["writes"].to_list() == [1, 0, 0]
    assert r["pages"].to_list() == [4, 2, 0] and r["hits"].to_list() == [1, 1, 0]
    assert r["hit_ratio"].to_list() == [0.25, 0.5, None]
    assert r["bytes"].to_list() == [16384, 8192, 0] and r["hit_bytes"].to_list() == [4096, 4096, 0]
    assert r["byte_hit_ratio"].to_list() == [0.25, 0.5, None]
    assert r["read_bytes"].to_list() == [12288, 8192, 0] and r["write_bytes"].to_list() == [4096, 0, 0]


def test_segment_boundary_inside_interval_and_keys():
    assert _run([0, 1, 2, 4, 6]).equals(_run([0, 6]))
    r = _run([0, 2, 6], interval="30s", by=["volume"]).sort("interval_start_ns", "volume")
    assert r.select("interval_start_ns", "volume", "requests", "hits").rows() == [
        (0, 0, 2, 1), (30 * S, 1, 1, 0), (60 * S, 0, 1, 0), (60 * S, 1, 1, 1), (120 * S, 0, 1, 0)]


def test_custom_sums_and_errors():
    agg = IntervalAggregator("1min", sums={"n": pl.len().cast(pl.Int64), "big": (pl.col("size_bytes") > 4096).sum()},
                             ratios={"big_share": ("big", "n")})
    df = _reqs()
    segment = SegmentBuilder(4096).build(df)
    agg.add(outcome_frame(segment, {}))
    assert agg.result()["big_share"].to_list() == [1 / 3, 0.0, 0.0]
    with pytest.raises(ValueError, match="ratio 'x' uses 'hits'"):
        IntervalAggregator(sums={"n": pl.len()}, ratios={"x": ("hits", "n")})
    with pytest.raises(ValueError, match="not a duration"):
        IntervalAggregator("soon")
    with pytest.raises(ValueError, match="has 1 values for 6 requests"):
        outcome_frame(segment, {"hit": segment.op[:1]})


def test_coarsen_equals_summing_at_the_coarse_interval():
    """Summed at 10 s and re-cut to 30 s after the first segment == summed at 30 s throughout;
    a non-multiple is refused."""
    df = _reqs()
    model = cache_model("lru", 2 * 4096, 4096)
    state = model.new_state()
    builder = SegmentBuilder(4096)
    agg = IntervalAggregator("10s", by=["volume"])
    agg.add(outcome_frame(c := builder.build(df.slice(0, 3)), model.replay(state, c)))
    agg.coarsen(30 * S)
    agg.add(outcome_frame(c := builder.build(df.slice(3, 3)), model.replay(state, c)))
    assert agg.interval_ns == 30 * S
    assert agg.result().equals(_run([0, 3, 6], interval="30s", by=["volume"]))
    with pytest.raises(ValueError, match="cannot coarsen 30000000000 ns intervals to 45000000000 ns"):
        agg.coarsen(45 * S)


@pytest.mark.parametrize(("span_ns", "expected_ns"), [
    (0, 10**6),                      # one request: 1 ms
    (299 * 10**6, 10**6),            # 299 ms: 300 intervals of 1 ms
    (300 * 10**6, 2 * 10**6),        # 301 would be too many
    (10 * S, 100 * 10**6),           # 10 s: 101 intervals of 100 ms
    (75 * 60 * S, 20 * S),           # seed 000's 75 minutes: 226 intervals of 20 s
    (24 * 3600 * S, 600 * S),        # a day: 145 intervals of 10 min
    (10**4 * 86400 * S, 86400 * S),  # past the chain: days
])
def test_auto_interval_chain(span_ns, expected_ns):
    assert auto_interval_ns(span_ns) == expected_ns
    assert all(b % a == 0 and b // a <= 5 for a, b in itertools.pairwise(AUTO_INTERVALS_NS))
    if span_ns >= 60 * 10**6 and expected_ns < AUTO_INTERVALS_NS[-1]:
        assert 60 <= span_ns // expected_ns + 1 <= AUTO_MAX_INTERVALS


def test_merge_by_compiled_group_sums_equals_polars():
    """Parts of several segments (keys of mixed integer types, sums, maxima, minima) merged by
    packed keys and compiled sums: the same table, order and types as Polars' group-by; a part
    with a null goes to Polars."""
    import numpy as np

    rng = np.random.default_rng(7)
    agg = IntervalAggregator(5 * S, by=["volume", "rg", "lat_bucket"], sums={"n": pl.len(), "b": pl.col("b").sum()},
                             ratios={}, maxes={"hi": pl.col("b").max()}, mins={"lo": pl.col("b").min()})
    for _ in range(7):
        m = int(rng.integers(1, 3000))
        agg.add(pl.DataFrame({"ts_ns": rng.integers(0, 600 * S, m), "volume": rng.integers(0, 40, m).astype(np.int32),
                              "rg": rng.integers(3, 9, m), "lat_bucket": rng.integers(900, 1900, m).astype(np.int32),
                              "b": rng.integers(-10**12, 10**12, m)}))
    rows = pl.concat(agg._parts)
    want = (rows.group_by("interval_start_ns", "volume", "rg", "lat_bucket")
            .agg(pl.col("n").sum(), pl.col("b").sum(), pl.col("hi").max(), pl.col("lo").min())
            .sort("interval_start_ns", "volume", "rg", "lat_bucket"))
    assert want.height > 1000 and agg.result().equals(want) and agg.result().schema == want.schema
    by = ["volume", "interval_start_ns"]  # other keys, no step: the same as Polars'
    assert group_sums(rows, by, ["n"], ["hi"]).equals(
        rows.group_by(by).agg(pl.col("n").sum(), pl.col("hi").max()).sort(by))
    with_null = pl.concat([rows, rows.head(1).with_columns(hi=None)])  # Polars' path
    assert group_sums(with_null, by, ["n"], ["hi"]).equals(
        with_null.group_by(by).agg(pl.col("n").sum(), pl.col("hi").max()).sort(by))
