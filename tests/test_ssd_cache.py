"""The SSD caches (FAST Cache, QCache 2.0) and the SSD drive class, on hand-worked cases: when a
chunk is promoted and first hits, what a promotion costs on the drives, LRU eviction, dirty
chunks cleaned back before eviction, populate thresholds, sub-blocks, the flash tier, idle
cleaning, and chunked replay = one pass."""

from __future__ import annotations

import numpy as np
import pytest
from test_backend import assert_segmenting_invariant, replay_rows

from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.scenario import load, loads

MS = 1_000_000
S = 1_000_000_000
KIB = 1024
CHUNK = 64 * KIB


def scenario(ssd: str, *, mode: str = "mcx", drives: int = 2, extra: str = "") -> str:
    """One RAID 5 4+1 of 10k SAS drives (64 KiB elements), an MCx cache that flushes every dirty
    page at 10 ms (pre-cleaning age pinned),
    an SSD class of 20,000 read / 10,000 write IOPS at 150 us, and the given [ssd_cache]."""
    return f"""
name = "ssd"
[dram]
mode = "{mode}"
cache_bytes = "64MiB"
flush_queue_depth = 1
[dram.flare]
read_cache_bytes = "16MiB"
[dram.mcx]
initial_age_ms = 10
min_age_ms = 10
max_age_ms = 10
[drive_classes.sas]
planning_iops = 150
rpm = 10000
[drive_classes.ssd]
kind = "ssd"
read_iops = 20000
write_iops = 10000
read_latency_us = 150
transfer_mb_per_s = 400
capacity_bytes = "100GB"
[[raid_groups]]
name = "rg0"
level = 5
width = 5
drive_class = "sas"
[[pools]]
name = "p"
raid_groups = ["rg0"]
{extra}
[ssd_cache]
drive_class = "ssd"
drives = {drives}
{ssd}
"""


FAST = 'kind = "fastcache"\n'


def fast(capacity: str = "100GB", extra: str = "", **kw) -> object:
    return loads(scenario(FAST + f'capacity_bytes = "{capacity}"\n' + extra, **kw), "fc.toml")


def reads(chunk: int, pages, t0: int = 0, step: int = S, vol: str = "a"):
    """One 8 KiB read per page of ``chunk``, ``step`` apart: distinct pages, so the DRAM cache
    never hits and every read reaches the SSD cache."""
    return [(t0 + i * step, vol, "read", chunk * CHUNK + p * 8 * KIB, 8 * KIB) for i, p in enumerate(pages)]


def promotions(rec: dict) -> dict:
    """The promotion records (replay.mech.ssd_cache.outputs: start, bytes, I/Os, slots in use after, duration)."""
    return rec["ssd_promotion"]


def test_third_access_promotes_and_the_fourth_hits():
    """promote_after_hits 3: accesses 1-3 miss (the third starts the copy: the 64 KiB chunk read
    from its one HDD, then written to both SSDs of the RAID 1 pair), the fourth, after the copy,
    is read from an SSD at queue depth 1, plus the storage processor."""
    m, st, out, rec = replay_rows(fast(), reads(0, [0, 1, 2, 3]))
    c = m.counters(st)
    assert out["ssd_read_misses"].tolist() == [1, 1, 1, 0]
    assert out["ssd_read_hits"].tolist() == [0, 0, 0, 1]
    p = promotions(rec)  # one record, at the third read's storage-processor exit, 1 slot in use after it
    assert p["ts_ns"].tolist() == [out["arrival_ns"][2] + 32_560] and p["slots_used"].tolist() == [1]
    assert p["bytes"].tolist() == [CHUNK] and p["ios"].tolist() == [3]  # 1 HDD read, 2 SSD writes
    assert 0 < p["copy_ns"][0] < S  # the copy's duration
    assert (c["ssd_promotions"], c["ssd_fill_read_ios"], c["ssd_fill_write_ios"]) == (1, 1, 2)
    # back end: 3 host misses of 8 KiB and one 64 KiB promotion read; the hit is not an HDD I/O
    assert (c["backend_read_ios"], c["backend_read_bytes"]) == (4, 3 * 8 * KIB + CHUNK)
    assert out["backend_ios"].tolist() == [1, 1, 1, 0]
    ssd_read_ns = 3 * (50_000 - 4096 * 1e9 / 400e6) + 8192 * 1e9 / 400e6  # depth 1, 8 KiB
    sp_ns = 30_000 + 8192 * 1e9 / 3200e6  # storage processor: 30 us + 8 KiB at 3,200 MB/s
    assert out["done_ns"][3] - out["arrival_ns"][3] == pytest.approx(sp_ns + ssd_read_ns, abs=2)
    assert out["done_ns"][2] - out["arrival_ns"][2] > 3 * MS  # an HDD read


def test_a_hit_before_the_copy_completes_is_a_miss_and_counts_nothing():
    rows = reads(0, [0, 1, 2]) + [(2 * S + 1000, "a", "read", 3 * 8 * KIB, 8 * KIB), (3 * S, "a", "read", 4 * 8 * KIB, 8 * KIB)]
    m, st, out, _ = replay_rows(fast(), rows)
    assert out["ssd_read_misses"].tolist() == [1, 1, 1, 1, 0]
    assert m.counters(st)["ssd_promotions"] == 1 and st.ssd_cache.chunks[0]["accesses"] == 0


def test_promotion_window_restarts_the_count():
    """promote_window_ms 1500: accesses at 0 s, 1 s, 2 s, 3 s: the window that began at 0 s
    has passed at 2 s, so counting restarts there (1 at 2 s, 2 at 3 s); a fifth at 3.5 s promotes."""
    sc = fast(extra="promote_window_ms = 1500\n")
    rows = reads(0, [0, 1, 2, 3]) + [(3 * S + S // 2, "a", "read", 4 * 8 * KIB, 8 * KIB)]
    m, st, out, rec = replay_rows(sc, rows)
    assert promotions(rec)["ts_ns"].tolist() == [out["arrival_ns"][4] + 32_560]


def test_lru_eviction_order():
    """Two chunks of capacity: A and B promoted, A read again (most recent), C promoted: B goes."""
    rows = reads(0, [0, 1, 2]) + reads(1, [0, 1, 2], t0=3 * S) + reads(0, [3], t0=6 * S) + reads(2, [0, 1, 2], t0=7 * S)
    m, st, out, _ = replay_rows(fast("128KiB"), rows)
    c = m.counters(st)
    assert (c["ssd_promotions"], c["ssd_evictions"], c["ssd_read_hits"]) == (3, 1, 1)
    slots = st.ssd_cache.chunks["slot"][:3].tolist()  # chunk ids in first-seen order: A, B, C
    assert slots[1] == -1 and slots[0] >= 0 and slots[2] >= 0


def test_a_dirty_chunk_is_cleaned_before_it_is_evicted():
    """A write to promoted chunk A is flushed (MCx, 10 ms) onto the SSDs: a write hit, A dirty.
    Promoting B and C into two slots evicts A: first its 64 KiB is read from an SSD and written
    back to the RAID 5 group as a read-modify-write (2 I/Os on the data drive, 2 on parity)."""
    rows = reads(0, [0, 1, 2]) + [(3 * S, "a", "write", 5 * 8 * KIB, 8 * KIB)]
    rows += reads(1, [0, 1, 2], t0=4 * S) + reads(2, [0, 1, 2], t0=7 * S)
    m, st, out, _ = replay_rows(fast("128KiB"), rows)
    c = m.counters(st)
    assert (c["ssd_write_hits"], c["ssd_write_ios"]) == (1, 2)  # the flush: both SSDs of the pair
    assert (c["ssd_dirty_evictions"], c["ssd_cleaned_slots"], c["ssd_clean_read_ios"], c["ssd_clean_write_ios"]) == (1, 1, 1, 4)
    assert c["ssd_dirty_slots"] == 0
    # HDD writes: only the clean-back (the flush went to flash)
    assert c["backend_write_ios"] == 4
    assert out["ssd_dirty_slots"].tolist()[3:6] == [0, 1, 1]


def test_writes_to_an_uncached_chunk_go_to_the_drives_and_count_toward_promotion():
    rows = [(i * S, "a", "write", 0 * CHUNK + i * 8 * KIB, 8 * KIB) for i in range(3)]
    rows.append((3 * S, "a", "read", 7 * 8 * KIB, 8 * KIB))
    m, st, out, _ = replay_rows(fast(), rows)
    c = m.counters(st)
    assert (c["ssd_write_misses"], c["ssd_promotions"], c["ssd_read_hits"]) == (3, 1, 1)
    assert c["backend_write_ios"] == 12  # three RAID 5 small writes


def test_flash_tier_chunks_are_never_promoted():
    extra = """
[[raid_groups]]
name = "flash"
level = 5
width = 3
drive_class = "ssd"
[[pools]]
name = "f"
raid_groups = ["flash"]
[[volumes.map]]
pattern = "onflash"
pool = "f"
"""
    sc = loads(scenario(FAST + 'capacity_bytes = "100GB"\n', extra=extra), "t.toml")
    m, st, out, _ = replay_rows(sc, reads(0, range(6), vol="onflash"))
    c = m.counters(st)
    assert c["ssd_read_misses"] == 6 and c["ssd_promotions"] == 0


def test_proactive_cleaning_when_idle():
    sc = fast(extra="proactive_cleaning = true\nidle_after_ms = 500\n")
    rows = reads(0, [0, 1, 2]) + [(3 * S, "a", "write", 5 * 8 * KIB, 8 * KIB), (3 * S + 100 * MS, "a", "read", 6 * 8 * KIB, 8 * KIB)]
    rows.append((5 * S, "a", "read", 7 * 8 * KIB, 8 * KIB))
    m, st, out, _ = replay_rows(sc, rows)
    c = m.counters(st)
    assert out["ssd_dirty_slots"].tolist()[3:] == [0, 1, 0]  # flushed into flash at 3.01 s; cleaned in the idle gap
    assert (c["ssd_idle_cleaned_slots"], c["ssd_clean_write_ios"], c["ssd_evictions"]) == (1, 4, 0)
    off = fast()  # VNX1: no proactive cleaner
    m2, st2, _, _ = replay_rows(off, rows)
    assert m2.counters(st2)["ssd_dirty_slots"] == 1


QC = 'kind = "qcache"\nio_type = "custom"\nblock_bytes = "1MiB"\nsub_block_bytes = "64KiB"\n'


@pytest.mark.parametrize("por, populated_at", [(1, 0), (2, 1), (3, 2)])
def test_qcache_populate_on_read_threshold(por, populated_at):
    sc = loads(scenario(QC + f"mode = \"read\"\npopulate_on_read = {por}\npopulate_on_write = 0\n"), "q.toml")
    rows = [(i * S, "a", "read", i * CHUNK, 8 * KIB) for i in range(5)]  # five sub-blocks of block 0
    m, st, out, rec = replay_rows(sc, rows)
    assert promotions(rec)["ts_ns"].tolist() == [out["arrival_ns"][populated_at] + 32_560]  # SP: 30 us + 8 KiB
    assert out["ssd_read_hits"].tolist() == [0] * (populated_at + 1) + [1] * (4 - populated_at)


def test_qcache_populate_on_write_only():
    """populate_on_read 0: reads never populate; populate_on_write 1: the first write does."""
    sc = loads(scenario(QC + 'mode = "read_write"\npopulate_on_read = 0\npopulate_on_write = 1\n'), "q.toml")
    rows = [(i * S, "a", "read", i * CHUNK, 8 * KIB) for i in range(3)]
    rows += [(3 * S, "a", "write", 5 * CHUNK, 8 * KIB), (4 * S, "a", "read", 6 * CHUNK, 8 * KIB)]
    m, st, out, rec = replay_rows(sc, rows)
    assert promotions(rec)["ts_ns"].tolist() == [3 * S + 32_560 + 10 * MS]  # the write's flush, 10 ms after its ack
    assert out["ssd_read_hits"].tolist() == [0, 0, 0, 0, 1]


def test_qcache_population_reads_the_block_from_every_drive_once_and_cleans_dirty_sub_blocks():
    """A 1 MiB block on RAID 5 4+1 with 64 KiB elements spans 4 stripes: 16 data elements over
    the 5 drives (parity rotates), so the population is one large read per drive (5 I/Os, 1 MiB),
    then 1 MiB written to the SSDs: 512 KiB to each of the 2 (RAID 0, read-write cache mirrored:
    RAID 1 pair -> 2 writes of 1 MiB). Writes into sub-blocks 0 and 3 leave 2 dirty sub-blocks;
    evicting the block cleans 2 runs: 2 SSD reads, 2 RAID 5 read-modify-writes (8 I/Os)."""
    sc = loads(scenario(QC + 'mode = "read_write"\npopulate_on_read = 1\npopulate_on_write = 0\n'
                        'capacity_bytes = "1MiB"\n'), "q.toml")
    rows = [(0, "a", "read", 0, 8 * KIB)]
    rows += [(S, "a", "write", 0, 8 * KIB), (S, "a", "write", 3 * CHUNK + 8 * KIB, 16 * KIB)]
    rows += [(2 * S, "a", "read", 1 << 20, 8 * KIB)]  # block 1: evicts block 0
    m, st, out, _ = replay_rows(sc, rows)
    c = m.counters(st)
    assert (c["ssd_fill_read_ios"], c["ssd_fill_read_bytes"], c["ssd_fill_write_ios"]) == (10, 2 << 20, 4)
    assert (c["ssd_write_hits"], c["ssd_dirty_evictions"]) == (2, 1)
    assert (c["ssd_clean_read_ios"], c["ssd_clean_write_ios"]) == (2, 8)


def test_qcache_read_cache_writes_through_and_updates_its_copy():
    sc = loads(scenario(QC + 'mode = "read"\npopulate_on_read = 1\n', drives=3), "q.toml")
    rows = [(0, "a", "read", 0, 8 * KIB), (S, "a", "write", CHUNK, 8 * KIB), (2 * S, "a", "read", 2 * CHUNK, 8 * KIB)]
    m, st, out, _ = replay_rows(sc, rows)
    c = m.counters(st)
    assert (c["ssd_write_hits"], c["ssd_dirty_slots"], c["backend_write_ios"], c["ssd_write_ios"]) == (1, 0, 4, 1)
    assert c["ssd_read_hits"] == 1


def test_io_type_presets_and_validation():
    db = loads(scenario('kind = "qcache"\nio_type = "database"\n'), "q.toml").ssd_cache
    assert (db.chunk_bytes, db.sub_bytes, db.populate_on_read, db.populate_on_write) == (1 << 20, 8 << 10, 2, 0)
    fs = loads(scenario('kind = "qcache"\nio_type = "file_system"\n'), "q.toml").ssd_cache
    assert (fs.chunk_bytes, fs.sub_bytes, fs.populate_on_read, fs.populate_on_write) == (2 << 20, 16 << 10, 2, 2)
    ws = loads(scenario('kind = "qcache"\nio_type = "web_service"\n'), "q.toml").ssd_cache
    assert (ws.chunk_bytes, ws.sub_bytes, ws.populate_on_read, ws.populate_on_write) == (4 << 20, 64 << 10, 2, 0)
    bad = {
        'kind = "qcache"\nio_type = "database"\nblock_bytes = "4MiB"\n': r"line \d+: \[ssd_cache\] block_bytes: set by io_type = 'database'",
        'kind = "qcache"\nmode = "read_write"\n': r"drives: a mirrored \(read_write\) SSD cache takes SSDs in pairs, got 3",
        FAST + 'mode = "read"\n': r"mode: only for kind = 'qcache'",
        FAST + 'chunk_bytes = "32KiB"\n': r"chunk_bytes: 32768 B is smaller than the DRAM flush unit 65536 B",
        'kind = "qcache"\npopulate_on_read = 0\n': r"populate_on_read and populate_on_write are both 0",
        'kind = "l2arc"\n': r"kind: 'l2arc' is not one of 'fastcache', 'qcache'",
    }
    for text, msg in bad.items():
        with pytest.raises(ValueError, match=msg):
            loads(scenario(text, drives=3 if "pairs" in msg else 2), "q.toml")
    with pytest.raises(ValueError, match=r"drive_class: 'sas' is not an SSD class"):
        loads(scenario(FAST).replace('drive_class = "ssd"\ndrives', 'drive_class = "sas"\ndrives'), "q.toml")


def test_ssd_drive_class_latency_and_parallelism():
    """read_iops 20,000 at 150 us: 3 requests in service at once, each 4 KiB read 50 us of
    drive time at depth (39.76 us + 10.24 us of transfer at 400 MB/s), so 119.3 us + transfer
    at depth 1; a deep queue of 4 KiB reads drains at 20,000/s and writes at 10,000/s."""
    sc = fast()
    ba = be.build(sc)
    d = sc.n_drives  # the first SSD (after the 5 HDDs)
    dc = sc.drive_classes["ssd"]
    assert dc.parallelism == 3 and dc.write_cost == 2.0
    queues = qk.new_queues(ba.drives.shape[0])
    done, svc = qk.drive_submit(ba.drives, queues, d, 0, 1, 4096, 1.0, qk.HOST_READ)
    xfer = 4096 * 1e9 / 400e6
    assert svc == round(3 * (50_000 - xfer) + xfer)
    for _ in range(3999):
        done, _ = qk.drive_submit(ba.drives, queues, d, 0, 1, 4096, 1.0, qk.BG_READ)
    assert 4000 / (done / 1e9) == pytest.approx(20_000, rel=0.01)
    start = done
    for _ in range(4000):
        done, _ = qk.drive_submit(ba.drives, queues, d, 0, 1, 4096, 1.0, qk.BG_WRITE)
    assert 4000 / ((done - start) / 1e9) == pytest.approx(10_000, rel=0.01)


@pytest.mark.parametrize("ssd", [FAST + 'capacity_bytes = "4MiB"\nproactive_cleaning = true\nidle_after_ms = 2\n',
                                 QC + 'mode = "read_write"\npopulate_on_read = 2\npopulate_on_write = 1\n'
                                 'capacity_bytes = "12MiB"\n'])
@pytest.mark.parametrize("closed", [False, True])
def test_chunked_replay_equals_one_pass(ssd, closed):
    rng = np.random.default_rng(11)
    n = 5000
    ops = rng.choice(["read", "write", "trim"], n, p=[0.6, 0.37, 0.03])
    vols = rng.choice(["a", "b"], n)
    offs = rng.integers(0, 1000, n) * 8192
    sizes = rng.choice([8192, 16384, 65536], n)
    ts = np.cumsum(rng.exponential(2_000_000, n)).astype(np.int64)
    rows = list(zip(ts.tolist(), vols.tolist(), ops.tolist(), offs.tolist(), sizes.tolist(), strict=True))
    sc = loads(scenario(ssd, drives=4).replace('cache_bytes = "64MiB"', 'cache_bytes = "2MiB"'), "ch.toml")
    if closed:
        sc = sc.with_replay(mode="closed", outstanding=8)
    boundaries = sorted(rng.choice(np.arange(1, n), 40, replace=False).tolist())
    c1 = assert_segmenting_invariant(sc, rows, (1, 17, 999, boundaries))
    assert c1["ssd_promotions"] > 20 and c1["ssd_evictions"] > 0 and c1["ssd_read_hits"] > 100  # exercised
    assert c1["ssd_cleaned_slots"] > 0


def test_presets_with_ssd_caches():
    fc = load("vnx5400-fastcache")
    assert fc.ssd_cache.kind == "fastcache" and fc.ssd_cache.usable_bytes(fc.drive_classes) == 100 << 30  # GB = GiB
    assert (fc.ssd_cache.raid_level, fc.ssd_cache.chunk_bytes, fc.ssd_cache.promote_after_hits) == (1, 64 * KIB, 3)
    assert "ssd_cache:fastcache" in fc.describe()["features"] and load("vnx5400").ssd_cache is None
    r, w = load("xs5224d-qcache-read"), load("xs5224d-qcache-rw")
    assert (r.ssd_cache.raid_level, r.ssd_cache.usable_bytes(r.drive_classes)) == (0, 800 << 30)
    assert (w.ssd_cache.raid_level, w.ssd_cache.usable_bytes(w.drive_classes)) == (10, 400 << 30)
    assert (r.ssd_cache.populate_on_read, r.ssd_cache.populate_on_write, w.ssd_cache.populate_on_write) == (1, 0, 1)


@pytest.mark.parametrize("ssd", [FAST + 'capacity_bytes = "4MiB"\nproactive_cleaning = true\nidle_after_ms = 2\n',
                                 QC + 'mode = "read_write"\npopulate_on_read = 2\npopulate_on_write = 1\n'
                                 'capacity_bytes = "12MiB"\n'])
def test_cache_state_stays_consistent(ssd):
    """After a random mixed trace: the cached chunks hold distinct slots 0..used-1, the LRU holds
    every cached chunk once (linked both ways), the dirty list exactly the chunks with dirty
    sub-blocks, counted in dirty_subs and in their slot's dirty bits."""
    rng = np.random.default_rng(5)
    n = 4000
    rows = list(zip(np.cumsum(rng.exponential(2_000_000, n)).astype(np.int64).tolist(),
                    rng.choice(["a", "b"], n).tolist(), rng.choice(["read", "write"], n, p=[0.6, 0.4]).tolist(),
                    (rng.integers(0, 1000, n) * 8192).tolist(), rng.choice([8192, 65536], n).tolist(), strict=True))
    sc = loads(scenario(ssd, drives=4).replace('cache_bytes = "64MiB"', 'cache_bytes = "2MiB"'), "inv.toml")
    m, st, _, _ = replay_rows(sc, rows)
    ss, c = st.ssd_cache, m.counters(st)
    ch = ss.chunks[: st.chunk_ids.n_ids]
    used = c["ssd_used"]
    assert c["ssd_evictions"] > 0 and used == m.kernel_params.ssd_cache.slots  # full, and evicting
    cached = np.flatnonzero(ch["slot"] >= 0)
    assert cached.size == used and sorted(ch["slot"][cached].tolist()) == list(range(used))

    def walk(nxt, head):
        out, i = [], head
        while i >= 0:
            out.append(int(i))
            i = nxt[i]
        return out

    lru = walk(ch["lru_next"], ss.lru_ends[0])
    assert sorted(lru) == cached.tolist() and walk(ch["lru_prev"], ss.lru_ends[1]) == lru[::-1]
    dirty = walk(ch["dirty_next"], ss.dirty_ends[0])
    assert sorted(dirty) == np.flatnonzero(ch["dirty_subs"] > 0).tolist() and len(dirty) == c["ssd_dirty_slots"]
    assert set(dirty) <= set(cached.tolist())
    bits = [sum(bin(int(w)).count("1") for w in ss.dirty[ch["slot"][k]]) for k in cached]
    assert bits == ch["dirty_subs"][cached].tolist()
