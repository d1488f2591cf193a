"""Snapshots on a schedule in the array replay (seed 004; docs/models/sources.md#snapshots-vnx-pool-snapshots): what the write
path sees of them.

Snapshot k is taken at ``k x every_s`` of simulated time (snapshot 0 at time zero). A host write
to a chunk (a DRAM flush unit, 64 KB: the SnapView chunk and the unit the cache tracks) that the
chunk has not seen since the latest snapshot is that chunk's *first write* after it; the chunk's
old contents then belong to that snapshot (the space accounting of :mod:`replay.mech.snapshots.space`, at
chunk granularity and on the replay's own clock).

* ``mode = "row"`` (VNX Snapshots, redirect-on-write, seed 004): the new data goes to a new
  place in the pool and nothing is copied, so the write path and its timing are exactly those of
  a replay without snapshots; only the first writes are counted.
* ``mode = "cofw"`` (SnapView copy-on-first-write, the contrast): before a first write is taken,
  the old chunk is read from the drives (a host-priority read) and written to the reserved area
  (a small write on the same RAID group: est, the reserved LUN pool shares the drives); the
  host write waits for both, so writes slow down after every snapshot until the working set has
  been copied once.

State: ``SnapState.epoch[u]`` = the snapshot interval of unit u's last host write (-1: none),
counters in ``c``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.jit import kernel
from replay.layout import record
from replay.mech.backend import kernel as be
from replay.mech.dram_cache import kernel as dc

MODES = ("row", "cofw")
SNAP = record([(n, np.int64) for n in ("first_writes", "cofw_copies", "cofw_ios", "cofw_wait_ns")])


class SnapParams(NamedTuple):
    on: int
    every_ns: int  # ns between snapshots
    cofw: int  # 1: copy-on-first-write
    chunk_bytes: int  # chunk bytes (the DRAM flush unit)


class SnapState(NamedTuple):
    epoch: np.ndarray  # int32 per DRAM unit id (grows)
    c: np.ndarray  # SNAP [1]


def params(sc) -> SnapParams:
    s = sc.snapshots
    if s is None:
        return SnapParams(0, 1, 0, int(sc.dram.flush_unit_bytes))
    return SnapParams(1, max(1, round(s.every_s * 1e9)), 1 if s.mode == "cofw" else 0, int(sc.dram.flush_unit_bytes))


def new_state(sc, p) -> SnapState:
    return SnapState(epoch=np.full(0, -1, dtype=np.int32), c=np.zeros(1, SNAP))


def counters(sc, p, state) -> dict[str, int]:
    """``snapshot_*``: chunks first written since their snapshot, copy-on-first-write copies, I/Os and waits."""
    c = state.snapshots.c[0]
    return {f"snapshot_{k}": int(c[k]) for k in SNAP.names}


def grow_units(ns: SnapState, n_units: int) -> SnapState:
    """Room for ``n_units`` DRAM unit ids (the DRAM cache's unit table grew to that many rows)."""
    have = ns.epoch.shape[0]
    if n_units <= have:
        return ns
    epoch = np.full(n_units, -1, dtype=np.int32)
    epoch[:have] = ns.epoch
    return ns._replace(epoch=epoch)


@kernel
def before_write(np_, ns, dp, ds, bp, bs, v, p0, p1, punit, puno, arr, t, tmp):
    """A host write issued at ``arr``, reaching the cache at t, of pages p0..p1: count the chunks
    it writes first since the latest snapshot before ``arr``; with COFW copy each of them first.
    Returns (time the write can proceed, chunks)."""
    e = arr // np_.every_ns
    new = 0
    ready = t
    last = -1
    c = ns.c[0]
    for j in range(p0, p1):
        u = punit[j]
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
    return ready, new
