"""Host side of the array model: when requests issue, the storage processor, request counters.

* **Issue.** Open loop: the trace's ``ts_ns``. Closed loop (``outstanding`` = N): the first N
  requests issue at 0, then each one when the earliest outstanding request completes (a min-heap
  of N completion times, ``HostState.heap``); the trace only supplies the address/op sequence.
* **Storage processors.** ``controller.count`` FCFS servers, each ``overhead_us`` + bytes /
  ``bandwidth_mb_per_s`` per request; a request goes through the one owning its volume's pool.
* **Completion.** Latency, stall and throttle sums, the closed-loop heap.

Parameters (:class:`HostParams`, scalars from the scenario) are separate from the state
(:class:`HostState`: the heap and one ``HOST`` record of clocks and counters).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.jit import step
from replay.layout import record
from replay.mech.backend import queueing as qk
from replay.mech.host.outputs import COUNTERS
from replay.outputs import record_counters
from schemas.trace import OP_READ, OP_WRITE

HOST = record([(n, np.int64) for n in (
    "heap_n",  # completion times in the closed-loop heap
    "first_arrival", "last_done", "requests", "latency_sum",
    "open_from",  # closed loop: requests beyond those outstanding issue from then (a ramp's step)
    "stall_ns", "stalled_requests", "throttle_ns", "throttled_requests",
    "reads", "writes", "other", "read_bytes", "write_bytes",
)])


class HostParams(NamedTuple):
    closed: int  # 1: closed loop of ``outstanding`` I/Os
    outstanding: int
    overhead_ns: int  # storage processor overhead per request
    load_factor: float  # open loop: arrivals this many times faster (1.0: the trace's own timing)
    ns_per_byte: float
    pool_ctrl: np.ndarray  # int32 [n_pools]: the storage processor owning each pool


class HostState(NamedTuple):
    heap: np.ndarray  # int64 [max(1, outstanding)]: completion times of outstanding requests
    sp_free: np.ndarray  # int64 [controller.count]: each storage processor's next free time
    c: np.ndarray  # one HOST record


def params(sc) -> HostParams:
    return HostParams(closed=1 if sc.replay.mode == "closed" else 0, outstanding=int(sc.replay.outstanding),
                      load_factor=float(sc.replay.load_factor),
                      overhead_ns=int(sc.controller.overhead_us * 1e3),
                      ns_per_byte=float(1e9 / (sc.controller.bandwidth_mb_per_s * 1e6)),
                      pool_ctrl=np.array([p.controller for p in sc.pools], dtype=np.int32))


def new_state(sc, p) -> HostState:
    """``p``: every mechanism's parameters (``replay.array.Params``)."""
    c = np.zeros(1, HOST)
    c["first_arrival"] = -1
    return HostState(heap=np.zeros(max(1, p.host.outstanding), dtype=np.int64),
                     sp_free=np.zeros(sc.controller.count, dtype=np.int64), c=c)


def counters(sc, p, state) -> dict[str, int]:
    return record_counters(state.host.c[0], COUNTERS)


@step
def issue(hp, hs, ts):
    """Issue time of the next request (``ts``: its trace time, used in open loop)."""
    c = hs.c[0]
    if hp.closed:
        arr = hs.heap[0] if c.heap_n >= hp.outstanding else c.open_from
    elif hp.load_factor != 1.0:
        arr = np.int64(ts / hp.load_factor)
    else:
        arr = ts
    if c.first_arrival < 0:
        c.first_arrival = arr
    return arr


@step
def count(hs, size, op):
    """Count a request (reads, writes, other, bytes)."""
    c = hs.c[0]
    if op == OP_READ:
        c.reads += 1
        c.read_bytes += size
    elif op == OP_WRITE:
        c.writes += 1
        c.write_bytes += size
    else:
        c.other += 1


@step
def storage_processor(hp, hs, t, size, op, pool):
    """Pass through the storage processor owning ``pool`` at t; returns the time it is done.
    Counts the request."""
    count(hs, size, op)
    k = hp.pool_ctrl[pool]
    free = hs.sp_free[k]
    start = free if free > t else t
    done = start + hp.overhead_ns + np.int64(size * hp.ns_per_byte)
    hs.sp_free[k] = done
    return done


@step
def complete(hp, hs, arr, done, stall, thr):
    """The request issued at ``arr`` completes at ``done`` after ``stall`` and ``thr`` waits."""
    c = hs.c[0]
    c.requests += 1
    c.latency_sum += done - arr
    if stall > 0:
        c.stall_ns += stall
        c.stalled_requests += 1
    if thr > 0:
        c.throttle_ns += thr
        c.throttled_requests += 1
    if done > c.last_done:
        c.last_done = done
    if hp.closed:
        hn = c.heap_n
        if hn < hp.outstanding:
            c.heap_n = qk.heap_push(hs.heap, hn, done)
        else:
            qk.heap_replace_top(hs.heap, hn, done)
