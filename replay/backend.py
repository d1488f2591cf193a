"""Back end: RAID groups of drives, where a cache unit lives, what a write costs, drive service times.

Placement. A volume lives in one pool (``[volumes]`` of the scenario). A pool of several RAID
groups spreads each volume over them in slices (``slice_bytes``, FAST VP: 256 MB on VNX2), round
robin starting at a per-volume offset, as a pool's private RAID groups are filled; a pool of one
group holds the volume whole. In a FAST VP pool (``replay.tiering``) a slice sits on the group
``BackendState.slice_rg[vol_slice0[vol] + slice]`` says, which relocation changes. Inside a RAID group data is striped in ``stripe_element_bytes``
elements over the data drives with rotating parity (RAID 5: left-symmetric, one parity drive
per stripe; RAID 6: P and Q on consecutive drives; RAID 1/10: mirrored pairs; RAID 0: plain).

Write cost (MODELS.md, seed 000). A small write to RAID 5 is a read-modify-write of the data
element and of parity: 2 I/Os on each of 2 drives = 4 back-end I/Os (RAID 6: 3 drives, 6 I/Os;
RAID 1/10: 2 writes; RAID 0: 1). A write that covers a whole stripe (every data element fully
dirty) writes data and parity without reading: ``width`` I/Os for ``data_drives`` elements, the
penalty avoided. Host sustainable IOPS with all I/O on the drives at planning rate is
``drive_iops * n_drives / (read_frac + penalty * write_frac)`` (:func:`planning_host_iops`).

Drive service time (HDD) = seek + half a rotation + transfer. The seek follows
``t_min + k * sqrt(distance)`` with k fitted so that random pairs over the whole stroke average
the data-sheet seek (derived from the planning IOPS when not given); random I/O over a pool that
occupies ``span_fraction`` of the drives seeks over that share only; an address-sorted flush of
``b`` requests per drive seeks ``span / b`` between them. SSD: ``1 / planning_iops`` + transfer.
The queue-depth law is in :mod:`replay.queueing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from replay import queueing as qk
from replay.jit import kernel
from replay.scenario import RaidGroup, Scenario

# RAID group integer columns (``rgi``)
RG_LEVEL = 0
RG_WIDTH = 1
RG_DRIVE0 = 2  # index of the group's first drive in the drive arrays
RG_ELEM = 3  # stripe element bytes
RG_DATA = 4  # data drives per stripe (pairs for RAID 1/10)
N_RG_STATIC = 5

# columns of the per-unit placement array (int64 ``uplace``)
UP_RG = 0
UP_DATA = 1  # global index of the drive holding the unit's data
UP_P1 = 2  # parity drive (RAID 5/6) or mirror (RAID 1/10), -1 if none
UP_P2 = 3  # second parity drive (RAID 6), -1 if none
UP_SFIRST = 4  # first unit number of the unit's stripe (full-stripe detection)
UP_SUNITS = 5  # units in that stripe (0: stripe cut by a slice end, never full)
N_UP = 6

#: Seek-curve constant: for two uniform random points on [0, 1], E[sqrt(|x - y|)] = 8/15.
SQRT_DISTANCE_MEAN = 8.0 / 15.0


def planning_host_iops(drive_iops: float, n_drives: int, read_fraction: float, penalty: int) -> float:
    """Seed 000's rule of thumb: host IOPS the drives sustain at their planning rate,
    ``X * read + penalty * X * write = drive_iops * n_drives``."""
    return drive_iops * n_drives / (read_fraction + penalty * (1.0 - read_fraction))


@dataclass
class BackendArrays:
    """Everything the kernel needs to know about RAID groups, drives and pools."""

    rgi: np.ndarray  # int64 [n_rg, N_RG_STATIC]
    dstat: np.ndarray  # float64 [n_drives, N_DS]
    pool_rgs: np.ndarray  # int32 [n_pools, max_rgs] (-1 padded)
    pool_nrg: np.ndarray  # int32 [n_pools]
    pool_slice: np.ndarray  # int64 [n_pools] (0: no slicing)
    pool_tiered: np.ndarray  # int8 [n_pools]: 1 for the FAST VP pool (slices placed by BackendState.slice_rg)


class BackendParams(NamedTuple):
    """The back end as the kernels see it (immutable): the arrays of :class:`BackendArrays`."""

    rgi: np.ndarray  # int64 [n_rg, N_RG_STATIC]
    dstat: np.ndarray  # float64 [n_drives, N_DS]
    pool_rgs: np.ndarray
    pool_nrg: np.ndarray
    pool_slice: np.ndarray
    pool_tiered: np.ndarray


#: Back-end counters (one record of ``BackendState.c``).
BACKEND = np.dtype([("read_ios", np.int64), ("write_ios", np.int64), ("read_bytes", np.int64)])


class BackendState(NamedTuple):
    """Drive queues (``replay.queueing``'s ``ddyn`` / ``dflt`` columns), back-end counters and the
    FAST VP pool's slice placement (``replay.tiering`` lays out and moves it)."""

    ddyn: np.ndarray  # int64 [n_drives, N_DD]
    dflt: np.ndarray  # float64 [n_drives, 3]
    c: np.ndarray  # one BACKEND record
    slice_rg: np.ndarray  # int32 per slice id: its RAID group (-1: not allocated)
    vol_slice0: np.ndarray  # int64 per volume: its first slice id (-1: not in the FAST VP pool)


def params(ba: BackendArrays) -> BackendParams:
    return BackendParams(ba.rgi.copy(), ba.dstat.copy(), ba.pool_rgs.copy(), ba.pool_nrg.copy(),
                         ba.pool_slice.copy(), ba.pool_tiered.copy())


def new_state(bp: BackendParams) -> BackendState:
    n = bp.dstat.shape[0]
    return BackendState(ddyn=np.zeros((n, qk.N_DD), dtype=np.int64),
                        dflt=np.tile(np.array([0.0, 1.0, 0.0]), (n, 1)), c=np.zeros(1, BACKEND),
                        slice_rg=np.zeros(0, dtype=np.int32), vol_slice0=np.zeros(0, dtype=np.int64))


def raid_groups(sc: Scenario) -> list[RaidGroup]:
    """The scenario's RAID groups, then the SSD cache's drives as one more group (not in any pool;
    RAID 1/10 when mirrored, else 0), so its SSDs queue like every other drive."""
    rgs = list(sc.raid_groups)
    if sc.ssd:
        s = sc.ssd
        rgs.append(RaidGroup("ssd_cache", s.raid_level, s.drives, s.drive_class, max(s.sub_bytes, 4096)))
    return rgs


def build(sc: Scenario) -> BackendArrays:
    page = sc.dram.page_bytes
    groups = raid_groups(sc)
    rgi = np.zeros((len(groups), N_RG_STATIC), dtype=np.int64)
    rows = []
    d0 = 0
    for g, rg in enumerate(groups):
        rgi[g] = (rg.level, rg.width, d0, rg.stripe_element_bytes, rg.data_drives)
        dc = sc.drive_classes[rg.drive_class]
        pool = next(p for p in sc.pools if rg.name in p.raid_groups) if any(
            rg.name in p.raid_groups for p in sc.pools) else None
        span = pool.span_fraction if pool else 1.0
        row = np.zeros(qk.N_DS)
        xfer_ns_per_byte = 1e9 / (dc.transfer_mb_per_s * 1e6)
        if dc.kind == "hdd":
            tmin = dc.track_to_track_ms * 1e6
            tavg = dc.seek_ms * 1e6
            seek_rand = tmin + (tavg - tmin) * math.sqrt(span)
            row[qk.DS_TMIN] = tmin
            row[qk.DS_SEEK_K] = (tavg - tmin) / SQRT_DISTANCE_MEAN
            row[qk.DS_ROT] = dc.half_rotation_ms * 1e6
            row[qk.DS_SEEK_RAND] = seek_rand
            row[qk.DS_POS_RAND] = seek_rand + row[qk.DS_ROT]
        else:
            lat = dc.latency_ms * 1e6
            row[qk.DS_TMIN] = row[qk.DS_SEEK_RAND] = 0.0
            row[qk.DS_POS_RAND] = lat
        row[qk.DS_SPAN] = span
        row[qk.DS_XFER] = xfer_ns_per_byte
        row[qk.DS_NOM] = row[qk.DS_POS_RAND] + page * xfer_ns_per_byte
        if dc.parallelism:  # SSD: P requests in service at once (gain q up to P)
            row[qk.DS_GAIN:qk.DS_GAIN + qk.GAIN_TABLE] = qk.gain_table(1.0, dc.parallelism)
        else:
            row[qk.DS_GAIN:qk.DS_GAIN + qk.GAIN_TABLE] = qk.gain_table(dc.queue_gain_exponent, dc.queue_depth_max)
        row[qk.DS_WCOST] = dc.write_cost
        rows += [row] * rg.width
        d0 += rg.width
    maxr = max(len(p.raid_groups) for p in sc.pools)
    tiered = sc.tiering.pool if sc.tiering else None
    pool_rgs = np.full((len(sc.pools), maxr), -1, dtype=np.int32)
    for i, p in enumerate(sc.pools):
        pool_rgs[i, : len(p.raid_groups)] = [sc.rg_index(n) for n in p.raid_groups]
    return BackendArrays(
        rgi=rgi,
        dstat=np.array(rows, dtype=np.float64).reshape(len(rows), qk.N_DS),
        pool_rgs=pool_rgs,
        pool_nrg=np.array([len(p.raid_groups) for p in sc.pools], dtype=np.int32),
        pool_slice=np.array([p.slice_bytes if (len(p.raid_groups) > 1 or tiered == p.name) else 0
                             for p in sc.pools], dtype=np.int64),
        pool_tiered=np.array([1 if tiered == p.name else 0 for p in sc.pools], dtype=np.int8),
    )


@kernel
def place_unit(unit_no, unit_bytes, pool, vol_base, vol_index, bp, bs, out):
    """Fill ``out`` (N_UP int64) with the RAID group, drives and stripe of a cache unit."""
    pool_rgs = bp.pool_rgs
    rgi = bp.rgi
    off = unit_no * unit_bytes
    sl = bp.pool_slice[pool]
    nrg = bp.pool_nrg[pool]
    if sl > 0:
        s = off // sl
        g = pool_rgs[pool, (vol_base + s) % nrg]
        if bp.pool_tiered[pool]:
            g0 = bs.vol_slice0[vol_index]
            if g0 >= 0 and bs.slice_rg[g0 + s] >= 0:
                g = bs.slice_rg[g0 + s]
        off_in = off - s * sl
    else:
        s = 0
        g = pool_rgs[pool, 0]
        off_in = off
    level = rgi[g, RG_LEVEL]
    width = rgi[g, RG_WIDTH]
    d0 = rgi[g, RG_DRIVE0]
    elem = rgi[g, RG_ELEM]
    ndata = rgi[g, RG_DATA]
    e = off_in // elem
    stripe = e // ndata
    pos = e - stripe * ndata
    # a stripe number unique within the group for parity rotation (mix in slice and volume)
    big = stripe + s * 1_000_003 + vol_index * 7_919
    out[UP_RG] = g
    out[UP_P1] = -1
    out[UP_P2] = -1
    if level == 5:
        p = width - 1 - (big % width)
        out[UP_DATA] = d0 + (p + 1 + pos) % width
        out[UP_P1] = d0 + p
    elif level == 6:
        p = width - 1 - (big % width)
        out[UP_P1] = d0 + p
        out[UP_P2] = d0 + (p + 1) % width
        out[UP_DATA] = d0 + (p + 2 + pos) % width
    elif level == 1 or level == 10:
        pair = (pos + big) % ndata
        out[UP_DATA] = d0 + 2 * pair
        out[UP_P1] = d0 + 2 * pair + 1
    else:
        out[UP_DATA] = d0 + (pos + big) % width
    stripe_bytes = elem * ndata
    sstart = stripe * stripe_bytes
    if (level == 5 or level == 6) and (sl == 0 or sstart + stripe_bytes <= sl):
        out[UP_SFIRST] = (s * sl + sstart) // unit_bytes if sl > 0 else sstart // unit_bytes
        out[UP_SUNITS] = stripe_bytes // unit_bytes
    else:
        out[UP_SFIRST] = -1
        out[UP_SUNITS] = 0


# ---- I/O on the drives of a RAID group (the array kernel's calls) ---------------------------
@kernel
def write_drives(dstat, ddyn, dflt, d, p1, p2, tau, nops, nbytes, batch):
    """Background writes of one contiguous run on data drive d and its parity / mirror drives
    p1, p2 (-1: none), ``nops`` operations each; returns (done, busy, ios)."""
    done, busy = qk.drive_submit(dstat, ddyn, dflt, d, tau, nops, nbytes, batch, qk.BG_WRITE)
    ios = nops
    if p1 >= 0:
        dn, s = qk.drive_submit(dstat, ddyn, dflt, p1, tau, nops, nbytes, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
        ios += nops
    if p2 >= 0:
        dn, s = qk.drive_submit(dstat, ddyn, dflt, p2, tau, nops, nbytes, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
        ios += nops
    return done, busy, ios


@kernel
def write_unit(bp, bs, d, p1, p2, tau, nops, nbytes, batch):
    """:func:`write_drives` on the back end's drives, counted; returns (done, busy, ios)."""
    done, busy, ios = write_drives(bp.dstat, bs.ddyn, bs.dflt, d, p1, p2, tau, nops, nbytes, batch)
    bs.c[0].write_ios += ios
    return done, busy, ios


@kernel
def write_stripe(bp, bs, r, tau, batch):
    """A full-stripe write on RAID group r: one element on every drive, no reads; (done, busy, ios).
    ``batch``: as ``replay.queueing.drive_submit`` (``SEQUENTIAL``: the stripe after the previous one)."""
    elem = bp.rgi[r, RG_ELEM]
    d0 = bp.rgi[r, RG_DRIVE0]
    width = bp.rgi[r, RG_WIDTH]
    done = tau
    busy = np.int64(0)
    for d in range(d0, d0 + width):
        dn, s = qk.drive_submit(bp.dstat, bs.ddyn, bs.dflt, d, tau, 1, elem, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
    bs.c[0].write_ios += width
    return done, busy, width


@kernel
def read(bp, bs, r, d, p1, nbytes, t):
    """A host read of ``nbytes`` from data drive d of RAID group r (mirrors: from whichever copy
    has less host work queued); returns (done, service)."""
    lvl = bp.rgi[r, RG_LEVEL]
    if lvl == 1 or lvl == 10:
        if bs.ddyn[p1, qk.DD_FREE_FG] < bs.ddyn[d, qk.DD_FREE_FG]:
            d = p1
    c = bs.c[0]
    c.read_ios += 1
    c.read_bytes += nbytes
    return qk.drive_submit(bp.dstat, bs.ddyn, bs.dflt, d, t, 1, nbytes, 1.0, qk.HOST_READ)


@kernel
def copy_piece(bp, bs, src, dst, t, nbytes):
    """One piece of a slice relocation at t: ``nbytes`` read sequentially from RAID group src
    (element-size background reads spread over its drives, the data-bearing share of each) and
    written as full stripes on dst (no read-modify-write); returns (done, busy, ios)."""
    done = t
    busy = np.int64(0)
    ios = 0
    for side in range(2):
        r = src if side == 0 else dst
        lvl = bp.rgi[r, RG_LEVEL]
        width = bp.rgi[r, RG_WIDTH]
        d0 = bp.rgi[r, RG_DRIVE0]
        elem = bp.rgi[r, RG_ELEM]
        ndata = bp.rgi[r, RG_DATA]
        mirrored = lvl == 1 or lvl == 10
        elems = max(1, nbytes // elem)
        if side == 0:
            # reads: data is on every drive of a parity group (rotating parity), one copy of a mirror
            drives = ndata if mirrored else width
            kind = qk.BG_READ
        else:
            # full stripes: parity groups write every drive once per stripe, mirrors both copies
            drives = width
            kind = qk.BG_WRITE
            if not mirrored:
                elems = elems // ndata * width
            else:
                elems *= 2
        n = 0
        for j in range(drives):
            d = d0 + (2 * j if (mirrored and side == 0) else j)
            per = elems // drives + (1 if j < elems % drives else 0)
            if per == 0:
                continue
            dn, s = qk.drive_submit(bp.dstat, bs.ddyn, bs.dflt, d, t, per, elem, float(per), kind)
            done = max(done, dn)
            busy += s
            n += per
        ios += n
        if side == 0:
            bs.c[0].read_ios += n
            bs.c[0].read_bytes += nbytes
        else:
            bs.c[0].write_ios += n
    return done, busy, ios


@kernel
def write_ops(r, bp):
    """Drive operations per data drive of a small write to RAID group r (2: read-modify-write)."""
    lvl = bp.rgi[r, RG_LEVEL]
    return 2 if (lvl == 5 or lvl == 6) else 1
