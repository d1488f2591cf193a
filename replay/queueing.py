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
  only to the next address of the sweep (``replay.backend``), unless host reads are served on
  that drive between sweep writes: each one moves the head elsewhere and the next sweep write
  seeks from a random place. With ``p`` = host reads per background operation on the drive (a
  moving average over its last ~64 operations, capped at 1) a sweep write costs
  ``p x random + (1 - p) x sorted`` positioning. Sorting pays off for write-heavy load (seed 002)
  and little under a read-heavy mix (seed 000).
* **Queue-depth law.** Command reordering shortens positioning (seek + rotation) when the drive can
  choose among q queued requests: ``gain(q) = min(q, q_max) ** beta`` (``queue_gain_exponent``,
  ``queue_depth_max`` per drive class). With the defaults (beta 0.12, q_max 256) positioning
  is 1.09x faster at q = 2, 1.28x at q = 8, 1.52x at q = 32 and 1.95x at q = 256 (MODELS.md:
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

from replay.jit import kernel

# drive static parameters (float64 columns of ``dstat``)
DS_POS_RAND = 0  # ns: random seek within the span + half rotation (HDD) or latency (SSD)
DS_TMIN = 1  # ns: track-to-track seek
DS_SEEK_K = 2  # ns: (avg seek - track-to-track) * 15/8, scale of sqrt(distance)
DS_SPAN = 3  # share of the stroke the data occupies
DS_ROT = 4  # ns: half rotation
DS_XFER = 5  # ns per byte
DS_NOM = 6  # ns: nominal single-page op at queue depth 1 (queue-length estimates)
DS_SEEK_RAND = 7  # ns: random seek within the span alone
DS_GAIN = 8  # gain(q) for q = 0 .. GAIN_TABLE - 1 (columns DS_GAIN + q)
GAIN_TABLE = 1025
DS_WCOST = DS_GAIN + GAIN_TABLE  # a write's service relative to a read (SSD: read_iops / write_iops)
N_DS = DS_WCOST + 1

# what a drive operation is (``drive_submit``'s ``kind``; True / False still mean host read / write)
BG_WRITE = 0  # background write (flushes, SSD cache fills)
HOST_READ = 1  # host read: served ahead of background work
BG_READ = 2  # background read (SSD cache fills from the HDDs, cleaning reads from the SSDs)

# drive dynamic state: int64 columns of ``ddyn`` and float64 columns of ``dflt``
DD_FREE_ALL = 0
DD_FREE_FG = 1
DD_BUSY = 2  # cumulative service ns
N_DD = 3
DF_LAST_BG = 0  # ns: service of the last background op (residual estimate)
DF_GAIN = 1  # gain of the last op (queue-length estimate)
DF_FG_SHARE = 2  # moving share of host reads among the drive's operations
FG_SHARE_WEIGHT = 1.0 / 64.0  # weight of one operation in DF_FG_SHARE


def gain_table(beta: float, qmax: int) -> list[float]:
    """gain(q) = min(q, q_max) ** beta for whole queue lengths q = 0 .. GAIN_TABLE - 1."""
    return [1.0 if q <= 1 else float(min(q, qmax)) ** beta for q in range(GAIN_TABLE)]


@kernel
def queue_gain(dstat, d, q):
    """Positioning speed-up when the drive chooses among q queued requests (q counted whole:
    requests, not fractions; tabulated per drive, q beyond the table uses its last entry)."""
    k = int(q)
    if k >= GAIN_TABLE:
        k = GAIN_TABLE - 1
    return dstat[d, DS_GAIN + k]


#: ``batch`` of an operation that continues the drive's previous background write (the next stripe
#: of a sequential stream): the head is already there, so it costs its transfer only.
SEQUENTIAL = -1.0


@kernel
def positioning_ns(dstat, d, batch):
    """Seek + rotation at queue depth 1. ``batch`` > 1: an address-sorted sweep over that many
    requests per drive, whose seeks are short (distance = span / batch): seek(x) = t_min +
    k * sqrt(x) with k fitted so that uniform random pairs average the data-sheet seek.
    ``SEQUENTIAL``: no positioning."""
    if batch < 0.0:
        return 0.0
    if batch <= 1.0:
        return dstat[d, DS_POS_RAND]
    seek = dstat[d, DS_TMIN] + dstat[d, DS_SEEK_K] * math.sqrt(dstat[d, DS_SPAN] / batch)
    rand = dstat[d, DS_SEEK_RAND]
    if seek > rand:
        seek = rand
    return seek + dstat[d, DS_ROT]


@kernel
def drive_submit(dstat, ddyn, dflt, d, t, nops, nbytes, batch, kind):
    """Queue ``nops`` operations of ``nbytes`` each on drive ``d`` at time ``t`` (a read-modify-
    write is 2 operations: read old data, write new). ``kind``: HOST_READ (priority), BG_WRITE or
    BG_READ (background; a write costs ``DS_WCOST`` times a read). Returns (done_ns, service_ns)."""
    fg = kind == HOST_READ
    free_all = ddyn[d, DD_FREE_ALL]
    backlog = free_all - t
    if backlog < 0:
        backlog = 0
    q = 1.0 + backlog * dflt[d, DF_GAIN] / dstat[d, DS_NOM]
    g = queue_gain(dstat, d, q)
    dflt[d, DF_GAIN] = g
    share = dflt[d, DF_FG_SHARE]
    dflt[d, DF_FG_SHARE] = share + FG_SHARE_WEIGHT * ((1.0 if fg else 0.0) - share)
    pos = positioning_ns(dstat, d, batch)
    if (batch > 1.0 or batch < 0.0) and share > 0.0:
        # host reads served between sweep or stream writes (reads per background op) move the head away
        p_break = share / (1.0 - share) if share < 0.5 else 1.0
        pos = p_break * dstat[d, DS_POS_RAND] + (1.0 - p_break) * pos
    one = pos / g + nbytes * dstat[d, DS_XFER]
    if kind == BG_WRITE:
        one *= dstat[d, DS_WCOST]
    svc = np.int64(nops * one + 0.5)
    if svc < 1:
        svc = 1
    if fg:
        fg_free = ddyn[d, DD_FREE_FG]
        if fg_free > t:
            start = fg_free
        elif backlog > 0:
            resid = 0.5 * dflt[d, DF_LAST_BG]
            start = t + np.int64(min(float(backlog), resid))
        else:
            start = t
        done = start + svc
        ddyn[d, DD_FREE_FG] = done
        if free_all > t:
            ddyn[d, DD_FREE_ALL] = free_all + svc
        else:
            ddyn[d, DD_FREE_ALL] = done
        if ddyn[d, DD_FREE_ALL] < done:
            ddyn[d, DD_FREE_ALL] = done
    else:
        start = free_all if free_all > t else t
        done = start + svc
        ddyn[d, DD_FREE_ALL] = done
        dflt[d, DF_LAST_BG] = svc / nops
    ddyn[d, DD_BUSY] += svc
    return done, svc


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
