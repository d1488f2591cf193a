"""SSD cache below the DRAM cache: EMC FAST Cache and QSAN QCache 2.0 (seed 000, seed 003).

The DRAM cache (``replay.mech.dram_cache.kernel``) sends what it cannot serve here: read misses (a run of
pages of one unit) and flushes (a run of dirty pages of one unit). Lookup order is DRAM -> SSD
cache -> drives for both FLARE and MCx; writes land in DRAM first and reach the SSD cache when
they are flushed (the issue's reading of seed 000). When the scenario has no SSD cache every
call here passes straight through to ``replay.mech.backend.kernel``.

Structure. The cache tracks *chunks* (FAST Cache: 64 KB; QCache: blocks of 1/2/4 MB made of
sub-blocks of 8/16/64 KB) of the volumes. Every chunk the trace touches has a record
(``SsdState.chunks``: its place, its admission counters, its slot or -1); a chunk that is cached
holds a *slot* of the SSD capacity (its number places the copy on the SSDs) and, in the same
record, its LRU and dirty-list links and the time its copy is ready (``SsdState.dirty``, by slot:
its dirty sub-block bits). What makes a chunk cached is the
admission policy (:mod:`replay.mech.ssd_cache.fast_cache`: N accesses, optionally within a window;
:mod:`replay.mech.ssd_cache.qcache`: populate-on-read / populate-on-write thresholds). Eviction is LRU.

Costs (promotions are not free: docs/models/ssd_cache.md). A promotion (population) reads the whole chunk
from the HDD pool in the background (one large read per drive the chunk spans) and then writes
it to the SSDs; the chunk serves hits once the write completes. Copies start at most at the
fill bandwidth (``fill_mib_per_s``: one chunk per ``chunk_bytes / fill_mib_per_s``); a miss that
finds the copy engine's budget spent is not promoted (counted as deferred) and counts again next
time. The copy's reads and writes queue on the drives like any other I/O. A read hit is a host-priority read of the SSD holding that sub-block (mirrors: the
less busy copy). A flush to a cached chunk is written to the SSDs (both copies when mirrored) and
marks its sub-blocks dirty (write-back; FAST Cache never forces a flush); a read-only QCache
writes the drives and updates its copy. Evicting a dirty chunk first cleans it: its dirty runs
are read from the SSDs and written to the HDD RAID group (read-modify-write on RAID 5/6). VNX2's
proactive cleaner (``proactive_cleaning``) cleans dirty chunks, oldest first, while the array
has been idle for ``idle_after_ms``. Chunks on a flash RAID group (the pool's flash tier) are
never promoted. A full-stripe flush is not used on a stripe whose chunk is cached (the flush
goes through this cache unit by unit instead).

Counters (``SSD`` record): read hits / misses and write hits / misses (host I/Os reaching the
SSD cache: DRAM read-miss runs and flush runs), promotions, deferred promotions, evictions,
cleanings, the SSD and HDD I/Os each caused, slots used and dirty, and the times the cache first
reached 50 % and 90 % full (``t50_ns``, ``t90_ns``; -1 until then).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.events import append
from replay.jit import kernel, step
from replay.layout import aligned_records, record
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.mech.ssd_cache import fast_cache as fast_cache
from replay.mech.ssd_cache import qcache as qcache
from replay.prefetch import prefetch

I2, I4, I8, U8 = np.int16, np.int32, np.int64, np.uint64

POLICY_FAST_CACHE, POLICY_QCACHE = 1, 2

#: A chunk the trace touched (``SsdState.chunks``): where it lives, its admission counters and,
#: while it is cached, its cache entry: the SSD slot it holds, the time its copy is ready, its
#: dirty sub-blocks, and its links in the LRU (head: most recent) and in the dirty list (dirty
#: longest first), as chunk ids. One 64-byte record in an array aligned to 64
#: (``replay.layout``): a lookup, a hit and a list update load one line per chunk. (The entry had
#: a SLOT record of its own, found through the chunk: one more line, and one more dependent load,
#: per SSD hit or flush hit.)
CHUNK = np.dtype({"names": ["slot", "accesses", "first_ns", "writes", "vol", "pool", "base", "dirty_subs", "no",
                            "ready_ns", "lru_prev", "lru_next", "dirty_prev", "dirty_next"],
                  "formats": [I4, I4, I8, I4, I4, I2, I2, I4, I8, I8, I4, I4, I4, I4],
                  "offsets": [0, 4, 8, 16, 20, 24, 26, 28, 32, 40, 48, 52, 56, 60], "itemsize": 64},
                 align=True)  # replay.layout.record: fields loaded as aligned
# slot: SSD slot held (-1: not cached; its number places the copy on the SSDs, ``ssd_drive``);
# accesses since first_ns: FAST Cache's counters (replay.mech.ssd_cache.fast_cache); accesses and writes:
# QCache's read and write counters (replay.mech.ssd_cache.qcache); vol, pool, base: the volume and its
# placement (replay.mech.backend.kernel; int16 like UNIT's, ``dram_cache.check_placement_fits``); no: chunk
# number in the volume
HEAD, TAIL = 0, 1  # ends of a list (``SsdState.lru_ends``, ``dirty_ends``)

#: Cache-wide state and counters (one record, ``SsdState.c``).
SSD = record([(n, I8) for n in (
    "used", "dirty_slots",
    "fill_next_ns",  # the copy engine's next start (fill bandwidth)
    "cleans_n",  # completion heap in use
    "last_host_ns", "clean_clock",
    "read_hits", "read_misses", "write_hits", "write_misses",
    "through_hits", "through_misses",  # the writes among them that the DRAM cache wrote through
    "promotions", "deferred", "evictions", "dirty_evictions", "cleaned_slots", "idle_cleaned_slots",
    "fill_read_ios", "fill_read_bytes", "fill_write_ios", "clean_read_ios", "clean_write_ios",
    "hit_read_ios", "write_ios",
    "t50_ns", "t90_ns",
)])


class SsdParams(NamedTuple):
    """Immutable parameters (from the scenario's ``[ssd_cache]``; ``on`` = 0: pass through)."""

    on: int
    policy: int  # POLICY_FAST_CACHE / POLICY_QCACHE
    write_back: int  # writes to cached chunks stay on the SSDs (dirty)
    chunk_bytes: int  # chunk (block) bytes
    units_per_chunk: int  # DRAM flush units per chunk
    flush_unit_bytes: int  # DRAM flush unit bytes
    page_bytes: int
    sub_block_bytes: int  # sub-block bytes
    sub_shift: int
    sub_blocks: int  # sub-blocks per chunk
    slots: int  # capacity in chunks
    promote_after_hits: int  # FAST Cache: promote after this many accesses ...
    promote_window_ns: int  # ... within this many ns (0: no window)
    populate_on_read: int  # QCache: populate on read / write thresholds (0: never)
    populate_on_write: int
    fill_ns_per_chunk: int  # ns of the fill bandwidth one chunk's copy takes
    proactive_cleaning: int  # proactive cleaning when idle
    idle_after_ns: int  # ns without host I/O that make the array idle
    rg: int  # the SSD group in replay.mech.backend.kernel
    drive0: int
    drives: int
    pairs: int  # mirrored pairs (0: not mirrored)
    group_is_flash: np.ndarray  # int8 per RAID group: 1 if on SSDs (the flash tier: never promoted)


class SsdState(NamedTuple):
    chunks: np.ndarray  # CHUNK [n_chunks] (grows)
    lru_ends: np.ndarray  # int64 [2]: head, tail of the cached chunks' LRU
    dirty_ends: np.ndarray  # int64 [2]: head, tail of the dirty chunks
    dirty: np.ndarray  # uint64 [slots, words]: dirty sub-block bits
    cleans: np.ndarray  # int64 heap of proactive cleaning completion times
    unit_chunk: np.ndarray  # int32 per DRAM unit id: its chunk id (grows; unused if chunks are units)
    unit_sub: np.ndarray  # int32 per DRAM unit id: its first sub-block in the chunk (same)
    tmp: np.ndarray  # one replay.mech.backend.kernel.PLACE record: placement scratch
    acc: np.ndarray  # int64 [drives]: bytes per drive of a chunk read (scratch)
    c: np.ndarray  # SSD [1]


def params(sc) -> SsdParams:
    backend_groups = be.raid_groups(sc)  # the SSD cache's drives are the last group when it is on
    flash = np.array([1 if sc.drive_classes[g.drive_class].kind == "ssd" else 0 for g in backend_groups],
                     dtype=np.int8)
    s = sc.ssd_cache
    unit = int(sc.dram.flush_unit_bytes)
    if s is None:
        return SsdParams(0, 0, 0, unit, 1, unit, int(sc.dram.page_bytes), unit, unit.bit_length() - 1, 1, 0,
                         0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, flash)
    d0 = sum(g.width for g in backend_groups[:-1])
    sub = s.sub_bytes
    chunk_n = s.usable_bytes(sc.drive_classes) // s.chunk_bytes
    if s.kind == "fastcache":
        policy, write_back, por, pow_ = POLICY_FAST_CACHE, 1, 0, 0
    else:
        policy, write_back, por, pow_ = POLICY_QCACHE, int(s.mirrored), s.populate_on_read, s.populate_on_write
    return SsdParams(
        on=1, policy=policy, write_back=write_back, chunk_bytes=int(s.chunk_bytes),
        units_per_chunk=s.chunk_bytes // unit, flush_unit_bytes=unit, page_bytes=int(sc.dram.page_bytes),
        sub_block_bytes=int(sub), sub_shift=sub.bit_length() - 1, sub_blocks=s.chunk_bytes // sub,
        slots=int(chunk_n), promote_after_hits=int(s.promote_after_hits),
        promote_window_ns=int(s.promote_window_ms * 1e6), populate_on_read=int(por),
        populate_on_write=int(pow_), fill_ns_per_chunk=int(round(s.chunk_bytes / (s.fill_mib_per_s * (1 << 20)) * 1e9)),
        proactive_cleaning=int(s.proactive_cleaning and s.kind == "fastcache"),
        idle_after_ns=int(s.idle_after_ms * 1e6), rg=len(backend_groups) - 1, drive0=d0, drives=int(s.drives),
        pairs=s.drives // 2 if s.mirrored else 0, group_is_flash=flash,
    )


def counters(sc, p, state) -> dict[str, int | float]:
    """The SSD cache's counters (``ssd_*``), its capacity and fill."""
    sp = p.ssd_cache
    rec = state.ssd_cache.c[0]
    c: dict[str, int | float] = {f"ssd_{f}": int(rec[f]) for f in SSD.names
                                 if f not in ("fill_next_ns", "cleans_n", "last_host_ns", "clean_clock")}
    c["ssd_slots"] = sp.slots
    c["ssd_chunk_bytes"] = sp.chunk_bytes
    c["ssd_capacity_bytes"] = sp.slots * sp.chunk_bytes
    c["ssd_fill_pct"] = 100.0 * c["ssd_used"] / sp.slots if sp.slots else 0.0
    c["ssd_dirty_pct"] = 100.0 * c["ssd_dirty_slots"] / sp.slots if sp.slots else 0.0
    hits = c["ssd_read_hits"] + c["ssd_write_hits"]
    total = hits + c["ssd_read_misses"] + c["ssd_write_misses"]
    c["ssd_hit_ratio"] = hits / total if total else 0.0
    c["ssd_busy_ns"] = int(state.backend.queues["busy_ns"][sc.n_drives:].sum())
    return c


def new_chunks(n: int) -> np.ndarray:
    ch = aligned_records(n, CHUNK)
    for f in ("slot", "lru_prev", "lru_next", "dirty_prev", "dirty_next"):
        ch[f] = -1
    return ch


def new_state(sc, p) -> SsdState:
    """``p``: every mechanism's parameters (``replay.array.Params``)."""
    sp = p.ssd_cache
    n_drives = p.backend.drives.shape[0]
    n = max(1, sp.slots)
    c = np.zeros(1, SSD)
    for f in ("t50_ns", "t90_ns"):
        c[f] = -1
    clean_out = sc.ssd_cache.clean_outstanding if sc.ssd_cache else 1
    return SsdState(chunks=new_chunks(0), lru_ends=np.full(2, -1, dtype=np.int64),
                    dirty_ends=np.full(2, -1, dtype=np.int64),
                    dirty=np.zeros((n, (sp.sub_blocks + 63) // 64), dtype=np.uint64),
                    cleans=np.zeros(max(1, clean_out), dtype=np.int64),
                    unit_chunk=np.zeros(0, dtype=np.int32), unit_sub=np.zeros(0, dtype=np.int32),
                    tmp=be.new_place(), acc=np.zeros(n_drives, dtype=np.int64), c=c)


# ---- the cached chunks' lists (links are CHUNK fields; numba cannot take a field name as a
# parameter, so each list has its own two functions) ----------------------------------------------
@kernel
def lru_unlink(ss, s):
    sl = ss.chunks
    p = sl[s].lru_prev
    n = sl[s].lru_next
    if p >= 0:
        sl[p].lru_next = n
    else:
        ss.lru_ends[HEAD] = n
    if n >= 0:
        sl[n].lru_prev = p
    else:
        ss.lru_ends[TAIL] = p
    sl[s].lru_prev = -1
    sl[s].lru_next = -1


@kernel
def lru_push_front(ss, s):
    sl = ss.chunks
    h = ss.lru_ends[HEAD]
    sl[s].lru_prev = -1
    sl[s].lru_next = h
    if h >= 0:
        sl[h].lru_prev = s
    else:
        ss.lru_ends[TAIL] = s
    ss.lru_ends[HEAD] = s


@kernel
def dirty_unlink(ss, s):
    sl = ss.chunks
    p = sl[s].dirty_prev
    n = sl[s].dirty_next
    if p >= 0:
        sl[p].dirty_next = n
    else:
        ss.dirty_ends[HEAD] = n
    if n >= 0:
        sl[n].dirty_prev = p
    else:
        ss.dirty_ends[TAIL] = p
    sl[s].dirty_prev = -1
    sl[s].dirty_next = -1


@kernel
def dirty_push_back(ss, s):
    sl = ss.chunks
    t = ss.dirty_ends[TAIL]
    sl[s].dirty_next = -1
    sl[s].dirty_prev = t
    if t >= 0:
        sl[t].dirty_next = s
    else:
        ss.dirty_ends[HEAD] = s
    ss.dirty_ends[TAIL] = s


@kernel
def touch(ss, s):
    """Cached chunk s was used: most recent in the LRU."""
    if ss.lru_ends[HEAD] != s:
        lru_unlink(ss, s)
        lru_push_front(ss, s)


# ---- I/O ----------------------------------------------------------------------------------------
@kernel
def ssd_drive(sp, s, sub):
    """The SSD holding sub-block ``sub`` of slot s and its mirror (-1: none): sub-blocks are
    spread round robin over the drives (pairs when mirrored)."""
    k = np.int64(s) * sp.sub_blocks + sub
    if sp.pairs > 0:
        d = sp.drive0 + 2 * (k % sp.pairs)
        return d, d + 1
    return sp.drive0 + k % sp.drives, -1


@kernel
def ssd_write(sp, bp, bs, s, sub0, nsub_bytes, t):
    """Write ``nsub_bytes`` at sub-block ``sub0`` of slot s (both copies when mirrored)."""
    d, m = ssd_drive(sp, s, sub0)
    done, _ = qk.drive_submit(bp.drives, bs.queues, d, t, 1, nsub_bytes, 1.0, qk.BG_WRITE)
    ios = 1
    if m >= 0:
        dn, _ = qk.drive_submit(bp.drives, bs.queues, m, t, 1, nsub_bytes, 1.0, qk.BG_WRITE)
        done = max(done, dn)
        ios += 1
    return done, ios


@kernel
def ssd_read(sp, bp, bs, s, sub0, nbytes, t, kind):
    """Read from slot s (mirrors: the copy with less host work queued); (done, service)."""
    d, m = ssd_drive(sp, s, sub0)
    if m >= 0 and bs.queues[m].free_fg < bs.queues[d].free_fg:
        d = m
    return qk.drive_submit(bp.drives, bs.queues, d, t, 1, nbytes, 1.0, kind)


@kernel
def write_chunk(sp, bp, bs, s, t):
    """A whole chunk onto the SSDs (a promotion): one write per drive (pair) it spreads over."""
    c_ios = 0
    done = t
    spread = sp.pairs if sp.pairs > 0 else sp.drives
    if spread > sp.sub_blocks:
        spread = sp.sub_blocks
    per = sp.chunk_bytes // spread
    for k in range(spread):
        dn, ios = ssd_write(sp, bp, bs, s, k, per, t)
        done = max(done, dn)
        c_ios += ios
    return done, c_ios


@kernel
def read_hdd_chunk(sp, bp, bs, ch, t, tmp, acc):
    """Background read of a whole chunk from the HDD pool: its units placed one by one, the
    bytes summed per drive, then one read per drive. Returns (done, I/Os)."""
    for d in range(acc.shape[0]):
        acc[d] = 0
    first = ch.no * sp.units_per_chunk
    for k in range(sp.units_per_chunk):
        be.place_unit(first + k, sp.flush_unit_bytes, ch.pool, ch.base, ch.vol, bp, bs, tmp)
        acc[tmp[0].data] += sp.flush_unit_bytes
    done = t
    ios = 0
    for d in range(acc.shape[0]):
        if acc[d] > 0:
            # in the host-read queue (FCFS with host reads): as a background read it would wait
            # behind every later host read and only add queue length (reordering gain) to theirs
            dn, _ = qk.drive_submit(bp.drives, bs.queues, d, t, 1, acc[d], 1.0, qk.HOST_READ)
            done = max(done, dn)
            ios += 1
    bs.c[0].read_ios += ios
    bs.c[0].read_bytes += sp.chunk_bytes
    return done, ios


@kernel
def clean_chunk(sp, ss, bp, bs, k, t):
    """Copy cached chunk k's dirty sub-blocks back to the HDDs (each run: an SSD read, then a
    write per unit it covers, read-modify-write on RAID 5/6); returns the last write's completion."""
    c = ss.c[0]
    ch = ss.chunks[k]
    s = ch.slot
    done = t
    b = 0
    while b < sp.sub_blocks:
        w = b >> 6
        if (ss.dirty[s, w] >> np.uint64(b & 63)) & np.uint64(1):
            n = 0
            while b + n < sp.sub_blocks and (ss.dirty[s, (b + n) >> 6] >> np.uint64((b + n) & 63)) & np.uint64(1):
                n += 1
            dr, _ = ssd_read(sp, bp, bs, s, b, n * sp.sub_block_bytes, t, qk.BG_READ)
            c.clean_read_ios += 1
            # the units the run covers
            off0 = b * sp.sub_block_bytes
            off1 = (b + n) * sp.sub_block_bytes
            u0 = off0 // sp.flush_unit_bytes
            u1 = (off1 + sp.flush_unit_bytes - 1) // sp.flush_unit_bytes
            for j in range(u0, u1):
                be.place_unit(ch.no * sp.units_per_chunk + j, sp.flush_unit_bytes, ch.pool, ch.base, ch.vol, bp, bs,
                              ss.tmp)
                lo = max(off0, j * sp.flush_unit_bytes)
                hi = min(off1, (j + 1) * sp.flush_unit_bytes)
                tmp = ss.tmp
                r = tmp[0].rg
                dn, _, ios = be.write_unit(bp, bs, tmp[0].data, tmp[0].p1, tmp[0].p2, dr,
                                           be.write_ops(r, bp), hi - lo, 1.0)
                c.clean_write_ios += ios
                done = max(done, dn)
            b += n
        else:
            b += 1
    for w in range(ss.dirty.shape[1]):
        ss.dirty[s, w] = np.uint64(0)
    ch.dirty_subs = 0
    dirty_unlink(ss, k)
    c.dirty_slots -= 1
    c.cleaned_slots += 1
    return done


@kernel
def alloc(sp, ss, bp, bs, t):
    """A slot for a new chunk: the next never-used one, else the LRU victim's (cleaned first when
    dirty). Returns (slot, time the slot is free)."""
    c = ss.c[0]
    if c.used < sp.slots:
        s = c.used
        c.used += 1
        if c.t50_ns < 0 and 2 * c.used >= sp.slots:
            c.t50_ns = t
        if c.t90_ns < 0 and 10 * c.used >= 9 * sp.slots:
            c.t90_ns = t
        return s, t
    v = ss.lru_ends[TAIL]
    lru_unlink(ss, v)
    free = t
    if ss.chunks[v].dirty_subs > 0:
        free = clean_chunk(sp, ss, bp, bs, v, t)
        c.dirty_evictions += 1
    s = np.int64(ss.chunks[v].slot)
    ss.chunks[v].slot = -1
    c.evictions += 1
    return s, free


@kernel
def promote(sp, ss, bp, bs, ev, plog, k, t):
    """Copy chunk k into the cache at t (HDD read, then SSD write), unless the fill bandwidth is
    spent (then nothing: the chunk counts again on its next access)."""
    c = ss.c[0]
    if c.fill_next_ns > t:
        c.deferred += 1
        return
    c.fill_next_ns = t + sp.fill_ns_per_chunk
    s, free = alloc(sp, ss, bp, bs, t)
    ch = ss.chunks[k]
    dr, rios = read_hdd_chunk(sp, bp, bs, ch, free, ss.tmp, ss.acc)
    dw, wios = write_chunk(sp, bp, bs, s, dr)
    c.fill_read_ios += rios
    c.fill_read_bytes += sp.chunk_bytes
    c.fill_write_ios += wios
    ch.ready_ns = dw
    ch.dirty_subs = 0
    ch.slot = s
    ch.accesses = 0
    ch.writes = 0
    lru_push_front(ss, k)
    c.promotions += 1
    x = plog.rows[append(plog)]
    x.ts_ns = t
    x.volume = ch.vol
    x.bytes = sp.chunk_bytes
    x.ios = rios + wios
    x.slots_used = c.used
    x.copy_ns = dw - t


@kernel
def admit(sp, ss, k, write, t):
    """Count one access to chunk k reaching the cache; True when it is to be promoted now."""
    ch = ss.chunks[k]
    if sp.policy == POLICY_FAST_CACHE:
        return fast_cache.count(ch, sp.promote_after_hits, sp.promote_window_ns, t)
    return qcache.count(ch, write, sp.populate_on_read, sp.populate_on_write)


# ---- the DRAM cache's calls --------------------------------------------------------------------
@step
def chunk_of(sp, ss, u):
    """The chunk of DRAM unit u: the unit's own id when chunks are units (FAST Cache: 64 KB
    chunks, 64 KB units; one random table access less per call, measured ~10 % of the kernel)."""
    if sp.units_per_chunk == 1:
        return u
    return ss.unit_chunk[u]


@step
def first_sub(sp, ss, u):
    """The first sub-block of DRAM unit u in its chunk."""
    if sp.units_per_chunk == 1:
        return 0
    return ss.unit_sub[u]


@kernel
def prefetch_chunk(sp, ss, u):
    """Memory: start loading the chunk record of DRAM unit u (nothing without an SSD cache)."""
    if sp.on:
        prefetch(ss.chunks, chunk_of(sp, ss, u))


@kernel
def prefetch_entry(sp, ss, u):
    """Memory: the LRU neighbours and dirty bits of DRAM unit u's chunk if cached (its chunk
    record, with the links, should be loaded by now)."""
    if sp.on:
        ch = ss.chunks[chunk_of(sp, ss, u)]
        if ch.slot >= 0:
            prefetch(ss.dirty, ch.slot)
            if ch.lru_prev >= 0:
                prefetch(ss.chunks, ch.lru_prev)
            if ch.lru_next >= 0:
                prefetch(ss.chunks, ch.lru_next)


@step
def prefetch_chunks(sp, ss, punit, p0, p1):
    """:func:`prefetch_chunk` for the units of pages p0..p1 (a later request's)."""
    if sp.on:
        for j in range(p0, p1):
            prefetch_chunk(sp, ss, punit[j])


@step
def prefetch_entries(sp, ss, punit, p0, p1):
    """:func:`prefetch_entry` for the units of pages p0..p1."""
    if sp.on:
        for j in range(p0, p1):
            prefetch_entry(sp, ss, punit[j])


@step
def idle(sp, ss, bp, bs, t):
    """A host request arrives at t: first let VNX2's proactive cleaner use the idle time before
    it (dirty slots oldest first, ``clean_outstanding`` copies in flight)."""
    c = ss.c[0]
    if sp.on and sp.proactive_cleaning and c.dirty_slots > 0:
        tau = c.last_host_ns + sp.idle_after_ns
        if c.clean_clock > tau:
            tau = c.clean_clock
        while tau < t and c.dirty_slots > 0:
            n = c.cleans_n
            if n >= ss.cleans.shape[0] and ss.cleans[0] > tau:
                tau = ss.cleans[0]
                if tau >= t:
                    break
            done = clean_chunk(sp, ss, bp, bs, ss.dirty_ends[HEAD], tau)
            c.idle_cleaned_slots += 1
            if n < ss.cleans.shape[0]:
                c.cleans_n = qk.heap_push(ss.cleans, n, done)
            else:
                qk.heap_replace_top(ss.cleans, n, done)
            c.clean_clock = tau
    if t > c.last_host_ns:
        c.last_host_ns = t


@step
def holds(sp, ss, u):
    """Whether DRAM unit u's chunk is cached (its flushes must go through :func:`write`)."""
    if not sp.on:
        return False
    return ss.chunks[chunk_of(sp, ss, u)].slot >= 0


@step
def read(sp, ss, bp, bs, ev, plog, u, r, d, p1, b0, nbytes, t):
    """A DRAM read miss: ``nbytes`` from page ``b0`` of unit u (on data drive d / mirror p1 of
    RAID group r). Returns (done, service, 1 if it went to the HDDs)."""
    if not sp.on:
        dn, s = be.read(bp, bs, r, d, p1, nbytes, t)
        return dn, s, 1
    c = ss.c[0]
    k = chunk_of(sp, ss, u)
    slot = ss.chunks[k].slot
    sub = first_sub(sp, ss, u) + ((b0 * sp.page_bytes) >> sp.sub_shift)
    if slot >= 0 and ss.chunks[k].ready_ns <= t:
        touch(ss, k)
        c.read_hits += 1
        c.hit_read_ios += 1
        dn, s = ssd_read(sp, bp, bs, slot, sub, nbytes, t, qk.HOST_READ)
        return dn, s, 0
    c.read_misses += 1
    dn, s = be.read(bp, bs, r, d, p1, nbytes, t)
    if slot < 0 and not sp.group_is_flash[r] and admit(sp, ss, k, False, t):
        promote(sp, ss, bp, bs, ev, plog, k, t)
    return dn, s, 1


@step
def write(sp, ss, bp, bs, ev, plog, u, r, d, p1, p2, b0, tau, nops, nbytes, batch, through):
    """A flush run from the DRAM cache (``through``: a write the DRAM cache could not hold):
    ``nbytes`` from page ``b0`` of unit u. Returns (done, HDD busy, HDD I/Os, 1 if the SSD cache
    took it)."""
    if not sp.on:
        done, busy, hios = be.write_unit(bp, bs, d, p1, p2, tau, nops, nbytes, batch)
        return done, busy, hios, 0
    c = ss.c[0]
    k = chunk_of(sp, ss, u)
    slot = ss.chunks[k].slot
    if slot >= 0:
        c.write_hits += 1
        c.through_hits += through
        touch(ss, k)
        s0 = first_sub(sp, ss, u)
        sub0 = s0 + ((b0 * sp.page_bytes) >> sp.sub_shift)
        sub1 = s0 + ((b0 * sp.page_bytes + nbytes - 1) >> sp.sub_shift)
        done, ios = ssd_write(sp, bp, bs, slot, sub0, nbytes, tau)
        c.write_ios += ios
        if sp.write_back:
            sl = ss.chunks[k]
            if sl.dirty_subs == 0:
                dirty_push_back(ss, k)
                c.dirty_slots += 1
            for b in range(sub0, sub1 + 1):
                bit = np.uint64(1) << np.uint64(b & 63)
                if not (ss.dirty[slot, b >> 6] & bit):
                    ss.dirty[slot, b >> 6] |= bit
                    sl.dirty_subs += 1
            return done, np.int64(0), 0, 1
        dn, busy, hios = be.write_unit(bp, bs, d, p1, p2, tau, nops, nbytes, batch)
        return max(done, dn), busy, hios, 1
    c.write_misses += 1
    c.through_misses += through
    done, busy, hios = be.write_unit(bp, bs, d, p1, p2, tau, nops, nbytes, batch)
    if not sp.group_is_flash[r] and admit(sp, ss, k, True, tau):
        promote(sp, ss, bp, bs, ev, plog, k, tau)
    return done, busy, hios, 0
