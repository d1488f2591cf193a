"""The array model: host requests through the storage processor, the DRAM cache (FLARE or MCx),
the flushers and the RAID back end, with queueing, in one compiled pass.

Why one kernel: timing feeds back. A forced flush stalls every later request; MCx throttling
delays a write's acknowledgement, which in a closed loop delays the next request; flushes and
read misses share the drives. So the model is an event loop over host requests in issue order:

1. **Issue.** Open loop: the trace's ``ts_ns``. Closed loop (``outstanding`` = N): the first N
   requests issue at 0, then each one when the earliest outstanding request completes (a heap of
   N completion times); the trace only supplies the address/op sequence.
2. **Stall.** A request issued while a FLARE forced flush is in progress waits until it ends.
3. **Storage processor.** One FCFS server: ``overhead_us`` + bytes / ``bandwidth_mb_per_s``.
4. **Catch-up.** Background work due before this moment runs first, in time order: each RAID
   group's flusher (FLARE: when the watermark or a forced flush is on; MCx: when its oldest dirty
   unit reached the group's pre-cleaning age), FLARE's idle flusher, MCx's adaptation ticks.
   A flusher keeps at most ``flush_queue_depth x width`` writes in flight (a heap of their
   completion times), so flush rate comes out of the drives' speed.
5. **Pages.** Reads hit valid pages, misses go to the data drive (contiguous pages of one unit
   in one I/O, host reads ahead of flushes) and fill the cache; writes to dirty pages coalesce;
   new dirty pages need room (FLARE: forced flush if none; MCx: throttling admission per RAID
   group, a wait for the next flush if the pool is all dirty), ack after the mirror latency.

Outputs, declared by each mechanism (``replay/mech/<name>/outputs.py``): per request (``replay``'s
return, :data:`OUTCOME_COLUMNS`) issue and completion times, pages and hits, stall and throttle
time, its RAID group (the group of its first page), back-end reads and their busy time, dirty
pages at that moment, and the SSD cache's, snapshots' and all-flash array's columns; and records
at their own times (``drain_records``, ``replay.events.LOG_COLUMNS``): flushes, forced flushes,
throttled ticks, cache-full waits, SSD cache promotions, FAST VP relocations. Given a
``replay.tally.RequestTally``, the kernel also sums the request tables per (interval, volume, RAID
group) as each request completes (``tally.add``). The rest of the per-interval aggregation is in
``pipelines.replay``.

Structure: one module per mechanism, each with its immutable parameters (a NamedTuple of
scalars or arrays built from the scenario) and its state (a NamedTuple of numpy arrays; tables
are structured arrays with named fields: ``ds.units[u].flags``, ``ds.groups[r].dirty_pages``;
scalar state and counters one structured record, ``ds.c[0].dirty``):

* :mod:`replay.mech.host.kernel`: issue (open / closed loop heap), storage processor, request counters;
* :mod:`replay.mech.dram_cache.kernel`: the DRAM cache (units, partitions, RAID groups' dirty FIFOs,
  volumes), its host operations (``read``, ``write``, ``trim``) and background work
  (``advance``: flushers, idle flushing, MCx adaptation);
* :mod:`replay.mech.backend.kernel`: placement, RAID groups and drives (``read``, ``write_unit``,
  ``write_stripe``; queues in :mod:`replay.mech.backend.queueing`);
* :mod:`replay.events`: the event loop's clock (``now``, ``next_ev``) and the record buffer.

* :mod:`replay.mech.flash.kernel`: an all-flash array (``[flash]``): reads and writes go there instead of
  the DRAM cache and back end (media, flash servers, free space and GC; one branch per request).
* :mod:`replay.mech.cloud.kernel`: a cloud block-storage volume (``[cloud]``): token buckets and a
  service-time distribution instead of the storage processor, DRAM cache and back end
  (:func:`run_volume_requests`).
* :mod:`replay.mech.device.kernel`: one device measured from the host (``[device]``): a queue in front
  of N-way parallelism, asymmetric reads and writes, a write cache, a throughput cap
  (:func:`run_volume_requests`; with ``[cloud]`` behind the volume's token buckets, in place of the
  type's service-time draw).

:func:`run_requests` composes them with a few calls per request: ``host.issue``,
``dram_cache.suspended``, ``host.storage_processor``, ``dram_cache.advance`` (background work
due), ``dram_cache.read`` / ``write`` / ``trim``, ``dram_cache.touch_volume``, ``host.complete``.

State is an :class:`ArrayState` of plain numpy arrays (picklable, deep-copyable); a trace fed in
any number of segments gives identical outcomes, records and counters (tested).
"""

from __future__ import annotations

import sys
from collections import namedtuple
from dataclasses import field, make_dataclass
from typing import Any, NamedTuple

import numpy as np

from replay import tally as tl
from replay.events import LOG_COLUMNS, Log, Logs, columns, new_events, new_logs, room
from replay.ids import IdMap
from replay.jit import kernel, step
from replay.mech import MECHANISMS
from replay.mech.backend import kernel as be
from replay.mech.cloud import kernel as cl
from replay.mech.device import kernel as dev
from replay.mech.dram_cache import kernel as dc
from replay.mech.flash import kernel as fl
from replay.mech.host import kernel as host
from replay.mech.snapshots import kernel as snap
from replay.mech.ssd_cache import kernel as ssd
from replay.mech.tiering import kernel as tier
from replay.model import Model, Outcomes, Segment, register
from replay.pages import PAGE_BITS
from replay.scenario import Scenario, parse
from schemas.trace import OP_READ, OP_TRIM, OP_WRITE

__all__ = ["ArrayModel", "ArrayState", "OUTCOME_COLUMNS", "LOG_COLUMNS", "run_requests"]

#: Per-request outcome columns, by mechanism (``replay/mech/<name>/outputs.py``): the kernel writes
#: ``out.<column>[i]``; a run has the columns of its running mechanisms (``Mechanism.always``, or
#: on), the others are empty and never written.
OUTCOME_COLUMNS = {m.name: m.module("outputs").OUTCOMES for m in MECHANISMS}
Outcome = namedtuple("Outcome", [c.name for cols in OUTCOME_COLUMNS.values() for c in cols])
_NO_COLUMN = np.zeros(0, dtype=np.int64)
_NO_TALLY = tl.off()


#: Memory prefetch distances (requests ahead, ``replay.prefetch``): a later request's cache units
#: and SSD cache chunks are loaded AHEAD_FAR requests early, their LRU neighbours and the chunks' LRU
#: neighbours and dirty bits (found through those records) AHEAD_NEAR requests early. Tuned on
#: benchmarks/array.py (16 / 8 gained 15-24 %, 32 / 16 19-25 %; 48 / 24 and 24 / 12 less).
AHEAD_FAR = 32
AHEAD_NEAR = 16
#: A record log that was more than half full when the kernel stopped to empty the logs in the middle
#: of a segment doubles, up to this many rows: then a segment's records are usually copied out once,
#: when drained, instead of once per 16 k records.
LOG_ROWS_MAX = 1 << 18


#: Every mechanism's parameters (immutable, from the scenario), one field per mechanism of the
#: registry: ``params.dram_cache`` is ``replay.mech.dram_cache.kernel.params(sc)``.
Params = namedtuple("Params", [m.name for m in MECHANISMS])
#: What :func:`run_requests` mutates (built from an :class:`ArrayState` per call): every
#: mechanism's state, the event loop's clock (one ``replay.events.EVENTS`` record), the record
#: logs (``replay.events.Logs``) and the unit id table (``replay.ids.IdMap``).
KernelState = namedtuple("KernelState", [*(m.name for m in MECHANISMS), "events", "logs", "utab"])


class Requests(NamedTuple):
    """One segment's requests and their page accesses, as the kernel reads them."""

    ts: np.ndarray
    op: np.ndarray
    vol: np.ndarray
    size: np.ndarray
    pstart: np.ndarray  # pages of request i: pstart[i] .. pstart[i + 1]
    unit: np.ndarray  # per page: dense unit id, page bit in the unit, unit number
    pbit: np.ndarray
    unit_no: np.ndarray


@kernel
def split_units(page_no, page_req, volume, shift, page_bits, unit_no, pbit, keys, pstart):
    """Per page: its cache unit number, page bit in the unit and unit key (volume, unit number)
    for ``replay.ids``; per request: its first page (``pstart``, pages of request i are
    ``pstart[i] .. pstart[i + 1]``; ``page_req`` is sorted). One pass instead of eight numpy ones."""
    mask = (np.int64(1) << shift) - 1
    r = 0
    for j in range(page_no.shape[0]):
        q = page_req[j]
        while r <= q:
            pstart[r] = j
            r += 1
        p = page_no[j]
        unit_no[j] = p >> shift
        pbit[j] = p & mask
        keys[j] = (volume[q] << page_bits) | (p >> shift)
    while r < pstart.shape[0]:
        pstart[r] = page_no.shape[0]
        r += 1


@kernel
def run_requests(params, state, req, shift, start, out, tmp, aside, tally):
    """Process requests ``start..``; returns the index of the first request not processed (the
    record buffer would overflow: drain it and call again; or FAST VP's ranking is due: rank and
    call again). ``shift``: the unit id table's hash shift; ``tmp``: a ``replay.mech.backend.kernel.PLACE`` scratch record.
    ``aside``: FLARE's write-aside size (``dram_cache.kernel.write_aside``: a host write larger than
    this bypasses the cache), or None when it is off. None is a type of its own to numba, which
    compiles that specialization without the write-aside path (it prunes a branch on ``is None``
    of an argument): in the loop, the never-taken path made every preset's kernel 6-9 % slower
    (``benchmarks/array.py --against``, best of 5)."""
    hp = params.host
    dp = params.dram_cache
    bp = params.backend
    sp = params.ssd_cache
    tp = params.tiering
    np_ = params.snapshots
    hs = state.host
    ds = state.dram_cache
    bs = state.backend
    ss = state.ssd_cache
    ts = state.tiering
    ns = state.snapshots
    tcr = ts.c[0]
    sc = ss.c[0]
    ev = state.events[0]
    logs = state.logs
    utab = state.utab
    cache = ds.c[0]
    n = req.ts.shape[0]
    n_rg = ds.groups.shape[0]
    for i in range(start, n):
        p0 = req.pstart[i]
        p1 = req.pstart[i + 1]
        # room for this request's records: a flush per dirty unit (and per unit it dirties), a
        # forced flush or cache-full wait per page, a promotion per flush or page, one throttle
        # record per RAID group
        k = cache.dirty_units + (p1 - p0) + 64
        if not (room(logs.flush, k) and room(logs.forced_flush, k) and room(logs.cache_full_wait, k)
                and room(logs.ssd_promotion, k) and room(logs.throttle, n_rg + 1)):
            return i
        if not tl.room(tally):
            return i
        if i + AHEAD_FAR < n:
            q = i + AHEAD_FAR
            dc.prefetch_units(ds, req.unit, req.pstart[q], req.pstart[q + 1])
            ssd.prefetch_chunks(sp, ss, req.unit, req.pstart[q], req.pstart[q + 1])
        if i + AHEAD_NEAR < n:
            q = i + AHEAD_NEAR
            dc.prefetch_neighbours(ds, req.unit, req.pstart[q], req.pstart[q + 1])
            ssd.prefetch_entries(sp, ss, req.unit, req.pstart[q], req.pstart[q + 1])
        if tp.on:
            # FAST VP: relocation pieces due, then (between kernel calls) the ranking
            if ev.now >= tcr.next_move_ns:
                tier.relocate(tp, ts, dp, ds, bp, bs, logs.relocation, utab, shift, ev.now)
                if tcr.next_move_ns <= ev.now:
                    return i
            if ev.now >= tcr.next_rank_ns:
                tcr.rank_due = 1
                return i
        # 1. issue; 2. forced-flush stall in progress; 3. storage processor
        arr = host.issue(hp, hs, req.ts[i])
        ssd.idle(sp, ss, bp, bs, arr)
        rh0 = sc.read_hits
        rm0 = sc.read_misses
        wh0 = sc.through_hits
        wm0 = sc.through_misses
        t = dc.suspended(ds, arr)
        stall = t - arr
        thr = np.int64(0)
        o = req.op[i]
        tc = host.storage_processor(hp, hs, t, req.size[i], o, ds.vols[req.vol[i]].pool)
        # 4. background work due by now
        if tc >= ev.next_ev:
            dc.catch_up(dp, ds, bp, bs, sp, ss, ev, logs.flush, logs.throttle, logs.ssd_promotion, utab, shift, tc, 0)
        if ev.now < tc:
            ev.now = tc
        # 5. pages
        v = req.vol[i]
        splits0 = ns.c[0].read_splits
        if np_.on:
            out.snapshot_delete_ios[i] = snap.advance(np_, ns, bp, bs, arr) if np_.row else 0
        if tp.on and p1 > p0 and (o == OP_READ or o == OP_WRITE):
            tier.touch(tp, ts, bs, v, req.unit_no[p0], req.unit_no[p1 - 1], arr)
        done = tc
        rp = 0
        rh = 0
        wp = 0
        wh = 0
        bios = 0
        bbusy = np.int64(0)
        rg_req = -1
        if o == OP_READ:
            done, rp, rh, bios, bbusy, rg_req = dc.read(dp, ds, bp, bs, sp, ss, ev, logs.ssd_promotion, np_, ns, v, p0,
                                                        p1, req.unit, req.pbit, req.unit_no, tc, tmp)
        elif o == OP_WRITE:
            tw = tc
            if np_.on:
                tw, first, upd, mios = snap.before_write(np_, ns, dp, ds, bp, bs, v, p0, p1, req.unit, req.pbit,
                                                         req.unit_no, arr, tc, tmp)
                out.snapshot_first_writes[i] = first
                out.snapshot_map_updates[i] = upd
                out.snapshot_map_ios[i] = mios
            aside_now = False
            if aside is not None:  # pruned at compile time when None (see the docstring)
                aside_now = req.size[i] > aside
            if aside_now:
                done, wp, bios, bbusy, rg_req = dc.write_aside(dp, ds, bp, bs, sp, ss, ev, logs.ssd_promotion, utab,
                                                               shift, v, p0, p1, req.unit, req.pbit, req.unit_no, tw,
                                                               tmp)
            else:
                done, wp, wh, st, thr, bbusy, rg_req = dc.write(dp, ds, bp, bs, sp, ss, ev, logs, utab, shift, v, p0,
                                                                p1, req.unit, req.pbit, req.unit_no, tw, tmp)
                stall += st
        elif o == OP_TRIM:
            rg_req = dc.trim(dp, ds, p0, p1, req.unit, req.pbit)
        # OP_FLUSH (a host cache flush): the write cache is mirrored and battery backed: ack at once
        dc.touch_volume(ds, v, tc)
        # outputs
        out.arrival_ns[i] = arr
        out.done_ns[i] = done
        out.read_pages[i] = rp
        out.read_hit_pages[i] = rh
        out.write_pages[i] = wp
        out.write_hit_pages[i] = wh
        out.stall_ns[i] = stall
        out.throttle_ns[i] = thr
        out.rg[i] = rg_req
        out.backend_ios[i] = bios
        out.backend_busy_ns[i] = bbusy
        rg_dirty = ds.groups[rg_req].dirty_pages if rg_req >= 0 else 0
        out.dirty_pages[i] = cache.dirty
        out.rg_dirty_pages[i] = rg_dirty
        if np_.on and o != OP_WRITE:
            out.snapshot_first_writes[i] = 0
            out.snapshot_map_updates[i] = 0
            out.snapshot_map_ios[i] = 0
        if np_.on:
            out.snapshot_read_splits[i] = ns.c[0].read_splits - splits0
        srh = sc.read_hits - rh0
        srm = sc.read_misses - rm0
        sth = sc.through_hits - wh0
        stm = sc.through_misses - wm0
        if sp.on:
            out.ssd_read_hits[i] = srh
            out.ssd_read_misses[i] = srm
            out.ssd_through_hits[i] = sth
            out.ssd_through_misses[i] = stm
            out.ssd_dirty_slots[i] = sc.dirty_slots
        tl.add(tally, i, arr, done, o, req.size[i], v, rg_req, rp, rh, wp, wh, stall, thr, bios, bbusy, cache.dirty,
               rg_dirty, srh, srm, sth, stm, sc.dirty_slots, sp.on)
        host.complete(hp, hs, arr, done, stall, thr)
    return n


@step
def cacheless_outcome(out, i, arr, done, thr, rg):
    """Request i's outcome columns on an array without a DRAM cache or RAID back end (all-flash,
    a cloud volume): its times and token / GC wait, the group of its volume's pool. Its page,
    stall, dirty and back-end columns stay as ``ArrayModel._spare`` gives them: zero. Nine stores
    a request fewer (before the request tables were tallied in the kernel, ``replay.tally``, the
    pass after it did not read them either): ``violin6232`` 1.35-1.44 -> 1.18-1.25 CPU-s per 10 M requests, ``aws-gp3``
    1.55-1.62 -> 1.40-1.48 (docs/performance.md)."""
    out.arrival_ns[i] = arr
    out.done_ns[i] = done
    out.throttle_ns[i] = thr
    out.rg[i] = rg


@step
def cacheless_tally(tally, i, arr, done, o, size, vol, rg, thr):
    """Request i into the tally on an array without a DRAM cache or RAID back end: no pages,
    stalls, back-end I/Os or dirty pages."""
    z = np.int64(0)
    tl.add(tally, i, arr, done, o, size, vol, rg, z, z, z, z, z, thr, z, z, z, z, z, z, z, z, z, False)


@kernel
def run_flash_requests(params, state, req, offset, start, out, tally):
    """The all-flash array's event loop (``[flash]``, ``replay.mech.flash.kernel``): issue, storage
    processor, the flash path; no DRAM cache, SSD cache or RAID back end, so no background work.
    ``offset``: the requests' byte offsets (partial blocks).
    A loop of its own: its code in :func:`run_requests` made the cached arrays' loop ~25 %
    slower (a larger loop body that LLVM optimizes less well), though never taken there."""
    hp = params.host
    bp = params.backend
    fp = params.flash
    hs = state.host
    ds = state.dram_cache
    fs = state.flash
    fc = fs.c[0]
    ev = state.events[0]
    for i in range(start, req.ts.shape[0]):
        if not tl.room(tally):
            return i
        arr = host.issue(hp, hs, req.ts[i])
        o = req.op[i]
        tc = host.storage_processor(hp, hs, arr, req.size[i], o, ds.vols[req.vol[i]].pool)
        if ev.now < tc:
            ev.now = tc
        gc0 = fc.gc_moved
        done, thr = fl.request(fp, fs, o, offset[i], req.size[i], tc, hs.c[0].requests)
        rg = bp.pool_rgs[ds.vols[req.vol[i]].pool, 0]
        cacheless_outcome(out, i, arr, done, thr, rg)
        cacheless_tally(tally, i, arr, done, o, req.size[i], req.vol[i], rg, thr)
        out.flash_free_bytes[i] = np.int64(fc.free + 0.5)
        out.flash_gc_bytes[i] = np.int64(fc.gc_moved + 0.5) - np.int64(gc0 + 0.5)
        host.complete(hp, hs, arr, done, np.int64(0), thr)
    return req.ts.shape[0]


@kernel
def run_volume_requests(params, state, req, offset, start, out, tally):
    """A volume seen from the host, its own loop as the all-flash array's (no storage processor,
    DRAM cache or RAID back end): the host stack's delay (``[device]``), a cloud volume's token
    buckets (``[cloud]``, ``replay.mech.cloud.kernel``), then the device's queue
    (``replay.mech.device.kernel``) or, a cloud volume without ``[device]``, its type's service-time
    draw. A cloud volume is a device with token buckets in front. ``offset``: the requests' byte
    offsets (the cloud's I/O merging)."""
    hp = params.host
    bp = params.backend
    cp = params.cloud
    dp = params.device
    hs = state.host
    ds = state.dram_cache
    cs = state.cloud
    dv = state.device
    b = cs.buckets
    ev = state.events[0]
    for i in range(start, req.ts.shape[0]):
        if not tl.room(tally):
            return i
        arr = host.issue(hp, hs, req.ts[i])
        o = req.op[i]
        size = req.size[i]
        host.count(hs, size, o)
        if ev.now < arr:
            ev.now = arr
        st = dev.host_stack(dp, o, arr)  # arr without [device]
        wait = np.int64(0)
        if cp.on:
            st, wait, ios = cl.tokens(cp, cs, req.vol[i], o, offset[i], size, st)
            out.cloud_start_ns[i] = st
            out.cloud_ios[i] = ios
            out.cloud_credit_ios[i] = np.int64(b[0].bal + 0.5)
            out.cloud_credit_bytes[i] = np.int64(b[1].bal + 0.5)
        if dp.on:
            done, cache_wait, q = dev.serve(dp, dv, o, size, st)
            wait += cache_wait
            out.device_queue[i] = q
            out.device_wait_ns[i] = cache_wait
        elif o == OP_READ or o == OP_WRITE:
            done = st + cl.service_ns(cp, o, hs.c[0].requests)
        else:  # a trim or flush moves no data: acknowledged when it has passed the buckets
            done = st
        rg = bp.pool_rgs[ds.vols[req.vol[i]].pool, 0]
        cacheless_outcome(out, i, arr, done, wait, rg)
        cacheless_tally(tally, i, arr, done, o, size, req.vol[i], rg, wait)
        host.complete(hp, hs, arr, done, np.int64(0), wait)
    return req.ts.shape[0]


# --------------------------------------------------------------------------------------------
# the model object
# --------------------------------------------------------------------------------------------
def _kernel_state(self) -> KernelState:
    return KernelState(*(getattr(self, m.name) for m in MECHANISMS), self.events, self.logs, self.unit_ids.table)


#: Explicit, picklable state of an array replay (see module docstring): one field per mechanism of
#: the registry (its ``new_state``), the clock and record logs, the unit and SSD cache chunk id
#: maps, ``volume_names``: the trace's volume names by dense id (the caller copies them from its
#: ``SegmentBuilder``), used to place each volume in its pool (a volume without a name goes to the
#: default pool), and the log rows stashed since the last ``drain_records``.
ArrayState = make_dataclass("ArrayState", [
    *((m.name, Any) for m in MECHANISMS), ("events", np.ndarray), ("logs", Logs),
    ("unit_ids", IdMap, field(default_factory=IdMap)),
    ("chunk_ids", IdMap, field(default_factory=IdMap)),  # SSD cache chunks (volume, chunk number)
    ("volume_names", list[str], field(default_factory=list)),
    ("n_vol", int, 0),
    ("records", dict[str, list[dict[str, np.ndarray]]], field(default_factory=dict)),
], namespace={"kernel_state": _kernel_state})
ArrayState.__module__ = __name__  # pickled by reference: replay.array.ArrayState


@register
class ArrayModel(Model):
    """A storage array described by a :class:`replay.scenario.Scenario` (see module docstring)."""

    name = "array"

    def __init__(self, scenario: Scenario):
        if not isinstance(scenario, Scenario):
            raise TypeError("ArrayModel takes a replay.scenario.Scenario (see ArrayModel.from_section)")
        self.scenario = scenario
        self.tiering = tier.Tiering(scenario)  # FAST VP's ranking and planning (Python, between kernel calls)
        self.kernel_params = Params(**{m.name: m.module("kernel").params(scenario) for m in MECHANISMS})
        self._spares: dict[str, np.ndarray] = {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_spares"}

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d, _spares={})

    def _spare(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """An int64 array of ``shape`` for this replay: the one the previous replay used under
        ``name`` when nothing else holds it any more (no caller's view or frame over it:
        ``sys.getrefcount``), else a new one, zeroed (what no kernel writes stays zero). Why: fresh
        memory is zeroed by the OS on first touch, and the outcomes and per-page columns are ~190 B per request, rewritten every
        segment: reusing them made the FAST Cache kernel 1.07x and
        ``vnx5400``'s 1.05x (benchmarks/array.py --against, 10 M requests)."""
        a = self._spares.pop(name, None)  # a dict pop is atomic: another thread sees None or a held one
        if a is None or a.shape != shape or sys.getrefcount(a) > 2:  # 2: ``a`` and the call's argument
            a = np.zeros(shape, dtype=np.int64)  # as cheap as empty (calloc: pages the OS zeroes)
        self._spares[name] = a
        return a

    def raise_outstanding(self, state: ArrayState, outstanding: int) -> None:
        """Closed loop: from now on keep ``outstanding`` I/Os in flight (more than before; the
        new ones issue when the next request would have: the earliest outstanding completion), as
        IOMeter's next step of a ramp does."""
        hp = self.kernel_params.host
        if not hp.closed or outstanding < hp.outstanding:
            raise ValueError(f"raise_outstanding: a closed loop can only grow ({hp.outstanding} -> {outstanding})")
        heap = np.zeros(outstanding, dtype=np.int64)
        n = int(state.host.c[0]["heap_n"])
        heap[:n] = state.host.heap[:n]
        state.host = state.host._replace(heap=heap)
        state.host.c[0]["open_from"] = heap[0] if n else state.host.c[0]["last_done"]
        self.kernel_params = self.kernel_params._replace(host=hp._replace(outstanding=int(outstanding)))
        self.scenario = self.scenario.with_replay(outstanding=int(outstanding))

    @classmethod
    def from_section(cls, section) -> ArrayModel:
        """Build from a scenario document (the parsed TOML as a dict)."""
        return cls(parse(dict(section), "<section>"))

    def params(self) -> dict[str, Any]:
        return {"scenario": self.scenario.to_dict()}

    @property
    def page_bytes(self) -> int:
        return self.scenario.dram.page_bytes

    # -- state ----------------------------------------------------------------------------
    def new_state(self) -> ArrayState:
        sc, p = self.scenario, self.kernel_params
        return ArrayState(**{m.name: m.module("kernel").new_state(sc, p) for m in MECHANISMS},
                          events=new_events(), logs=new_logs())

    def _running(self) -> list:
        """The mechanisms whose state this scenario's runs grow, count and write: those that are
        ``always`` (their outcome columns exist in every run) and the others when ``on``."""
        p = self.kernel_params
        return [m for m in MECHANISMS if m.always or getattr(p, m.name).on]

    def _ensure_volumes(self, state: ArrayState, n_vol: int) -> None:
        if n_vol <= state.n_vol:
            return
        vols = state.dram_cache.vols
        if vols.shape[0] < n_vol:
            vols = dc.grow(vols, max(n_vol, 2 * vols.shape[0]), dc.new_vols)
            state.dram_cache = state.dram_cache._replace(vols=vols)
        sc = self.scenario
        for vid in range(state.n_vol, n_vol):
            name = state.volume_names[vid] if vid < len(state.volume_names) else f"#{vid}"
            p = sc.pool_of_volume(name)
            vols[vid]["pool"] = p
            vols[vid]["base"] = vid % len(sc.pools[p].raid_groups)
        state.n_vol = n_vol

    def _ensure_units(self, state: ArrayState, n_units: int) -> None:
        """Rows for ``n_units`` unit ids in every table kept per unit (doubling, at least 1024)."""
        have = state.dram_cache.units.shape[0]
        if n_units <= have:
            return
        rows = max(n_units, 2 * have, 1024)
        for m in self._running():
            grow_units = getattr(m.module("kernel"), "grow_units", None)
            if grow_units is not None:
                setattr(state, m.name, grow_units(getattr(state, m.name), rows))

    # -- replay ---------------------------------------------------------------------------
    def prepare(self, state: ArrayState, segment: Segment):
        """Per-page unit ids, page bits and unit numbers; per-request page offsets."""
        if segment.page_size != self.page_bytes:
            raise ValueError(f"array: segment has {segment.page_size} B pages, the scenario's cache uses "
                             f"{self.page_bytes} B pages")
        ppu = self.scenario.dram.pages_per_unit
        n = segment.n_pages
        unit_no, pbit, keys = (self._spare(name, (n,)) for name in ("unit_no", "pbit", "keys"))
        pstart = self._spare("pstart", (segment.n_requests + 1,))
        split_units(np.ascontiguousarray(segment.page_no, dtype=np.int64),
                    np.ascontiguousarray(segment.page_req, dtype=np.int64),
                    np.ascontiguousarray(segment.volume, dtype=np.int64), ppu.bit_length() - 1, PAGE_BITS,
                    unit_no, pbit, keys, pstart)
        n_units = state.unit_ids.n_ids
        unit = state.unit_ids.assign(keys, out=self._spare("unit", (n,)))
        if self.kernel_params.ssd_cache.on and state.unit_ids.n_ids > n_units:
            self._map_chunks(state, unit, keys, n_units)
        if self.tiering.on:
            self._ensure_slices(state, keys >> PAGE_BITS, unit_no)
        return unit, pbit, unit_no, pstart

    def _ensure_slices(self, state: ArrayState, vol: np.ndarray, unit_no: np.ndarray) -> None:
        """FAST VP: slice ids for every slice this segment's pages reach."""
        top = np.zeros(state.n_vol, dtype=np.int64)
        tier.slices_needed(vol, unit_no, self.tiering.params.units_per_slice, top)
        state.tiering, state.backend = self.tiering.ensure(
            state.tiering, state.backend, state.dram_cache.vols["pool"][: state.n_vol], state.volume_names,
            {int(v): int(n) for v, n in enumerate(top) if n})

    def _map_chunks(self, state: ArrayState, unit: np.ndarray, keys: np.ndarray, n_units: int) -> None:
        """SSD cache: the chunk and first sub-block of every unit first seen in this segment (ids
        ``n_units..``, dense), and a record for every segment first seen (its volume's placement)."""
        sp = self.kernel_params.ssd_cache
        new = np.arange(n_units, state.unit_ids.n_ids)
        fresh = unit >= n_units
        key_of_new = np.empty(new.size, dtype=np.int64)
        key_of_new[unit[fresh] - n_units] = keys[fresh]  # a scatter, not a sort: every page of a unit has its key
        upc_bits = sp.units_per_chunk.bit_length() - 1
        v, uno = key_of_new >> PAGE_BITS, key_of_new & ((1 << PAGE_BITS) - 1)
        ss = state.ssd_cache
        if sp.units_per_chunk == 1:  # chunks are units: chunk id = unit id (ssd_cache.chunk_of)
            n_chunks, cid = n_units, new
            state.chunk_ids = state.unit_ids
        else:
            n_chunks = state.chunk_ids.n_ids
            cid = state.chunk_ids.assign((v << PAGE_BITS) | (uno >> upc_bits))
            need = state.unit_ids.n_ids
            if ss.unit_chunk.shape[0] < need:
                size = max(need, 2 * ss.unit_chunk.shape[0], 1024)
                ss = ss._replace(unit_chunk=np.resize(ss.unit_chunk, size), unit_sub=np.resize(ss.unit_sub, size))
            ss.unit_chunk[new] = cid
            ss.unit_sub[new] = ((uno & (sp.units_per_chunk - 1)) * sp.flush_unit_bytes) >> sp.sub_shift
        if state.chunk_ids.n_ids > n_chunks:
            chunks = ss.chunks
            if chunks.shape[0] < state.chunk_ids.n_ids:
                chunks = dc.grow(chunks, max(state.chunk_ids.n_ids, 2 * chunks.shape[0], 1024), ssd.new_chunks)
                ss = ss._replace(chunks=chunks)
            first_seen = cid >= n_chunks  # units of one chunk write the same values: a scatter again
            c_new, cv = cid[first_seen], v[first_seen]
            chunks["vol"][c_new] = cv
            chunks["no"][c_new] = uno[first_seen] >> upc_bits
            chunks["pool"][c_new] = state.dram_cache.vols["pool"][cv]
            chunks["base"][c_new] = state.dram_cache.vols["base"][cv]
        state.ssd_cache = ss

    def cacheless(self) -> bool:
        """An all-flash array or a volume seen from the host (cloud, device): no DRAM cache, no RAID
        back end, so no pages, stalls, dirty pages or back-end I/Os (``cacheless_outcome``)."""
        kp = self.kernel_params
        return bool(kp.flash.on or kp.cloud.on or kp.device.on)

    def replay(self, state: ArrayState, segment: Segment, tally: tl.RequestTally | None = None) -> Outcomes:
        """The segment's outcome columns; with ``tally`` (started for this segment), the kernel
        also sums its request tables (``replay.tally``)."""
        n = segment.n_requests
        flash_on = bool(self.kernel_params.flash.on)
        cloud_on = bool(self.kernel_params.cloud.on)
        device_on = bool(self.kernel_params.device.on)
        names = self.outcome_names()
        rows = self._spare("out", (len(names), n))  # one contiguous row per outcome column
        have = dict(zip(names, rows, strict=True))
        out = Outcome(**{f: have.get(f, _NO_COLUMN) for f in Outcome._fields})
        if n:
            self._ensure_volumes(state, int(segment.volume.max()) + 1)
            if self.cacheless():  # no cache units: these paths read requests only
                unit = pbit = unit_no = np.zeros(0, dtype=np.int64)
                pstart = np.zeros(n + 1, dtype=np.int64)
            else:
                unit, pbit, unit_no, pstart = self.prepare(state, segment)
            self._ensure_units(state, state.unit_ids.n_ids)
            req = Requests(ts=np.ascontiguousarray(segment.ts_ns, dtype=np.int64),
                           op=np.ascontiguousarray(segment.op, dtype=np.uint8),
                           vol=np.ascontiguousarray(segment.volume, dtype=np.int32),
                           size=np.ascontiguousarray(segment.size_bytes, dtype=np.int64),
                           pstart=pstart, unit=unit, pbit=pbit, unit_no=unit_no)
            tmp = be.new_place()
            wa = self.kernel_params.dram_cache.write_aside_bytes
            aside = np.int64(wa) if wa > 0 else None
            i = 0
            if flash_on or cloud_on or device_on:
                run = run_flash_requests if flash_on else run_volume_requests
                offset = np.ascontiguousarray(segment.offset, dtype=np.int64)
                while True:
                    i = run(self.kernel_params, state.kernel_state(), req, offset, i, out,
                            _NO_TALLY if tally is None else tally.t)
                    if i >= n:
                        break
                    tally.make_room(i)
            while i < n:
                nxt = run_requests(self.kernel_params, state.kernel_state(), req, state.unit_ids.shift, i, out, tmp,
                                   aside, _NO_TALLY if tally is None else tally.t)
                tally_full = tally is not None and nxt < n and tally.full()
                if tally_full:
                    tally.make_room(nxt)
                if state.tiering.c[0]["rank_due"]:
                    state.tiering = self.tiering.rank(state.tiering, state.backend, int(state.events[0]["now"]))
                elif nxt == i and not tally_full and not any(log.n[0] for log in state.logs):  # one request needs more room
                    state.logs = Logs(*(Log(np.empty(2 * log.rows.shape[0], log.rows.dtype), log.n)
                                        for log in state.logs))
                i = nxt
                if i < n and any(log.n[0] for log in state.logs):  # the kernel stopped to make room
                    self._stash_records(state)
        return have

    def mechanisms(self) -> list[str]:
        """The mechanisms this scenario models, in registry order (``replay.mech.MECHANISMS``): the
        running ones less those a running one replaces (all-flash: no DRAM cache, no back end)."""
        running = self._running()
        replaced = {r for m in running for r in m.replaces}
        return [m.name for m in running if m.name not in replaced]

    def outcome_names(self) -> list[str]:
        """The outcome columns of this scenario's runs (``OUTCOME_COLUMNS`` of its running mechanisms)."""
        return [c.name for m in self._running() for c in OUTCOME_COLUMNS[m.name]]

    def _stash_records(self, state: ArrayState) -> None:
        """Move every log's rows out, as columns, and empty the logs; a log more than half full
        doubles (up to ``LOG_ROWS_MAX`` rows)."""
        logs = []
        for kind, log in zip(Logs._fields, state.logs, strict=True):
            full = 2 * int(log.n[0]) > log.rows.shape[0]
            if log.n[0]:
                state.records.setdefault(kind, []).append(columns(log))
            if full and log.rows.shape[0] < LOG_ROWS_MAX:
                log = Log(np.empty(2 * log.rows.shape[0], log.rows.dtype), log.n)
            logs.append(log)
        state.logs = Logs(*logs)

    def drain_records(self, state: ArrayState) -> dict[str, dict[str, np.ndarray]]:
        """The records written since the last drain: per kind (``replay.events.LOG_COLUMNS``) its
        columns (each record is copied once, into columns)."""
        self._stash_records(state)
        blocks, state.records = state.records, {}
        out = {}
        for kind, cols in LOG_COLUMNS.items():
            parts = blocks.get(kind, [])
            out[kind] = {c.name: (parts[0][c.name] if len(parts) == 1 else
                                  np.concatenate([p[c.name] for p in parts]) if parts else np.zeros(0, np.int64))
                         for c in cols}
        return out

    def counters(self, state: ArrayState) -> dict[str, int | float]:
        """Every running mechanism's counters (its ``kernel.counters``), in registry order."""
        c: dict[str, int | float] = {}
        for m in self._running():
            c.update(m.module("kernel").counters(self.scenario, self.kernel_params, state))
        return c

    def rg_counters(self, state: ArrayState) -> list[dict[str, int | float]]:
        """Per RAID group: flush ops/pages, back-end write I/Os, drive busy time, current
        pre-cleaning age (MCx) and dirty pages."""
        out = []
        table = self.kernel_params.backend.groups
        groups = state.dram_cache.groups
        for gi, rg in enumerate(self.scenario.raid_groups):
            d0, w = int(table[gi]["drive0"]), int(table[gi]["width"])
            g = groups[gi]
            out.append({
                "rg": rg.name,
                "flush_ops": int(g["flush_ops"]),
                "flush_pages": int(g["flush_pages"]),
                "backend_write_ios": int(g["backend_ios"]),
                "drive_busy_ns": int(state.backend.queues["busy_ns"][d0:d0 + w].sum()),
                "dirty_pages": int(g["dirty_pages"]),
                "pre_cleaning_age_ms": float(g["age"]) / 1e6,
            })
        return out
