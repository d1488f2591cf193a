"""Back end: RAID groups of drives, where a cache unit lives, what a write costs, drive service times.

Placement. A volume lives in one pool (``[volumes]`` of the scenario). A pool of several RAID
groups spreads each volume over them in slices (``slice_bytes``, FAST VP: 256 MB on VNX2), round
robin starting at a per-volume offset, as a pool's private RAID groups are filled; a pool of one
group holds the volume whole. In a FAST VP pool (``replay.mech.tiering.kernel``) a slice sits on the group
``BackendState.slice_rg[vol_slice0[vol] + slice]`` says, which relocation changes. Inside a RAID group data is striped in ``stripe_element_bytes``
elements over the data drives with rotating parity (RAID 5: left-symmetric, one parity drive
per stripe; RAID 6: P and Q on consecutive drives; RAID 1/10: mirrored pairs; RAID 0: plain).

Write cost (seed 000; docs/models/sources.md#back-end-raid-groups-and-drives). A small write to RAID 5 is a read-modify-write of the data
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
The queue-depth law is in :mod:`replay.mech.backend.queueing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from replay.jit import kernel, step
from replay.layout import record
from replay.mech.backend import drive as dr
from replay.mech.backend import queueing as qk
from replay.mech.backend.drive import SQRT_DISTANCE_MEAN
from replay.mech.backend.outputs import COUNTERS
from replay.outputs import record_counters
from replay.scenario import RaidGroup, Scenario

#: A RAID group as the kernels see it (``BackendParams.groups``, one record per group).
GROUP = record([(n, np.int64) for n in (
    "level",
    "width",
    "drive0",  # index of the group's first drive in the drive arrays
    "elem_bytes",  # stripe element
    "data_drives",  # data drives per stripe (pairs for RAID 1/10)
)])

#: Where a cache unit lives (:func:`place_unit`'s answer, one record).
PLACE = record([(n, np.int64) for n in (
    "rg",
    "data",  # global index of the drive holding the unit's data
    "p1",  # parity drive (RAID 5/6) or mirror (RAID 1/10), -1 if none
    "p2",  # second parity drive (RAID 6), -1 if none
    "sfirst",  # first unit number of the unit's stripe (full-stripe detection)
    "sunits",  # units in that stripe (0: stripe cut by a slice end, never full)
)])


def new_place() -> np.ndarray:
    return np.zeros(1, PLACE)



def planning_host_iops(drive_iops: float, n_drives: int, read_fraction: float, penalty: int) -> float:
    """Seed 000's rule of thumb: host IOPS the drives sustain at their planning rate,
    ``X * read + penalty * X * write = drive_iops * n_drives``."""
    return drive_iops * n_drives / (read_fraction + penalty * (1.0 - read_fraction))


@dataclass
class BackendArrays:
    """Everything the kernel needs to know about RAID groups, drives and pools."""

    groups: np.ndarray  # GROUP [n_rg]
    drives: np.ndarray  # queueing.DRIVE [n_drives]
    pool_rgs: np.ndarray  # int32 [n_pools, max_rgs] (-1 padded)
    pool_nrg: np.ndarray  # int32 [n_pools]
    pool_slice: np.ndarray  # int64 [n_pools] (0: no slicing)
    pool_tiered: np.ndarray  # int8 [n_pools]: 1 for the FAST VP pool (slices placed by BackendState.slice_rg)


class BackendParams(NamedTuple):
    """The back end as the kernels see it (immutable): the arrays of :class:`BackendArrays`."""

    groups: np.ndarray  # GROUP [n_rg]
    drives: np.ndarray  # queueing.DRIVE [n_drives]
    pool_rgs: np.ndarray
    pool_nrg: np.ndarray
    pool_slice: np.ndarray
    pool_tiered: np.ndarray


#: Back-end counters (one record of ``BackendState.c``).
BACKEND = record([("read_ios", np.int64), ("write_ios", np.int64), ("read_bytes", np.int64)])


class BackendState(NamedTuple):
    """Drive queues (``replay.mech.backend.queueing.DRIVE_QUEUE``), back-end counters and the FAST VP pool's
    slice placement (``replay.mech.tiering.kernel`` lays out and moves it)."""

    queues: np.ndarray  # queueing.DRIVE_QUEUE [n_drives]
    c: np.ndarray  # one BACKEND record
    slice_rg: np.ndarray  # int32 per slice id: its RAID group (-1: not allocated)
    vol_slice0: np.ndarray  # int64 per volume: its first slice id (-1: not in the FAST VP pool)


def params(sc: Scenario) -> BackendParams:
    ba = build(sc)
    return BackendParams(ba.groups, ba.drives, ba.pool_rgs, ba.pool_nrg, ba.pool_slice, ba.pool_tiered)


def new_state(sc: Scenario, p) -> BackendState:
    """``p``: every mechanism's parameters (``replay.array.Params``)."""
    return BackendState(queues=qk.new_queues(p.backend.drives.shape[0]), c=np.zeros(1, BACKEND),
                        slice_rg=np.zeros(0, dtype=np.int32), vol_slice0=np.zeros(0, dtype=np.int64))


def counters(sc: Scenario, p, state) -> dict[str, int]:
    """The back end's I/Os and bytes, and the busy time of the RAID groups' drives (an SSD cache's
    drives are the SSD cache's)."""
    c = record_counters(state.backend.c[0], COUNTERS)
    c["drive_busy_ns"] = int(state.backend.queues["busy_ns"][: sc.n_drives].sum())
    return c


def raid_groups(sc: Scenario) -> list[RaidGroup]:
    """The scenario's RAID groups, then the SSD cache's drives as one more group (not in any pool;
    RAID 1/10 when mirrored, else 0), so its SSDs queue like every other drive."""
    rgs = list(sc.raid_groups)
    if sc.ssd_cache:
        s = sc.ssd_cache
        rgs.append(RaidGroup("ssd_cache", s.raid_level, s.drives, s.drive_class, max(s.sub_bytes, 4096)))
    return rgs


def hdd_record(x, dc, lba_span: float) -> None:
    """Fill a ``queueing.DRIVE`` record of an HDD whose data occupies the first ``lba_span`` of its
    LBAs: the seek curve (``replay.mech.backend.drive``) over the cylinders that holds, the mean
    random seek there, half a rotation, the zones' mean media rate, overheads. ``x["span"]``: the
    share of the stroke (cylinders)."""
    curve = dr.seek_curve(dc.track_to_track_ms, dc.seek_ms, dc.full_stroke_ms)
    outer = dc.transfer_mb_per_s
    inner = dc.transfer_inner_mb_per_s if dc.transfer_inner_mb_per_s is not None else outer
    span = dr.stroke_share(lba_span, outer, inner)
    tmin = dc.track_to_track_ms * 1e6
    if curve.d0 >= 1.0:  # square root throughout (no full-stroke figure)
        tavg = dc.seek_ms * 1e6
        seek_rand = tmin + (tavg - tmin) * math.sqrt(span)
        x["seek_k_ns"] = (tavg - tmin) / SQRT_DISTANCE_MEAN
    else:
        seek_rand = curve.mean_over(span) * 1e6
        x["seek_k_ns"] = curve.k_ms * 1e6
    x["tmin_ns"] = tmin
    x["seek_d0"] = curve.d0
    x["seek_b_ns"] = curve.b_ms * 1e6
    x["seek_c_ns"] = curve.c_ms * 1e6
    x["rot_ns"] = dc.half_rotation_ms * 1e6
    x["seek_rand_ns"] = seek_rand
    x["pos_rand_ns"] = seek_rand + x["rot_ns"]
    x["span"] = span
    x["xfer_ns_per_byte"] = 1e9 / (dr.mean_rate(span, outer, inner) * 1e6)
    x["overhead_ns"] = dc.command_overhead_ms * 1e6
    x["write_extra_ns"] = dc.write_seek_extra_ms * 1e6


def build(sc: Scenario) -> BackendArrays:
    page = sc.dram.page_bytes
    groups = raid_groups(sc)
    table = np.zeros(len(groups), GROUP)
    drives = []
    d0 = 0
    for g, rg in enumerate(groups):
        table[g] = (rg.level, rg.width, d0, rg.stripe_element_bytes, rg.data_drives)
        dc = sc.drive_classes[rg.drive_class]
        pool = next(p for p in sc.pools if rg.name in p.raid_groups) if any(
            rg.name in p.raid_groups for p in sc.pools) else None
        span = pool.span_fraction if pool and pool.span_fraction is not None else 1.0
        x = np.zeros(1, qk.DRIVE)[0]
        if dc.kind == "hdd":
            hdd_record(x, dc, span)
        else:
            x["pos_rand_ns"] = dc.latency_ms * 1e6
            x["xfer_ns_per_byte"] = 1e9 / (dc.transfer_mb_per_s * 1e6)
            x["seek_d0"] = 1.0
        x["nominal_ns"] = x["pos_rand_ns"] + page * x["xfer_ns_per_byte"]
        x["write_cost"] = dc.write_cost
        x["wcache_bytes"] = dc.write_cache_bytes
        if dc.parallelism:  # SSD: P requests in service at once (gain q up to P)
            x["gain_table"] = qk.gain_table(1.0, dc.parallelism)
        elif dc.kind == "hdd" and dc.reordering == "sptf":
            x["gain_table"] = dr.reorder_gain(dr.seek_curve(dc.track_to_track_ms, dc.seek_ms, dc.full_stroke_ms),
                                              x["span"], dc.rpm, page * x["xfer_ns_per_byte"], dc.queue_depth_max,
                                              dc.reorder_efficiency)
        else:
            x["gain_table"] = qk.gain_table(dc.queue_gain_exponent, dc.queue_depth_max)
        drives += [x] * rg.width
        d0 += rg.width
    maxr = max(len(p.raid_groups) for p in sc.pools)
    tiered = sc.tiering.pool if sc.tiering else None
    pool_rgs = np.full((len(sc.pools), maxr), -1, dtype=np.int32)
    for i, p in enumerate(sc.pools):
        pool_rgs[i, : len(p.raid_groups)] = [sc.rg_index(n) for n in p.raid_groups]
    return BackendArrays(
        groups=table,
        drives=np.array(drives, dtype=qk.DRIVE),
        pool_rgs=pool_rgs,
        pool_nrg=np.array([len(p.raid_groups) for p in sc.pools], dtype=np.int32),
        pool_slice=np.array([p.slice_bytes if (len(p.raid_groups) > 1 or tiered == p.name) else 0
                             for p in sc.pools], dtype=np.int64),
        pool_tiered=np.array([1 if tiered == p.name else 0 for p in sc.pools], dtype=np.int8),
    )


@kernel
def place_unit(unit_no, unit_bytes, pool, vol_base, vol_index, bp, bs, out):
    """Fill ``out`` (one ``PLACE`` record) with the RAID group, drives and stripe of a cache unit."""
    pool_rgs = bp.pool_rgs
    groups = bp.groups
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
    level = groups[g].level
    width = groups[g].width
    d0 = groups[g].drive0
    elem = groups[g].elem_bytes
    ndata = groups[g].data_drives
    e = off_in // elem
    stripe = e // ndata
    pos = e - stripe * ndata
    # a stripe number unique within the group for parity rotation (mix in slice and volume)
    big = stripe + s * 1_000_003 + vol_index * 7_919
    out[0].rg = g
    out[0].p1 = -1
    out[0].p2 = -1
    if level == 5:
        p = width - 1 - (big % width)
        out[0].data = d0 + (p + 1 + pos) % width
        out[0].p1 = d0 + p
    elif level == 6:
        p = width - 1 - (big % width)
        out[0].p1 = d0 + p
        out[0].p2 = d0 + (p + 1) % width
        out[0].data = d0 + (p + 2 + pos) % width
    elif level == 1 or level == 10:
        pair = (pos + big) % ndata
        out[0].data = d0 + 2 * pair
        out[0].p1 = d0 + 2 * pair + 1
    else:
        out[0].data = d0 + (pos + big) % width
    stripe_bytes = elem * ndata
    sstart = stripe * stripe_bytes
    if (level == 5 or level == 6) and (sl == 0 or sstart + stripe_bytes <= sl):
        out[0].sfirst = (s * sl + sstart) // unit_bytes if sl > 0 else sstart // unit_bytes
        out[0].sunits = stripe_bytes // unit_bytes
    else:
        out[0].sfirst = -1
        out[0].sunits = 0


# ---- I/O on the drives of a RAID group (the array kernel's calls) ---------------------------
@kernel
def write_drives(drives, queues, d, p1, p2, tau, nops, nbytes, batch):
    """Background writes of one contiguous run on data drive d and its parity / mirror drives
    p1, p2 (-1: none), ``nops`` operations each; returns (done, busy, ios)."""
    done, busy = qk.drive_submit(drives, queues, d, tau, nops, nbytes, batch, qk.BG_WRITE)
    ios = nops
    if p1 >= 0:
        dn, s = qk.drive_submit(drives, queues, p1, tau, nops, nbytes, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
        ios += nops
    if p2 >= 0:
        dn, s = qk.drive_submit(drives, queues, p2, tau, nops, nbytes, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
        ios += nops
    return done, busy, ios


@kernel
def write_unit(bp, bs, d, p1, p2, tau, nops, nbytes, batch):
    """:func:`write_drives` on the back end's drives, counted; returns (done, busy, ios)."""
    done, busy, ios = write_drives(bp.drives, bs.queues, d, p1, p2, tau, nops, nbytes, batch)
    bs.c[0].write_ios += ios
    return done, busy, ios


@kernel
def write_stripe(bp, bs, r, tau, batch):
    """A full-stripe write on RAID group r: one element on every drive, no reads; (done, busy, ios).
    ``batch``: as ``replay.mech.backend.queueing.drive_submit`` (``SEQUENTIAL``: the stripe after the previous one)."""
    elem = bp.groups[r].elem_bytes
    d0 = bp.groups[r].drive0
    width = bp.groups[r].width
    done = tau
    busy = np.int64(0)
    for d in range(d0, d0 + width):
        dn, s = qk.drive_submit(bp.drives, bs.queues, d, tau, 1, elem, batch, qk.BG_WRITE)
        done = max(done, dn)
        busy += s
    bs.c[0].write_ios += width
    return done, busy, width


@step  # inlined: as a call (whole back-end state as arguments) every host read miss cost the MCx kernel ~7 %
def read(bp, bs, r, d, p1, nbytes, t):
    """A host read of ``nbytes`` from data drive d of RAID group r (mirrors: from whichever copy
    has less host work queued); returns (done, service)."""
    lvl = bp.groups[r].level
    if lvl == 1 or lvl == 10:
        if bs.queues[p1].free_fg < bs.queues[d].free_fg:
            d = p1
    c = bs.c[0]
    c.read_ios += 1
    c.read_bytes += nbytes
    return qk.drive_submit(bp.drives, bs.queues, d, t, 1, nbytes, 1.0, qk.HOST_READ)


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
        lvl = bp.groups[r].level
        width = bp.groups[r].width
        d0 = bp.groups[r].drive0
        elem = bp.groups[r].elem_bytes
        ndata = bp.groups[r].data_drives
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
            dn, s = qk.drive_submit(bp.drives, bs.queues, d, t, per, elem, float(per), kind)
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
    lvl = bp.groups[r].level
    return 2 if (lvl == 5 or lvl == 6) else 1


@step
def drives_per_write(level):
    """Drives a small write touches at a RAID level: the data drive and its parity or mirror drives."""
    return 1 if level == 0 else (3 if level == 6 else 2)
