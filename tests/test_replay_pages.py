"""Page splitting, dense ids and segment building, against hand-worked values."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from replay.ids import IdMap
from replay.model import Model
from replay.pages import PAGE_BITS, SegmentBuilder, split_pages
from schemas.trace import OP_FLUSH, OP_READ, OP_TRIM, OP_WRITE


def test_split_pages_hand_worked():
    # 6000 B at 6000 (4 KiB pages): bytes 6000..11999 -> page 1 (6000..8191: 2192 B), page 2 (3808 B)
    # 512 B at 0 -> page 0; 0 B (a flush) -> no page; 16 KiB at 16 KiB -> pages 4..7, 4 KiB each
    s = split_pages(np.array([6000, 0, 100, 16384]), np.array([6000, 512, 0, 16384]), 4096)
    assert s.page_no.tolist() == [1, 2, 0, 4, 5, 6, 7]
    assert s.page_req.tolist() == [0, 0, 1, 3, 3, 3, 3]
    assert s.page_bytes.tolist() == [2192, 3808, 512, 4096, 4096, 4096, 4096]


def test_split_pages_any_power_of_two():
    off = np.array([0, 1 << 30, (3 << 30) - 512])
    size = np.array([1 << 30, 512, 1024])
    s = split_pages(off, size, 1 << 30)  # 1 GiB pages: the last request straddles pages 2 and 3
    assert s.page_no.tolist() == [0, 1, 2, 3] and s.page_bytes.tolist() == [1 << 30, 512, 512, 512]
    s = split_pages(np.array([1000]), np.array([1100]), 512)  # 1000..2099 -> pages 1..4
    assert s.page_no.tolist() == [1, 2, 3, 4] and s.page_bytes.tolist() == [24, 512, 512, 52]
    for bad in (256, 3000, 2 << 30):
        with pytest.raises(ValueError, match="power of two from 512 B to 1 GiB"):
            split_pages(np.array([0]), np.array([512]), bad)
    with pytest.raises(ValueError, match="non-negative"):
        split_pages(np.array([-512]), np.array([512]), 4096)


def test_idmap_first_appearance_order_growth_and_segments():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 1 << 40, 200_000)
    keys = np.concatenate([keys, keys[::7], rng.choice(keys, 50_000)])
    whole = IdMap(initial_slots=16)
    ids = whole.assign(keys)
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    expected = np.argsort(np.argsort(first))[inv]
    assert np.array_equal(ids, expected)
    assert whole.n_ids == len(uniq) and whole.slots >= 2 * len(uniq)
    segmented = IdMap(initial_slots=16)
    parts = [segmented.assign(p) for p in np.array_split(keys, 11)]
    assert np.array_equal(np.concatenate(parts), ids)
    assert np.array_equal(whole.lookup(np.array([keys[5], -7 % (1 << 62)])), [ids[5], -1])
    with pytest.raises(ValueError, match="non-negative"):
        whole.assign(np.array([-1]))


def test_idmap_direct_mode_gives_the_same_ids_and_leaves_for_the_hash_table():
    rng = np.random.default_rng(2)
    small = rng.integers(0, 3000, 40_000)
    big = rng.integers(0, 1 << 40, 5_000)
    keys = np.concatenate([small, big, small[:1000], big[:100]])
    expected = IdMap().assign(keys)
    direct = IdMap(direct_max=1 << 12)
    parts = [direct.assign(p) for p in np.array_split(keys, 9)]
    assert np.array_equal(np.concatenate(parts), expected)
    assert not direct.direct_mode and direct.n_ids == len(np.unique(keys))
    stays = IdMap(direct_max=1 << 12)
    assert np.array_equal(stays.assign(small), expected[: len(small)]) and stays.direct_mode
    assert np.array_equal(stays.lookup(np.array([small[3], 4095, 1 << 50])), [expected[3], -1, -1])
    with pytest.raises(ValueError, match="page key -5 at index 1"):
        stays.assign(np.array([1, -5]))


def test_segment_builder_volumes_ops_and_ids():
    df = pl.DataFrame({
        "ts_ns": [0, 5, 9, 12, 20],
        "volume": ["b", "a", "b", "a", "b"],
        "op": ["write", "read", "trim", "flush", "read"],
        "offset": [8192, 8192, 0, 0, 8192 + 4096],
        "size": [8192, 4096, 4096, 0, 4096],
    }).with_columns(pl.col("size").cast(pl.Int32))
    b = SegmentBuilder(4096)
    c1 = b.build(df.head(3))
    c2 = b.build(df.tail(2))
    assert b.volumes == {"b": 0, "a": 1}
    assert c1.op.tolist() == [OP_WRITE, OP_READ, OP_TRIM] and c2.op.tolist() == [OP_FLUSH, OP_READ]
    # pages: b/2, b/3 | a/2 (new id: another volume) | b/0 ; then b/3 again (id 1)
    assert c1.page_id.tolist() == [0, 1, 2, 3] and c1.page_req.tolist() == [0, 0, 1, 2]
    assert c2.page_id.tolist() == [1] and c2.page_req.tolist() == [1]
    assert (c1.n_ids, c2.n_ids, c2.first_request) == (4, 4, 3)
    assert c1.pages_per_request().tolist() == [2, 1, 1]
    keys, nbytes = SegmentBuilder(4096).page_keys(df)  # trims and flushes are not accesses
    assert keys.tolist() == [2, 3, (1 << PAGE_BITS) | 2, 3] and nbytes.tolist() == [4096] * 4
    with pytest.raises(ValueError, match="unknown op value"):
        SegmentBuilder(4096).build(df.with_columns(op=pl.lit("erase")))


def test_model_from_section_validates():
    from replay.kernels import S3FIFO
    from replay.model import model_from_section

    m = S3FIFO.from_section({"cache_bytes": "1MiB", "page_size_bytes": "4KiB", "small_ratio": 0.2})
    assert m.capacity_pages == 256 and m.small_pages == 51 and m.params()["small_ratio"] == 0.2
    with pytest.raises(ValueError, match="unknown parameter.*ghost_size"):
        S3FIFO.from_section({"cache_bytes": "1MiB", "ghost_size": 3})
    lru = model_from_section("lru", {"cache_bytes": "8MiB"})
    assert isinstance(lru, Model) and lru.capacity_pages == 2048 and repr(lru).startswith("LRU(cache_bytes=8388608")
    with pytest.raises(LookupError, match="unknown model 'mru'"):
        model_from_section("mru", {})
