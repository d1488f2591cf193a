"""All-flash array (Violin 6232, seed 001): flash modules without a DRAM cache, full-stripe vRAID
writes, free-space accounting and garbage collection (GC) with its write cliff.

Why a mechanism of the array model and not a model of its own: everything around the media is
the same as for the other arrays (open / closed-loop issue, the storage processor, counters,
intervals, ``tiercast replay`` / ``sweep``), and only what happens to a read or a write once the
controller has it differs. So ``[flash]`` in a scenario switches the DRAM cache, SSD cache and
RAID back end off for host I/O and routes reads and writes here (``replay.array.run_requests``:
one branch per request); scenarios without it run exactly the code they ran before.

**I/O path.** Controller (``host.storage_processor``: ``[controller]`` overhead + bytes over the
front-end bandwidth) -> media transfer (one FCFS server at ``media_mib_per_s``: a read moves its
bytes, a write its full stripes plus parity, ``(data + parity) / data`` of them: vRAID 4+P writes
5 KB per 4 KB stripe and never reads old data or parity, so no RAID 5 penalty) -> flash (``P``
servers in parallel, FCFS: a read holds one for ``S_r``, a write for ``S_w`` and is acknowledged
``A_w`` after it started: the module buffers it and programs on). From the published maxima:
``S_r0`` = minimum read latency - front end - media of a 4 KiB read, ``P = round(read_iops x
S_r0)``, ``S_r = P / read_iops``, ``S_w = P / write_iops``, ``A_w`` = minimum write latency - front
end - media of a 4 KiB write. So P servers give exactly ``read_iops`` / ``write_iops`` at depth
and the jobs=1 latencies come out; one pool for both makes a 70/30 mix reach
``1 / (0.7 / read_iops + 0.3 / write_iops)`` (a prediction), and writes reach
``media x data / (data + parity)`` bandwidth (another one).

**LUN blocks and partial writes** (``lun_block_bytes``, seed 001's 512 B vs 4 KiB LUN
groups). The host issues whole LUN blocks: a request is widened to the blocks it touches. A
write that covers only part of a block (of the LUN block, or of the stripe unit when that is
larger) needs that block's other bytes for the new stripe: the block is read (one flash read per
partial end, both ends in parallel; on a 4 KiB LUN the host does this read, modelled the same
way: est) while the new data crosses the media, and the whole blocks are programmed as full
stripes once both are there. (The write's transfer is not held back behind the read: booked on
the one FCFS media server after the read, it would leave the media idle meanwhile and queue every
later request behind it.) 4 KiB-aligned I/O, as in
every fio run of seed 001, does neither on either LUN, so the model gives the two LUN groups the
same results; real traces carry 512 B-aligned writes that do.

**Free space and GC** (a fluid model in bytes of user data; parity is outside it). Physical space
``(1 + r) x user capacity`` (r = ``spare_factor`` = spare / user), of which ``valid_pct`` of the
user capacity holds data (every host write then overwrites valid data: the valid amount stays
constant). Free space starts at ``physical - valid`` (GC has caught up: seed 001 paused between
tests for that). A write consumes its full stripes of free space; its old copy becomes invalid.
GC runs while free space is below ``gc_start_pct`` of ``physical - valid``, copying valid data at
``gc_mib_per_s``; greedy GC on uniform random writes copies ``WA - 1`` bytes per byte it frees,
with WA from the effective spare factor ``(physical - valid) / valid`` (Xiang & Kurkoski 2012,
:func:`write_amplification`), so it frees ``G / (WA - 1)`` bytes per second. A write that finds
too little free space waits until GC has freed it (a token bucket, FCFS): the **write cliff**.
Before it the host writes at full speed (``h``); from the first wait on (``cliff``), host writes are
bounded by ``G / (WA - 1)`` (600 MiB/s in seed 001 at any block size). The cliff comes after
``(F0 - T) / h + T / (h - G / (WA - 1))`` seconds at a steady host rate h (F0 the initial free
space, T the GC start level). GC is an engine of its own: it does not slow host reads
(est); the greedy transient right after the cliff (first victims emptier than in steady state) is
not modelled: GC pays the steady-state WA from its start. Trims and host flushes do nothing.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replay.jit import step
from replay.layout import record
from replay.mech.backend import queueing as qk
from schemas.trace import OP_READ, OP_WRITE

I8, F8 = np.int64, np.float64

#: Counters and clocks (one record, ``FlashState.c``).
FLASH = record([(n, I8) for n in (
    "media_free",  # the media transfer server's next free time
    "t_gc",  # GC has been accounted up to here (a waiting write reserves GC time ahead of now)
    "cliff_req",  # requests processed before the first write that waited for GC (-1: none yet)
    "cliff_ns",  # when that write reached the media (-1: none yet)
    "gc_waits", "gc_wait_ns",  # writes that waited for GC, and their waits added up
    "reads", "writes", "read_bytes", "write_bytes",  # host I/O through the flash path
    "data_bytes",  # host writes widened to whole blocks and full stripes: user data written to flash
    "media_read_bytes", "media_write_bytes",  # host I/O on the media (writes with parity)
    "busy_ns",  # flash server occupancy
    "rmw_writes", "rmw_reads",  # writes that covered part of a block, and the partial blocks read first
)] + [("free", F8), ("gc_moved", F8)])  # free space (bytes), valid bytes GC copied


class FlashParams(NamedTuple):
    """Immutable parameters (from the scenario's ``[flash]``; ``on = 0`` without it)."""

    on: int
    servers: int  # P
    read_ns: float  # S_r
    write_ns: float  # S_w
    ack_ns: float  # A_w
    media_ns_per_byte: float
    stripe_bytes: int  # data bytes of a full stripe
    lun_block_bytes: int  # the host's smallest I/O: requests are widened to whole blocks
    rmw_block_bytes: int  # a write covering part of such a block reads it first (LUN block or stripe unit)
    media_factor: float  # (data + parity) / data
    free_full_bytes: float  # physical - valid: free space once GC has caught up
    gc_start_free_bytes: float  # GC runs while free space is below this
    gc_free_bytes_per_ns: float  # free bytes GC makes per ns
    copy_per_free: float  # WA - 1
    write_amplification: float


class FlashState(NamedTuple):
    heap: np.ndarray  # int64 [servers]: when each flash server is next free (a min-heap)
    c: np.ndarray  # one FLASH record


def lambert_w0(x: float) -> float:
    """Principal branch W0 of Lambert's W on [-1/e, 0] (w e^w = x, w >= -1), by Halley's method.
    A few lines instead of a SciPy dependency (``scipy.special.lambertw``) for one scalar."""
    if not -1.0 / math.e <= x <= 0.0:
        raise ValueError(f"lambert_w0: {x} outside [-1/e, 0]")
    if x == 0.0:
        return 0.0
    # start from the branch-point series near -1/e (p = sqrt(2 (e x + 1))), else from x
    p = math.sqrt(max(0.0, 2.0 * (math.e * x + 1.0)))
    w = -1.0 + p - p * p / 3.0 if x < -0.25 else x
    for _ in range(50):
        ew = math.exp(w)
        f = w * ew - x
        if f == 0.0 or w == -1.0:
            break
        step_ = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= step_
        if abs(step_) <= 1e-15 * (1.0 + abs(w)):
            break
    return w


def write_amplification(spare_factor: float) -> float:
    """Greedy-GC write amplification for uniform random writes with spare factor r = spare /
    user: ``(1 + r) / ((1 + r) + W0(-(1 + r) e^-(1 + r)))`` (Xiang & Kurkoski 2012; docs/models/sources.md#all-flash-array-violin-6232).
    W0 (not W-1, whose root -(1 + r) is trivial) is the non-trivial solution."""
    if spare_factor <= 0:
        raise ValueError(f"spare factor must be > 0, got {spare_factor}")
    a = 1.0 + spare_factor
    return a / (a + lambert_w0(-a * math.exp(-a)))


def params(sc) -> FlashParams:
    """Kernel parameters from the scenario (see the module docstring for the derivation)."""
    f = sc.flash
    if f is None:
        return FlashParams(0, 1, 0.0, 0.0, 0.0, 0.0, 4096, 512, 1024, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    ctl = sc.controller
    fe = ctl.overhead_us * 1e3 + 4096 * 1e9 / (ctl.bandwidth_mb_per_s * 1e6)
    mpb = 1e9 / (f.media_mib_per_s * (1 << 20))
    stripe = f.stripe_unit_bytes * f.stripe_data_units
    factor = (f.stripe_data_units + f.stripe_parity_units) / f.stripe_data_units
    s_r0 = f.read_latency_us * 1e3 - fe - 4096 * mpb
    if s_r0 <= 0:
        raise ValueError(f"{sc.source or sc.name}: [flash] read_latency_us: {f.read_latency_us} us leaves no flash "
                         f"read time after the controller and the media transfer ({(fe + 4096 * mpb) / 1e3:.1f} us)")
    servers = max(1, round(f.read_iops * s_r0 / 1e9))
    s_w = servers * 1e9 / f.write_iops
    ack = f.write_latency_us * 1e3 - fe - -(-4096 // stripe) * stripe * factor * mpb
    if not 0 < ack <= s_w:
        raise ValueError(f"{sc.source or sc.name}: [flash] write_latency_us: {f.write_latency_us} us gives a flash "
                         f"write acknowledgement of {ack / 1e3:.1f} us, which must lie within 0 and the write "
                         f"service {s_w / 1e3:.1f} us ({servers} flash servers at write_iops {f.write_iops:,.0f})")
    phys = f.user_capacity_bytes * (1.0 + f.spare_factor)
    valid = f.user_capacity_bytes * f.valid_pct / 100.0
    full = phys - valid
    wa = write_amplification(full / valid) if valid > 0 else 1.0
    gc_bytes_per_ns = f.gc_mib_per_s * (1 << 20) / 1e9
    return FlashParams(
        on=1, servers=int(servers), read_ns=servers * 1e9 / f.read_iops, write_ns=s_w, ack_ns=ack,
        media_ns_per_byte=mpb, stripe_bytes=int(stripe), lun_block_bytes=int(f.lun_block_bytes),
        rmw_block_bytes=int(max(f.lun_block_bytes, f.stripe_unit_bytes)), media_factor=factor, free_full_bytes=full,
        gc_start_free_bytes=full * f.gc_start_pct / 100.0,
        gc_free_bytes_per_ns=gc_bytes_per_ns / (wa - 1.0) if wa > 1.0 else 1e30, copy_per_free=wa - 1.0,
        write_amplification=wa)


def new_state(sc, p) -> FlashState:
    fp = p.flash
    c = np.zeros(1, FLASH)
    c["cliff_req"] = c["cliff_ns"] = -1
    c["free"] = fp.free_full_bytes
    return FlashState(heap=np.zeros(fp.servers, dtype=np.int64), c=c)


# ---- kernel steps ----------------------------------------------------------------------------
@step
def advance_gc(fp, c, t):
    """GC frees space from ``t_gc`` to t while free space is below its start level."""
    if t > c.t_gc:
        if c.free < fp.gc_start_free_bytes:
            add = (t - c.t_gc) * fp.gc_free_bytes_per_ns
            if c.free + add > fp.gc_start_free_bytes:
                add = fp.gc_start_free_bytes - c.free
            c.free += add
            c.gc_moved += add * fp.copy_per_free
        c.t_gc = t


@step
def _media_then_flash(fp, fs, t, media_bytes, hold_ns, ack_ns, ready):
    """Transfer over the media server, then one flash server held ``hold_ns``, from ``ready`` at the
    earliest (a read-modify-write's old block); returns the ack time."""
    c = fs.c[0]
    start = c.media_free if c.media_free > t else t
    t = start + np.int64(media_bytes * fp.media_ns_per_byte + 0.5)
    c.media_free = t
    if ready > t:
        t = ready
    heap = fs.heap
    start = heap[0] if heap[0] > t else t
    qk.heap_replace_top(heap, fp.servers, start + np.int64(hold_ns + 0.5))
    c.busy_ns += np.int64(hold_ns + 0.5)
    return start + np.int64(ack_ns + 0.5)


@step
def _widened(offset, size, block):
    """Bytes of the whole ``block``-sized blocks that ``size`` bytes at ``offset`` touch."""
    return ((offset + size + block - 1) // block - offset // block) * block


@step
def _partial_blocks(offset, size, block):
    """How many ``block``-sized blocks a write covers only in part (0, 1 or 2)."""
    end = offset + size
    head = offset % block != 0
    tail = end % block != 0
    if head and tail and offset // block == (end - 1) // block:
        return 1
    return np.int64(head) + np.int64(tail)


@step
def request(fp, fs, op, offset, size, tc, n_done):
    """A host request of ``size`` bytes at byte ``offset`` that left the controller at tc
    (``n_done``: requests processed before it). Returns (done, time it waited for GC).
    The host issues whole LUN blocks; a write covering part of a block (LUN block or stripe unit)
    reads that block (both partial ends in parallel) while its own data crosses the media, and its
    stripe is programmed once both are there (a read-modify-write: the new stripe needs the
    block's other bytes). Aligned I/O (seed 001's fio runs) does neither."""
    c = fs.c[0]
    advance_gc(fp, c, tc)
    if op == OP_READ:
        c.reads += 1
        c.read_bytes += size
        blocks = _widened(offset, size, fp.lun_block_bytes)
        c.media_read_bytes += blocks
        return _media_then_flash(fp, fs, tc, blocks, fp.read_ns, fp.read_ns, tc), np.int64(0)
    if op != OP_WRITE:
        return tc, np.int64(0)
    g = fp.rmw_block_bytes
    k = _partial_blocks(offset, size, g)
    c.writes += 1
    c.write_bytes += size
    ready = tc  # the old blocks read: the new stripe can be programmed
    if k:
        c.rmw_writes += 1
        c.rmw_reads += k
        c.media_read_bytes += k * g
        for _ in range(k):
            d = _media_then_flash(fp, fs, tc, g, fp.read_ns, fp.read_ns, tc)
            if d > ready:
                ready = d
    # g is a multiple of the LUN block: the g-blocks a request touches are those of its LUN blocks
    data = (_widened(offset, size, g) + fp.stripe_bytes - 1) // fp.stripe_bytes * fp.stripe_bytes
    c.data_bytes += data
    t = tc
    if c.free >= data:
        c.free -= data
    else:  # the cliff: wait until GC has freed the rest (after the writes already waiting)
        t0 = c.t_gc if c.t_gc > tc else tc
        t = t0 + np.int64(math.ceil((data - c.free) / fp.gc_free_bytes_per_ns))
        made = (t - t0) * fp.gc_free_bytes_per_ns
        c.gc_moved += made * fp.copy_per_free
        c.free = c.free + made - data
        if c.free < 0.0:
            c.free = 0.0
        c.t_gc = t
        if c.cliff_req < 0:
            c.cliff_req = n_done
            c.cliff_ns = tc
        c.gc_waits += 1
        c.gc_wait_ns += t - tc
    media = data * fp.media_factor
    c.media_write_bytes += np.int64(media + 0.5)
    return _media_then_flash(fp, fs, t, media, fp.write_ns, fp.ack_ns, ready), t - tc


def counters(sc, p, state) -> dict[str, int | float]:
    """``flash_*`` counters: host and media bytes, GC copies, free space, the cliff."""
    fp = p.flash
    c = state.flash.c[0]
    out: dict[str, int | float] = {f"flash_{k}": int(c[k]) for k in (
        "reads", "writes", "read_bytes", "write_bytes", "data_bytes", "media_read_bytes", "media_write_bytes",
        "gc_waits", "gc_wait_ns", "busy_ns", "cliff_req", "cliff_ns", "rmw_writes", "rmw_reads")}
    out["flash_gc_bytes"] = int(round(float(c["gc_moved"])))
    out["flash_free_bytes"] = int(round(float(c["free"])))
    out["flash_free_full_bytes"] = int(round(fp.free_full_bytes))
    out["flash_free_pct"] = 100.0 * float(c["free"]) / fp.free_full_bytes if fp.free_full_bytes > 0 else 0.0
    data = out["flash_data_bytes"]
    out["flash_write_amplification"] = (data + float(c["gc_moved"])) / data if data else 1.0
    out["flash_gc_write_amplification"] = fp.write_amplification
    out["flash_servers"] = fp.servers
    rate = fp.gc_free_bytes_per_ns
    out["flash_steady_write_mib_per_s"] = rate * 1e9 / (1 << 20) if rate < 1e29 else math.inf
    return out
