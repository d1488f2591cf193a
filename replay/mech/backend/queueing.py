"""Queueing kernels: drives as servers, the controller, closed-loop and flush windows.

Every server is work-conserving FCFS with the Lindley recursion ``start = max(arrival, free)``,
``done = start + service``, ``free = done``; requests reach it in arrival order because the array
kernel processes host requests in issue order and lets background work catch up to each
request's time first (see ``replay.array``). Two refinements for drives:

* **Host reads ahead of background flushes.** A drive keeps two clocks: ``free_all`` (all queued
  work) and ``free_fg`` (queued host reads). A host read waits for queued reads and for half of the
  background write in service (its mean residual), not for the whole flush backlog; the backlog
  is pushed back by the read's service time (work is conserved). Arrays send host reads before
  destaging writes; without this, deep flush queues would add their whole length to every miss.
* **Address-sorted sweeps.** A background write that is part of a sorted flush sweep seeks
  only to the next address of the sweep (``replay.mech.backend.kernel``), unless host reads are served on
  that drive between sweep writes: each one moves the head elsewhere and the next sweep write
  seeks from a random place. With ``p`` = host reads per background operation on the drive (a
  moving average over its last ~64 operations, capped at 1) a sweep write costs
  ``p x random + (1 - p) x sorted`` positioning. Sorting pays off for write-heavy load (seed 002)
  and little under a read-heavy mix (seed 000).
* **Queue-depth law.** Command reordering shortens positioning (seek + rotation) when the drive can
  choose among q queued requests: ``gain(q) = min(q, q_max) ** beta`` (``queue_gain_exponent``,
  ``queue_depth_max`` per drive class). With the defaults (beta 0.12, q_max 256) positioning
  is 1.09x faster at q = 2, 1.28x at q = 8, 1.52x at q = 32 and 1.95x at q = 256 (docs/models/sources.md#back-end-raid-groups-and-drives:
  "deep queues give up to 2-2.5x the planning IOPS at rising latency"; together with sorted
  flushing write-heavy loads reach that range). beta is calibrated so that seed 000's pool peaks
  at 1.5-2x its planning IOPS. q is estimated from the drive's backlog of work:
  ``1 + backlog * gain_prev / nominal_op``.

The storage processor is one such server (``fcfs_server``). A closed loop of N outstanding I/Os
is a min-heap of N completion times: the next request issues when the earliest outstanding one
completes (``heap_replace_top``). Flushers use the same heap to keep at most
``flush_queue_depth x width`` writes in flight per RAID group.
"""

from __future__ import annotations

import math

import numpy as np

from replay.jit import kernel, step

#: queue lengths a drive's gain table covers
GAIN_TABLE = 1025

#: A drive's static parameters (``BackendParams.drives``, one record per drive).
DRIVE = np.dtype([
    ("pos_rand_ns", np.float64),  # random seek within the span + half rotation (HDD) or latency (SSD)
    ("tmin_ns", np.float64),  # track-to-track seek
    ("seek_k_ns", np.float64),  # scale of sqrt(distance) (replay.mech.backend.drive.SeekCurve.k_ms)
    ("seek_d0", np.float64),  # the seek curve is linear beyond this share of the stroke ...
    ("seek_b_ns", np.float64),  # ... seek_b_ns + seek_c_ns * distance
    ("seek_c_ns", np.float64),
    ("overhead_ns", np.float64),  # the drive's command overhead
    ("write_extra_ns", np.float64),  # a write's longer settle (HDD)
    ("span", np.float64),  # share of the stroke the data occupies
    ("rot_ns", np.float64),  # half rotation
    ("xfer_ns_per_byte", np.float64),
    ("nominal_ns", np.float64),  # a single-page op at queue depth 1 (queue-length estimates)
    ("seek_rand_ns", np.float64),  # random seek within the span alone
    ("write_cost", np.float64),  # a write's service relative to a read (SSD: read_iops / write_iops)
    ("wcache_bytes", np.float64),  # the drive's own write cache (0: disabled)
    ("gain_table", np.float64, (GAIN_TABLE,)),  # gain(q) for q = 0 .. GAIN_TABLE - 1
])

# what a drive operation is (``drive_submit``'s ``kind``; True / False still mean host read / write)
BG_WRITE = 0  # background write (flushes, SSD cache fills)
HOST_READ = 1  # host read: served ahead of background work
BG_READ = 2  # background read (SSD cache fills from the HDDs, cleaning reads from the SSDs)

#: A drive's queue (``BackendState.drives``, one record per drive).
DRIVE_QUEUE = np.dtype([
    ("free_all", np.int64),  # ns: all queued work done
    ("free_fg", np.int64),  # ns: queued host reads done
    ("busy_ns", np.int64),  # cumulative service
    ("last_bg_ns", np.float64),  # service of the last background op (residual estimate)
    ("gain", np.float64),  # gain of the last op (queue-length estimate)
    ("fg_share", np.float64),  # moving share of host reads among the drive's operations
])
FG_SHARE_WEIGHT = 1.0 / 64.0  # weight of one operation in ``fg_share``


def new_queues(n: int) -> np.ndarray:
    q = np.zeros(n, DRIVE_QUEUE)
    q["gain"] = 1.0
    return q


def gain_table(beta: float, qmax: int) -> np.ndarray:
    """gain(q) = min(q, q_max) ** beta for whole queue lengths q = 0 .. GAIN_TABLE - 1."""
    g = np.minimum(np.arange(GAIN_TABLE, dtype=np.float64), float(qmax)) ** beta
    g[:2] = 1.0
    return g


@step
def queue_gain(dv, q):
    """Positioning speed-up when the drive chooses among q queued requests (q counted whole:
    requests, not fractions; tabulated per drive, q beyond the table uses its last entry)."""
    k = int(q)
    if k >= GAIN_TABLE:
        k = GAIN_TABLE - 1
    return dv.gain_table[k]


#: ``batch`` of an operation that continues the drive's previous background write (the next stripe
#: of a sequential stream): the head is already there, so it costs its transfer only.
SEQUENTIAL = -1.0


@step
def positioning_ns(dv, batch):
    """Seek + rotation at queue depth 1. ``batch`` > 1: an address-sorted sweep over that many
    requests per drive, whose seeks are short (distance = span / batch) on the datasheet's seek
    curve (``replay.mech.backend.drive.SeekCurve``). ``SEQUENTIAL``: no positioning."""
    if batch < 0.0:
        return 0.0
    if batch <= 1.0:
        return dv.pos_rand_ns
    d = dv.span / batch
    if d <= dv.seek_d0:
        seek = dv.tmin_ns + dv.seek_k_ns * math.sqrt(d)
    else:
        seek = dv.seek_b_ns + dv.seek_c_ns * d
    if seek > dv.seek_rand_ns:
        seek = dv.seek_rand_ns
    return seek + dv.rot_ns


@kernel
def drive_submit(drives, queues, d, t, nops, nbytes, batch, kind):
    """Queue ``nops`` operations of ``nbytes`` each on drive ``d`` at time ``t`` (a read-modify-
    write is 2 operations: read old data, write new). ``kind``: HOST_READ (priority), BG_WRITE or
    BG_READ (background; a write costs ``write_cost`` times a read). Returns (done_ns, service_ns).
    Each queue field is read once and written once: a read after a store through a record is
    loaded again (numba tells LLVM nothing about aliasing), 15 % of this function's time."""
    fg = kind == HOST_READ
    dq = queues[d]
    dv = drives[d]
    free_all = dq.free_all
    share = dq.fg_share
    backlog = free_all - t
    if backlog < 0:
        backlog = 0
    g = queue_gain(dv, 1.0 + backlog * dq.gain / dv.nominal_ns)
    pos = positioning_ns(dv, batch)
    if (batch > 1.0 or batch < 0.0) and share > 0.0:
        # host reads served between sweep or stream writes (reads per background op) move the head away
        p_break = share / (1.0 - share) if share < 0.5 else 1.0
        pos = p_break * dv.pos_rand_ns + (1.0 - p_break) * pos
    one = pos / g + nbytes * dv.xfer_ns_per_byte + dv.overhead_ns
    if kind == BG_WRITE:
        if pos > 0.0:
            one += dv.write_extra_ns
        one *= dv.write_cost
    svc = np.int64(nops * one + 0.5)
    if svc < 1:
        svc = 1
    if fg:
        fg_free = dq.free_fg
        if fg_free > t:
            start = fg_free
        elif backlog > 0:
            start = t + np.int64(min(float(backlog), 0.5 * dq.last_bg_ns))
        else:
            start = t
        done = start + svc
        dq.free_fg = done
        free_all = free_all + svc if free_all > t else done
        dq.free_all = free_all if free_all > done else done
    else:
        done = (free_all if free_all > t else t) + svc
        dq.free_all = done
        dq.last_bg_ns = svc / nops
        if kind == BG_WRITE and dv.wcache_bytes > 0.0:
            done = cached_write_ack(dv, t, done, nops, one, nbytes)
    dq.gain = g
    dq.fg_share = share + FG_SHARE_WEIGHT * ((1.0 if fg else 0.0) - share)
    dq.busy_ns += svc
    return done, svc


@kernel  # a call: inlined in drive_submit, a branch no preset takes made the MCx kernel slower
def cached_write_ack(dv, t, media_done, nops, one, nbytes):
    """When a background write to a drive with its write cache enabled is acknowledged: its
    read-modify-write reads (``nops`` - 1 operations of ``one`` ns) go to the platters first, then
    the data is taken into the cache (the command overhead and its transfer) as soon as what is
    ahead of it on the platters fits there: ``media_done`` less the time the platters take for a
    cache full of such writes. The platters' time is unchanged (``media_done``); the flusher sees
    the early acknowledgement and keeps more writes queued, which the drive then reorders."""
    ack = t + np.int64((nops - 1) * one + dv.overhead_ns + nbytes * dv.xfer_ns_per_byte + 0.5)
    room = media_done - np.int64(dv.wcache_bytes / nbytes * one + 0.5)
    return ack if ack > room else room


@kernel
def fcfs_server(free, i, t, service):
    """One step of the Lindley recursion for the FCFS server whose next free time is
    ``free[i]``: start = max(arrival, free), done = start + service. Returns done."""
    start = free[i] if free[i] > t else t
    done = start + service
    free[i] = done
    return done


@kernel
def heap_push(heap, n, value):
    """Push onto the int64 min-heap ``heap[:n]``; returns the new size."""
    i = n
    heap[i] = value
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= heap[i]:
            break
        heap[p], heap[i] = heap[i], heap[p]
        i = p
    return n + 1


@kernel
def heap_replace_top(heap, n, value):
    """Replace the minimum of ``heap[:n]`` by ``value`` and restore the heap."""
    heap[0] = value
    i = 0
    while True:
        lft = 2 * i + 1
        if lft >= n:
            break
        c = lft
        if lft + 1 < n and heap[lft + 1] < heap[lft]:
            c = lft + 1
        if heap[i] <= heap[c]:
            break
        heap[i], heap[c] = heap[c], heap[i]
        i = c
