"""What redirect-on-write snapshots cost the back end (replay.mech.snapshots.kernel, docs/models/snapshots.md),
checked by hand on vnx5400 (MCx, 8 KiB pages, 64 KiB chunks, RAID 5 4+1: a small write is 4 drive I/Os):
map updates per 8 KiB block moved, metadata pages (1024 entries: 8 MiB of the LUN each) read once into
the metadata cache and written once per snapshot interval, reads split where blocks were moved by
different writes, and a deleted snapshot's metadata pages written again."""

from __future__ import annotations

import numpy as np
from test_backend import assert_segmenting_invariant, replay_rows
from test_snapshot_writes import writes

from pipelines.replay import replay_frames
from replay.scenario import load

S = 10**9
K = 8 << 10  # a block
CHUNK = 64 << 10
MIB = 1 << 20


def preset(*overrides: str):
    return load("vnx5400", ["replay.mode=open", "ssd_cache.enabled=false", *overrides])


def test_first_writes_update_the_map_and_a_metadata_page_once_per_interval():
    """1 s: a 64 KiB write moves 8 blocks (8 entries); their page (LUN 0-8 MiB) is not cached: read
    (1 I/O) and written (4). 2 s: the next chunk, same page, same interval: 8 entries, no I/O. 3 s:
    block 0 again: not a first write, nothing. 4 s: a block at 8 MiB: another page, 1 + 4. 11 s
    (the next snapshot): block 0 moves again, its page is cached but was written before the
    snapshot: written again (4), not read."""
    rows = [(1 * S, "a", "write", 0, CHUNK), (2 * S, "a", "write", CHUNK, CHUNK), (3 * S, "a", "write", 0, K),
            (4 * S, "a", "write", 8 * MIB, K), (11 * S, "a", "write", 0, K)]
    m, st, out, _ = replay_rows(preset("snapshots.every_s=10"), rows)
    assert out["snapshot_first_writes"].tolist() == [1, 1, 0, 1, 1]
    assert out["snapshot_map_updates"].tolist() == [8, 8, 0, 1, 1]
    assert out["snapshot_map_ios"].tolist() == [5, 0, 0, 5, 4]
    c = m.counters(st)
    assert (c["snapshot_map_updates"], c["snapshot_map_page_reads"], c["snapshot_map_page_writes"],
            c["snapshot_map_ios"]) == (18, 2, 3, 14)
    assert c["snapshot_read_splits"] == c["snapshot_deletes"] == 0


def test_n_first_writes_give_n_map_updates_and_repeats_none():
    """N 8 KiB writes to distinct blocks of one 8 MiB range: N entries, one page read and written;
    the same N again in the same interval: none."""
    n = 40
    rows = [(i * S // 100, "a", "write", 3 * i * K, K) for i in range(n)]
    rows += [(S + i * S // 100, "a", "write", 3 * i * K, K) for i in range(n)]
    m, st, out, _ = replay_rows(preset("snapshots.every_s=100"), rows)
    assert out["snapshot_map_updates"].tolist() == [1] * n + [0] * n
    c = m.counters(st)
    assert (c["snapshot_map_updates"], c["snapshot_map_page_reads"], c["snapshot_map_page_writes"]) == (n, 1, 1)


def test_map_updates_and_page_writes_equal_the_distinct_blocks_and_pages_brute_force():
    """Random 8-24 KiB writes and reads over 37.5 MiB, a snapshot every 4 s: map updates = the
    distinct (interval, 8 KiB block) pairs written; page writes = the distinct (interval, 8 MiB
    page) pairs; page reads = the distinct pages (the metadata cache holds them all)."""
    rows = writes()
    m, st, out, _ = replay_rows(preset("snapshots.every_s=4"), rows)
    blocks, pages = set(), set()
    for ts, _, op, off, size in rows:
        if op == "write":
            for b in range(off // K, (off + size - 1) // K + 1):
                blocks.add((ts // (4 * S), b))
                pages.add((ts // (4 * S), b // 1024))
    c = m.counters(st)
    assert c["snapshot_map_updates"] == len(blocks) == int(out["snapshot_map_updates"].sum())
    assert c["snapshot_map_page_writes"] == len(pages)
    assert c["snapshot_map_page_reads"] == len({p for _, p in pages})
    assert c["snapshot_map_ios"] == c["snapshot_map_page_reads"] + 4 * len(pages) == int(out["snapshot_map_ios"].sum())


def test_reads_after_redirects_lose_their_sequential_run():
    """Blocks 1 and 3 of a chunk moved by two 8 KiB writes; the cache's copy dropped (a trim, only
    to send the read to the drives): a 64 KiB read of the chunk is 5 runs on the pool (0 | 1 | 2 |
    3 | 4-7), 5 back-end I/Os instead of 1. A chunk moved whole by one 64 KiB write reads in one."""
    rows = [(1 * S, "a", "write", K, K), (1 * S + S // 10, "a", "write", 3 * K, K),
            (1 * S + S // 5, "a", "write", CHUNK, CHUNK),
            (2 * S, "a", "trim", 0, 2 * CHUNK), (3 * S, "a", "read", 0, CHUNK), (4 * S, "a", "read", CHUNK, CHUNK)]
    _, _, plain, _ = replay_rows(preset(), rows)
    m, st, out, _ = replay_rows(preset("snapshots.every_s=10"), rows)
    assert plain["backend_ios"][4:].tolist() == [1, 1]
    assert out["backend_ios"][4:].tolist() == [5, 1]
    assert out["snapshot_read_splits"].tolist() == [0, 0, 0, 0, 4, 0]
    assert m.counters(st)["snapshot_read_splits"] == 4
    _, _, cofw, _ = replay_rows(preset("snapshots.every_s=10", "snapshots.mode=cofw"), rows)
    assert cofw["backend_ios"][4:].tolist() == [1, 1] and cofw["snapshot_read_splits"].sum() == 0


def test_a_deleted_snapshot_writes_its_metadata_pages_again_in_the_background():
    """Every 10 s, kept 20 s: snapshot 0 is deleted when snapshot 2 is taken (20 s), snapshot 1 at
    30 s. Each of intervals 0 and 1 wrote one metadata page; deleting each writes it again (a RAID 5
    small write: 4 I/Os), at the first request after the deleting snapshot; interval 2 wrote none,
    so deleting snapshot 2 (at 40 s) costs nothing."""
    rows = [(1 * S, "a", "write", 0, CHUNK), (11 * S, "a", "write", 16 * MIB, CHUNK), (21 * S, "a", "read", 0, K),
            (31 * S, "a", "read", 0, K), (45 * S, "a", "read", 0, K)]
    sc = preset("snapshots.every_s=10", "snapshots.keep_s=20")
    m, st, out, _ = replay_rows(sc, rows)
    assert out["snapshot_delete_ios"].tolist() == [0, 0, 4, 4, 0]
    c = m.counters(st)
    assert (c["snapshot_deletes"], c["snapshot_delete_map_writes"], c["snapshot_delete_ios"],
            c["snapshot_deletes_uncosted"]) == (3, 2, 8, 0)
    import polars as pl

    res = replay_frames([pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")], sc)
    iv = res.tables["snapshot_intervals"]
    assert iv["delete_ios"].to_list() == [0, 0, 4, 4, 0]
    assert iv["map_updates"].to_list() == [8, 8, 0, 0, 0]
    assert iv["map_ios"].to_list() == [5, 5, 0, 0, 0]
    assert iv["retained_snapshots"].to_list() == [1, 2, 2, 2, 2]  # the space of the deleted ones returned
    assert res.summary["snapshot_delete_ios"] == 8


def test_chunked_replay_with_redirect_costs_equals_one_pass():
    sc = preset("snapshots.every_s=3", "snapshots.keep_s=7")
    rows = writes(n=1500, spacing=10_000_000)  # 15 s: snapshots 0-1 deleted at 9 and 12 s
    rng = np.random.default_rng(3)
    cuts = sorted(rng.choice(np.arange(1, len(rows)), size=5, replace=False).tolist())
    c = assert_segmenting_invariant(sc, rows, [1, 97, cuts])
    assert c["snapshot_map_page_writes"] > 0 and c["snapshot_deletes"] > 0 and c["snapshot_delete_ios"] > 0
