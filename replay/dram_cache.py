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

FLARE (``mode = "flare"``; seed 002, MODELS.md):
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
  pages below the low watermark; the stall is counted (forced flushes, stalled ms).

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
at A_g it is flushed; when the pages already older than A_g would take longer than
``throttle_drain_ms`` (2 s) to drain at the flush rate F_g (the group is flushing at its
maximum, ``flush_queue_depth`` writes per drive in flight, and still falling behind), the group
is **throttled**: new dirty pages of that group only are admitted at ``r x F_g`` pages/s (a
token bucket; the host write ack waits). The ratio follows the published curve, 8x
(``throttle_ratio_max``) -> 1x -> 0.5x (``throttle_ratio_min``), as a function of the group's
dirty pages relative to its share: ``r = 8 ** (1 - D/S)`` up to the share, then falling to 0.5x
at ``(1 + throttle_overshoot_pct) x S``. The published tuning drives the same curve by drain
time over the oldest page's age; with oldest-first flushing that ratio equals incoming/flushed
in a steady state, so a curve reaching 0.5x at 1 has no steady state with incoming = flush rate
and makes the cache fill and drain in cycles of minutes; the share keeps the curve and levels
off, as seed 002 describes ("throttling continues until the incoming write workload matches the
capability of the underlying RAID group"). Other RAID groups keep their cache room. MCx flushes
in address order (``flush_order = "address"``): the aged units of a group are swept in LBA
order, which turns random writes into short seeks (seed 002: coalescing "to turn random I/O into
sequential I/O"); the service time uses the number of due units per drive as the sweep length
(``replay.backend``). If the pool is ever 100 % dirty a write waits for the next flush to finish
(counted as throttled time and a cache-full wait), never stalling other groups.
"""

from __future__ import annotations

import math

import numpy as np

from replay.jit import kernel

# ---- unit columns -------------------------------------------------------------------------
# int32 ``ui``
U_LP, U_LN = 0, 1  # clean LRU links
U_FP, U_FN = 2, 3  # RAID-group dirty FIFO links
U_VP, U_VN = 4, 5  # volume dirty FIFO links (FLARE idle flushing)
U_RG = 6
U_DATA, U_P1, U_P2 = 7, 8, 9
U_SUNITS = 10
U_VOL = 11
U_PART = 12  # -1 not cached, 0 read partition (FLARE), 1 write cache / MCx pool
U_FLAGS = 13
N_U = 14
# int64 ``ul``
UL_SINCE = 0  # time the unit became dirty
UL_SFIRST = 1  # first unit number of its stripe (-1: no full-stripe writes)
N_UL = 2
# uint64 ``um``
UM_VALID, UM_DIRTY = 0, 1

F_CLEAN = 1  # in a clean LRU list
F_FIFO = 2  # in its RAID group's dirty FIFO
F_DUE = 4  # counted as due (MCx: older than the pre-cleaning age)
F_PLACED = 8  # placement computed

# ---- global int64 ``g`` -----------------------------------------------------------------
G_NOW = 0
G_SP_FREE = 1
G_STALL_UNTIL = 2
G_DIRTY = 3  # dirty pages, whole array
G_USED0, G_USED1 = 4, 5  # valid pages per partition
G_CAP0, G_CAP1 = 6, 7
G_LH0, G_LT0, G_LH1, G_LT1 = 8, 9, 10, 11  # clean LRU head (most recent) / tail per partition
G_WM = 12  # FLARE watermark flushing active
G_FORCED = 13  # FLARE forced flush in progress
G_EMERG = 14  # MCx pool full: flush regardless of age
G_HEAP_N = 15
G_NEXT_TICK = 16
G_IDLE_CLOCK = 17
G_IWIN_N = 18
G_VH, G_VT = 19, 20  # volumes with dirty units, least recently active at the tail
G_REC_N = 21
G_DUNITS = 22
G_REQ = 23
G_READS = 24
G_WRITES = 25
G_RPAGES = 26
G_RHITS = 27
G_WPAGES = 28
G_WHITS = 29
G_FORCED_N = 30
G_STALL_NS = 31
G_THROT_NS = 32
G_FULL_WAITS = 33
G_FULL_STRIPES = 34
G_FLUSH_OPS = 35
G_FLUSH_PAGES = 36
G_BE_READ_IOS = 37
G_BE_WRITE_IOS = 38
G_FLUSH_BYTES = 39
G_LAST_DONE = 40
G_FIRST_ARR = 41
G_OTHER = 42
G_READ_BYTES = 43
G_WRITE_BYTES = 44
G_TRIM_PAGES = 45
G_BE_READ_BYTES = 46
G_IDLE_FLUSH_OPS = 47
G_MAX_DIRTY = 48
G_LAT_SUM = 49
G_STALLED_REQ = 50
G_THROT_REQ = 51
G_FORCED_STALL_NS = 52
G_NEXT_EV = 53  # lower bound of the next background event (skip the catch-up before it)
N_G = 54

GLOBAL_COUNTERS = {
    "requests": G_REQ, "reads": G_READS, "writes": G_WRITES, "other_requests": G_OTHER,
    "read_pages": G_RPAGES, "read_hit_pages": G_RHITS, "write_pages": G_WPAGES,
    "write_hit_pages": G_WHITS, "read_bytes": G_READ_BYTES, "write_bytes": G_WRITE_BYTES,
    "trimmed_pages": G_TRIM_PAGES, "forced_flush_count": G_FORCED_N,
    "forced_flush_stall_ns": G_FORCED_STALL_NS, "stall_delay_sum_ns": G_STALL_NS,
    "stalled_requests": G_STALLED_REQ, "throttle_delay_sum_ns": G_THROT_NS, "throttled_requests": G_THROT_REQ,
    "cache_full_waits": G_FULL_WAITS, "full_stripe_writes": G_FULL_STRIPES, "flush_ops": G_FLUSH_OPS,
    "idle_flush_ops": G_IDLE_FLUSH_OPS, "flush_pages": G_FLUSH_PAGES, "flush_bytes": G_FLUSH_BYTES,
    "backend_read_ios": G_BE_READ_IOS, "backend_write_ios": G_BE_WRITE_IOS,
    "backend_read_bytes": G_BE_READ_BYTES, "dirty_pages": G_DIRTY, "dirty_pages_max": G_MAX_DIRTY,
    "first_arrival_ns": G_FIRST_ARR, "last_done_ns": G_LAST_DONE, "latency_sum_ns": G_LAT_SUM,
}

# ---- RAID-group dynamic int64 ``rgs`` / float64 ``rgf`` ---------------------------------
RS_DPAGES = 0
RS_DUNITS = 1
RS_FH, RS_FT = 2, 3
RS_FRONT = 4  # last unit of the due prefix of the FIFO (-1: none)
RS_DUE = 5
RS_WIN_N = 6
RS_CLOCK = 7
RS_ADMIT = 8  # throttle token bucket: next admission time
RS_NEWD = 9  # new dirty pages since the last adaptation
RS_WPG = 10  # host page writes since the last adaptation
RS_FLP = 11  # pages flushed since the last adaptation
RS_THROT = 12
RS_FLUSH_OPS = 13
RS_FLUSH_PAGES = 14
RS_BE_IOS = 15
N_RS = 16
RF_I, RF_W, RF_F, RF_AGE, RF_RATE = 0, 1, 2, 3, 4
N_RF = 5

# ---- volumes int64 ``vol`` --------------------------------------------------------------
V_POOL = 0
V_BASE = 1
V_LAST = 2
V_FH, V_FT = 3, 4
V_DUNITS = 5
V_LP, V_LN = 6, 7
V_INLRU = 8
N_V = 9

# ---- parameters --------------------------------------------------------------------------
PI_MODE = 0  # 0 flare, 1 mcx
PI_CLOSED = 1
PI_OUT = 2
PI_PAGE = 3
PI_PPU = 4
PI_UNIT = 5
PI_FDEPTH = 6
PI_ORDER_ADDR = 7
PI_HWM = 8  # pages
PI_LWM = 9
PI_IDLE_AFTER = 10
PI_IDLE_OUT = 11
PI_SP_NS = 12
PI_MIRROR = 13
PI_TICK = 14
PI_PAGE_BITS = 15
PI_ID_SHIFT = 16
N_PI = 17
PF_SP_NS_PER_BYTE = 0
PF_AGE_MIN, PF_AGE_MAX = 1, 2
PF_RATE_ALPHA = 3
PF_DIRTY_TARGET = 4
PF_MIN_FREE = 5
PF_SMOOTH = 6
PF_THR_DRAIN = 7
PF_RMAX, PF_OVER, PF_RMIN = 8, 9, 10
PF_TICK_S = 11
PF_DIRTY_MAX = 12
N_PF = 13

MODE_FLARE, MODE_MCX = 0, 1
INF = np.int64(1 << 62)


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


# ---- linked lists (arrays passed explicitly: numba refcounts every field of a large tuple) --
@kernel
def lru_remove(ui, G, u):
    h = G_LH0 + 2 * ui[u, U_PART]
    p = ui[u, U_LP]
    n = ui[u, U_LN]
    if p >= 0:
        ui[p, U_LN] = n
    else:
        G[h] = n
    if n >= 0:
        ui[n, U_LP] = p
    else:
        G[h + 1] = p
    ui[u, U_LP] = -1
    ui[u, U_LN] = -1
    ui[u, U_FLAGS] &= ~F_CLEAN


@kernel
def lru_push(ui, G, u, at_head):
    """Insert a clean unit into its partition's LRU: at the head (most recent) or the tail."""
    h = G_LH0 + 2 * ui[u, U_PART]
    if at_head:
        old = G[h]
        ui[u, U_LP] = -1
        ui[u, U_LN] = old
        if old >= 0:
            ui[old, U_LP] = u
        else:
            G[h + 1] = u
        G[h] = u
    else:
        old = G[h + 1]
        ui[u, U_LN] = -1
        ui[u, U_LP] = old
        if old >= 0:
            ui[old, U_LN] = u
        else:
            G[h] = u
        G[h + 1] = u
    ui[u, U_FLAGS] |= F_CLEAN


@kernel
def fifo_append(ui, rgs, u, r):
    t = rgs[r, RS_FT]
    ui[u, U_FN] = -1
    ui[u, U_FP] = t
    if t >= 0:
        ui[t, U_FN] = u
    else:
        rgs[r, RS_FH] = u
    rgs[r, RS_FT] = u
    ui[u, U_FLAGS] |= F_FIFO


@kernel
def fifo_remove(ui, rgs, u, r):
    p = ui[u, U_FP]
    n = ui[u, U_FN]
    if ui[u, U_FLAGS] & F_DUE:
        rgs[r, RS_DUE] -= 1
        if rgs[r, RS_FRONT] == u:
            rgs[r, RS_FRONT] = p
    if p >= 0:
        ui[p, U_FN] = n
    else:
        rgs[r, RS_FH] = n
    if n >= 0:
        ui[n, U_FP] = p
    else:
        rgs[r, RS_FT] = p
    ui[u, U_FP] = -1
    ui[u, U_FN] = -1
    ui[u, U_FLAGS] &= ~(F_FIFO | F_DUE)


@kernel
def vfifo_append(ui, vol, u, v):
    t = vol[v, V_FT]
    ui[u, U_VN] = -1
    ui[u, U_VP] = t
    if t >= 0:
        ui[t, U_VN] = u
    else:
        vol[v, V_FH] = u
    vol[v, V_FT] = u


@kernel
def vfifo_remove(ui, vol, u, v):
    p = ui[u, U_VP]
    n = ui[u, U_VN]
    if p >= 0:
        ui[p, U_VN] = n
    else:
        vol[v, V_FH] = n
    if n >= 0:
        ui[n, U_VP] = p
    else:
        vol[v, V_FT] = p
    ui[u, U_VP] = -1
    ui[u, U_VN] = -1


@kernel
def vlru_remove(vol, G, v):
    p = vol[v, V_LP]
    n = vol[v, V_LN]
    if p >= 0:
        vol[p, V_LN] = n
    else:
        G[G_VH] = n
    if n >= 0:
        vol[n, V_LP] = p
    else:
        G[G_VT] = p
    vol[v, V_LP] = -1
    vol[v, V_LN] = -1
    vol[v, V_INLRU] = 0


@kernel
def vlru_push_head(vol, G, v):
    old = G[G_VH]
    vol[v, V_LP] = -1
    vol[v, V_LN] = old
    if old >= 0:
        vol[old, V_LP] = v
    else:
        G[G_VT] = v
    G[G_VH] = v
    vol[v, V_INLRU] = 1


@kernel
def vlru_touch(vol, G, v):
    """A host I/O to volume v: most recently active (if it has dirty units)."""
    if vol[v, V_INLRU] and G[G_VH] != v:
        vlru_remove(vol, G, v)
        vlru_push_head(vol, G, v)


# ---- cache operations ---------------------------------------------------------------------
@kernel
def evict_unit(ui, um, G, u):
    part = ui[u, U_PART]
    lru_remove(ui, G, u)
    G[G_USED0 + part] -= popcount(um[u, UM_VALID])
    um[u, UM_VALID] = np.uint64(0)
    ui[u, U_PART] = -1


@kernel
def make_room(ui, um, G, part, k):
    """Evict least recently used clean units of ``part`` until ``k`` more pages fit; False if
    the partition has too few clean pages (all dirty, or capacity below k)."""
    cap = G[G_CAP0 + part]
    while G[G_USED0 + part] + k > cap:
        t = G[G_LT0 + 2 * part]
        if t < 0:
            return False
        evict_unit(ui, um, G, t)
    return True


@kernel
def mark_dirty(pi, G, rgs, rgf, vol, ui, ul, um, u, bit, t):
    """Page ``bit`` of unit u (valid, in the write partition) becomes dirty at time t."""
    r = ui[u, U_RG]
    was = um[u, UM_DIRTY]
    um[u, UM_DIRTY] = was | bit
    G[G_DIRTY] += 1
    if G[G_DIRTY] > G[G_MAX_DIRTY]:
        G[G_MAX_DIRTY] = G[G_DIRTY]
    rgs[r, RS_DPAGES] += 1
    rgs[r, RS_NEWD] += 1
    if was == 0:
        if ui[u, U_FLAGS] & F_CLEAN:
            lru_remove(ui, G, u)
        ul[u, UL_SINCE] = t
        if rgs[r, RS_FH] < 0:  # a new head: the group's next flush may come earlier
            ready = t + np.int64(rgf[r, RF_AGE]) if pi[PI_MODE] == MODE_MCX else t
            if ready < G[G_NEXT_EV]:
                G[G_NEXT_EV] = ready
        fifo_append(ui, rgs, u, r)
        rgs[r, RS_DUNITS] += 1
        G[G_DUNITS] += 1
        if pi[PI_MODE] == MODE_FLARE:
            v = ui[u, U_VOL]
            vfifo_append(ui, vol, u, v)
            vol[v, V_DUNITS] += 1
            if not vol[v, V_INLRU]:
                vlru_push_head(vol, G, v)
                if G[G_VT] == v and t < G[G_NEXT_EV]:  # the only idle candidate
                    G[G_NEXT_EV] = t


@kernel
def _leave_dirty_lists(pi, G, rgs, vol, ui, u, r):
    fifo_remove(ui, rgs, u, r)
    rgs[r, RS_DUNITS] -= 1
    G[G_DUNITS] -= 1
    if pi[PI_MODE] == MODE_FLARE:
        v = ui[u, U_VOL]
        vfifo_remove(ui, vol, u, v)
        vol[v, V_DUNITS] -= 1
        if vol[v, V_DUNITS] == 0 and vol[v, V_INLRU]:
            vlru_remove(vol, G, v)


@kernel
def clean_unit(pi, G, rgs, vol, ui, um, u):
    """All dirty pages of u are being written: u leaves the dirty lists and becomes evictable
    (MCx: most recently used end; FLARE: least recently used end, first reused)."""
    r = ui[u, U_RG]
    pages = popcount(um[u, UM_DIRTY])
    um[u, UM_DIRTY] = np.uint64(0)
    G[G_DIRTY] -= pages
    rgs[r, RS_DPAGES] -= pages
    rgs[r, RS_FLP] += pages
    _leave_dirty_lists(pi, G, rgs, vol, ui, u, r)
    lru_push(ui, G, u, pi[PI_MODE] == MODE_MCX)
    return pages


@kernel
def drop_pages(pi, G, rgs, vol, ui, um, u, bits):
    """Trim: forget pages ``bits`` of unit u (dirty ones are discarded, not written)."""
    if ui[u, U_PART] < 0:
        return 0
    bits = bits & um[u, UM_VALID]
    if bits == 0:
        return 0
    r = ui[u, U_RG]
    dbits = bits & um[u, UM_DIRTY]
    nd = popcount(dbits)
    part = ui[u, U_PART]
    if nd > 0:
        um[u, UM_DIRTY] = um[u, UM_DIRTY] & ~dbits
        G[G_DIRTY] -= nd
        rgs[r, RS_DPAGES] -= nd
        if um[u, UM_DIRTY] == 0:
            _leave_dirty_lists(pi, G, rgs, vol, ui, u, r)
            lru_push(ui, G, u, False)
    n = popcount(bits)
    um[u, UM_VALID] = um[u, UM_VALID] & ~bits
    G[G_USED0 + part] -= n
    if um[u, UM_VALID] == 0:
        if ui[u, U_FLAGS] & F_CLEAN:
            lru_remove(ui, G, u)
        ui[u, U_PART] = -1
    return n


# ---- MCx control law ----------------------------------------------------------------------
@kernel
def throttle_ratio(u, rmax, overshoot, rmin):
    """Allowed incoming:flushed page ratio for a group holding ``u`` times its dirty share:
    ``rmax`` at 0, 1x at its share, ``rmin`` from ``1 + overshoot`` on (log-linear between)."""
    if u <= 0.0:
        return rmax
    if u <= 1.0:
        return rmax ** (1.0 - u)
    if u < 1.0 + overshoot:
        return rmin ** ((u - 1.0) / overshoot)
    return rmin


@kernel
def update_due(ui, ul, rgs, rgf, r, now):
    """Extend the due prefix of group r's FIFO to units older than its pre-cleaning age."""
    age = np.int64(rgf[r, RF_AGE])
    f = rgs[r, RS_FRONT]
    nxt = rgs[r, RS_FH] if f < 0 else ui[f, U_FN]
    while nxt >= 0 and ul[nxt, UL_SINCE] + age <= now:
        ui[nxt, U_FLAGS] |= F_DUE
        rgs[r, RS_DUE] += 1
        rgs[r, RS_FRONT] = nxt
        nxt = ui[nxt, U_FN]


@kernel
def mcx_adapt(pi, pf, G, rgs, rgf, ui, ul, now, t_limit):
    """One adaptation tick at ``now``: rates, pre-cleaning ages, throttles (see module docstring)."""
    n_rg = rgs.shape[0]
    dt = pf[PF_TICK_S]
    a = pf[PF_RATE_ALPHA]
    n_act = 0
    quiet = G[G_DIRTY] == 0
    for r in range(n_rg):
        rgf[r, RF_I] += a * (rgs[r, RS_NEWD] / dt - rgf[r, RF_I])
        rgf[r, RF_W] += a * (rgs[r, RS_WPG] / dt - rgf[r, RF_W])
        rgf[r, RF_F] += a * (rgs[r, RS_FLP] / dt - rgf[r, RF_F])
        rgs[r, RS_NEWD] = 0
        rgs[r, RS_WPG] = 0
        rgs[r, RS_FLP] = 0
        if rgf[r, RF_I] > 1e-3 or rgs[r, RS_DPAGES] > 0:
            n_act += 1
        if rgf[r, RF_I] > 1e-3 or rgf[r, RF_W] > 1e-3 or rgf[r, RF_F] > 1e-3:
            quiet = False
    cap = G[G_CAP1]
    free = cap - G[G_DIRTY]
    min_free = pf[PF_MIN_FREE] * cap
    amin = pf[PF_AGE_MIN]
    amax = pf[PF_AGE_MAX]
    for r in range(n_rg):
        # coalescing effectiveness: share of host page writes that found the page dirty
        coal = 1.0 - rgf[r, RF_I] / rgf[r, RF_W] if rgf[r, RF_W] > 1e-3 else 0.0
        if coal < 0.0:
            coal = 0.0
        frac = pf[PF_DIRTY_TARGET] + (pf[PF_DIRTY_MAX] - pf[PF_DIRTY_TARGET]) * coal
        share = frac * cap / max(n_act, 1)
        age = rgf[r, RF_AGE]
        target = share / max(rgf[r, RF_I], 1e-3) * 1e9
        dp = rgs[r, RS_DPAGES]
        if dp > share:  # over its share: flush sooner in proportion
            target = min(target, age * share / dp)
        h = rgs[r, RS_FH]
        if h >= 0 and now - ul[h, UL_SINCE] > age:  # pages already overdue: never lengthen
            target = min(target, age)
        if free < min_free and min_free > 0:
            target *= max(free, 0) / min_free
        target = min(max(target, amin), amax)
        age = age * (target / age) ** pf[PF_SMOOTH]
        rgf[r, RF_AGE] = min(max(age, amin), amax)
        update_due(ui, ul, rgs, rgf, r, now)
        throttle = False
        if h >= 0 and rgs[r, RS_DUE] > 0:
            fl = rgf[r, RF_F]
            if fl >= 1.0:
                # drain time of the pages already past the pre-cleaning age at the flush rate
                due_pages = rgs[r, RS_DUE] * rgs[r, RS_DPAGES] / max(rgs[r, RS_DUNITS], 1)
                drain_ns = due_pages / fl * 1e9
                if drain_ns > pf[PF_THR_DRAIN]:
                    ratio = throttle_ratio(rgs[r, RS_DPAGES] / share, pf[PF_RMAX], pf[PF_OVER], pf[PF_RMIN])
                    rgf[r, RF_RATE] = ratio * fl
                    throttle = True
        if throttle:
            if not rgs[r, RS_THROT]:
                rgs[r, RS_ADMIT] = now
            rgs[r, RS_THROT] = 1
        else:
            rgs[r, RS_THROT] = 0
    tick = pi[PI_TICK]
    nxt = now + tick
    if quiet and t_limit > nxt:  # nothing to adapt to: jump to the tick before t_limit
        nxt = now + ((t_limit - now) // tick) * tick
        for r in range(n_rg):
            rgf[r, RF_I] = 0.0
            rgf[r, RF_W] = 0.0
            rgf[r, RF_F] = 0.0
    G[G_NEXT_TICK] = nxt


@kernel
def throttle_admit(rgs, rgf, r, t):
    """Admission time of one new dirty page of group r arriving at t (MCx throttling)."""
    if not rgs[r, RS_THROT]:
        return t
    adm = rgs[r, RS_ADMIT]
    if adm < t:
        adm = t
    rgs[r, RS_ADMIT] = adm + np.int64(1e9 / max(rgf[r, RF_RATE], 1e-3))
    return adm


def rate_alpha(tick_ms: float, window_ms: float) -> float:
    """Per-tick weight of an exponential average with time constant ``window_ms``."""
    return 1.0 - math.exp(-tick_ms / window_ms)
