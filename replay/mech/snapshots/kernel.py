"""Snapshots on a schedule in the array replay (seed 004; docs/models/sources.md#snapshots-vnx-pool-snapshots): what the write
path sees of them.

Snapshot k is taken at ``k x every_s`` of simulated time (snapshot 0 at time zero). A host write
to a chunk (a DRAM flush unit, 64 KB: the SnapView chunk and the unit the cache tracks) that the
chunk has not seen since the latest snapshot is that chunk's *first write* after it; the chunk's
old contents then belong to that snapshot (the space accounting of :mod:`replay.mech.snapshots.space`, at
chunk granularity and on the replay's own clock).

* ``mode = "row"`` (VNX Snapshots, redirect-on-write, seed 004): the new data goes to a new
  place in the pool and nothing is copied; the host write is acknowledged from the cache as
  without snapshots. What it costs the back end (docs/models/snapshots.md):

  - *map updates.* A redirect is tracked per map block (``map_block_bytes``, 8 KB): the first
    write to a block since the latest snapshot moves it and updates its mapping entry
    (``map_updates``, entries). Entries live in metadata pages of ``map_entries_per_page``
    consecutive blocks, held in a direct-mapped metadata cache of ``map_cache_bytes``: the
    first update of a page since the latest snapshot writes the page (a small write on the
    RAID group of the chunk, background, est: the metadata lives in the pool beside the data
    it maps); a page not in the cache is first read (background). Later updates of a page in
    the same snapshot interval coalesce in SP memory (no I/O).
  - *split reads.* A block keeps the id of the host write that moved it (0: never moved). A
    back-end read of contiguous pages of one chunk (one I/O without snapshots) is one I/O per
    run of blocks with the same id: blocks moved by different writes sit in different places
    of the pool, so the read loses its sequential run (``read_splits``: the extra I/Os).
  - *deletion.* A snapshot is deleted when it is ``keep_s`` old, at the snapshot that makes it
    so; the blocks only it held return to the pool and the metadata pages its redirects wrote
    are written once more (background small writes spread over the RAID groups they were
    written on: ``delete_map_writes``). A snapshot interval's page counts are kept in a ring of
    at most ``RING`` intervals; a deletion further back than that is counted in
    ``deletes_uncosted`` with no I/O.
* ``mode = "cofw"`` (SnapView copy-on-first-write, the contrast): before a first write is taken,
  the old chunk is read from the drives (a host-priority read) and written to the reserved area
  (a small write on the same RAID group: est, the reserved LUN pool shares the drives); the
  host write waits for both, so writes slow down after every snapshot until the working set has
  been copied once.

State: ``SnapState.epoch[u]`` = the snapshot interval of unit u's last host write (-1: none);
row: ``bepoch[u, k]`` / ``tag[u, k]`` the interval and the write that last moved block k of
unit u, ``mkey`` / ``mepoch`` the metadata cache's pages and the interval each was last written
in, ``dring`` the metadata pages written per (interval mod ``RING``, RAID group); counters in ``c``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.jit import kernel
from replay.layout import record
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.mech.dram_cache import kernel as dc

MODES = ("row", "cofw")
#: counters (the summary's ``snapshot_<name>``), then the clock fields the kernel keeps in the same record
COUNTED = ("first_writes", "cofw_copies", "cofw_ios", "cofw_wait_ns", "map_updates", "map_page_reads",
           "map_page_writes", "map_ios", "read_splits", "deletes", "delete_map_writes", "delete_ios",
           "deletes_uncosted")
SNAP = record([(n, np.int64) for n in (*COUNTED, "write_seq", "epoch_seen")])
#: snapshot intervals whose metadata page writes are kept for their deletion (redirect-on-write)
RING = 4096


class SnapParams(NamedTuple):
    on: int
    every_ns: int  # ns between snapshots
    cofw: int  # 1: copy-on-first-write
    chunk_bytes: int  # chunk bytes (the DRAM flush unit)
    row: int  # 1: redirect-on-write costs (map updates, split reads, deletion)
    slots: int  # map blocks tracked per chunk
    pages_per_slot: int  # DRAM pages per tracked block
    entries: int  # mapping entries per tracked block (map_block_bytes each)
    map_entries_per_page: int
    map_page_bytes: int
    cache_pages: int  # metadata cache slots (0: every update reads its page)
    keep_k: int  # snapshots retained: snapshot e is deleted when snapshot e + keep_k is taken


class SnapState(NamedTuple):
    epoch: np.ndarray  # int32 per DRAM unit id (grows)
    c: np.ndarray  # SNAP [1]
    bepoch: np.ndarray  # int32 [unit id, slot]: interval of the block's last move (-1: never; row only)
    tag: np.ndarray  # int64 [unit id, slot]: the write that moved it (0: its place before the trace)
    mkey: np.ndarray  # int64 [cache_pages]: the metadata page in each cache slot (-1: none)
    mepoch: np.ndarray  # int64 [cache_pages]: the interval it was last written in
    dring: np.ndarray  # int64 [RING, RAID groups]: metadata pages written in interval e (row e % RING)
    dring_e: np.ndarray  # int64 [RING]: the interval each row holds (-1: none)


def params(sc) -> SnapParams:
    s = sc.snapshots
    chunk = int(sc.dram.flush_unit_bytes)
    page = int(sc.dram.page_bytes)
    if s is None:
        return SnapParams(0, 1, 0, chunk, 0, 1, max(1, chunk // page), 1, 1, 8192, 0, 1)
    every = max(1, round(s.every_s * 1e9))
    row = 1 if s.mode == "row" else 0
    slots = min(max(1, chunk // max(int(s.map_block_bytes), page)), max(1, chunk // page))
    return SnapParams(1, every, 1 - row, chunk, row, slots, max(1, chunk // page // slots),
                      max(1, chunk // slots // int(s.map_block_bytes)), int(s.map_entries_per_page),
                      int(s.map_page_bytes), int(s.map_cache_bytes) // int(s.map_page_bytes),
                      max(1, -(-round(s.keep_s * 1e9) // every)))


def new_state(sc, p) -> SnapState:
    np_ = p.snapshots
    n_rg = p.backend.groups.shape[0] if np_.row else 0
    return SnapState(epoch=np.full(0, -1, dtype=np.int32), c=np.zeros(1, SNAP),
                     bepoch=np.full((0, np_.slots if np_.row else 0), -1, dtype=np.int32),
                     tag=np.zeros((0, np_.slots if np_.row else 0), dtype=np.int64),
                     mkey=np.full(np_.cache_pages if np_.row else 0, -1, dtype=np.int64),
                     mepoch=np.full(np_.cache_pages if np_.row else 0, -1, dtype=np.int64),
                     dring=np.zeros((RING if np_.row else 0, n_rg), dtype=np.int64),
                     dring_e=np.full(RING if np_.row else 0, -1, dtype=np.int64))


def counters(sc, p, state) -> dict[str, int]:
    """``snapshot_*``: chunks first written since their snapshot, copy-on-first-write copies, I/Os
    and waits; redirect-on-write map updates, metadata page I/O, split reads and deletions."""
    c = state.snapshots.c[0]
    return {f"snapshot_{k}": int(c[k]) for k in COUNTED}


def grow_units(ns: SnapState, n_units: int) -> SnapState:
    """Room for ``n_units`` DRAM unit ids (the DRAM cache's unit table grew to that many rows)."""
    have = ns.epoch.shape[0]
    if n_units <= have:
        return ns
    epoch = np.full(n_units, -1, dtype=np.int32)
    epoch[:have] = ns.epoch
    slots = ns.bepoch.shape[1]
    bepoch = np.full((n_units if slots else 0, slots), -1, dtype=np.int32)
    tag = np.zeros((n_units if slots else 0, slots), dtype=np.int64)
    if slots:
        bepoch[:have] = ns.bepoch
        tag[:have] = ns.tag
    return ns._replace(epoch=epoch, bepoch=bepoch, tag=tag)


@kernel
def map_update(np_, ns, bp, bs, x, v, unit_no, k, e, t):
    """Block k of unit number ``unit_no`` (placed at ``x``, a ``replay.mech.backend.kernel.PLACE``-like
    unit record) moved in interval e: its metadata page, from the cache or read, is written unless
    it was already written in interval e. Returns the drive I/Os."""
    c = ns.c[0]
    page = (unit_no * np_.slots + k) * np_.entries // np_.map_entries_per_page
    key = (np.int64(v) << 40) | page
    m = np_.cache_pages
    s = (page + v * 7919) % m if m > 0 else 0
    cached = m > 0 and ns.mkey[s] == key
    if cached and ns.mepoch[s] == e:
        return 0
    ios = 0
    if not cached:
        qk.drive_submit(bp.drives, bs.queues, x.data, t, 1, np_.map_page_bytes, 1.0, qk.BG_READ)
        bs.c[0].read_ios += 1
        bs.c[0].read_bytes += np_.map_page_bytes
        c.map_page_reads += 1
        ios += 1
    _, _, w = be.write_unit(bp, bs, x.data, x.p1, x.p2, t, be.write_ops(x.rg, bp), np_.map_page_bytes, 1.0)
    ios += w
    c.map_page_writes += 1
    row = e % RING
    if ns.dring_e[row] != e:
        ns.dring[row, :] = 0
        ns.dring_e[row] = e
    ns.dring[row, x.rg] += 1
    if m > 0:
        ns.mkey[s] = key
        ns.mepoch[s] = e
    return ios


@kernel
def delete_writes(np_, bp, bs, r, n, t):
    """``n`` metadata page writes (small writes) on RAID group r at t, spread over its drives;
    returns the drive I/Os."""
    width = bp.groups[r].width
    d0 = bp.groups[r].drive0
    total = n * be.write_ops(r, bp) * be.drives_per_write(bp.groups[r].level)
    for j in range(width):
        k = total // width + (1 if j < total % width else 0)
        if k > 0:
            qk.drive_submit(bp.drives, bs.queues, d0 + j, t, k, np_.map_page_bytes, 1.0, qk.BG_WRITE)
    bs.c[0].write_ios += total
    return total


@kernel
def advance(np_, ns, bp, bs, arr):
    """Redirect-on-write: the snapshots deleted by the snapshots taken up to ``arr`` (snapshot f
    deletes snapshot f - keep_k): their metadata pages written again, in the background at
    ``arr``. Returns the drive I/Os."""
    c = ns.c[0]
    e = arr // np_.every_ns
    if e <= c.epoch_seen:
        return 0
    ios = 0
    for f in range(c.epoch_seen + 1, e + 1):
        d = f - np_.keep_k
        if d < 0:
            continue
        c.deletes += 1
        row = d % RING
        if ns.dring_e[row] > d:
            c.deletes_uncosted += 1
        elif ns.dring_e[row] == d:
            for r in range(ns.dring.shape[1]):
                n = ns.dring[row, r]
                if n > 0:
                    ios += delete_writes(np_, bp, bs, r, n, arr)
                    c.delete_map_writes += n
    c.epoch_seen = e
    c.delete_ios += ios
    return ios


@kernel
def before_write(np_, ns, dp, ds, bp, bs, v, p0, p1, punit, pbit, puno, arr, t, tmp):
    """A host write issued at ``arr``, reaching the cache at t, of pages p0..p1: count the chunks
    it writes first since the latest snapshot before ``arr``; with COFW copy each of them first;
    with ROW move each block it writes first since then and update its mapping. Returns (time the
    write can proceed, chunks, mapping entries updated, metadata drive I/Os)."""
    e = arr // np_.every_ns
    new = 0
    ready = t
    last = -1
    c = ns.c[0]
    c.write_seq += 1
    upd = 0
    mios = 0
    for j in range(p0, p1):
        u = punit[j]
        if np_.row:
            k = min(pbit[j] // np_.pages_per_slot, np_.slots - 1)
            if ns.bepoch[u, k] < e:
                ns.bepoch[u, k] = e
                ns.tag[u, k] = c.write_seq
                upd += np_.entries
                x = ds.units[u]
                if not (x.flags & dc.F_PLACED):
                    dc.place(dp, ds, bp, bs, u, v, puno[j], tmp)
                mios += map_update(np_, ns, bp, bs, ds.units[u], v, puno[j], k, e, t)
        if u == last:
            continue
        last = u
        if ns.epoch[u] >= e:
            continue
        ns.epoch[u] = e
        new += 1
        if np_.cofw:
            x = ds.units[u]
            if not (x.flags & dc.F_PLACED):
                dc.place(dp, ds, bp, bs, u, v, puno[j], tmp)
            dn, _ = be.read(bp, bs, x.rg, x.data, x.p1, np_.chunk_bytes, t)
            dw, _, ios = be.write_unit(bp, bs, x.data, x.p1, x.p2, dn, be.write_ops(x.rg, bp), np_.chunk_bytes, 1.0)
            c.cofw_copies += 1
            c.cofw_ios += 1 + ios
            if dw > ready:
                ready = dw
    c.first_writes += new
    c.cofw_wait_ns += ready - t
    c.map_updates += upd
    c.map_ios += mios
    return ready, new, upd, mios
