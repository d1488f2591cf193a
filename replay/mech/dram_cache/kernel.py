"""DRAM write cache of the storage processor: FLARE (VNX1/CLARiiON) and MCx (VNX2) behaviour.

Structure (both modes). The cache holds *units* of ``flush_unit_bytes`` (64 KB: FLARE's flush
unit, MCx's logical block) made of ``page_bytes`` pages (8 KB); a unit carries a valid-page and
a dirty-page bit mask, so a 64 KB unit holding one 8 KB page costs one page of capacity.
Capacity is counted in pages. A unit with dirty pages sits in its RAID group's dirty FIFO
(ordered by the time it became dirty); a unit with only clean pages sits in an LRU list and is
evicted whole. A write to a page that is already dirty is *coalesced* (a write hit: no new
dirty page, nothing more to flush). A flush writes a unit's dirty pages, one back-end write per
contiguous run, and the unit becomes clean ("clean at issue": the pages count as clean from
the moment the flush is issued; its write completes at most ``flush_queue_depth`` operations
later). Reads hit on any valid page, clean or dirty.

FLARE (``mode = "flare"``; seed 002, docs/models/sources.md#dram-write-cache-flare):
* two partitions: a read cache (``read_cache_bytes``, filled by read misses) and a write cache
  (the rest); a write to a unit held in the read cache drops that copy and the unit starts
  over in the write cache; flushed pages stay readable in the write cache and are reused first;
* **idle flushing**: a LUN with no host I/O for ``idle_after_ms`` has its dirty units written
  oldest first, at most ``idle_flush_outstanding`` writes in flight array-wide;
* **watermark flushing**: when dirty pages reach the high watermark (80 % of the write cache)
  every RAID group flushes oldest first with ``flush_queue_depth`` writes per drive in flight,
  until dirty pages are back to the low watermark (60 %);
* **forced flushing**: a write that finds the write cache 100 % dirty suspends ALL host I/O on the
  array, reads included, whatever LUN or RAID group it targets, until flushing brings dirty
  pages below the low watermark (``forced_flush_until = "next_flush"``: only until the next flush
  write completes, milliseconds, as EMC's best practices describe it); the stall is counted
  (forced flushes, stalled ms).

MCx (``mode = "mcx"``): one pool for reads and writes; flushed pages stay cached clean (at the
most-recent end of the LRU). Each RAID group g keeps a **pre-cleaning age** A_g, adapted every
``adapt_interval_ms`` from four signals (seed 002):

* incoming rate I_g: new dirty pages per second, i.e. host page writes *after* coalescing (so
  the coalescing signal is inside it: writes that coalesce add nothing), and the host page write
  rate W_g (coalescing effectiveness 1 - I_g/W_g is reported); exponential averages with time
  constant ``rate_window_ms``;
* flush rate F_g: pages flushed per second (same average);
* free pages P: pool pages not dirty.

Control law: with n active groups (incoming writes or dirty pages) and coalescing effectiveness
``c = 1 - I_g / W_g``, group g may hold ``S = (dirty_target_pct + (dirty_max_pct -
dirty_target_pct) x c) x pool / n`` dirty pages: holding dirty pages pays only when writes come
back to them (a hot set that fits stays dirty and costs no flushing; random writes over a large
volume get the small share); by Little's law the age at which its incoming pages would fill S is
``A* = S / I_g``; a group already holding D_g > S dirty pages aims at ``A_g x S / D_g`` instead
(flush sooner in proportion), a group with overdue pages never lengthens its age, and when free
pages fall below ``min_free_pct`` of the pool A* shrinks in proportion. A_g moves a fraction
``age_smoothing`` of the way to A* per adaptation (geometrically), within [``min_age_ms``,
``max_age_ms``] (published: 10 ms..120 s, starting at 2 s). A dirty unit younger than A_g stays;
at A_g it is flushed. A group is **throttled** only when three things hold at an adaptation tick
(seed 002: pages older than the pre-cleaning age "and the RAID group is already at its max flush
rate"; MCx buffers "short bursts" and "levels off" leaving "ample room in the cache"):

* it has pages past A_g;
* it flushes at its maximum rate: its flush window (``flush_queue_depth`` writes per drive in flight)
  was full at least ``throttle_saturation_pct`` of the last tick; the pages/s flushed in such ticks
  are its maximum flush rate F_max: a higher rate replaces it at once (a maximum cannot be less
  than a rate just reached: a sequential stream's full stripes drain many times faster than the
  random writes before it), a lower one pulls it down over ``rate_window_ms``;
* its dirty pages would take longer than ``throttle_drain_ms`` (2 s) to drain at F_max, and they fill
  its room: ``throttle_room_pct`` of the pool over the active groups (or its dirty share S, if
  coalescing writes make S larger). A burst that fits the room is buffered, not throttled.

Throttled, new dirty pages of that group only are admitted at ``r x F_max`` pages/s (a token bucket;
the host write ack waits), ``r = 1`` at the room and falling to ``throttle_ratio_min`` (0.5x) at
``(1 + throttle_overshoot_pct)`` times it: the incoming writes are held to what the group absorbs
("throttling continues until the incoming write workload matches the capability of the
underlying RAID group", seed 002), and the group's dirty pages level off at its room. Other RAID
groups keep their cache room. Every throttled tick leaves its trigger (how far the oldest page was
past A_g, how long the flush window was full, the drain time, the admitted rate) in a throttle
record (``replay.events``), so the per-interval output explains every throttle. MCx flushes
in address order (``flush_order = "address"``): the aged units of a group are swept in LBA
order, which turns random writes into short seeks (seed 002: coalescing "to turn random I/O into
sequential I/O"); the service time uses the number of due units per drive as the sweep length
(``replay.mech.backend.kernel``). If the pool is ever 100 % dirty a write waits for the next flush to finish
(counted as throttled time and a cache-full wait), never stalling other groups.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replay.events import INF, append
from replay.ids import slot
from replay.jit import kernel, step
from replay.layout import aligned_records, record
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.mech.dram_cache.outputs import COUNTERS
from replay.mech.ssd_cache import kernel as ssd
from replay.outputs import record_counters
from replay.pages import PAGE_BITS
from replay.prefetch import prefetch

I1, I2, I4, I8, U8, F8 = np.int8, np.int16, np.int32, np.int64, np.uint64, np.float64

# ---- state ---------------------------------------------------------------------------------
#: A cache unit (one row of ``DramState.units``; a structured array: one unit's fields share a
#: cache line, 2.4x faster than one array per field on random units, measured). 64 bytes in
#: arrays aligned to 64 (``replay.layout``): one line per unit, so a single prefetch loads
#: all of it (at 88 bytes every unit spanned two lines and the second one was a demand miss).
UNIT = record([
    ("lp", I4), ("ln", I4),  # clean LRU links
    ("fp", I4), ("fn", I4),  # RAID-group dirty FIFO links
    ("vol", I4),
    ("rg", I2), ("data", I2), ("p1", I2), ("p2", I2),  # placement (replay.mech.backend.kernel): group, drives ...
    ("sunits", I2),  # ... units in its stripe
    ("part", I1),  # -1 not cached, 0 read partition (FLARE), 1 write cache / MCx pool
    ("flags", I1),
    ("since", I8),  # time the unit became dirty
    ("sfirst", I8),  # first unit number of its stripe (-1: no full-stripe writes)
    ("valid", U8), ("dirty", U8),  # page bit masks
])
assert UNIT.itemsize == 64
#: Its volume dirty FIFO links (``DramState.vlinks``, one per unit; FLARE idle flushing only,
#: kept out of UNIT so that a unit fits one cache line).
VLINKS = record([("vp", I4), ("vn", I4)])
#: Placement fields are int16: RAID groups, drives and a stripe's units must stay below this.
PLACE_MAX = np.iinfo(I2).max
F_CLEAN = 1  # in a clean LRU list
F_FIFO = 2  # in its RAID group's dirty FIFO
F_DUE = 4  # counted as due (MCx: older than the pre-cleaning age)
F_PLACED = 8  # placement computed
F_MOVED = 16  # its FAST VP slice moved while it was dirty: placed anew once clean

#: The cache's view of a RAID group (``DramState.groups``): dirty FIFO, flusher, MCx control.
GROUP = record([(n, I8) for n in (
    "dirty_pages", "dirty_units",
    "fifo_head", "fifo_tail",
    "front",  # last unit of the due prefix of the FIFO (-1: none)
    "due",  # due units (MCx)
    "win_n",  # flush writes in flight (heap ``DramState.win[r]``)
    "clock",  # the flusher's clock
    "admit",  # throttle token bucket: next admission time
    "new_dirty", "page_writes", "flushed_pages",  # since the last adaptation
    "sat_ns",  # time the flush window was full, not yet counted in an adaptation tick
    "throttled",
    "flush_ops", "flush_pages", "backend_ios",
    "seq_vol", "seq_next",  # the stripe after the last full stripe written (volume, first unit)
    "thr_n", "thr_last",  # throttled ticks since the last throttle record, the latest of them
    "thr_excess_ns", "thr_sat_ns", "thr_drain_ns",  # ... their weakest trigger (replay.events: throttle row)
)] + [(n, F8) for n in (
    "rate_in", "rate_writes", "rate_flush",  # I_g, W_g, F_g (pages/s, averaged)
    "rate_max",  # pages/s flushed while the flush window was full (the group's maximum flush rate)
    "sat",  # share of the last adaptation interval the flush window was full
    "age",  # pre-cleaning age (ns)
    "rate",  # admitted pages/s when throttled
    "thr_rate",  # lowest admitted rate since the last throttle record
)])

#: A host volume (``DramState.vols``): placement and idle flushing (FLARE).
VOLUME = record([(n, I8) for n in (
    "pool", "base",  # pool, first RAID group of its slices
    "last",  # last host I/O
    "fifo_head", "fifo_tail", "dirty_units",  # its dirty units, oldest first
    "lp", "ln", "in_lru",  # LRU of volumes with dirty units (least recently active at the tail)
)])

#: A partition (``DramState.parts``: 0 FLARE read cache, 1 write cache / MCx pool).
PART = record([("used", I8), ("cap", I8), ("head", I8), ("tail", I8)])  # clean LRU: head most recent

#: Cache-wide state and counters (one record, ``DramState.c``).
CACHE = record([(n, I8) for n in (
    "dirty",  # dirty pages, whole array
    "dirty_units",
    "dirty_max",
    "watermark",  # FLARE watermark flushing active
    "forced",  # FLARE forced flush in progress
    "emergency",  # MCx pool full: flush regardless of age
    "stall_until",  # FLARE forced flush: host I/O suspended until then
    "next_tick",  # MCx adaptation
    "idle_clock", "iwin_n",  # FLARE idle flusher
    "vh", "vt",  # volumes with dirty units, least recently active at the tail
    "read_pages", "read_hits", "write_pages", "write_hits", "trimmed_pages",
    "trimmed_dirty", "through_pages",  # dirty pages a trim discarded; page writes the cache could not hold
    "aside_pages", "aside_dirty", "aside_stripes",  # FLARE write-aside: pages, dirty pages superseded, full stripes
    "forced_n", "forced_stall_ns", "full_waits", "full_stripes",
    "flush_ops", "idle_flush_ops", "flush_pages", "flush_bytes",
)])

MODE_FLARE, MODE_MCX = 0, 1
#: a flush record's ``kind`` (``replay.mech.dram_cache.outputs.FLUSH_KINDS``)
K_FLUSH, K_FULL_STRIPE, K_IDLE_FLUSH = 0, 1, 2


class DramParams(NamedTuple):
    """Immutable parameters (from the scenario's ``[dram]``)."""

    mode: int  # MODE_FLARE / MODE_MCX
    page_bytes: int
    pages_per_unit: int  # pages per unit
    flush_unit_bytes: int  # unit bytes
    flush_queue_depth: int  # flush writes in flight per drive
    flush_order_address: int
    high_watermark_pages: int  # pages (FLARE)
    low_watermark_pages: int
    forced_until_next_flush: int  # 1: a forced flush stalls until one flush write completes, 0: to the low watermark
    idle_after_ns: int  # ns
    idle_flush_outstanding: int
    mirror_latency_ns: int  # ns: write ack after mirroring
    write_aside_bytes: int  # FLARE: a host write larger than this bypasses the cache (0: never)
    adapt_interval_ns: int  # ns: MCx adaptation interval
    page_bits: int
    min_age_ns: float
    max_age_ns: float
    rate_alpha: float
    dirty_target_frac: float
    dirty_max_frac: float
    min_free_frac: float
    age_smoothing: float
    throttle_drain_ns: float
    throttle_overshoot_frac: float
    throttle_ratio_min: float
    adapt_interval_s: float
    throttle_saturation_frac: float  # share of a tick the flush window must be full for "saturated"
    throttle_room_frac: float  # share of the pool the active groups' dirty pages may fill before throttling


class DramState(NamedTuple):
    units: np.ndarray  # UNIT [n_units] (grows; 64-byte aligned)
    vlinks: np.ndarray  # VLINKS [n_units] (grows with units)
    groups: np.ndarray  # GROUP [n_rg]
    win: np.ndarray  # int64 [n_rg, fdepth x max width]: flush completion heaps
    vols: np.ndarray  # VOLUME [n] (grows)
    parts: np.ndarray  # PART [2]
    iwin: np.ndarray  # int64 [idle_out]: idle flush completion heap
    c: np.ndarray  # CACHE [1]


def check_placement_fits(sc) -> None:
    """UNIT (and the SSD cache's CHUNK) keep placement in int16 fields: a scenario beyond that is
    refused, not truncated."""
    groups = be.raid_groups(sc)
    unit = sc.dram.flush_unit_bytes
    drives = sum(g.width for g in groups)
    stripe = max(g.stripe_element_bytes * g.data_drives // unit for g in groups)
    for what, n in (("RAID groups", len(groups)), ("pools", len(sc.pools)), ("drives", drives),
                    ("flush units in one stripe", stripe)):
        if n > PLACE_MAX:
            raise ValueError(f"scenario {sc.name!r}: {n:,} {what}; the array model handles at most {PLACE_MAX:,}")


def params(sc) -> DramParams:
    check_placement_fits(sc)
    page_bits = PAGE_BITS
    d = sc.dram
    m = d.mcx
    wpages = d.write_cache_bytes // d.page_bytes
    return DramParams(
        mode=MODE_MCX if d.mode == "mcx" else MODE_FLARE, page_bytes=int(d.page_bytes),
        pages_per_unit=int(d.pages_per_unit), flush_unit_bytes=int(d.flush_unit_bytes),
        flush_queue_depth=int(d.flush_queue_depth),
        flush_order_address=1 if d.flush_order == "address" else 0,
        high_watermark_pages=int(np.ceil(wpages * d.flare.high_watermark_pct / 100.0)),
        low_watermark_pages=int(wpages * d.flare.low_watermark_pct / 100.0),
        forced_until_next_flush=1 if d.flare.forced_flush_until == "next_flush" else 0,
        idle_after_ns=int(d.flare.idle_after_ms * 1e6),
        idle_flush_outstanding=int(d.flare.idle_flush_outstanding),
        mirror_latency_ns=int(d.mirror_latency_us * 1e3),
        write_aside_bytes=int(d.flare.write_aside_bytes) if d.mode == "flare" else 0,
        adapt_interval_ns=max(1, int(m.adapt_interval_ms * 1e6)), page_bits=int(page_bits),
        min_age_ns=float(m.min_age_ms * 1e6), max_age_ns=float(m.max_age_ms * 1e6),
        rate_alpha=float(rate_alpha(m.adapt_interval_ms, m.rate_window_ms)),
        dirty_target_frac=float(m.dirty_target_pct / 100.0), dirty_max_frac=float(m.dirty_max_pct / 100.0),
        min_free_frac=float(m.min_free_pct / 100.0), age_smoothing=float(m.age_smoothing),
        throttle_drain_ns=float(m.throttle_drain_ms * 1e6),
        throttle_overshoot_frac=float(m.throttle_overshoot_pct / 100.0),
        throttle_ratio_min=float(m.throttle_ratio_min), adapt_interval_s=float(m.adapt_interval_ms / 1e3),
        throttle_saturation_frac=float(m.throttle_saturation_pct / 100.0),
        throttle_room_frac=float(m.throttle_room_pct / 100.0),
    )


def new_state(sc, p) -> DramState:
    """``p``: every mechanism's parameters (``replay.array.Params``): the RAID groups' widths size
    the flush windows."""
    dp = p.dram_cache
    n_rg = len(sc.raid_groups)
    max_width = int(p.backend.groups["width"].max())
    d = sc.dram
    groups = np.zeros(n_rg, GROUP)
    groups["fifo_head"] = groups["fifo_tail"] = groups["front"] = groups["seq_vol"] = -1
    groups["age"] = d.mcx.initial_age_ms * 1e6
    parts = np.zeros(2, PART)
    parts["head"] = parts["tail"] = -1
    if d.mode == "flare":
        parts[0]["cap"] = d.flare.read_cache_bytes // d.page_bytes
        parts[1]["cap"] = d.write_cache_bytes // d.page_bytes
    else:
        parts[1]["cap"] = d.cache_bytes // d.page_bytes
    c = np.zeros(1, CACHE)
    c["vh"] = c["vt"] = -1
    c["next_tick"] = dp.adapt_interval_ns
    return DramState(units=new_units(0), vlinks=new_vlinks(0), groups=groups,
                     win=np.zeros((n_rg, int(d.flush_queue_depth * max_width)), dtype=np.int64),
                     vols=new_vols(0), parts=parts, iwin=np.zeros(max(1, dp.idle_flush_outstanding), dtype=np.int64),
                     c=c)


def counters(sc, p, state) -> dict[str, int | float]:
    """Pages read, hit, written, coalesced, flushed; forced flushes and waits; the partitions' fill."""
    ds = state.dram_cache
    c: dict[str, int | float] = record_counters(ds.c[0], COUNTERS)
    c["write_cache_pages"] = int(ds.parts[1]["cap"])
    c["read_cache_pages"] = int(ds.parts[0]["cap"])
    c["cached_pages"] = int(ds.parts["used"].sum())
    c["read_hit_ratio"] = c["read_hit_pages"] / c["read_pages"] if c["read_pages"] else 0.0
    c["write_hit_ratio"] = c["write_hit_pages"] / c["write_pages"] if c["write_pages"] else 0.0
    return c


def grow_units(ds: DramState, n_units: int) -> DramState:
    """Room for ``n_units`` unit ids (``n_units`` rows exactly: the caller chooses the growth)."""
    if n_units <= ds.units.shape[0]:
        return ds
    units = grow(ds.units, n_units, new_units)
    return ds._replace(units=units, vlinks=grow(ds.vlinks, n_units, new_vlinks))


def _empty_unit() -> np.ndarray:
    x = np.zeros(1, UNIT)
    for f in ("lp", "ln", "fp", "fn", "rg", "data", "p1", "p2", "sunits", "vol", "part", "sfirst"):
        x[f] = -1
    return x


_EMPTY_UNIT = _empty_unit()


def new_units(n: int) -> np.ndarray:
    """``n`` empty units (one contiguous fill of 8-byte words, ~10x faster than field by field)."""
    u = aligned_records(n, UNIT)
    u.view(np.int64).reshape(n, UNIT.itemsize // 8)[:] = _EMPTY_UNIT.view(np.int64)
    return u


def new_vlinks(n: int) -> np.ndarray:
    return np.full(n, -1, dtype=VLINKS)


def new_vols(n: int) -> np.ndarray:
    v = np.zeros(n, VOLUME)
    for f in ("fifo_head", "fifo_tail", "lp", "ln"):
        v[f] = -1
    return v


def grow(a: np.ndarray, rows: int, new) -> np.ndarray:
    """``a`` with at least ``rows`` rows, the new ones from ``new(n)``."""
    out = new(rows)
    out[: a.shape[0]] = a
    return out


@kernel
def popcount(x):
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@kernel
def full_mask(ppu):
    if ppu >= 64:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return (np.uint64(1) << np.uint64(ppu)) - np.uint64(1)


@kernel
def probe(table, key, shift):
    """Dense id of ``key`` in a ``replay.ids.IdMap`` table, -1 if absent."""
    mask = (table.shape[0] >> 1) - 1
    s = slot(key, shift, mask)
    while True:
        tk = table[2 * s]
        if tk == key:
            return table[2 * s + 1]
        if tk == -1:
            return -1
        s = (s + 1) & mask


# ---- linked lists ---------------------------------------------------------------------------
@kernel
def lru_remove(ds, u):
    un = ds.units
    x = un[u]
    pt = ds.parts[x.part]
    p = x.lp
    n = x.ln
    if p >= 0:
        un[p].ln = n
    else:
        pt.head = n
    if n >= 0:
        un[n].lp = p
    else:
        pt.tail = p
    x.lp = -1
    x.ln = -1
    x.flags &= ~F_CLEAN


@kernel
def lru_push(ds, u, at_head):
    """Insert a clean unit into its partition's LRU: at the head (most recent) or the tail."""
    un = ds.units
    x = un[u]
    pt = ds.parts[x.part]
    if at_head:
        old = pt.head
        x.lp = -1
        x.ln = old
        if old >= 0:
            un[old].lp = u
        else:
            pt.tail = u
        pt.head = u
    else:
        old = pt.tail
        x.ln = -1
        x.lp = old
        if old >= 0:
            un[old].ln = u
        else:
            pt.head = u
        pt.tail = u
    x.flags |= F_CLEAN


@kernel
def fifo_append(ds, u, r):
    un = ds.units
    g = ds.groups[r]
    t = g.fifo_tail
    x = un[u]
    x.fn = -1
    x.fp = t
    if t >= 0:
        un[t].fn = u
    else:
        g.fifo_head = u
    g.fifo_tail = u
    x.flags |= F_FIFO


@kernel
def fifo_remove(ds, u, r):
    un = ds.units
    g = ds.groups[r]
    x = un[u]
    p = x.fp
    n = x.fn
    if x.flags & F_DUE:
        g.due -= 1
        if g.front == u:
            g.front = p
    if p >= 0:
        un[p].fn = n
    else:
        g.fifo_head = n
    if n >= 0:
        un[n].fp = p
    else:
        g.fifo_tail = p
    x.fp = -1
    x.fn = -1
    x.flags &= ~(F_FIFO | F_DUE)


@kernel
def vfifo_append(ds, u, v):
    vl = ds.vlinks
    vo = ds.vols[v]
    t = vo.fifo_tail
    x = vl[u]
    x.vn = -1
    x.vp = t
    if t >= 0:
        vl[t].vn = u
    else:
        vo.fifo_head = u
    vo.fifo_tail = u


@kernel
def vfifo_remove(ds, u, v):
    vl = ds.vlinks
    vo = ds.vols[v]
    x = vl[u]
    p = x.vp
    n = x.vn
    if p >= 0:
        vl[p].vn = n
    else:
        vo.fifo_head = n
    if n >= 0:
        vl[n].vp = p
    else:
        vo.fifo_tail = p
    x.vp = -1
    x.vn = -1


@kernel
def vlru_remove(ds, v):
    vols = ds.vols
    c = ds.c[0]
    vo = vols[v]
    p = vo.lp
    n = vo.ln
    if p >= 0:
        vols[p].ln = n
    else:
        c.vh = n
    if n >= 0:
        vols[n].lp = p
    else:
        c.vt = p
    vo.lp = -1
    vo.ln = -1
    vo.in_lru = 0


@kernel
def vlru_push_head(ds, v):
    vols = ds.vols
    c = ds.c[0]
    vo = vols[v]
    old = c.vh
    vo.lp = -1
    vo.ln = old
    if old >= 0:
        vols[old].lp = v
    else:
        c.vt = v
    c.vh = v
    vo.in_lru = 1


@step
def touch_volume(ds, v, t):
    """A host I/O to volume v at t: most recently active (if it has dirty units)."""
    vo = ds.vols[v]
    vo.last = t
    if vo.in_lru and ds.c[0].vh != v:
        vlru_remove(ds, v)
        vlru_push_head(ds, v)


# ---- cache operations ---------------------------------------------------------------------
@kernel
def place(dp, ds, bp, bs, u, v, unit_no, tmp):
    """Compute where unit u (unit number ``unit_no`` of volume v) lives (``replay.mech.backend.kernel``)."""
    vo = ds.vols[v]
    be.place_unit(unit_no, dp.flush_unit_bytes, vo.pool, vo.base, v, bp, bs, tmp)
    x = ds.units[u]
    x.rg = tmp[0].rg
    x.data = tmp[0].data
    x.p1 = tmp[0].p1
    x.p2 = tmp[0].p2
    x.sunits = tmp[0].sunits
    x.sfirst = tmp[0].sfirst
    x.vol = v
    x.flags |= F_PLACED


@step
def ensure_placed(dp, ds, bp, bs, u, v, unit_no, tmp):
    """:func:`place` unit u on its first touch."""
    if not (ds.units[u].flags & F_PLACED):
        place(dp, ds, bp, bs, u, v, unit_no, tmp)


@kernel
def evict_unit(ds, u):
    x = ds.units[u]
    pt = ds.parts[x.part]
    lru_remove(ds, u)
    pt.used -= popcount(x.valid)
    x.valid = np.uint64(0)
    x.part = -1


@kernel
def make_room(ds, part, k):
    """Evict least recently used clean units of ``part`` until ``k`` more pages fit; False if
    the partition has too few clean pages (all dirty, or capacity below k)."""
    pt = ds.parts[part]
    cap = pt.cap
    if pt.used + k <= cap:
        return True
    while pt.used + k > cap:
        t = pt.tail
        if t < 0:
            return False
        evict_unit(ds, t)
    t = pt.tail
    if t >= 0 and ds.units[t].lp >= 0:  # memory: the next eviction unlinks the new tail from it
        prefetch(ds.units, ds.units[t].lp)
    return True


@kernel
def mark_dirty(dp, ds, ev, u, bit, t):
    """Page ``bit`` of unit u (valid, in the write partition) becomes dirty at time t."""
    x = ds.units[u]
    c = ds.c[0]
    r = x.rg
    g = ds.groups[r]
    was = x.dirty
    x.dirty = was | bit
    c.dirty += 1
    if c.dirty > c.dirty_max:
        c.dirty_max = c.dirty
    g.dirty_pages += 1
    g.new_dirty += 1
    if was == 0:
        if x.flags & F_CLEAN:
            lru_remove(ds, u)
        x.since = t
        if g.fifo_head < 0:  # a new head: the group's next flush may come earlier
            ready = t + np.int64(g.age) if dp.mode == MODE_MCX else t
            if ready < ev.next_ev:
                ev.next_ev = ready
        fifo_append(ds, u, r)
        g.dirty_units += 1
        c.dirty_units += 1
        if dp.mode == MODE_FLARE:
            v = x.vol
            vo = ds.vols[v]
            vfifo_append(ds, u, v)
            vo.dirty_units += 1
            if not vo.in_lru:
                vlru_push_head(ds, v)
                if c.vt == v and t < ev.next_ev:  # the only idle candidate
                    ev.next_ev = t


@kernel
def _leave_dirty_lists(dp, ds, u, r):
    c = ds.c[0]
    fifo_remove(ds, u, r)
    ds.groups[r].dirty_units -= 1
    c.dirty_units -= 1
    if dp.mode == MODE_FLARE:
        v = ds.units[u].vol
        vo = ds.vols[v]
        vfifo_remove(ds, u, v)
        vo.dirty_units -= 1
        if vo.dirty_units == 0 and vo.in_lru:
            vlru_remove(ds, v)


@kernel
def clean_unit(dp, ds, u):
    """All dirty pages of u are being written: u leaves the dirty lists and becomes evictable
    (MCx: most recently used end; FLARE: least recently used end, first reused)."""
    x = ds.units[u]
    r = x.rg
    g = ds.groups[r]
    pages = popcount(x.dirty)
    x.dirty = np.uint64(0)
    ds.c[0].dirty -= pages
    g.dirty_pages -= pages
    g.flushed_pages += pages
    _leave_dirty_lists(dp, ds, u, r)
    lru_push(ds, u, dp.mode == MODE_MCX)
    if x.flags & F_MOVED:
        x.flags &= ~(F_PLACED | F_MOVED)
    return pages


@kernel
def forget_placement(dp, ds, utab, shift, v, first, n):
    """FAST VP moved the slice holding units ``first .. first + n - 1`` of volume v: clean units
    are placed anew at their next access; dirty ones once their pages are written (to the old
    group: the relocation copied the slice as it was)."""
    vkey = np.int64(v) << dp.page_bits
    for k in range(n):
        u = probe(utab, vkey | (first + k), shift)
        if u < 0:
            continue
        x = ds.units[u]
        if not (x.flags & F_PLACED):
            continue
        if x.dirty == np.uint64(0):
            x.flags &= ~F_PLACED
        else:
            x.flags |= F_MOVED


@kernel
def drop_pages(dp, ds, u, bits):
    """Trim: forget pages ``bits`` of unit u (dirty ones are discarded, not written)."""
    n, nd = forget_pages(dp, ds, u, bits)
    ds.c[0].trimmed_dirty += nd
    return n


@kernel
def forget_pages(dp, ds, u, bits):
    """Forget pages ``bits`` of unit u, dirty ones without writing them; returns (pages, dirty
    pages) forgotten."""
    x = ds.units[u]
    if x.part < 0:
        return 0, 0
    bits = bits & x.valid
    if bits == 0:
        return 0, 0
    r = x.rg
    dbits = bits & x.dirty
    nd = popcount(dbits)
    part = x.part
    if nd > 0:
        x.dirty = x.dirty & ~dbits
        ds.c[0].dirty -= nd
        ds.groups[r].dirty_pages -= nd
        if x.dirty == 0:
            _leave_dirty_lists(dp, ds, u, r)
            lru_push(ds, u, False)
    n = popcount(bits)
    x.valid = x.valid & ~bits
    ds.parts[part].used -= n
    if x.valid == 0:
        if x.flags & F_CLEAN:
            lru_remove(ds, u)
        x.part = -1
    return n, nd


# ---- MCx control law ----------------------------------------------------------------------
@kernel
def throttle_ratio(u, overshoot, rmin):
    """Allowed incoming:flushed page ratio for a throttled group holding ``u`` times its room:
    1x at its room, ``rmin`` from ``1 + overshoot`` on (log-linear between)."""
    if u <= 1.0:
        return 1.0
    if u < 1.0 + overshoot:
        return rmin ** ((u - 1.0) / overshoot)
    return rmin


@kernel
def update_due(ds, r, now):
    """Extend the due prefix of group r's FIFO to units older than its pre-cleaning age."""
    un = ds.units
    g = ds.groups[r]
    age = np.int64(g.age)
    f = g.front
    nxt = g.fifo_head if f < 0 else np.int64(un[f].fn)
    while nxt >= 0 and un[nxt].since + age <= now:
        un[nxt].flags |= F_DUE
        g.due += 1
        g.front = nxt
        nxt = np.int64(un[nxt].fn)
    if nxt >= 0 and un[nxt].fn >= 0:  # the walk's next step, loaded by the time it is due
        prefetch(un, un[nxt].fn)


@kernel
def mcx_adapt(dp, ds, now, t_limit):
    """One adaptation tick at ``now``: rates, pre-cleaning ages, throttles (see module docstring)."""
    groups = ds.groups
    c = ds.c[0]
    n_rg = groups.shape[0]
    dt = dp.adapt_interval_s
    a = dp.rate_alpha
    tick = dp.adapt_interval_ns
    n_act = 0
    quiet = c.dirty == 0
    for r in range(n_rg):
        g = groups[r]
        g.rate_in += a * (g.new_dirty / dt - g.rate_in)
        g.rate_writes += a * (g.page_writes / dt - g.rate_writes)
        g.rate_flush += a * (g.flushed_pages / dt - g.rate_flush)
        # saturation: the share of this tick the flush window was full (a full period that runs past
        # the tick is carried into the next); the flush rate of saturated ticks is the group's maximum
        sat_ns = g.sat_ns if g.sat_ns < tick else tick
        g.sat_ns -= sat_ns
        g.sat = sat_ns / tick
        if g.sat >= dp.throttle_saturation_frac and g.flushed_pages > 0:
            peak = g.flushed_pages / dt / g.sat
            # up at once, down smoothed: averaged upwards too, a 150 MB/s sequential burst after random
            # writes was throttled for seconds at the old rate with the drives a third busy (CloudPhysics)
            g.rate_max = peak if g.rate_max <= 0.0 or peak > g.rate_max else g.rate_max + a * (peak - g.rate_max)
        g.new_dirty = 0
        g.page_writes = 0
        g.flushed_pages = 0
        if g.rate_in > 1e-3 or g.dirty_pages > 0:
            n_act += 1
        if g.rate_in > 1e-3 or g.rate_writes > 1e-3 or g.rate_flush > 1e-3:
            quiet = False
    cap = ds.parts[1].cap
    free = cap - c.dirty
    min_free = dp.min_free_frac * cap
    amin = dp.min_age_ns
    amax = dp.max_age_ns
    for r in range(n_rg):
        g = groups[r]
        # coalescing effectiveness: share of host page writes that found the page dirty
        coal = 1.0 - g.rate_in / g.rate_writes if g.rate_writes > 1e-3 else 0.0
        if coal < 0.0:
            coal = 0.0
        frac = dp.dirty_target_frac + (dp.dirty_max_frac - dp.dirty_target_frac) * coal
        share = frac * cap / max(n_act, 1)
        age = g.age
        target = share / max(g.rate_in, 1e-3) * 1e9
        dpg = g.dirty_pages
        if dpg > share:  # over its share: flush sooner in proportion
            target = min(target, age * share / dpg)
        h = g.fifo_head
        if h >= 0 and now - ds.units[h].since > age:  # pages already overdue: never lengthen
            target = min(target, age)
        if free < min_free and min_free > 0:
            target *= max(free, 0) / min_free
        target = min(max(target, amin), amax)
        age = age * (target / age) ** dp.age_smoothing
        g.age = min(max(age, amin), amax)
        update_due(ds, r, now)
        # throttle only what seed 002 describes: dirty pages past the pre-cleaning age AND the group
        # already flushing at its maximum rate (window full) AND those pages needing more than
        # ``throttle_drain_ms`` at that rate; new dirty pages are then admitted at ratio x that rate
        throttle = False
        if h >= 0 and g.due > 0 and g.sat >= dp.throttle_saturation_frac and g.rate_max > 0.0:
            drain_ns = dpg / g.rate_max * 1e9
            room = max(dp.throttle_room_frac * cap / max(n_act, 1), share)  # coalescing writes may hold more
            if drain_ns > dp.throttle_drain_ns and dpg >= room:
                oldest = now - ds.units[h].since
                ratio = throttle_ratio(dpg / room, dp.throttle_overshoot_frac, dp.throttle_ratio_min)
                g.rate = ratio * g.rate_max
                throttle = True
                _note_throttle(g, now, oldest - np.int64(g.age), np.int64(g.sat * tick), np.int64(drain_ns))
        if throttle:
            if not g.throttled:
                g.admit = now
            g.throttled = 1
        else:
            g.throttled = 0
    nxt = now + tick
    if quiet and t_limit > nxt:  # nothing to adapt to: jump to the tick before t_limit
        nxt = now + ((t_limit - now) // tick) * tick
        for r in range(n_rg):
            g = groups[r]
            g.rate_in = 0.0
            g.rate_writes = 0.0
            g.rate_flush = 0.0
            g.sat_ns = 0
    c.next_tick = nxt


@kernel
def _note_throttle(g, now, excess, sat_ns, drain_ns):
    """Keep what triggered this throttled tick (the weakest trigger since the last record)."""
    if g.thr_n == 0:
        g.thr_excess_ns = excess
        g.thr_sat_ns = sat_ns
        g.thr_drain_ns = drain_ns
        g.thr_rate = g.rate
    else:
        g.thr_excess_ns = min(g.thr_excess_ns, excess)
        g.thr_sat_ns = min(g.thr_sat_ns, sat_ns)
        g.thr_drain_ns = min(g.thr_drain_ns, drain_ns)
        g.thr_rate = min(g.thr_rate, g.rate)
    g.thr_n += 1
    g.thr_last = now


@kernel
def record_throttles(ds, tlog):
    """One throttle record per RAID group throttled since the last call (``replay.events``)."""
    groups = ds.groups
    rows = tlog.rows
    for r in range(groups.shape[0]):
        g = groups[r]
        if g.thr_n > 0:
            x = rows[append(tlog)]
            x.ts_ns = g.thr_last
            x.rg = r
            x.ticks = g.thr_n
            x.past_age_min_ns = g.thr_excess_ns
            x.window_full_min_ns = g.thr_sat_ns
            x.drain_min_ns = g.thr_drain_ns
            x.admit_min_pages_per_s = np.int64(g.thr_rate + 0.5)
            x.rg_dirty_pages = g.dirty_pages
            g.thr_n = 0


@kernel
def throttle_admit(ds, r, t):
    """Admission time of one new dirty page of group r arriving at t (MCx throttling)."""
    g = ds.groups[r]
    if not g.throttled:
        return t
    adm = g.admit
    if adm < t:
        adm = t
    g.admit = adm + np.int64(1e9 / max(g.rate, 1e-3))
    return adm


def rate_alpha(tick_ms: float, window_ms: float) -> float:
    """Per-tick weight of an exponential average with time constant ``window_ms``."""
    return 1.0 - math.exp(-tick_ms / window_ms)


# ---- flushing (background work) -----------------------------------------------------------
@step
def flush(dp, ds, bp, bs, sp, ss, ev, flog, plog, utab, shift, u, tau, kind):
    """Flush the dirty pages of unit u at time tau (a full stripe if every unit of its stripe is
    fully dirty); returns the completion time of the last back-end write."""
    un = ds.units
    c = ds.c[0]
    x = un[u]
    r = x.rg
    g = ds.groups[r]
    level = bp.groups[r].level
    width = bp.groups[r].width
    ppu = dp.pages_per_unit
    page = dp.page_bytes
    mask = x.dirty
    ssd.prefetch_entry(sp, ss, u)
    _prefetch_successor(sp, ss, un, x.fn if kind == K_FLUSH else ds.vlinks[u].vn)
    batch = 1.0
    if dp.flush_order_address:
        if dp.mode == MODE_MCX and not c.emergency:
            update_due(ds, r, tau)
            due = g.due
        else:
            due = g.dirty_units
        batch = max(1.0, due * be.drives_per_write(level) / width)
    full = full_mask(ppu)
    nsu = x.sunits
    done = tau
    busy = np.int64(0)
    ios = 0
    pages = 0
    rec_kind = kind
    stripe_done = False
    if (level == 5 or level == 6) and nsu > 0 and mask == full:
        first = x.sfirst
        vkey = np.int64(x.vol) << dp.page_bits
        ok = True
        for k in range(nsu):
            w = probe(utab, vkey | (first + k), shift)
            if w < 0 or un[w].dirty != full or un[w].rg != r or ssd.holds(sp, ss, w):
                ok = False
                break
        if ok:
            if x.vol == g.seq_vol and first == g.seq_next:  # a sequential stream: the drives stay in place
                batch = qk.SEQUENTIAL
            g.seq_vol = x.vol
            g.seq_next = first + nsu
            done, busy, ios = be.write_stripe(bp, bs, r, tau, batch)
            for k in range(nsu):
                w = probe(utab, vkey | (first + k), shift)
                pages += clean_unit(dp, ds, w)
            c.full_stripes += 1
            rec_kind = K_FULL_STRIPE
            stripe_done = True
    s_hits = 0
    s_runs = 0
    if not stripe_done:
        nops = 2 if (level == 5 or level == 6) else 1
        b = 0
        while b < ppu:
            if (mask >> np.uint64(b)) & np.uint64(1):
                n = 0
                while b + n < ppu and (mask >> np.uint64(b + n)) & np.uint64(1):
                    n += 1
                dn, s, k_ios, hit = ssd.write(sp, ss, bp, bs, ev, plog, u, r, x.data, x.p1, x.p2, b, tau, nops,
                                              n * page, batch, 0)
                s_hits += hit
                s_runs += 1
                done = max(done, dn)
                busy += s
                ios += k_ios
                b += n
            else:
                b += 1
        pages = clean_unit(dp, ds, u)
    c.flush_ops += 1
    c.flush_pages += pages
    c.flush_bytes += pages * page
    g.flush_ops += 1
    g.flush_pages += pages
    g.backend_ios += ios
    f = flog.rows[append(flog)]
    f.ts_ns = tau
    f.kind = rec_kind
    f.rg = r
    f.volume = x.vol
    f.pages = pages
    f.bytes = pages * page
    f.ios = ios
    f.busy_ns = busy
    f.rg_dirty_pages = g.dirty_pages
    f.age_ns = np.int64(g.age)
    f.ssd_hits = s_hits
    f.ssd_misses = s_runs - s_hits if sp.on else 0
    return done


@kernel
def _prefetch_successor(sp, ss, un, u):
    """Memory: the unit the same flusher writes next (and its SSD cache chunk), loaded while
    other work runs before its turn."""
    if u >= 0:
        prefetch(un, u)
        ssd.prefetch_chunk(sp, ss, u)


@kernel
def _window_add(dp, ds, bp, r, done):
    m = dp.flush_queue_depth * bp.groups[r].width
    g = ds.groups[r]
    n = g.win_n
    if n < m:
        g.win_n = qk.heap_push(ds.win[r], n, done)
    else:
        qk.heap_replace_top(ds.win[r], n, done)


@kernel
def _rg_next(dp, ds, bp, ev, r):
    """Earliest time RAID group r's flusher may issue its next write (INF: nothing to do)."""
    g = ds.groups[r]
    c = ds.c[0]
    if g.dirty_units == 0:
        return INF
    base = g.clock
    if ev.now > base:
        base = ev.now
    if g.win_n >= dp.flush_queue_depth * bp.groups[r].width and ds.win[r, 0] > base:
        base = ds.win[r, 0]
    if dp.mode == MODE_FLARE:
        if c.watermark or c.forced:
            return base
        return INF
    if c.emergency:
        return base
    ready = ds.units[g.fifo_head].since + np.int64(g.age)
    return ready if ready > base else base


@kernel
def _idle_next(dp, ds, ev):
    """FLARE idle flushing: the least recently active LUN with dirty pages, once idle."""
    c = ds.c[0]
    if dp.mode != MODE_FLARE or dp.idle_flush_outstanding == 0:
        return INF
    v = c.vt
    if v < 0:
        return INF
    base = ds.vols[v].last + dp.idle_after_ns
    if c.idle_clock > base:
        base = c.idle_clock
    if ev.now > base:
        base = ev.now
    if c.iwin_n >= dp.idle_flush_outstanding and ds.iwin[0] > base:
        base = ds.iwin[0]
    return base


@kernel
def advance(dp, ds, bp, bs, sp, ss, ev, flog, tlog, plog, utab, shift, t_limit, until):
    """:func:`catch_up`, as a function of its own (the rare forced-flush and full-pool calls)."""
    return catch_up(dp, ds, bp, bs, sp, ss, ev, flog, tlog, plog, utab, shift, t_limit, until)


@step
def catch_up(dp, ds, bp, bs, sp, ss, ev, flog, tlog, plog, utab, shift, t_limit, until):
    """Run background events in time order. until 0: those due by ``t_limit``; 1 (FLARE forced
    flush): flush until dirty pages <= low watermark, return that write's completion; 2 (MCx pool
    full): one flush, return its completion. Inlined where it runs for every request: called, with
    the record logs as arguments, it made the kernel ~15 % slower."""
    c = ds.c[0]
    n_rg = ds.groups.shape[0]
    last_done = ev.now
    while True:
        best = INF
        who = -1
        for r in range(n_rg):
            t = _rg_next(dp, ds, bp, ev, r)
            if t < best:
                best = t
                who = r
        if dp.mode == MODE_FLARE:
            t = _idle_next(dp, ds, ev)
            if t < best:
                best = t
                who = -2
        elif until == 0 and c.next_tick < best:
            best = c.next_tick
            who = -3
        if best >= INF or (until == 0 and best > t_limit):
            ev.next_ev = best if until == 0 else ev.now
            if dp.mode == MODE_MCX:
                record_throttles(ds, tlog)
            return last_done
        ev.now = best
        if who == -3:
            mcx_adapt(dp, ds, best, t_limit)
            continue
        if who == -2:
            u = ds.vols[c.vt].fifo_head
            done = flush(dp, ds, bp, bs, sp, ss, ev, flog, plog, utab, shift, u, best, K_IDLE_FLUSH)
            n = c.iwin_n
            if n < dp.idle_flush_outstanding:
                c.iwin_n = qk.heap_push(ds.iwin, n, done)
            else:
                qk.heap_replace_top(ds.iwin, n, done)
            c.idle_clock = best
            c.idle_flush_ops += 1
        else:
            u = ds.groups[who].fifo_head
            done = flush(dp, ds, bp, bs, sp, ss, ev, flog, plog, utab, shift, u, best, K_FLUSH)
            _window_add(dp, ds, bp, who, done)
            g = ds.groups[who]
            g.clock = best
            if g.win_n >= dp.flush_queue_depth * bp.groups[who].width and ds.win[who, 0] > best:
                g.sat_ns += ds.win[who, 0] - best  # full until its earliest write completes
        last_done = done
        if dp.mode == MODE_FLARE and c.dirty <= dp.low_watermark_pages:
            c.watermark = 0
            if until == 1:
                ev.next_ev = ev.now
                return done
        if until == 2:
            ev.next_ev = ev.now
            return done


@kernel
def start_flushers(ds, ev, t):
    groups = ds.groups
    for r in range(groups.shape[0]):
        if groups[r].clock < t:
            groups[r].clock = t
    if t < ev.next_ev:
        ev.next_ev = t


@step
def suspended(ds, t):
    """FLARE forced flush: host I/O arriving at t resumes at the returned time."""
    su = ds.c[0].stall_until
    return su if t < su else t


# ---- host requests --------------------------------------------------------------------------
@step
def prefetch_units(ds, punit, p0, p1):
    """Memory: start loading the cache units of pages p0..p1 (a later request's)."""
    for j in range(p0, p1):
        prefetch(ds.units, punit[j])


@step
def prefetch_neighbours(ds, punit, p0, p1):
    """Memory: the clean-LRU neighbours of the units of pages p0..p1 (a hit or a dirtying
    write unlinks the unit from between them); the units themselves should be loaded by now."""
    un = ds.units
    for j in range(p0, p1):
        x = un[punit[j]]
        if x.lp >= 0:
            prefetch(un, x.lp)
        if x.ln >= 0:
            prefetch(un, x.ln)


@step
def miss_read(np_, ns, sp, ss, bp, bs, ev, plog, y, u, b0, b1, page, t):
    """The back-end read of pages b0..b1 of unit u (record y) missed by the DRAM cache: one I/O,
    or with redirect-on-write snapshots (``replay.mech.snapshots.kernel``) one per run of pages
    whose blocks were moved by the same write (:func:`split_miss_read`). Returns (done, HDD busy,
    HDD I/Os)."""
    if not np_.row:
        dn, s, hdd = ssd.read(sp, ss, bp, bs, ev, plog, u, y.rg, y.data, y.p1, b0, (b1 - b0 + 1) * page, t)
        return dn, s * hdd, hdd
    return split_miss_read(np_, ns, sp, ss, bp, bs, ev, plog, y, u, b0, b1, page, t)


@kernel  # not inlined: its loop in every read made the cached arrays' kernel ~20 % slower (vnx2-mcx)
def split_miss_read(np_, ns, sp, ss, bp, bs, ev, plog, y, u, b0, b1, page, t):
    """:func:`miss_read` with redirect-on-write snapshots: one I/O per run of pages whose blocks were
    moved by the same write (``ns.tag``), each extra one counted in ``read_splits``."""
    done = t
    busy = np.int64(0)
    ios = 0
    pps = np_.pages_per_slot
    last = np_.slots - 1
    b = b0
    while b <= b1:
        tg = ns.tag[u, min(b // pps, last)]
        e = b + 1
        while e <= b1 and ns.tag[u, min(e // pps, last)] == tg:
            e += 1
        dn, s, hdd = ssd.read(sp, ss, bp, bs, ev, plog, u, y.rg, y.data, y.p1, b, (e - b) * page, t)
        done = max(done, dn)
        busy += s * hdd
        ios += hdd
        if b > b0:
            ns.c[0].read_splits += 1
        b = e
    return done, busy, ios


@step
def read(dp, ds, bp, bs, sp, ss, ev, plog, np_, ns, v, p0, p1, punit, pbit, puno, tc, tmp):
    """A host read at tc of pages p0..p1: hits, misses from the back end (contiguous pages of one
    unit in one I/O; ``np_`` / ``ns``: the snapshots', whose redirects split it, :func:`miss_read`),
    fills. Returns (done, pages, hits, backend I/Os, backend busy, RAID group)."""
    un = ds.units
    c = ds.c[0]
    page = dp.page_bytes
    done = tc
    rp = 0
    rh = 0
    bios = 0
    bbusy = np.int64(0)
    rg_req = -1
    gu = -1
    gfirst = 0
    glast = 0
    for j in range(p0, p1):
        u = punit[j]
        x = un[u]
        if not (x.flags & F_PLACED):
            place(dp, ds, bp, bs, u, v, puno[j], tmp)
        if rg_req < 0:
            rg_req = x.rg
        b = pbit[j]
        bit = np.uint64(1) << np.uint64(b)
        rp += 1
        if x.valid & bit:
            rh += 1
            if x.flags & F_CLEAN and ds.parts[x.part].head != u:
                lru_remove(ds, u)
                lru_push(ds, u, True)
            continue
        # miss: extend the current back-end read or start a new one
        if gu == u and b == glast + 1:
            glast = b
        else:
            if gu >= 0:
                dn, s, hdd = miss_read(np_, ns, sp, ss, bp, bs, ev, plog, un[gu], gu, gfirst, glast, page, tc)
                done = max(done, dn)
                bios += hdd
                bbusy += s
            gu = u
            gfirst = b
            glast = b
        # fill
        part = x.part
        if part < 0:
            part = 1 if dp.mode == MODE_MCX else 0
            x.part = part
        if x.flags & F_CLEAN:
            lru_remove(ds, u)
        if make_room(ds, part, 1):
            x.valid |= bit
            ds.parts[part].used += 1
        if x.dirty == 0:
            if x.valid != 0:
                lru_push(ds, u, True)
            else:
                x.part = -1
    if gu >= 0:
        dn, s, hdd = miss_read(np_, ns, sp, ss, bp, bs, ev, plog, un[gu], gu, gfirst, glast, page, tc)
        done = max(done, dn)
        bios += hdd
        bbusy += s
    c.read_pages += rp
    c.read_hits += rh
    return done, rp, rh, bios, bbusy, rg_req


@step
def write(dp, ds, bp, bs, sp, ss, ev, logs, utab, shift, v, p0, p1, punit, pbit, puno, tc, tmp):
    """A host write at tc of pages p0..p1: coalesce, admit new dirty pages (room, FLARE forced
    flush, MCx throttling and pool-full waits, write-through if the cache cannot hold a page), ack
    after mirroring. Returns (done, pages, hits, stall, throttle, backend busy, RAID group)."""
    un = ds.units
    c = ds.c[0]
    mode = dp.mode
    page = dp.page_bytes
    t_w = tc
    through = False
    wp = 0
    wh = 0
    stall = np.int64(0)
    thr = np.int64(0)
    bbusy = np.int64(0)
    rg_req = -1
    for j in range(p0, p1):
        u = punit[j]
        x = un[u]
        if not (x.flags & F_PLACED):
            place(dp, ds, bp, bs, u, v, puno[j], tmp)
        r = x.rg
        if rg_req < 0:
            rg_req = r
        bit = np.uint64(1) << np.uint64(pbit[j])
        wp += 1
        ds.groups[r].page_writes += 1
        if x.part == 0:  # FLARE: a write leaves the read cache
            evict_unit(ds, u)
        if x.dirty & bit:
            wh += 1  # coalesced into the dirty page
            continue
        while True:
            if x.flags & F_CLEAN:
                lru_remove(ds, u)
            if x.part < 0:
                x.part = 1
            if x.valid & bit or make_room(ds, 1, 1):
                break
            flushes = c.flush_ops
            if mode == MODE_FLARE:  # write cache 100 % dirty: forced flush, array stalls
                t0 = ev.now
                c.forced = 1
                start_flushers(ds, ev, t0)
                end = advance(dp, ds, bp, bs, sp, ss, ev, logs.flush, logs.throttle, logs.ssd_promotion, utab, shift, INF,
                              2 if dp.forced_until_next_flush else 1)
                c.forced = 0
                if end < t0:
                    end = t0
                start = t0 if t0 > c.stall_until else c.stall_until  # stalls that overlap count once
                if end > start:
                    c.forced_stall_ns += end - start
                if end > c.stall_until:
                    c.stall_until = end
                c.forced_n += 1
                f = logs.forced_flush.rows[append(logs.forced_flush)]
                f.ts_ns = t0
                f.volume = v
                f.dirty_pages = c.dirty
                f.stall_ns = end - t0
                if end > t_w:
                    stall += end - t_w
                    t_w = end
            else:  # MCx pool all dirty: wait for the next flush to complete
                c.emergency = 1
                end = advance(dp, ds, bp, bs, sp, ss, ev, logs.flush, logs.throttle, logs.ssd_promotion, utab, shift, INF, 2)
                c.emergency = 0
                c.full_waits += 1
                f = logs.cache_full_wait.rows[append(logs.cache_full_wait)]
                f.ts_ns = t_w
                f.rg = r
                f.volume = v
                f.dirty_pages = c.dirty
                f.wait_ns = max(end - t_w, 0)
                if end > t_w:
                    thr += end - t_w
                    t_w = end
            if c.flush_ops == flushes:  # nothing left to flush: no room at all
                through = True
                break
        if through:  # the cache cannot hold the page: write it through to the drives
            through = False
            c.through_pages += 1
            if x.valid == 0:
                x.part = -1
            elif x.dirty == 0:
                lru_push(ds, u, True)
            dn, s, k_ios, _ = ssd.write(sp, ss, bp, bs, ev, logs.ssd_promotion, u, r, x.data, x.p1, x.p2, pbit[j], t_w,
                                        be.write_ops(r, bp), page, 1.0, 1)
            bbusy += s
            if dn > t_w:
                t_w = dn
            continue
        if not (x.valid & bit):
            x.valid |= bit
            ds.parts[1].used += 1
            if x.part < 0:
                x.part = 1
        if mode == MODE_MCX:
            adm = throttle_admit(ds, r, t_w)
            if adm > t_w:
                thr += adm - t_w
                t_w = adm
        mark_dirty(dp, ds, ev, u, bit, t_w)
        if mode == MODE_FLARE and not c.watermark and c.dirty >= dp.high_watermark_pages:
            c.watermark = 1
            start_flushers(ds, ev, ev.now)
    done = max(tc, t_w + dp.mirror_latency_ns)
    c.write_pages += wp
    c.write_hits += wh
    return done, wp, wh, stall, thr, bbusy, rg_req


@kernel  # a call, not inlined: its loop inlined in the request loop made every cached preset's kernel 25-37 % slower
def write_aside(dp, ds, bp, bs, sp, ss, ev, plog, utab, shift, v, p0, p1, punit, pbit, puno, tc, tmp):
    """A FLARE write-aside at tc of pages p0..p1 (a host write larger than ``write_aside_bytes``):
    the cache's copies of its pages are forgotten (dirty ones superseded, never flushed), each whole
    stripe it covers is written as a full stripe (a sequential stream's next stripe keeps the drives
    in place, as a flush does), the rest of each unit by read-modify-write; acknowledged when the
    drives are done, with no mirror hop. Returns (done, pages, backend I/Os, backend busy, RAID group)."""
    un = ds.units
    c = ds.c[0]
    page = dp.page_bytes
    ppu = dp.pages_per_unit
    full = full_mask(ppu)
    done = tc
    ios = 0
    busy = np.int64(0)
    rg_req = -1
    j = p0
    while j < p1:
        u = punit[j]
        ensure_placed(dp, ds, bp, bs, u, v, puno[j], tmp)
        x = un[u]
        r = x.rg
        if rg_req < 0:
            rg_req = r
        lvl = bp.groups[r].level
        nsu = x.sunits
        span = nsu * ppu
        if (lvl == 5 or lvl == 6) and nsu > 0 and puno[j] == x.sfirst and pbit[j] == 0 and j + span <= p1 \
                and puno[j + span - 1] == x.sfirst + nsu - 1:
            ok = True
            for k in range(nsu):
                w = punit[j + k * ppu]
                ensure_placed(dp, ds, bp, bs, w, v, puno[j + k * ppu], tmp)
                if un[w].rg != r or ssd.holds(sp, ss, w):
                    ok = False
            if ok:
                g = ds.groups[r]
                batch = 1.0
                if v == g.seq_vol and x.sfirst == g.seq_next:
                    batch = qk.SEQUENTIAL
                g.seq_vol = v
                g.seq_next = x.sfirst + nsu
                for k in range(nsu):
                    c.aside_dirty += forget_pages(dp, ds, punit[j + k * ppu], full)[1]
                dn, s, k_ios = be.write_stripe(bp, bs, r, tc, batch)
                done = max(done, dn)
                busy += s
                ios += k_ios
                c.aside_stripes += 1
                j += span
                continue
        mask = np.uint64(0)
        e = j
        while e < p1 and punit[e] == u:
            mask |= np.uint64(1) << np.uint64(pbit[e])
            e += 1
        c.aside_dirty += forget_pages(dp, ds, u, mask)[1]
        dn, s, k_ios, _ = ssd.write(sp, ss, bp, bs, ev, plog, u, r, x.data, x.p1, x.p2, pbit[j], tc,
                                    be.write_ops(r, bp), (e - j) * page, 1.0, 1)
        done = max(done, dn)
        busy += s
        ios += k_ios
        j = e
    c.write_pages += p1 - p0
    c.aside_pages += p1 - p0
    return done, p1 - p0, ios, busy, rg_req


@step
def trim(dp, ds, p0, p1, punit, pbit):
    """A host trim of pages p0..p1; returns the RAID group of its first placed unit (-1: none)."""
    rg_req = -1
    for j in range(p0, p1):
        u = punit[j]
        if rg_req < 0 and ds.units[u].flags & F_PLACED:
            rg_req = ds.units[u].rg
        ds.c[0].trimmed_pages += drop_pages(dp, ds, u, np.uint64(1) << np.uint64(pbit[j]))
    return rg_req
