"""Hit-ratio curves: the exact curve equals single-size LRU everywhere; SHARDS at 1 % is within
0.01 mean absolute error of it; byte hit ratio as documented in replay.mrc."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import require, shared_sample

from pipelines import simulate as sim
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from replay.ids import IdMap
from replay.kernels import cache_model
from replay.mrc import (
    EVEN_SHARE,
    MRC_SCHEMA,
    AveragedShards,
    Shards,
    StackDistances,
    _mix,
    candidates,
    default_sizes,
)
from replay.pages import SegmentBuilder
from traces import synth

PAGE = 4096


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("mrc-data")
    out = {}
    w = synth.Workload(distribution="zipf:1.0", requests=300_000, region_bytes=8 << 30, block_size_bytes=8192,
                       align_bytes=4096, seed=11, volume="z")
    synth.write(w, d / "zipf.parquet")
    out["zipf"] = ingest_file(d / "zipf.parquet", d, validate="off").trace_id
    for name, parts, fmt in (("vscsi", ("traces", "vscsi", "cloudPhysicsIO.vscsi"), "vscsi"),
                             ("disksim", ("traces", "disksim", "tpcc-small.trace"), "disksim")):
        src = shared_sample(*parts)
        if src is not None:  # absent: the tests of that sample skip (fail under CI) in _trace
            out[name] = ingest_file(src, d, fmt=fmt, validate="off").trace_id
    return d, out


def _trace(traces, name):
    d, ids = traces
    require(name in ids, f"sample for {name} not present in ../shared/data")
    return d, find_trace(d, ids[name])


@pytest.mark.parametrize("name", ["zipf", "vscsi", "disksim"])
def test_exact_curve_equals_lru_at_every_size(traces, name):
    d, trace = _trace(traces, name)
    rows = sim.mrc(trace, d, PAGE, method="exact")
    assert rows.schema == pl.Schema(MRC_SCHEMA)
    assert rows.height >= 15 and (rows["method"] == "exact").all()
    assert rows["hit_ratio"].is_sorted() and rows["cache_bytes"].is_sorted()
    segment = SegmentBuilder(PAGE).build(pl.concat(list(sim.read_frames(trace))))
    for r in rows.iter_rows(named=True):
        model = cache_model("lru", r["cache_bytes"], PAGE)
        state = model.new_state()
        model.replay(state, segment)
        c = model.counters(state)
        assert r["hit_ratio"] == c["hit_ratio"], r
        assert r["byte_hit_ratio"] == c["byte_hit_ratio"], r
    # the largest default size is the footprint: every re-access hits
    assert rows["hit_ratio"][-1] == pytest.approx(1 - segment.n_ids / segment.n_pages)
    assert (d / "results" / "mrc" / trace.trace_id / "exact-4096.parquet").is_file()


@pytest.mark.parametrize(("name", "rate"), [("vscsi", 0.01), ("disksim", 0.01), ("zipf", 0.1)])
def test_shards_within_001_of_exact(traces, name, rate):
    """SHARDS_adj at 1 % on the real samples. The synthetic Zipf(1.0) trace is small (200 K
    distinct pages) and puts most accesses on few pages, so a 1 % sample holds too few of the
    pages that decide its hit ratios (a variance set by the key popularity, not by the code; see
    benchmarks/cache.py for 1 % on 10 M requests): it is checked at 10 %."""
    d, trace = _trace(traces, name)
    exact = sim.mrc(trace, None, PAGE, method="exact")
    sizes = exact["cache_bytes"].to_list()
    shards = sim.mrc(trace, d, PAGE, sizes=sizes, method="shards", rate=rate)
    assert (shards["method"] == "shards").all() and shards["sample_rate"][0] == pytest.approx(rate)
    mae = (shards["hit_ratio"] - exact["hit_ratio"]).abs().mean()
    byte_mae = (shards["byte_hit_ratio"] - exact["byte_hit_ratio"]).abs().mean()
    assert mae <= 0.01, mae
    assert byte_mae <= 0.01, byte_mae
    assert (d / "results" / "mrc" / trace.trace_id / f"shards-4096-{rate:g}.parquet").is_file()
    fixed = sim.mrc(trace, None, PAGE, sizes=sizes, method="shards", max_pages=8192)
    assert (fixed["method"] == "shards_max").all()
    assert (fixed["hit_ratio"] - exact["hit_ratio"]).abs().mean() <= 0.02


def test_byte_hit_ratio_hand_worked():
    # request 1: 6 KiB at offset 2 KiB -> page 0 (2 KiB of it) and page 1 (4 KiB); both cold.
    # request 2: 4 KiB at offset 4 KiB -> page 1, distance 1: a hit in any cache >= 1 page.
    df = pl.DataFrame({"ts_ns": [0, 1], "volume": ["v", "v"], "op": ["read", "write"],
                       "offset": [2048, 4096], "size": [6144, 4096]})
    segment = SegmentBuilder(PAGE).build(df)
    assert segment.page_no.tolist() == [0, 1, 1] and segment.page_bytes.tolist() == [2048, 4096, 4096]
    sd = StackDistances()
    sd.update(segment.page_id, segment.page_bytes)
    hr, bhr = sd.hit_ratios([1, 2])
    assert hr.tolist() == [1 / 3, 1 / 3]
    assert bhr.tolist() == [4096 / 10240, 4096 / 10240]
    model = cache_model("lru", PAGE, PAGE)
    state = model.new_state()
    out = model.replay(state, segment)
    assert out["hit_pages"].tolist() == [0, 1] and out["hit_bytes"].tolist() == [0, 4096]
    assert out["hit"].tolist() == [False, True]
    assert model.counters(state)["byte_hit_ratio"] == 0.4


def test_stack_distances_hand_worked():
    # a b c b a: distances inf inf inf 2 3
    sd = StackDistances()
    sd.update(np.array([0, 1, 2, 1, 0]), np.ones(5, dtype=np.int64))
    assert sd.hist[:4].tolist() == [0, 0, 1, 1] and sd.cold[0] == 3
    assert sd.hit_counts([1, 2, 3])[0].tolist() == [0, 1, 2]


def test_shards_rate_one_is_exact():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2000, 50_000)
    nbytes = rng.integers(1, 4097, 50_000)
    sd = StackDistances()
    sd.update(IdMap().assign(keys), nbytes)
    sh = Shards(rate=1.0)
    sh.update(keys, nbytes)
    caps = [1, 10, 100, 1000, 2000]
    assert np.allclose(sh.hit_ratios(caps)[0], sd.hit_ratios(caps)[0], atol=1e-12)
    assert np.allclose(sh.hit_ratios(caps)[1], sd.hit_ratios(caps)[1], atol=1e-12)


def test_default_sizes_and_errors(traces):
    sizes = default_sizes(1_000_000, PAGE)
    assert len(sizes) == 20 and sizes[-1] == 1_000_000 * PAGE and sizes[0] == 1000 * PAGE
    assert all(s % PAGE == 0 for s in sizes) and sizes == sorted(sizes)
    assert default_sizes(5, PAGE) == [PAGE * k for k in (1, 2, 3, 4, 5)]
    with pytest.raises(ValueError, match="sampling rate must be in"):
        Shards(rate=0.0)
    d, trace = _trace(traces, "zipf")
    with pytest.raises(ValueError, match="unknown MRC method 'lfu'"):
        sim.mrc(trace, None, PAGE, method="lfu")
    with pytest.raises(ValueError, match="smaller than one 4096 B page"):
        sim.mrc(trace, None, PAGE, sizes=[1024])
    with pytest.raises(ValueError, match="no cache sizes given"):
        sim.mrc(trace, None, PAGE, sizes=[])
    with pytest.raises(ValueError, match="1 with max_pages"):
        sim.mrc(trace, None, PAGE, method="shards", max_pages=100, seeds=2)
    with pytest.raises(ValueError, match="need 1 <= seeds <= 1/rate"):
        AveragedShards(rate=0.5, seeds=3)
    for bad in ({"rate": 0.1}, {"max_pages": 4096}, {"seeds": 2}):
        with pytest.raises(ValueError, match="apply to the shards method only, not exact"):
            sim.mrc(trace, None, PAGE, method="exact", **bad)


def _keys(kind: str, n: int, pages: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, pages, n)
    return (rng.zipf(1.1, n) - 1) % pages


def _exact(keys, caps):
    sd = StackDistances()
    sd.update(IdMap().assign(keys), np.full(keys.shape[0], PAGE))
    return sd.hit_ratios(caps)[0]


@pytest.mark.parametrize(("kind", "adj"), [("uniform", False), ("zipf", True)])
def test_shards_auto_picks_the_estimator_the_access_counts_call_for(kind, adj):
    """Uniform: every sampled page has a similar count (even share ~0.8), so the sample's
    shortfall or excess of accesses is spread over all distances: plain SHARDS. Zipf: a few hot
    pages hold the sampled accesses (even share ~0.01), so it is their re-accesses, hits at any
    size: SHARDS_adj. Auto is as close to the exact curve as the better of the two, at 1 % (on
    this 2 M-access Zipf trace within 0.01: see test_shards_within_001_of_exact on small traces)."""
    keys = _keys(kind, 2_000_000, 400_000)
    caps = np.unique(np.geomspace(4000, 400_000, 12).astype(np.int64))
    exact = _exact(keys, caps)
    err = {}
    for adjust in ("auto", True, False):
        sh = Shards(rate=0.01, adjust=adjust)
        sh.update(keys, np.full(keys.shape[0], PAGE))
        err[adjust] = np.abs(sh.hit_ratios(caps)[0] - exact).mean()
        if adjust == "auto":
            assert sh.uses_adj() is adj
            assert (sh.even_share() > 0.5) if kind == "uniform" else (sh.even_share() < EVEN_SHARE / 3)
    assert err["auto"] == err[adj] <= (0.005 if kind == "uniform" else 0.01), err
    assert err[adj] < err[not adj], err


def test_averaged_shards_are_disjoint_samples_of_one_hash():
    keys = _keys("uniform", 300_000, 50_000, seed=3)
    nbytes = np.full(keys.shape[0], PAGE)
    one = Shards(rate=0.02)
    one.update(keys, nbytes)
    avg1 = AveragedShards(rate=0.02, seeds=1)
    avg1.update(keys, nbytes)
    assert np.array_equal(avg1.hit_ratios([100, 1000])[0], one.hit_ratios([100, 1000])[0])
    avg = AveragedShards(rate=0.01, seeds=2)
    for part in np.array_split(np.arange(keys.shape[0]), 5):  # segmented: the same state as one pass
        avg.update(keys[part], nbytes[part])
    # the two halves of the 2 % sample, page for page
    sampled = [set(keys[p.ids.lookup(keys) >= 0].tolist()) for p in avg.parts]
    assert not sampled[0] & sampled[1]
    assert sampled[0] | sampled[1] == set(keys[one.ids.lookup(keys) >= 0].tolist())
    assert all(p.accesses == keys.shape[0] for p in avg.parts)
    caps = [500, 5000, 50_000]
    hr = avg.hit_ratios(caps)[0]
    assert np.allclose(hr, np.mean([p.hit_ratios(caps)[0] for p in avg.parts], axis=0))
    assert np.abs(hr - _exact(keys, caps)).mean() < 0.01


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 4099])
def test_candidates_are_the_accesses_hashed_below_the_threshold_in_order(n):
    """The sampler's mask-per-64-accesses pass keeps exactly what a per-access test would, in
    trace order, whole groups and the tail alike; the total counts every access's bytes."""
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 5000, n).astype(np.int64)
    nbytes = rng.integers(1, 9000, n).astype(np.int64)
    threshold = int(0.3 * 2**63)
    hashes = np.array([_mix(int(k)) for k in keys], dtype=np.int64)
    keep = hashes < threshold
    got_keys, got_hashes, got_bytes, total = candidates(keys, nbytes, threshold)
    assert np.array_equal(got_keys, keys[keep]) and np.array_equal(got_hashes, hashes[keep])
    assert np.array_equal(got_bytes, nbytes[keep]) and total == int(nbytes.sum())
    assert n < 64 or 0.1 < keep.mean() < 0.6  # the threshold keeps some and drops some
