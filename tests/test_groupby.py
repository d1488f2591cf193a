"""The compiled per-interval sums (``replay.groupby``, issue 29) against the Polars group-by they
replace: the same groups, sums, maxima, latency buckets, trace clock and whole replay tables."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines import replay as rp
from replay import groupby
from replay.scenario import load
from replay.tally import REQUEST_COLUMNS, request_tables
from traces import synth


def test_group_reduce_equals_polars_group_by():
    rng = np.random.default_rng(3)
    n = 200_000
    win = np.sort(rng.integers(0, 40, n))
    vol = rng.integers(0, 700, n).astype(np.int32)  # many groups: the table grows several times
    rg = rng.integers(-1, 9, n)
    a, b = rng.integers(0, 1 << 40, n), rng.integers(-5, 5, n)
    key, layout = groupby.pack_keys([win, vol, rg])
    keys, counts, sums, maxes = groupby.group_reduce(key, (a, b), (b, a))
    w, v, g = groupby.unpack_keys(keys, layout)
    got = pl.DataFrame({"win": w, "vol": v, "rg": g, "n": counts, "sa": sums[0], "sb": sums[1], "mb": maxes[0],
                        "ma": maxes[1]}).sort("win", "vol", "rg")
    want = (pl.DataFrame({"win": win, "vol": vol.astype(np.int64), "rg": rg, "a": a, "b": b})
            .group_by("win", "vol", "rg").agg(n=pl.len().cast(pl.Int64), sa=pl.col("a").sum(), sb=pl.col("b").sum(),
                                              mb=pl.col("b").max(), ma=pl.col("a").max()).sort("win", "vol", "rg"))
    assert got.height == want.height > 10_000
    assert got.equals(want)
    # coarser groups from the finer ones equal grouping the rows again
    gid, gk = groupby.coarser_ids(groupby.group_ids(key), layout[2][1])
    k2, c2, _, _ = groupby.group_reduce(key >> layout[2][1], (), ())
    assert dict(zip(gk[np.argsort(gk)], np.bincount(gid)[np.argsort(gk)], strict=True)) == dict(
        zip(k2, c2, strict=True))


@pytest.mark.parametrize(("ssd", "pages"), [(False, True), (True, True), (False, False)])
def test_request_tables_equal_polars_group_by(ssd, pages):
    """The kernel's request tally (``replay.tally.add``, driven over columns) against a Polars group-by per (interval, volume, RAID group),
    with enough groups that the hash table grows several times within one segment. ``pages``
    False (an all-flash array, a cloud volume): the page, stall, back-end and dirty columns are
    zero and given empty."""
    rng = np.random.default_rng(11)
    n = 60_000
    arr = np.sort(rng.integers(0, 50 * 10**9, n))
    done = arr + rng.integers(0, 10**8, n)
    op = rng.choice(np.array([rp.OP_READ, rp.OP_WRITE, 3], dtype=np.uint8), n)
    size = rng.integers(512, 1 << 20, n)
    vol = rng.integers(0, 40, n).astype(np.int32)
    rg = rng.integers(-1, 7, n)
    cols = tuple(rng.integers(0, 1000, n) for _ in REQUEST_COLUMNS)
    if not ssd:
        cols = cols[:10] + (np.zeros(0, dtype=np.int64),) * 5
    given = cols
    if not pages:
        cols = tuple(np.zeros(n, dtype=np.int64) if k not in (5, 10, 11, 12, 13, 14) else c for k, c in enumerate(cols))
        given = tuple(np.zeros(0, dtype=np.int64) if k not in (5, 10, 11, 12, 13, 14) else c for k, c in enumerate(cols))
    interval_ns = 10**9
    rk, rs, rm, group, bucket = request_tables(arr, done, op, size, vol, rg, -1, 6, given, ssd, interval_ns)
    assert rk.shape[0] > 4_000  # past the first table of 128 groups, several growths
    assert np.array_equal(rk[group], np.stack([arr // interval_ns, vol, rg], axis=1))
    c = dict(zip(REQUEST_COLUMNS, cols, strict=True))
    lat = done - arr
    df = pl.DataFrame({"w": arr // interval_ns, "v": vol.astype(np.int64), "g": rg, "op": op, "size": size,
                       "lat": lat, **{k: v for k, v in c.items() if v.size}})
    sums = [pl.len().cast(pl.Int64), (pl.col("op") == rp.OP_READ).sum().cast(pl.Int64),
            (pl.col("op") == rp.OP_WRITE).sum().cast(pl.Int64),
            *(pl.col(k).sum() for k in ("read_pages", "read_hit_pages", "write_pages", "write_hit_pages", "size", "lat",
                                        "stall_ns")),
            (pl.col("stall_ns") > 0).sum().cast(pl.Int64), pl.col("throttle_ns").sum(),
            (pl.col("throttle_ns") > 0).sum().cast(pl.Int64),
            *(pl.col(k).sum() for k in ("backend_ios", "backend_busy_ns", "dirty_pages", "rg_dirty_pages"))]
    maxes = [pl.col(k).max() for k in ("lat", "dirty_pages", "rg_dirty_pages")]
    if ssd:
        sums += [pl.col(k).sum() for k in ("ssd_read_hits", "ssd_read_misses", "ssd_through_hits", "ssd_through_misses")]
        maxes.append(pl.col("ssd_dirty_slots").max())
    want = df.group_by("w", "v", "g", maintain_order=True).agg(
        *(e.alias(f"s{i}") for i, e in enumerate(sums)), *(e.alias(f"m{i}") for i, e in enumerate(maxes)))
    assert np.array_equal(rk, want.select("w", "v", "g").to_numpy())
    assert np.array_equal(rs, want.select(f"s{i}" for i in range(len(sums))).to_numpy())
    assert np.array_equal(rm, want.select(f"m{i}" for i in range(len(maxes))).to_numpy())


def test_keys_too_wide_to_pack_are_refused():
    wide = np.array([0, 1 << 40], dtype=np.int64)
    assert groupby.pack_keys([wide, wide]) is None


def test_latency_buckets_equal_the_polars_expression():
    rng = np.random.default_rng(5)
    lat = np.concatenate([np.arange(-3, 5000), rng.integers(0, 10**12, 500_000),
                          np.round(rp.LAT_BASE ** np.arange(0, 2800)).astype(np.int64)])
    want = pl.DataFrame({"x": lat}).select(rp._lat_bucket(pl.col("x")))["x"].to_numpy()
    n = lat.size
    none = np.zeros(0, dtype=np.int64)
    cols = (none,) * 5 + (np.zeros(n, dtype=np.int64),) + (none,) * 9
    zero = np.zeros(n, dtype=np.int64)
    *_, bucket = request_tables(zero, lat, np.zeros(n, dtype=np.uint8), zero, zero.astype(np.int32), zero, 0, 0, cols,
                                False, 10**9)
    assert np.array_equal(bucket, want)


@pytest.mark.parametrize("cut", [1, 7, 1000])
def test_timestamp_stats_equal_the_numpy_reference(cut):
    rng = np.random.default_rng(cut)
    ts = np.cumsum(rng.choice([0, 0, 0, 4000, 8000, 12000], 20_000)).astype(np.int64)
    a, b = rp._Aggregates(0, 0), rp._Aggregates(0, 0)
    for i in range(0, ts.size, cut * 13):
        a._note_timestamps(ts[i:i + cut * 13])
        b._note_timestamps_numpy(ts[i:i + cut * 13])
    assert (a.ts_resolution_ns, a.ts_at_one_instant_max, a._ts_last) == (
        b.ts_resolution_ns, b.ts_at_one_instant_max, b._ts_last)
    assert a.ts_resolution_ns == 4000


@pytest.mark.parametrize(("preset", "interval"), [("vnx5400-fastcache", "1s"), ("vnx2-mcx", "1s"), ("vnx1-flare", "1s"),
                                                 ("vnx5400-fastcache", "auto"), ("violin6232", "auto"),
                                                 ("aws-gp3", "auto")])
def test_replay_tables_equal_the_polars_path(preset, interval, monkeypatch):
    """Every table and summary of a two-volume replay equal those of the Polars group-by
    (``COMPILED_SUMS`` off), at 20,000-request segments. The kernel's tally (``replay.tally``):
    at the automatic interval it starts at 1 ms and coarsens within a segment, the aggregation
    after it."""
    parts = [synth.generate(synth.pattern("database", requests=30_000, region_bytes=2 << 30, seed=s, volume=f"v{s}"))
             for s in (1, 2)]
    df = pl.concat(parts).sort("ts_ns")
    frames = [df.slice(i, 20_000) for i in range(0, df.height, 20_000)]
    sc = load(preset, ["replay.mode=closed", "replay.outstanding=32", f"replay.interval={interval}"])
    fast = rp.replay_frames(frames, sc, total=df.height)
    monkeypatch.setattr(rp, "COMPILED_SUMS", False)
    slow = rp.replay_frames(frames, sc, total=df.height)
    assert fast.volume_intervals.height > 2
    assert fast.volume_intervals.equals(slow.volume_intervals)
    assert fast.rg_intervals.equals(slow.rg_intervals)
    assert fast.tables.keys() == slow.tables.keys()
    for k in fast.tables:
        assert fast.tables[k].equals(slow.tables[k]), k
    assert fast.summary == slow.summary


def test_latency_hist_dense_and_hashed_agree(monkeypatch):
    rng = np.random.default_rng(9)
    group = rng.integers(0, 50, 100_000).astype(np.int32)
    bucket = rng.integers(1200, 1900, 100_000).astype(np.int32)
    dense = groupby.latency_hist(group, bucket, 50)
    monkeypatch.setattr(groupby, "DENSE_CELLS_MAX", 0)
    hashed = groupby.latency_hist(group, bucket, 50)
    as_set = [set(zip(*(a.tolist() for a in x), strict=True)) for x in (dense, hashed)]
    assert as_set[0] == as_set[1] and sum(dense[2]) == 100_000
    want = pl.DataFrame({"g": group, "b": bucket}).group_by("g", "b").len()
    assert len(as_set[0]) == want.height


@pytest.mark.parametrize("mech", ["cloud", "snapshots"])
def test_mechanism_results_compiled_equal_their_polars_expressions(mech):
    """The cloud and snapshot results sum arrays in compiled code (``add_arrays``); their
    aggregators' Polars expressions over a frame of the same requests give the same rows."""
    from replay.mech.cloud.results import Results as Cloud
    from replay.mech.snapshots.results import WORK
    from replay.mech.snapshots.results import Results as Snapshots

    class Model:  # what the two Results read from the model at construction
        class kernel_params:
            class snapshots:
                every_ns = 3 * 10**9
                chunk_bytes = 1 << 20

        class scenario:
            class snapshots:
                keep_s = 60.0

    rng = np.random.default_rng(11)
    n = 50_000
    ts = np.sort(rng.integers(0, 10**11, n))
    req = {"ts_ns": ts, "op": rng.choice(np.array([0, 1, 2], dtype=np.uint8), n),
           "size_bytes": rng.integers(512, 1 << 20, n), "throttle_ns": rng.choice([0, 0, 5, 10**6], n),
           "cloud_start_ns": ts + rng.integers(0, 10**9, n), "cloud_ios": rng.integers(0, 3, n),
           "cloud_credit_ios": rng.integers(-5, 10**6, n), "cloud_credit_bytes": rng.integers(0, 1 << 40, n),
           "snapshot_first_writes": rng.integers(0, 4, n), **{w: rng.integers(0, 9, n) for w in WORK}}
    res = Cloud(Model, 10**9) if mech == "cloud" else Snapshots(Model, 10**9)
    aggs = {"cloud_start_ns": res.started, "ts_ns": res.arrived} if mech == "cloud" else {"ts_ns": res.sums}
    res.add(req, {})
    frame = pl.DataFrame(req)
    for ts_col, agg in aggs.items():
        want = agg.part(frame.with_columns(ts_ns=pl.col(ts_col))).collect().sort("interval_start_ns")
        got = agg.result().select(want.columns)
        assert got.height == want.height > 30
        assert got.equals(want)


def test_a_long_frame_is_replayed_in_segments(monkeypatch):
    """A frame longer than ``ARRAY_BATCH_ROWS`` goes through the model in segments of that many
    requests (one 45 M-request seed frame in one segment peaked at 14 GiB), with the same tables
    and summary as in one segment."""
    df = synth.generate(synth.pattern("database", requests=30_000, region_bytes=2 << 30, seed=4, volume="v"))
    sc = load("vnx5400-fastcache", ["replay.mode=closed", "replay.outstanding=32", "replay.interval=1s"])
    whole = rp.replay_frames([df], sc, total=df.height)
    monkeypatch.setattr(rp, "ARRAY_BATCH_ROWS", 10_000)
    seen = []
    cut = rp.replay_frames([df], sc, total=df.height, progress=lambda done, total: seen.append(done))
    assert seen == [0, 10_000, 20_000, 30_000]
    assert cut.volume_intervals.equals(whole.volume_intervals)
    assert cut.rg_intervals.equals(whole.rg_intervals)
    assert cut.tables.keys() == whole.tables.keys() and all(cut.tables[k].equals(whole.tables[k]) for k in cut.tables)
    assert cut.summary == whole.summary


@pytest.mark.parametrize("order", ["sorted", "shuffled", "sparse"])
def test_window_reduce_equals_polars_group_by(order):
    """Per-interval sums, maxima and minima in one dense pass against a Polars group-by; rows in
    time order, shuffled, and spread over more windows than rows (then it declines: None)."""
    rng = np.random.default_rng(21)
    n = 50_000
    ts = np.sort(rng.integers(0, 40 * 10**9, n))
    if order == "shuffled":
        ts = rng.permutation(ts)
    if order == "sparse":
        ts = rng.integers(0, 10**18, n)
    a, b = rng.integers(-10**6, 10**6, n), rng.integers(0, 1 << 40, n)
    got = groupby.window_reduce(ts, 10**9, (a,), (b, a), (b,))
    if order == "sparse":
        assert got is None
        return
    w, counts, s, hi, lo = got
    want = (pl.DataFrame({"w": ts // 10**9, "a": a, "b": b}).group_by("w")
            .agg(n=pl.len().cast(pl.Int64), sa=pl.col("a").sum(), hb=pl.col("b").max(), ha=pl.col("a").max(),
                 lb=pl.col("b").min()).sort("w"))
    assert want.height == 40
    assert got[0].tolist() == want["w"].to_list()
    assert np.array_equal(np.stack([counts, s[0], hi[0], hi[1], lo[0]], axis=1),
                          want.select("n", "sa", "hb", "ha", "lb").to_numpy())
