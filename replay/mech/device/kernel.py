"""A device measured from the host (``[device]``): the back end as one queue in front of N-way internal
parallelism, as an SSD, a virtual disk or a LUN behaves. Like the cloud volume it replaces the DRAM
cache and the RAID back end (``replay.array.run_volume_requests``: the loop it shares with the cloud
volume, whose token buckets it can sit behind); the host issues requests as for every array (open
loop at the trace's times, or closed loop at N outstanding).

**Path of a request.** It spends ``host_us`` (a write ``write_host_us``) in the host's I/O stack (a delay, not a server: many
I/Os pay it at once), then joins the device's FCFS queue. Its service time is its direction's
``latency / g(q) + size / rate / g(q) ** transfer_overlap`` (reads and writes differ), with the parallel gain
``g(q) = min(q, N) ** e`` (``e`` per direction) and q the requests in the device when it arrives (itself included):
with exponent 1 that is N independent channels sharing the work of the queue; below 1 channels that
interfere (one controller, one host thread behind a virtual disk). A throughput cap makes the
service at least ``size / max_mib_per_s``.

**Write cache.** With ``write_cache_bytes`` a write is acknowledged at its service time while the
cache has room; the cache drains at ``drain_mib_per_s`` (the reads' media rate when 0). A write that
finds it full waits until the drain has made room (``device_wait_ns``): bursts are absorbed, a
sustained stream runs at the drain rate.

The queue count comes from the device's completion times, which FCFS keeps in order: a ring of the
last ``RING`` of them and a pointer to the first not yet completed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.jit import step
from replay.layout import record
from replay.mech.backend import queueing as qk
from replay.mech.device.outputs import COUNTERS
from replay.mech.device.schema import TRANSFER_REF_BYTES
from replay.outputs import record_counters
from schemas.trace import OP_READ, OP_WRITE

MIB = float(1 << 20)
#: completion times kept for the queue count (a deeper queue counts as this many)
RING = 4096

DEVICE = record([
    ("n", np.int64),  # requests that entered the device
    ("head", np.int64),  # first of them not completed at the last arrival
    ("free", np.int64),  # when the device's queue is empty
    ("cache_level", np.float64),  # bytes in the write cache at ``cache_last``
    ("cache_last", np.float64),
    ("reads", np.int64), ("writes", np.int64),
    ("busy_ns", np.int64),  # service time summed
    ("queue_sum", np.int64),  # queue lengths met on arrival, summed
    ("cache_waits", np.int64), ("cache_wait_ns", np.int64),
    ("drain_free", np.int64),  # when the media has drained the writes the cache took (drain_latency_us)
    ("drain_ns", np.int64),  # media time of those drains, summed
])


class DeviceParams(NamedTuple):
    """Immutable parameters (from ``[device]``; ``on = 0`` without it), in ns and ns per byte."""

    on: int
    host_ns: int  # reads (and trims, flushes)
    write_host_ns: int
    read_ns: float
    read_ns_per_byte: float
    read_ref_ns: float  # a TRANSFER_REF_BYTES read's transfer
    read_size_exponent: float
    write_ns: float
    write_ns_per_byte: float
    gain_table: np.ndarray  # float64 [queueing.GAIN_TABLE]: g(q) of a read
    write_gain_table: np.ndarray  # of a write
    xfer_gain_table: np.ndarray  # g(q) ** transfer_overlap of a read's transfer
    write_xfer_gain_table: np.ndarray  # of a write's
    cap_ns_per_byte: float  # 0: no throughput cap
    cache_bytes: float  # 0: no write cache
    drain_ns_per_byte: float
    drain_latency_ns: float  # 0: the drain costs reads nothing


class DeviceState(NamedTuple):
    done: np.ndarray  # int64 [RING]: completion times, request k at k % RING
    c: np.ndarray  # one DEVICE record


def params(sc) -> DeviceParams:
    d = sc.device
    if d is None:
        one = np.ones(qk.GAIN_TABLE)
        return DeviceParams(on=0, host_ns=0, write_host_ns=0, read_ns=0.0, read_ns_per_byte=0.0, read_ref_ns=0.0,
                            read_size_exponent=1.0, write_ns=0.0, write_ns_per_byte=0.0, gain_table=one,
                            write_gain_table=one, xfer_gain_table=one, write_xfer_gain_table=one, cap_ns_per_byte=0.0,
                            cache_bytes=0.0, drain_ns_per_byte=0.0, drain_latency_ns=0.0)
    drain = d.drain_mib_per_s or d.read_mib_per_s
    gain = qk.gain_table(d.parallel_exponent, d.parallelism)
    if d.read_gain_at_2 is not None:
        # g(2) above the law's g(3) (a knee at 2): deeper queues gain at least as much as two requests
        gain[2] = d.read_gain_at_2
        gain[3:] = np.maximum(gain[3:], gain[2])
    write_gain = qk.gain_table(d.parallel_exponent if d.write_parallel_exponent is None
                               else d.write_parallel_exponent, d.parallelism)
    return DeviceParams(
        on=1, host_ns=int(round(d.host_us * 1e3)),
        write_host_ns=int(round((d.host_us if d.write_host_us is None else d.write_host_us) * 1e3)),
        read_ns=d.read_latency_us * 1e3, read_ns_per_byte=1e9 / (d.read_mib_per_s * MIB),
        read_ref_ns=TRANSFER_REF_BYTES * 1e9 / (d.read_mib_per_s * MIB), read_size_exponent=d.read_size_exponent,
        write_ns=d.write_latency_us * 1e3, write_ns_per_byte=1e9 / (d.write_mib_per_s * MIB),
        gain_table=gain, write_gain_table=write_gain, xfer_gain_table=gain ** d.transfer_overlap,
        write_xfer_gain_table=write_gain ** d.transfer_overlap,
        cap_ns_per_byte=1e9 / (d.max_mib_per_s * MIB) if d.max_mib_per_s else 0.0,
        cache_bytes=float(d.write_cache_bytes), drain_ns_per_byte=1e9 / (drain * MIB),
        drain_latency_ns=d.drain_latency_us * 1e3)


def new_state(sc, p) -> DeviceState:
    c = np.zeros(1, DEVICE)
    c["cache_last"] = -1.0
    return DeviceState(done=np.zeros(RING, dtype=np.int64), c=c)


def counters(sc, p, state) -> dict[str, int]:
    return record_counters(state.device.c[0], COUNTERS)


@step
def host_stack(dp, op, t):
    """When a request issued at ``t`` leaves the host's I/O stack (``host_us``, a write's
    ``write_host_us``): a delay, not a server."""
    return t + (dp.write_host_ns if op == OP_WRITE else dp.host_ns)


@step
def read_transfer_ns(dp, size):
    """A read's transfer: size / rate from TRANSFER_REF_BYTES up, below it the reference transfer
    scaled by (size / TRANSFER_REF_BYTES) ** read_size_exponent."""
    if dp.read_size_exponent == 1.0 or size >= TRANSFER_REF_BYTES:
        return size * dp.read_ns_per_byte
    return dp.read_ref_ns * (size / TRANSFER_REF_BYTES) ** dp.read_size_exponent


@step
def serve(dp, dv, op, size, ta):
    """A request that reaches the device at ``ta``: returns (done, write-cache wait, queue length met)."""
    c = dv.c[0]
    if op != OP_READ and op != OP_WRITE:  # trim, flush: no data moves
        return ta, np.int64(0), np.int64(0)
    ring = dv.done
    n = c.n
    head = c.head
    if n - head >= RING:
        head = n - RING + 1
    while head < n and ring[head % RING] <= ta:
        head += 1
    c.head = head
    q = n - head + 1
    k = q if q < qk.GAIN_TABLE else qk.GAIN_TABLE - 1
    if op == OP_WRITE:
        svc = dp.write_ns / dp.write_gain_table[k] + size * dp.write_ns_per_byte / dp.write_xfer_gain_table[k]
        c.writes += 1
    else:
        svc = dp.read_ns / dp.gain_table[k] + read_transfer_ns(dp, size) / dp.xfer_gain_table[k]
        c.reads += 1
    if op == OP_READ or dp.cache_bytes == 0.0:  # a cached write moves no media data (its drain does)
        floor = size * dp.cap_ns_per_byte
        if svc < floor:
            svc = floor
    start = ta if ta > c.free else c.free
    if op == OP_READ and c.drain_free > start:  # the media drains the cached writes first
        start = c.drain_free
    wait = np.int64(0)
    if op == OP_WRITE and dp.cache_bytes > 0.0:
        s = float(start)
        level = c.cache_level
        if c.cache_last >= 0.0:
            level -= (s - c.cache_last) / dp.drain_ns_per_byte
            if level < 0.0:
                level = 0.0
        room = dp.cache_bytes - float(size)
        if level > room:  # full: wait until the drain has made room for this write
            w = (level - room) * dp.drain_ns_per_byte
            wait = np.int64(w + 0.5)
            start += wait
            level = room if room > 0.0 else 0.0
            c.cache_waits += 1
            c.cache_wait_ns += wait
        c.cache_level = level + size
        c.cache_last = float(start)
    s_ns = np.int64(svc + 0.5)
    if s_ns < 1:
        s_ns = np.int64(1)
    done = start + s_ns
    c.free = done
    ring[n % RING] = done
    c.n = n + 1
    c.busy_ns += s_ns
    if op == OP_WRITE and dp.cache_bytes > 0.0 and dp.drain_latency_ns > 0.0:
        d_ns = np.int64((dp.drain_latency_ns + size * dp.drain_ns_per_byte) / dp.gain_table[k] + 0.5)
        c.drain_free = (done if done > c.drain_free else c.drain_free) + d_ns
        c.drain_ns += d_ns
    c.queue_sum += q
    return done, wait, np.int64(q)
