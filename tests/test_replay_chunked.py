"""Segmented replay = one pass, bit for bit, for every kernel and for both curve methods, with
random segment boundaries (hypothesis); states survive pickling mid-trace."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.kernels import POLICIES, cache_model
from replay.mrc import Shards, StackDistances
from replay.pages import SegmentBuilder

PAGE = 4096


def _requests(seed: int, n: int = 4000) -> pl.DataFrame:
    """Mixed requests: two volumes, Zipf-ish offsets, 512 B..40 KiB sizes (multi-page, unaligned),
    reads, writes and some trims/flushes (which are not cache accesses)."""
    rng = np.random.default_rng(seed)
    hot = (rng.zipf(1.2, n) % 3000).astype(np.int64)
    offset = hot * 4096 + rng.choice([0, 512, 2048], n)
    size = rng.choice([512, 4096, 8192, 12288, 40960], n)
    op = rng.choice(["read", "write", "trim", "flush"], n, p=[0.55, 0.4, 0.03, 0.02])
    size = np.where(op == "flush", 0, size)
    return pl.DataFrame({"ts_ns": np.cumsum(rng.integers(1, 10**8, n)), "volume": rng.choice(["v0", "v1"], n),
                         "op": op, "offset": offset, "size": size.astype(np.int32)})


REQS = _requests(3)


def _cuts(n: int, fractions: list[float]) -> list[int]:
    return sorted({0, n, *(int(f * n) for f in fractions)})


def _segments(df: pl.DataFrame, cuts: list[int]):
    builder = SegmentBuilder(PAGE)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        yield builder.build(df.slice(a, b - a))


@settings(max_examples=20, deadline=None)
@given(fractions=st.lists(st.floats(0.0, 1.0), max_size=6), policy=st.sampled_from(sorted(POLICIES)),
       capacity=st.sampled_from([20, 64, 500, 5000]))
def test_kernels_segmented_equal_one_pass(fractions, policy, capacity):
    model = cache_model(policy, capacity * PAGE, PAGE)
    one = model.new_state()
    whole = model.replay(one, next(_segments(REQS, [0, REQS.height])))
    state = model.new_state()
    parts = []
    for k, segment in enumerate(_segments(REQS, _cuts(REQS.height, fractions))):
        if k == 1:  # carry the state through a pickle round trip and a deep copy
            state = copy.deepcopy(pickle.loads(pickle.dumps(state)))
        parts.append(model.replay(state, segment))
    for key, arr in whole.items():
        assert np.array_equal(np.concatenate([p[key] for p in parts]), arr), key
    assert model.counters(state) == model.counters(one)
    c = model.counters(one)
    assert c["requests"] == REQS.height
    assert c["skipped_requests"] == REQS.filter(pl.col("op").is_in(["trim", "flush"])).height
    assert 0 < c["hits"] < c["pages"]


@settings(max_examples=15, deadline=None)
@given(fractions=st.lists(st.floats(0.0, 1.0), max_size=6))
def test_curves_segmented_equal_one_pass(fractions):
    def run(cuts):
        sd = StackDistances()
        sh = Shards(rate=0.1)
        shm = Shards(rate=1.0, max_pages=300)
        builder = SegmentBuilder(PAGE)
        key_builder = SegmentBuilder(PAGE)
        for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            if k == 1:  # every piece of state survives a pickle round trip mid-trace
                sd, sh, shm, builder, key_builder = pickle.loads(pickle.dumps((sd, sh, shm, builder, key_builder)))
            part = REQS.slice(a, b - a)
            segment = builder.build(part)
            acc = segment.op[segment.page_req] <= 1
            sd.update(segment.page_id[acc], segment.page_bytes[acc], n_ids=segment.n_ids)
            keys, nbytes = key_builder.page_keys(part)
            sh.update(keys, nbytes)
            shm.update(keys, nbytes)
        caps = [1, 10, 100, 1000, 10000]
        return sd.hist, sd.cold, sd.hit_ratios(caps), sh.hit_ratios(caps), shm.hit_ratios(caps), shm.current_rate

    whole = run([0, REQS.height])
    parts = run(_cuts(REQS.height, fractions))
    n = min(len(whole[0]), len(parts[0]))
    assert np.array_equal(whole[0][:n], parts[0][:n]) and whole[0][n:].sum() == parts[0][n:].sum() == 0
    assert np.array_equal(whole[1], parts[1])
    for w, p in zip(whole[2:5], parts[2:5], strict=True):
        assert np.array_equal(w[0], p[0]) and np.array_equal(w[1], p[1])
    assert whole[5] == parts[5] < 1.0  # fixed-size SHARDS lowered its rate the same way
