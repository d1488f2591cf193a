"""The request tally an array kernel keeps in its own loop (issue 29: the per-interval aggregation
fused into compiled code, as a cache replay's hit tally is).

Per (interval, volume, RAID group): ``groupby.REQUEST_SUMS`` [+ ``SSD_SUMS``] and
``REQUEST_MAXES`` [+ the SSD dirty maximum], and per request its row and latency bucket (for the
latency histogram), summed from the values the kernel has in registers as each request completes,
instead of a second pass reading its outcome columns back. :func:`request_tables` drives the same
step over columns (the tests compare it with a Polars group-by).

The tables live in a :class:`Tally` of plain arrays that the kernel is handed; it stops before a
request when a new row could fill the hash table past half (:func:`room`), and
:class:`RequestTally` (the Python side) then grows the table, or, with the automatic interval,
coarsens it when the run so far needs a wider one (``replay.intervals.auto_interval_ns``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replay.groupby import REQUEST_MAXES, REQUEST_SUMS, SSD_SUMS, find_row, grown, rehash
from replay.intervals import auto_interval_ns
from replay.jit import njit, step
from replay.layout import record
from schemas.trace import OP_READ, OP_WRITE

#: the tally's scalars: the interval its keys count in, rows used, hash bits, the interval and
#: volume of ``near``, the lowest RAID group id (-1: a request without one), on (0: the kernel
#: does not tally)
META = record([("interval_ns", np.int64), ("rows", np.int64), ("bits", np.int64), ("last_w", np.int64),
               ("last_v", np.int64), ("rg_lo", np.int64), ("on", np.int64)])
#: latency histogram buckets: bucket b holds [LAT_BASE^b, LAT_BASE^(b+1)) ns
LAT_BASE = 1.01
LOG_BASE = math.log(LAT_BASE)


class Tally(NamedTuple):
    meta: np.ndarray  # one META record
    slots: np.ndarray  # int64[2^bits]: hash slot -> row, -1 empty
    keys: np.ndarray  # int64[rows, 3]: interval index, volume, RAID group
    sums: np.ndarray  # int64[rows, REQUEST_SUMS (+ SSD_SUMS)]
    maxes: np.ndarray  # int64[rows, REQUEST_MAXES (+ 1)]
    near: np.ndarray  # int64[RAID groups + 1]: group -> row while the interval and volume stay
    group: np.ndarray  # int32[requests]: each request's row
    bucket: np.ndarray  # int32[requests]: each request's latency bucket


@step
def room(t):
    """Whether a request may add a row (or the tally is off)."""
    m = t.meta[0]
    return m.on == 0 or 2 * (m.rows + 1) <= t.slots.shape[0]


@step
def add(t, i, arr, done, op, size, vol, rg, rp, rh, wp, wh, stall, thr, bios, bbusy, dirty, rg_dirty, srh, srm, sth,
        stm, sdirty, ssd):
    """Request i into its row. The kernel checked :func:`room`. ``ssd``: the SSD cache's columns
    are tallied (the table has them)."""
    m = t.meta[0]
    if m.on == 0:
        return
    lat = done - arr
    w = arr // m.interval_ns
    v = np.int64(vol)
    near = t.near
    if w != m.last_w or v != m.last_v:
        for k in range(near.shape[0]):
            near[k] = -1
        m.last_w = w
        m.last_v = v
    u = np.uint64(rg - m.rg_lo)
    q = near[u]
    if q < 0:
        keys = t.keys
        q = find_row(t.slots, keys, w, v, rg, 0, m.bits)
        if q < 0:
            t.slots[-1 - q] = m.rows
            q = m.rows
            keys[q, 0] = w
            keys[q, 1] = v
            keys[q, 2] = rg
            m.rows = q + 1
        near[u] = q
    t.bucket[i] = np.int32(math.floor(math.log(np.float64(max(lat, 1))) / LOG_BASE))
    t.group[i] = np.int32(q)
    uq = np.uint64(q)
    rs = t.sums
    rm = t.maxes
    rs[uq, 0] += 1
    rs[uq, 1] += op == OP_READ
    rs[uq, 2] += op == OP_WRITE
    rs[uq, 3] += rp
    rs[uq, 4] += rh
    rs[uq, 5] += wp
    rs[uq, 6] += wh
    rs[uq, 7] += size
    rs[uq, 8] += lat
    rs[uq, 9] += stall
    rs[uq, 10] += stall > 0
    rs[uq, 11] += thr
    rs[uq, 12] += thr > 0
    rs[uq, 13] += bios
    rs[uq, 14] += bbusy
    rs[uq, 15] += dirty
    rs[uq, 16] += rg_dirty
    rm[uq, 0] = max(rm[uq, 0], lat)
    rm[uq, 1] = max(rm[uq, 1], dirty)
    rm[uq, 2] = max(rm[uq, 2], rg_dirty)
    if ssd:
        rs[uq, 17] += srh
        rs[uq, 18] += srm
        rs[uq, 19] += sth
        rs[uq, 20] += stm
        rm[uq, 3] = max(rm[uq, 3], sdirty)


@njit
def _coarsen(keys, sums, maxes, rows, factor, group, n_done, bits):
    """The rows re-keyed at ``factor`` times the interval (rows of one new key merged: sums added,
    maxima kept) and ``group[:n_done]`` re-pointed; returns the new (slots, keys, sums, maxes, rows)."""
    nk = np.empty_like(keys)
    ns = np.zeros_like(sums)
    nm = np.full_like(maxes, np.iinfo(np.int64).min)
    slots = np.full(np.int64(1) << bits, -1, dtype=np.int64)
    remap = np.empty(rows, dtype=np.int32)
    n = 0
    for r in range(rows):
        w = keys[r, 0] // factor
        q = find_row(slots, nk, w, keys[r, 1], keys[r, 2], 0, bits)
        if q < 0:
            slots[-1 - q] = n
            nk[n, 0] = w
            nk[n, 1] = keys[r, 1]
            nk[n, 2] = keys[r, 2]
            q = n
            n += 1
        remap[r] = q
        for c in range(sums.shape[1]):
            ns[q, c] += sums[r, c]
        for c in range(maxes.shape[1]):
            nm[q, c] = max(nm[q, c], maxes[r, c])
    for i in range(n_done):
        group[i] = remap[group[i]]
    return slots, nk, ns, nm, n


class RequestTally:
    """The Python side of a replay's :class:`Tally`: one per replay, started anew for each segment
    (:meth:`start`), made room in when the kernel stops (:meth:`make_room`), read after it
    (:meth:`tables`). ``interval_ns``: the interval the aggregation counts in when the segment
    starts; ``auto``: it may grow (``replay.intervals.auto_interval_ns``); ``ssd``: tally the SSD
    cache's columns; ``rg_lo``, ``rg_hi``: the RAID groups' id range (a request without one: -1)."""

    BITS = 8

    def __init__(self, ssd: bool, rg_lo: int, rg_hi: int):
        self.ssd = ssd
        self.n_sums = len(REQUEST_SUMS) + (len(SSD_SUMS) if ssd else 0)
        self.n_maxes = len(REQUEST_MAXES) + (1 if ssd else 0)
        self.rg_lo, self.rg_hi = rg_lo, rg_hi
        self.auto = False
        self.t = off()

    @classmethod
    def for_model(cls, model, state) -> RequestTally | None:
        """The tally of an ``ArrayModel`` replay, or None when its RAID groups are too many for the
        per-group map (then ``pipelines.replay`` groups the outcome columns with Polars)."""
        n_rg = max(state.dram_cache.groups.shape[0], int(model.kernel_params.backend.pool_rgs.max()) + 1)
        if n_rg > 1 << 16:
            return None
        return cls(bool(model.kernel_params.ssd_cache.slots), -1, n_rg - 1)

    def start(self, n_requests: int, interval_ns: int, auto: bool) -> None:
        bits = self.BITS
        rows = 1 << (bits - 1)
        meta = np.zeros(1, META)
        meta[0] = (interval_ns, 0, bits, -1, -1, self.rg_lo, 1)
        g = self.t.group if self.t.group.shape[0] >= n_requests else np.empty(n_requests, dtype=np.int32)
        b = self.t.bucket if self.t.bucket.shape[0] >= n_requests else np.empty(n_requests, dtype=np.int32)
        self.t = Tally(meta, np.full(1 << bits, -1, dtype=np.int64), np.empty((rows, 3), dtype=np.int64),
                       np.zeros((rows, self.n_sums), dtype=np.int64),
                       np.full((rows, self.n_maxes), np.iinfo(np.int64).min, dtype=np.int64),
                       np.full(self.rg_hi - self.rg_lo + 1, -1, dtype=np.int64), g, b)
        self.auto = auto

    def make_room(self, n_done: int) -> None:
        """The kernel stopped before request ``n_done`` for want of room: coarsen the interval if
        the automatic one has outgrown it, else double the table."""
        t = self.t
        m = t.meta[0]
        rows = int(m["rows"])
        n = int(m["interval_ns"])
        if self.auto:
            # the first instant of the latest interval: at most the run's span, so the interval
            # chosen is at most the one the aggregation chooses after the segment (it divides it)
            wider = auto_interval_ns(int(t.keys[:rows, 0].max()) * n, n)
            if wider != n:
                slots, keys, sums, maxes, rows = _coarsen(t.keys, t.sums, t.maxes, rows, wider // n, t.group, n_done,
                                                          int(m["bits"]))
                t.meta[0]["interval_ns"] = wider
                self._set(t, slots, keys, sums, maxes, rows)
                return
        bits = int(m["bits"]) + 1
        t.meta[0]["bits"] = bits
        keys = grown(t.keys, 1 << (bits - 1), 0)
        self._set(t, rehash(keys, rows, bits), keys, grown(t.sums, 1 << (bits - 1), 0),
                  grown(t.maxes, 1 << (bits - 1), np.iinfo(np.int64).min), rows)

    def _set(self, t: Tally, slots, keys, sums, maxes, rows: int) -> None:
        t.meta[0]["rows"] = rows
        t.meta[0]["last_w"] = -1  # ``near`` points at rows of the old table
        self.t = t._replace(slots=slots, keys=keys, sums=sums, maxes=maxes)

    def full(self) -> bool:
        m = self.t.meta[0]
        return bool(m["on"]) and 2 * (int(m["rows"]) + 1) > self.t.slots.shape[0]

    def tables(self, n_requests: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(the interval the keys count in, keys [g, 3], sums, maxima, row and bucket per request)."""
        t = self.t
        m = t.meta[0]
        rows = int(m["rows"])
        return (int(m["interval_ns"]), t.keys[:rows], t.sums[:rows], t.maxes[:rows], t.group[:n_requests],
                t.bucket[:n_requests])


def off() -> Tally:
    """A tally the kernel skips (``on`` 0): a replay whose caller aggregates in another way."""
    z = np.zeros((0, 1), dtype=np.int64)
    return Tally(np.zeros(1, META), np.zeros(1, dtype=np.int64), z, z, z, np.zeros(1, dtype=np.int64),
                 np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))


@njit
def _tally_columns(t, r0, arr, done, op, size, vol, rg, cols, ssd):
    """:func:`add` for requests ``r0..`` of columns (``REQUEST_COLUMNS`` order) until the table is
    full; returns the next request."""
    z = np.int64(0)
    p = cols[0].shape[0] > 0  # the page, stall, back-end and dirty columns are given
    c = cols
    for r in range(r0, arr.shape[0]):
        if not room(t):
            return r
        add(t, r, arr[r], done[r], op[r], size[r], vol[r], rg[r], c[0][r] if p else z, c[1][r] if p else z,
            c[2][r] if p else z, c[3][r] if p else z, c[4][r] if p else z, c[5][r], c[6][r] if p else z,
            c[7][r] if p else z, c[8][r] if p else z, c[9][r] if p else z, c[10][r] if ssd else z,
            c[11][r] if ssd else z, c[12][r] if ssd else z, c[13][r] if ssd else z, c[14][r] if ssd else z, ssd)
    return arr.shape[0]


#: the outcome columns :func:`request_tables` reads, in the order of its ``cols`` tuple
REQUEST_COLUMNS = ("read_pages", "read_hit_pages", "write_pages", "write_hit_pages", "stall_ns", "throttle_ns",
                   "backend_ios", "backend_busy_ns", "dirty_pages", "rg_dirty_pages", "ssd_read_hits",
                   "ssd_read_misses", "ssd_through_hits", "ssd_through_misses", "ssd_dirty_slots")


def request_tables(arr, done, op, size, vol, rg, rg_lo: int, rg_hi: int, cols: tuple, ssd: bool, interval_ns: int):
    """The tally of requests given as columns (``cols``: ``REQUEST_COLUMNS``; the first five and
    seventh to tenth may be empty: zero, as on an array without a cache): (keys [g, 3], sums,
    maxima, row and latency bucket per request). What the kernel sums in its loop, for tests."""
    counter = RequestTally(ssd, rg_lo, rg_hi)
    n = arr.shape[0]
    counter.start(n, interval_ns, False)
    r = 0
    while True:
        r = _tally_columns(counter.t, r, arr, done, op, size, vol, rg, cols, ssd)
        if r >= n:
            break
        counter.make_room(r)
    _, keys, sums, maxes, group, bucket = counter.tables(n)
    return keys, sums, maxes, group, bucket
