"""Cache kernels against libCacheSim (the oracle): identical hit counts on identical page sequences.

Each page access becomes one libCacheSim request of size 1 in an oracleGeneral binary file (its
own C reader), with the cache size in objects = our capacity in pages. Workloads: synthetic
Zipf(1.0) and uniform traces, and the real vSCSI and DiskSim samples at 4 KiB pages.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import require, require_module, shared_sample

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from pipelines.simulate import read_frames
from replay.kernels import POLICIES, cache_model
from replay.kernels import lru as lru_kernel
from replay.model import Segment
from replay.pages import SegmentBuilder
from traces import synth

try:
    import libcachesim as lcs
except ImportError:
    lcs = None


@pytest.fixture(scope="module", autouse=True)
def _libcachesim():
    """The oracle itself: skips without it, fails under CI (``make venv`` installs it, extra dev)."""
    require_module("libcachesim", "libCacheSim is the oracle (pip extra 'dev')")

ORACLE_RECORD = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"), ("next_access", "<i8")])
LCS_CLASS = {"lru": "LRU", "fifo": "FIFO", "clock": "Clock", "arc": "ARC", "s3fifo": "S3FIFO"}
PAGE = 4096


def libcachesim_hits(policy: str, page_ids: np.ndarray, capacity_pages: int, path) -> int:
    """Hits of libCacheSim's ``policy`` replaying ``page_ids`` (size-1 objects) via its C reader."""
    if not path.exists():
        rec = np.zeros(len(page_ids), ORACLE_RECORD)
        rec["time"] = np.arange(len(page_ids)) // 1000
        rec["obj_id"] = page_ids + 1
        rec["size"] = 1
        rec["next_access"] = -1
        rec.tofile(path)
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(lcs, LCS_CLASS[policy])(capacity_pages)
    miss_ratio, _ = cache.process_trace(reader)
    return int(round((1.0 - miss_ratio) * len(page_ids)))


def ours_hits(policy: str, segment: Segment, capacity_pages: int) -> int:
    model = cache_model(policy, capacity_pages * PAGE, PAGE)
    state = model.new_state()
    model.replay(state, segment)
    return model.counters(state)["hits"]


def ingested_segment(data_dir, path, fmt=None) -> Segment:
    res = ingest_file(path, data_dir, fmt=fmt, validate="off")
    trace = find_trace(data_dir, res.trace_id)
    return SegmentBuilder(PAGE).build(pl.concat(list(read_frames(trace))))


@pytest.fixture(scope="module")
def workloads(tmp_path_factory):
    """name -> (segment of the whole trace, its distinct pages)."""
    d = tmp_path_factory.mktemp("oracle-data")
    out = {}
    for name, dist in (("zipf", "zipf:1.0"), ("uniform", "uniform")):
        w = synth.Workload(distribution=dist, requests=200_000, region_bytes=2 << 30, block_size_bytes=PAGE,
                           seed=7, volume=name)
        p = d / f"{name}.parquet"
        synth.write(w, p)
        out[name] = ingested_segment(d, p)
    for name, parts, fmt in (("vscsi", ("traces", "vscsi", "cloudPhysicsIO.vscsi"), "vscsi"),
                             ("disksim", ("traces", "disksim", "tpcc-small.trace"), "disksim")):
        src = shared_sample(*parts)
        if src is not None:  # absent: that sample's tests skip (fail under CI) below
            out[name] = ingested_segment(d, src, fmt)
    return out, d


@pytest.mark.parametrize("name", ["zipf", "uniform", "vscsi", "disksim"])
def test_hit_counts_equal_libcachesim(workloads, name, monkeypatch):
    """Every policy at four sizes; LRU in both its layouts (the per-slot one these small caches
    choose, and the per-page one of large caches)."""
    segments, d = workloads
    require(name in segments, f"sample for {name} not present in ../shared/data")
    segment = segments[name]
    footprint = segment.n_ids
    sizes = sorted({max(20, int(footprint * f)) for f in (0.002, 0.01, 0.1, 0.5)})
    oracle_file = d / f"{name}.oracleGeneral.bin"
    checked = 0
    for policy in POLICIES:
        for cap in sizes:
            theirs = libcachesim_hits(policy, segment.page_id, cap, oracle_file)
            ours = ours_hits(policy, segment, cap)
            assert ours == theirs, f"{name} {policy} at {cap} pages: tiercast {ours} hits, libCacheSim {theirs}"
            checked += 1
    monkeypatch.setattr(lru_kernel, "SLOT_TABLE_MAX_BYTES", 0)
    assert not cache_model("lru", sizes[0] * PAGE, PAGE).slotted
    for cap in sizes:
        theirs = libcachesim_hits("lru", segment.page_id, cap, oracle_file)
        ours = ours_hits("lru", segment, cap)
        assert ours == theirs, f"{name} per-page lru at {cap} pages: tiercast {ours} hits, libCacheSim {theirs}"
        checked += 1
    assert checked == (len(POLICIES) + 1) * len(sizes)
    # the sizes exercised span cold to warm caches: hits must not be all zero or all hits
    assert 0 < ours_hits("lru", segment, sizes[-1]) < segment.n_pages


def _seq_segment(ids) -> Segment:
    ids = np.asarray(ids, dtype=np.int64)
    n = len(ids)
    return Segment(ts_ns=np.arange(n), op=np.zeros(n, np.uint8), volume=np.zeros(n, np.int32), offset=ids * PAGE,
                 size_bytes=np.full(n, PAGE), page_id=ids, page_no=ids, page_req=np.arange(n),
                 page_bytes=np.full(n, PAGE), page_size=PAGE, first_request=0, n_ids=int(ids.max()) + 1)


def _page_hits(policy, ids, cap, **params):
    model = cache_model(policy, cap * PAGE, PAGE, **params)
    return model.page_hits(model.new_state(), _seq_segment(ids)).tolist()


def test_hand_worked_lru_fifo_clock():
    # pages a=0 b=1 c=2 d=3, capacity 3: a b c a d b
    seq = [0, 1, 2, 0, 3, 1]
    # LRU: a hit (moves to front); d evicts b (least recent); b misses
    assert _page_hits("lru", seq, 3) == [0, 0, 0, 1, 0, 0]
    # FIFO: a hit (no reordering); d evicts a (oldest); b still cached -> hit
    assert _page_hits("fifo", seq, 3) == [0, 0, 0, 1, 0, 1]
    # CLOCK (1 bit): a hit sets a's bit; d: hand at a (bit 1 -> cleared, skip), evicts b; b misses
    assert _page_hits("clock", seq, 3) == [0, 0, 0, 1, 0, 0]


def test_hand_worked_arc_ghost_hits():
    # capacity 2, a=0 b=1 c=2: a a b c b c a
    # a miss (T1); a hit (-> T2); b miss (T1); c miss: cache full, |T1|+|B1|+1 = 2 <= c, so
    # REPLACE demotes T1's tail b to B1 (|T1| = 1 > p = 0); b: ghost hit in B1, p -> 1, miss,
    # REPLACE (|T1| = 1 = p, hit not in B2) demotes T2's tail a to B2, b enters T2; c hit
    # (T1 -> T2); a: ghost hit in B2, p -> 0, miss, REPLACE (T1 empty) demotes T2's tail b.
    seq = [0, 0, 1, 2, 1, 2, 0]
    assert _page_hits("arc", seq, 2) == [0, 1, 0, 0, 0, 1, 0]
    model = cache_model("arc", 2 * PAGE, PAGE)
    state = model.new_state()
    model.page_hits(state, _seq_segment(seq))
    assert state.fmeta[0] == 0.0  # p went 0 -> 1 -> 0
    assert model.counters(state)["resident_pages"] == 2


def test_hand_worked_s3fifo():
    # capacity 20: |S| = 2, |M| = 18, ghost 18 entries.
    # 0..19: 0 and 1 fill S; S is full before any eviction, so 2..19 go to M (warm-up rule).
    # 2: hit in M (counter 1). 20: full; M holds 18 (not over), so S is evicted: 0 (counter 0)
    # -> ghost; 20 -> S. 0: ghost hit (miss): S evicts 1 -> ghost; 0 -> M (19 pages, over).
    # 21: M is over, so M is evicted: tail 2 has counter 1 -> back to the head with 0; tail 3
    # leaves; 21 -> S. 2: hit. 3: miss (gone); S evicts 20 -> ghost. 1: ghost hit (miss).
    seq = [*range(20), 2, 20, 0, 21, 2, 3, 1]
    assert _page_hits("s3fifo", seq, 20) == [0] * 20 + [1, 0, 0, 0, 1, 0, 0]


def test_s3fifo_needs_two_small_pages():
    with pytest.raises(ValueError, match="small queue would hold 1 page"):
        cache_model("s3fifo", 19 * PAGE, PAGE)
    assert cache_model("s3fifo", 20 * PAGE, PAGE).small_pages == 2


def test_bad_policy_and_sizes():
    with pytest.raises(ValueError, match="unknown cache policy 'mru'"):
        cache_model("mru", 1 << 20)
    with pytest.raises(ValueError, match="holds no 4096 B page"):
        cache_model("lru", 100, PAGE)
    with pytest.raises(ValueError, match="power of two"):
        cache_model("lru", 1 << 20, 3000)


@pytest.mark.parametrize("slot_table_bytes", [0, 1 << 30], ids=["per-page", "per-slot"])
def test_lru_layouts_match_a_reference_across_segments(monkeypatch, slot_table_bytes):
    """Each LRU layout, fed in uneven segments (its state carried over), gives the hit of every
    access that an ordered-dict LRU gives; sizes from 1 page to more than the distinct pages."""
    from collections import OrderedDict

    monkeypatch.setattr(lru_kernel, "SLOT_TABLE_MAX_BYTES", slot_table_bytes)
    rng = np.random.default_rng(3)
    ids = (rng.zipf(1.3, 30_000) % 5_000).astype(np.int64)
    for cap in (1, 2, 97, 1_000, 6_000):
        ref, expect = OrderedDict(), []
        for x in ids.tolist():
            if x in ref:
                ref.move_to_end(x)
                expect.append(1)
                continue
            expect.append(0)
            if len(ref) == cap:
                ref.popitem(last=False)
            ref[x] = None
        model = cache_model("lru", cap * PAGE, PAGE)
        assert model.slotted == bool(slot_table_bytes)
        state, got = model.new_state(), []
        for a, b in ((0, 1), (1, 4_000), (4_000, 4_001), (4_001, 30_000)):
            seg = _seq_segment(ids[a:b])
            got += model.page_hits(state, seg).tolist()
        assert got == expect, cap
        assert model.counters(state)["resident_pages"] == len(ref)
