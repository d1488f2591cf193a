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

Outputs: per request (``replay`` return) issue/completion times, pages and hits, stall and
throttle time, its RAID group (the group of its first page), back-end reads and their busy time,
dirty pages at that moment; per flush (``drain_records``) time, group, pages, bytes, back-end
I/Os, drive busy time, the group's dirty pages after it and its pre-cleaning age; per forced
flush its start and duration. ``replay.intervals``-style aggregation is in ``pipelines.replay``.

State is an :class:`ArrayState` of plain numpy arrays (picklable, deep-copyable); a trace fed in
any number of chunks gives identical outcomes, records and counters (tested).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from replay import backend as be
from replay import dram_cache as dc
from replay import queueing as qk
from replay.dram_cache import (
    F_CLEAN,
    F_PLACED,
    G_BE_READ_BYTES,
    G_BE_READ_IOS,
    G_BE_WRITE_IOS,
    G_CAP0,
    G_CAP1,
    G_DIRTY,
    G_DUNITS,
    G_EMERG,
    G_FIRST_ARR,
    G_FLUSH_BYTES,
    G_FLUSH_OPS,
    G_FLUSH_PAGES,
    G_FORCED,
    G_FORCED_N,
    G_FORCED_STALL_NS,
    G_FULL_STRIPES,
    G_FULL_WAITS,
    G_HEAP_N,
    G_IDLE_CLOCK,
    G_IDLE_FLUSH_OPS,
    G_IWIN_N,
    G_LAST_DONE,
    G_LAT_SUM,
    G_LH0,
    G_LH1,
    G_LT0,
    G_LT1,
    G_NEXT_EV,
    G_NEXT_TICK,
    G_NOW,
    G_OTHER,
    G_READ_BYTES,
    G_READS,
    G_REC_N,
    G_REQ,
    G_RHITS,
    G_RPAGES,
    G_SP_FREE,
    G_STALL_NS,
    G_STALL_UNTIL,
    G_STALLED_REQ,
    G_THROT_NS,
    G_THROT_REQ,
    G_TRIM_PAGES,
    G_USED0,
    G_USED1,
    G_VH,
    G_VT,
    G_WHITS,
    G_WM,
    G_WPAGES,
    G_WRITE_BYTES,
    G_WRITES,
    INF,
    MODE_FLARE,
    MODE_MCX,
    PF_SP_NS_PER_BYTE,
    PI_CLOSED,
    PI_FDEPTH,
    PI_HWM,
    PI_ID_SHIFT,
    PI_IDLE_AFTER,
    PI_IDLE_OUT,
    PI_LWM,
    PI_MIRROR,
    PI_MODE,
    PI_ORDER_ADDR,
    PI_OUT,
    PI_PAGE,
    PI_PAGE_BITS,
    PI_PPU,
    PI_SP_NS,
    PI_UNIT,
    RF_AGE,
    RS_BE_IOS,
    RS_CLOCK,
    RS_DPAGES,
    RS_DUE,
    RS_DUNITS,
    RS_FH,
    RS_FLUSH_OPS,
    RS_FLUSH_PAGES,
    RS_FRONT,
    RS_FT,
    RS_WIN_N,
    RS_WPG,
    U_DATA,
    U_FLAGS,
    U_P1,
    U_P2,
    U_PART,
    U_RG,
    U_SUNITS,
    U_VOL,
    UL_SFIRST,
    UL_SINCE,
    UM_DIRTY,
    UM_VALID,
    V_BASE,
    V_FH,
    V_LAST,
    V_POOL,
)
from replay.ids import IdMap, slot
from replay.jit import kernel
from replay.model import Chunk, Model, Outcomes, register
from replay.pages import PAGE_BITS
from replay.scenario import Scenario, parse
from schemas.trace import OP_READ, OP_TRIM, OP_WRITE

# record columns and kinds (``drain_records``)
REC_TS, REC_KIND, REC_RG, REC_PAGES, REC_BYTES, REC_IOS, REC_BUSY, REC_DIRTY, REC_VAL, REC_VOL = range(10)
N_REC = 10
REC_COLUMNS = ("ts_ns", "kind", "rg", "pages", "bytes", "ios", "busy_ns", "rg_dirty_pages", "value_ns", "volume")
K_FLUSH, K_FULL_STRIPE, K_IDLE_FLUSH, K_STALL = 0, 1, 2, 3
RECORD_KINDS = ("flush", "full_stripe", "idle_flush", "forced_flush")

# per-request output columns
O_ARR, O_DONE, O_RP, O_RH, O_WP, O_WH, O_STALL, O_THR, O_RG, O_BIOS, O_BBUSY, O_DIRTY, O_RGDIRTY = range(13)
N_O = 13
OUTCOMES = ("arrival_ns", "done_ns", "read_pages", "read_hit_pages", "write_pages", "write_hit_pages",
            "stall_ns", "throttle_ns", "rg", "backend_ios", "backend_busy_ns", "dirty_pages", "rg_dirty_pages")

# The state arrays, in the order every kernel function takes them. They are passed one by one:
# numba reference-counts every field of a large tuple on each access (~0.4 us a request here).
STATE_ARRAYS = ("pi", "pf", "G", "rgi", "rgs", "rgf", "win", "dstat", "ddyn", "dflt", "pool_rgs", "pool_nrg",
                "pool_slice", "vol", "ui", "ul", "um", "heap", "iwin", "utab", "rec")


# --------------------------------------------------------------------------------------------
# compiled pieces
# --------------------------------------------------------------------------------------------
@kernel
def _probe(table, key, shift):
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


@kernel
def _record(G, rec, ts, kind, r, pages, nbytes, ios, busy, dirty, val, v):
    i = G[G_REC_N]
    rec[i, REC_TS] = ts
    rec[i, REC_KIND] = kind
    rec[i, REC_RG] = r
    rec[i, REC_PAGES] = pages
    rec[i, REC_BYTES] = nbytes
    rec[i, REC_IOS] = ios
    rec[i, REC_BUSY] = busy
    rec[i, REC_DIRTY] = dirty
    rec[i, REC_VAL] = val
    rec[i, REC_VOL] = v
    G[G_REC_N] = i + 1


@kernel
def _place(pi, rgi, pool_rgs, pool_nrg, pool_slice, vol, ui, ul, u, v, unit_no, tmp):
    be.place_unit(unit_no, pi[PI_UNIT], vol[v, V_POOL], vol[v, V_BASE], v, pool_rgs, pool_nrg, pool_slice, rgi, tmp)
    ui[u, U_RG] = tmp[be.UP_RG]
    ui[u, U_DATA] = tmp[be.UP_DATA]
    ui[u, U_P1] = tmp[be.UP_P1]
    ui[u, U_P2] = tmp[be.UP_P2]
    ui[u, U_SUNITS] = tmp[be.UP_SUNITS]
    ul[u, UL_SFIRST] = tmp[be.UP_SFIRST]
    ui[u, U_VOL] = v
    ui[u, U_FLAGS] |= F_PLACED


@kernel
def _write_run(ui, dstat, ddyn, dflt, u, tau, nops, nbytes, batch):
    """Back-end writes of one contiguous dirty run of unit u; returns (done, busy, ios)."""
    d = ui[u, U_DATA]
    done, busy = qk.drive_submit(dstat, ddyn, dflt, d, tau, nops, nbytes, batch, False)
    ios = nops
    p1 = ui[u, U_P1]
    if p1 >= 0:
        dn, s = qk.drive_submit(dstat, ddyn, dflt, p1, tau, nops, nbytes, batch, False)
        done = max(done, dn)
        busy += s
        ios += nops
    p2 = ui[u, U_P2]
    if p2 >= 0:
        dn, s = qk.drive_submit(dstat, ddyn, dflt, p2, tau, nops, nbytes, batch, False)
        done = max(done, dn)
        busy += s
        ios += nops
    return done, busy, ios


@kernel
def _flush(pi, G, rgi, rgs, rgf, dstat, ddyn, dflt, vol, ui, ul, um, utab, rec, u, tau, kind):
    """Flush the dirty pages of unit u at time tau (a full stripe if every unit of its stripe is
    fully dirty); returns the completion time of the last back-end write."""
    r = ui[u, U_RG]
    level = rgi[r, be.RG_LEVEL]
    width = rgi[r, be.RG_WIDTH]
    ppu = pi[PI_PPU]
    page = pi[PI_PAGE]
    mask = um[u, UM_DIRTY]
    batch = 1.0
    if pi[PI_ORDER_ADDR]:
        if pi[PI_MODE] == MODE_MCX and not G[G_EMERG]:
            dc.update_due(ui, ul, rgs, rgf, r, tau)
            due = rgs[r, RS_DUE]
        else:
            due = rgs[r, RS_DUNITS]
        per_op = 1 if level == 0 else (3 if level == 6 else 2)
        batch = max(1.0, due * per_op / width)
    full = dc.full_mask(ppu)
    nsu = ui[u, U_SUNITS]
    done = tau
    busy = np.int64(0)
    ios = 0
    pages = 0
    rec_kind = kind
    stripe_done = False
    if (level == 5 or level == 6) and nsu > 0 and mask == full:
        first = ul[u, UL_SFIRST]
        vkey = np.int64(ui[u, U_VOL]) << pi[PI_PAGE_BITS]
        ok = True
        for k in range(nsu):
            w = _probe(utab, vkey | (first + k), pi[PI_ID_SHIFT])
            if w < 0 or um[w, UM_DIRTY] != full or ui[w, U_RG] != r:
                ok = False
                break
        if ok:
            elem = rgi[r, be.RG_ELEM]
            d0 = rgi[r, be.RG_DRIVE0]
            for d in range(d0, d0 + width):
                dn, s = qk.drive_submit(dstat, ddyn, dflt, d, tau, 1, elem, batch, False)
                done = max(done, dn)
                busy += s
            ios = width
            for k in range(nsu):
                w = _probe(utab, vkey | (first + k), pi[PI_ID_SHIFT])
                pages += dc.clean_unit(pi, G, rgs, vol, ui, um, w)
            G[G_FULL_STRIPES] += 1
            rec_kind = K_FULL_STRIPE
            stripe_done = True
    if not stripe_done:
        nops = 2 if (level == 5 or level == 6) else 1
        b = 0
        while b < ppu:
            if (mask >> np.uint64(b)) & np.uint64(1):
                n = 0
                while b + n < ppu and (mask >> np.uint64(b + n)) & np.uint64(1):
                    n += 1
                dn, s, k_ios = _write_run(ui, dstat, ddyn, dflt, u, tau, nops, n * page, batch)
                done = max(done, dn)
                busy += s
                ios += k_ios
                b += n
            else:
                b += 1
        pages = dc.clean_unit(pi, G, rgs, vol, ui, um, u)
    G[G_FLUSH_OPS] += 1
    G[G_FLUSH_PAGES] += pages
    G[G_FLUSH_BYTES] += pages * page
    G[G_BE_WRITE_IOS] += ios
    rgs[r, RS_FLUSH_OPS] += 1
    rgs[r, RS_FLUSH_PAGES] += pages
    rgs[r, RS_BE_IOS] += ios
    _record(G, rec, tau, rec_kind, r, pages, pages * page, ios, busy, rgs[r, RS_DPAGES], np.int64(rgf[r, RF_AGE]),
            ui[u, U_VOL])
    return done


@kernel
def _window_add(pi, rgi, rgs, win, r, done):
    m = pi[PI_FDEPTH] * rgi[r, be.RG_WIDTH]
    n = rgs[r, RS_WIN_N]
    if n < m:
        rgs[r, RS_WIN_N] = qk.heap_push(win[r], n, done)
    else:
        qk.heap_replace_top(win[r], n, done)


@kernel
def _rg_next(pi, G, rgi, rgs, rgf, win, ul, r):
    """Earliest time RAID group r's flusher may issue its next write (INF: nothing to do)."""
    if rgs[r, RS_DUNITS] == 0:
        return INF
    base = rgs[r, RS_CLOCK]
    if G[G_NOW] > base:
        base = G[G_NOW]
    if rgs[r, RS_WIN_N] >= pi[PI_FDEPTH] * rgi[r, be.RG_WIDTH] and win[r, 0] > base:
        base = win[r, 0]
    if pi[PI_MODE] == MODE_FLARE:
        if G[G_WM] or G[G_FORCED]:
            return base
        return INF
    if G[G_EMERG]:
        return base
    ready = ul[rgs[r, RS_FH], UL_SINCE] + np.int64(rgf[r, RF_AGE])
    return ready if ready > base else base


@kernel
def _idle_next(pi, G, vol, iwin):
    """FLARE idle flushing: the least recently active LUN with dirty pages, once idle."""
    if pi[PI_MODE] != MODE_FLARE or pi[PI_IDLE_OUT] == 0:
        return INF
    v = G[G_VT]
    if v < 0:
        return INF
    base = vol[v, V_LAST] + pi[PI_IDLE_AFTER]
    if G[G_IDLE_CLOCK] > base:
        base = G[G_IDLE_CLOCK]
    if G[G_NOW] > base:
        base = G[G_NOW]
    if G[G_IWIN_N] >= pi[PI_IDLE_OUT] and iwin[0] > base:
        base = iwin[0]
    return base


@kernel
def _advance(pi, pf, G, rgi, rgs, rgf, win, dstat, ddyn, dflt, vol, ui, ul, um, iwin, utab, rec, t_limit, mode):
    """Run background events in time order. mode 0: those due by ``t_limit``; mode 1 (FLARE
    forced flush): flush until dirty pages <= low watermark, return that write's completion;
    mode 2 (MCx pool full): one flush, return its completion."""
    n_rg = rgs.shape[0]
    last_done = G[G_NOW]
    while True:
        best = INF
        who = -1
        for r in range(n_rg):
            t = _rg_next(pi, G, rgi, rgs, rgf, win, ul, r)
            if t < best:
                best = t
                who = r
        if pi[PI_MODE] == MODE_FLARE:
            t = _idle_next(pi, G, vol, iwin)
            if t < best:
                best = t
                who = -2
        elif mode == 0 and G[G_NEXT_TICK] < best:
            best = G[G_NEXT_TICK]
            who = -3
        if best >= INF or (mode == 0 and best > t_limit):
            G[G_NEXT_EV] = best if mode == 0 else G[G_NOW]
            return last_done
        G[G_NOW] = best
        if who == -3:
            dc.mcx_adapt(pi, pf, G, rgs, rgf, ui, ul, best, t_limit)
            continue
        if who == -2:
            v = G[G_VT]
            u = vol[v, V_FH]
            done = _flush(pi, G, rgi, rgs, rgf, dstat, ddyn, dflt, vol, ui, ul, um, utab, rec, u, best, K_IDLE_FLUSH)
            n = G[G_IWIN_N]
            if n < pi[PI_IDLE_OUT]:
                G[G_IWIN_N] = qk.heap_push(iwin, n, done)
            else:
                qk.heap_replace_top(iwin, n, done)
            G[G_IDLE_CLOCK] = best
            G[G_IDLE_FLUSH_OPS] += 1
        else:
            u = rgs[who, RS_FH]
            done = _flush(pi, G, rgi, rgs, rgf, dstat, ddyn, dflt, vol, ui, ul, um, utab, rec, u, best, K_FLUSH)
            _window_add(pi, rgi, rgs, win, who, done)
            rgs[who, RS_CLOCK] = best
        last_done = done
        if pi[PI_MODE] == MODE_FLARE and G[G_DIRTY] <= pi[PI_LWM]:
            G[G_WM] = 0
            if mode == 1:
                G[G_NEXT_EV] = G[G_NOW]
                return done
        if mode == 2:
            G[G_NEXT_EV] = G[G_NOW]
            return done


@kernel
def _start_flushers(G, rgs, t):
    for r in range(rgs.shape[0]):
        if rgs[r, RS_CLOCK] < t:
            rgs[r, RS_CLOCK] = t
    if t < G[G_NEXT_EV]:
        G[G_NEXT_EV] = t


@kernel
def _read_miss(rgi, ui, dstat, ddyn, dflt, u, nbytes, tc):
    d = ui[u, U_DATA]
    lvl = rgi[ui[u, U_RG], be.RG_LEVEL]
    if lvl == 1 or lvl == 10:  # either copy of the mirror: the one with less host work queued
        p = ui[u, U_P1]
        if ddyn[p, qk.DD_FREE_FG] < ddyn[d, qk.DD_FREE_FG]:
            d = p
    return qk.drive_submit(dstat, ddyn, dflt, d, tc, 1, nbytes, 1.0, True)


@kernel
def run_requests(pi, pf, G, rgi, rgs, rgf, win, dstat, ddyn, dflt, pool_rgs, pool_nrg, pool_slice, vol, ui, ul,
                 um, heap, iwin, utab, rec, start, ts, op, vols, size, pstart, punit, pbit, puno, out, tmp):
    """Process requests ``start..``; returns the index of the first request not processed (the
    record buffer would overflow: drain it and call again). ``tmp``: N_UP int64 scratch."""
    n = ts.shape[0]
    mode = pi[PI_MODE]
    closed = pi[PI_CLOSED]
    n_out = pi[PI_OUT]
    page = pi[PI_PAGE]
    cap_rec = rec.shape[0]
    for i in range(start, n):
        p0 = pstart[i]
        p1 = pstart[i + 1]
        if G[G_REC_N] + 2 * G[G_DUNITS] + (p1 - p0) + 64 > cap_rec:
            return i
        # 1. issue
        if closed:
            arr = heap[0] if G[G_HEAP_N] >= n_out else np.int64(0)
        else:
            arr = ts[i]
        if G[G_FIRST_ARR] < 0:
            G[G_FIRST_ARR] = arr
        t = arr
        stall = np.int64(0)
        thr = np.int64(0)
        # 2. forced-flush stall in progress
        if t < G[G_STALL_UNTIL]:
            stall = G[G_STALL_UNTIL] - t
            t = G[G_STALL_UNTIL]
        # 3. storage processor
        tc = qk.fcfs_server(G, G_SP_FREE, t, pi[PI_SP_NS] + np.int64(size[i] * pf[PF_SP_NS_PER_BYTE]))
        # 4. background work due by now
        if tc >= G[G_NEXT_EV]:
            _advance(pi, pf, G, rgi, rgs, rgf, win, dstat, ddyn, dflt, vol, ui, ul, um, iwin, utab, rec, tc, 0)
        if G[G_NOW] < tc:
            G[G_NOW] = tc
        v = vols[i]
        o = op[i]
        done = tc
        rp = 0
        rh = 0
        wp = 0
        wh = 0
        bios = 0
        bbusy = np.int64(0)
        rg_req = -1
        # 5. pages
        if o == OP_READ:
            G[G_READS] += 1
            G[G_READ_BYTES] += size[i]
            gu = -1
            gfirst = 0
            glast = 0
            for j in range(p0, p1):
                u = punit[j]
                if not (ui[u, U_FLAGS] & F_PLACED):
                    _place(pi, rgi, pool_rgs, pool_nrg, pool_slice, vol, ui, ul, u, v, puno[j], tmp)
                if rg_req < 0:
                    rg_req = ui[u, U_RG]
                b = pbit[j]
                bit = np.uint64(1) << np.uint64(b)
                rp += 1
                if um[u, UM_VALID] & bit:
                    rh += 1
                    if ui[u, U_FLAGS] & F_CLEAN and G[G_LH0 + 2 * ui[u, U_PART]] != u:
                        dc.lru_remove(ui, G, u)
                        dc.lru_push(ui, G, u, True)
                    continue
                # miss: extend the current back-end read or start a new one
                if gu == u and b == glast + 1:
                    glast = b
                else:
                    if gu >= 0:
                        dn, s = _read_miss(rgi, ui, dstat, ddyn, dflt, gu, (glast - gfirst + 1) * page, tc)
                        done = max(done, dn)
                        bios += 1
                        bbusy += s
                        G[G_BE_READ_BYTES] += (glast - gfirst + 1) * page
                    gu = u
                    gfirst = b
                    glast = b
                # fill
                part = ui[u, U_PART]
                if part < 0:
                    part = 1 if mode == MODE_MCX else 0
                    ui[u, U_PART] = part
                if ui[u, U_FLAGS] & F_CLEAN:
                    dc.lru_remove(ui, G, u)
                if dc.make_room(ui, um, G, part, 1):
                    um[u, UM_VALID] |= bit
                    G[G_USED0 + part] += 1
                if um[u, UM_DIRTY] == 0:
                    if um[u, UM_VALID] != 0:
                        dc.lru_push(ui, G, u, True)
                    else:
                        ui[u, U_PART] = -1
            if gu >= 0:
                dn, s = _read_miss(rgi, ui, dstat, ddyn, dflt, gu, (glast - gfirst + 1) * page, tc)
                done = max(done, dn)
                bios += 1
                bbusy += s
                G[G_BE_READ_BYTES] += (glast - gfirst + 1) * page
            G[G_RPAGES] += rp
            G[G_RHITS] += rh
            G[G_BE_READ_IOS] += bios
        elif o == OP_WRITE:
            G[G_WRITES] += 1
            G[G_WRITE_BYTES] += size[i]
            t_w = tc
            through = False
            for j in range(p0, p1):
                u = punit[j]
                if not (ui[u, U_FLAGS] & F_PLACED):
                    _place(pi, rgi, pool_rgs, pool_nrg, pool_slice, vol, ui, ul, u, v, puno[j], tmp)
                r = ui[u, U_RG]
                if rg_req < 0:
                    rg_req = r
                bit = np.uint64(1) << np.uint64(pbit[j])
                wp += 1
                rgs[r, RS_WPG] += 1
                if ui[u, U_PART] == 0:  # FLARE: a write leaves the read cache
                    dc.evict_unit(ui, um, G, u)
                if um[u, UM_DIRTY] & bit:
                    wh += 1  # coalesced into the dirty page
                    continue
                while True:
                    if ui[u, U_FLAGS] & F_CLEAN:
                        dc.lru_remove(ui, G, u)
                    if ui[u, U_PART] < 0:
                        ui[u, U_PART] = 1
                    if um[u, UM_VALID] & bit or dc.make_room(ui, um, G, 1, 1):
                        break
                    flushes = G[G_FLUSH_OPS]
                    if mode == MODE_FLARE:  # write cache 100 % dirty: forced flush, array stalls
                        t0 = G[G_NOW]
                        G[G_FORCED] = 1
                        _start_flushers(G, rgs, t0)
                        end = _advance(pi, pf, G, rgi, rgs, rgf, win, dstat, ddyn, dflt, vol, ui, ul, um, iwin,
                                       utab, rec, INF, 1)
                        G[G_FORCED] = 0
                        if end < t0:
                            end = t0
                        G[G_STALL_UNTIL] = end
                        G[G_FORCED_N] += 1
                        G[G_FORCED_STALL_NS] += end - t0
                        _record(G, rec, t0, K_STALL, -1, 0, 0, 0, 0, G[G_DIRTY], end - t0, v)
                        if end > t_w:
                            stall += end - t_w
                            t_w = end
                    else:  # MCx pool all dirty: wait for the next flush to complete
                        G[G_EMERG] = 1
                        end = _advance(pi, pf, G, rgi, rgs, rgf, win, dstat, ddyn, dflt, vol, ui, ul, um, iwin,
                                       utab, rec, INF, 2)
                        G[G_EMERG] = 0
                        G[G_FULL_WAITS] += 1
                        if end > t_w:
                            thr += end - t_w
                            t_w = end
                    if G[G_FLUSH_OPS] == flushes:  # nothing left to flush: no room at all
                        through = True
                        break
                if through:  # the cache cannot hold the page: write it through to the drives
                    through = False
                    if um[u, UM_VALID] == 0:
                        ui[u, U_PART] = -1
                    elif um[u, UM_DIRTY] == 0:
                        dc.lru_push(ui, G, u, True)
                    lvl = rgi[r, be.RG_LEVEL]
                    dn, s, k_ios = _write_run(ui, dstat, ddyn, dflt, u, t_w, 2 if (lvl == 5 or lvl == 6) else 1,
                                              page, 1.0)
                    G[G_BE_WRITE_IOS] += k_ios
                    bbusy += s
                    if dn > t_w:
                        t_w = dn
                    continue
                if not (um[u, UM_VALID] & bit):
                    um[u, UM_VALID] |= bit
                    G[G_USED1] += 1
                    if ui[u, U_PART] < 0:
                        ui[u, U_PART] = 1
                if mode == MODE_MCX:
                    adm = dc.throttle_admit(rgs, rgf, r, t_w)
                    if adm > t_w:
                        thr += adm - t_w
                        t_w = adm
                dc.mark_dirty(pi, G, rgs, rgf, vol, ui, ul, um, u, bit, t_w)
                if mode == MODE_FLARE and not G[G_WM] and G[G_DIRTY] >= pi[PI_HWM]:
                    G[G_WM] = 1
                    _start_flushers(G, rgs, G[G_NOW])
            done = max(done, t_w + pi[PI_MIRROR])
            G[G_WPAGES] += wp
            G[G_WHITS] += wh
        else:
            G[G_OTHER] += 1
            if o == OP_TRIM:
                for j in range(p0, p1):
                    u = punit[j]
                    if rg_req < 0 and ui[u, U_FLAGS] & F_PLACED:
                        rg_req = ui[u, U_RG]
                    G[G_TRIM_PAGES] += dc.drop_pages(pi, G, rgs, vol, ui, um, u, np.uint64(1) << np.uint64(pbit[j]))
            # OP_FLUSH (a host cache flush): the write cache is mirrored and battery backed: ack at once
        vol[v, V_LAST] = tc
        dc.vlru_touch(vol, G, v)
        # outputs
        out[O_ARR, i] = arr
        out[O_DONE, i] = done
        out[O_RP, i] = rp
        out[O_RH, i] = rh
        out[O_WP, i] = wp
        out[O_WH, i] = wh
        out[O_STALL, i] = stall
        out[O_THR, i] = thr
        out[O_RG, i] = rg_req
        out[O_BIOS, i] = bios
        out[O_BBUSY, i] = bbusy
        out[O_DIRTY, i] = G[G_DIRTY]
        out[O_RGDIRTY, i] = rgs[rg_req, RS_DPAGES] if rg_req >= 0 else 0
        G[G_REQ] += 1
        G[G_LAT_SUM] += done - arr
        if stall > 0:
            G[G_STALL_NS] += stall
            G[G_STALLED_REQ] += 1
        if thr > 0:
            G[G_THROT_NS] += thr
            G[G_THROT_REQ] += 1
        if done > G[G_LAST_DONE]:
            G[G_LAST_DONE] = done
        if closed:
            hn = G[G_HEAP_N]
            if hn < n_out:
                G[G_HEAP_N] = qk.heap_push(heap, hn, done)
            else:
                qk.heap_replace_top(heap, hn, done)
    return n


# --------------------------------------------------------------------------------------------
# the model object
# --------------------------------------------------------------------------------------------
@dataclass
class ArrayState:
    """Explicit, picklable state of an array replay (see module docstring). ``volume_names``:
    the trace's volume names by dense id (the caller copies them from its ``ChunkBuilder``),
    used to place each volume in its pool; a volume without a name goes to the default pool."""

    pi: np.ndarray
    pf: np.ndarray
    G: np.ndarray
    rgi: np.ndarray
    rgs: np.ndarray
    rgf: np.ndarray
    win: np.ndarray
    dstat: np.ndarray
    ddyn: np.ndarray
    dflt: np.ndarray
    pool_rgs: np.ndarray
    pool_nrg: np.ndarray
    pool_slice: np.ndarray
    vol: np.ndarray
    ui: np.ndarray
    ul: np.ndarray
    um: np.ndarray
    heap: np.ndarray
    iwin: np.ndarray
    rec: np.ndarray
    unit_ids: IdMap = field(default_factory=IdMap)
    volume_names: list[str] = field(default_factory=list)
    n_vol: int = 0
    records: list[np.ndarray] = field(default_factory=list)

    def arrays(self) -> tuple:
        """The state arrays in kernel argument order (STATE_ARRAYS; utab is the unit id table)."""
        return tuple(self.unit_ids.table if n == "utab" else getattr(self, n) for n in STATE_ARRAYS)


def _grow_rows(a: np.ndarray, rows: int, fill) -> np.ndarray:
    new = np.full((rows,) + a.shape[1:], fill, dtype=a.dtype)
    new[: a.shape[0]] = a
    return new


@register
class ArrayModel(Model):
    """A storage array described by a :class:`replay.scenario.Scenario` (see module docstring)."""

    name = "array"

    def __init__(self, scenario: Scenario):
        if not isinstance(scenario, Scenario):
            raise TypeError("ArrayModel takes a replay.scenario.Scenario (see ArrayModel.from_section)")
        self.scenario = scenario
        self.backend = be.build(scenario)

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
        sc = self.scenario
        d = sc.dram
        ba = self.backend
        n_rg = len(sc.raid_groups)
        page = d.page_bytes
        pi = np.zeros(dc.N_PI, dtype=np.int64)
        pf = np.zeros(dc.N_PF, dtype=np.float64)
        pi[PI_MODE] = MODE_MCX if d.mode == "mcx" else MODE_FLARE
        pi[PI_CLOSED] = 1 if sc.replay.mode == "closed" else 0
        pi[PI_OUT] = sc.replay.outstanding
        pi[PI_PAGE] = page
        pi[PI_PPU] = d.pages_per_unit
        pi[PI_UNIT] = d.flush_unit_bytes
        pi[PI_FDEPTH] = d.flush_queue_depth
        pi[PI_ORDER_ADDR] = 1 if d.flush_order == "address" else 0
        wpages = d.write_cache_bytes // page
        pi[PI_HWM] = int(np.ceil(wpages * d.flare.high_watermark_pct / 100.0))
        pi[PI_LWM] = int(wpages * d.flare.low_watermark_pct / 100.0)
        pi[PI_IDLE_AFTER] = int(d.flare.idle_after_ms * 1e6)
        pi[PI_IDLE_OUT] = d.flare.idle_flush_outstanding
        pi[PI_SP_NS] = int(sc.controller.overhead_us * 1e3)
        pi[PI_MIRROR] = int(d.mirror_latency_us * 1e3)
        pi[dc.PI_TICK] = max(1, int(d.mcx.adapt_interval_ms * 1e6))
        pi[PI_PAGE_BITS] = PAGE_BITS
        pf[PF_SP_NS_PER_BYTE] = 1e9 / (sc.controller.bandwidth_mb_per_s * 1e6)
        m = d.mcx
        pf[dc.PF_AGE_MIN] = m.min_age_ms * 1e6
        pf[dc.PF_AGE_MAX] = m.max_age_ms * 1e6
        pf[dc.PF_RATE_ALPHA] = dc.rate_alpha(m.adapt_interval_ms, m.rate_window_ms)
        pf[dc.PF_DIRTY_TARGET] = m.dirty_target_pct / 100.0
        pf[dc.PF_DIRTY_MAX] = m.dirty_max_pct / 100.0
        pf[dc.PF_MIN_FREE] = m.min_free_pct / 100.0
        pf[dc.PF_SMOOTH] = m.age_smoothing
        pf[dc.PF_THR_DRAIN] = m.throttle_drain_ms * 1e6
        pf[dc.PF_RMAX] = m.throttle_ratio_max
        pf[dc.PF_OVER] = m.throttle_overshoot_pct / 100.0
        pf[dc.PF_RMIN] = m.throttle_ratio_min
        pf[dc.PF_TICK_S] = m.adapt_interval_ms / 1e3
        g = np.zeros(dc.N_G, dtype=np.int64)
        g[[G_LH0, G_LT0, G_LH1, G_LT1, G_VH, G_VT]] = -1
        g[G_FIRST_ARR] = -1
        if d.mode == "flare":
            g[G_CAP0] = d.flare.read_cache_bytes // page
            g[G_CAP1] = d.write_cache_bytes // page
        else:
            g[G_CAP1] = d.cache_bytes // page
        g[G_NEXT_TICK] = pi[dc.PI_TICK]
        rgs = np.zeros((n_rg, dc.N_RS), dtype=np.int64)
        rgs[:, [RS_FH, RS_FT, RS_FRONT]] = -1
        rgf = np.zeros((n_rg, dc.N_RF), dtype=np.float64)
        rgf[:, RF_AGE] = m.initial_age_ms * 1e6
        win_cols = int(d.flush_queue_depth * ba.rgi[:, be.RG_WIDTH].max())
        n_drives = ba.dstat.shape[0]
        state = ArrayState(
            pi=pi, pf=pf, G=g, rgi=ba.rgi.copy(), rgs=rgs, rgf=rgf,
            win=np.zeros((n_rg, win_cols), dtype=np.int64),
            dstat=ba.dstat.copy(),
            ddyn=np.zeros((n_drives, qk.N_DD), dtype=np.int64),
            dflt=np.tile(np.array([0.0, 1.0, 0.0]), (n_drives, 1)),
            pool_rgs=ba.pool_rgs.copy(), pool_nrg=ba.pool_nrg.copy(), pool_slice=ba.pool_slice.copy(),
            vol=self._new_vol_rows(0),
            ui=np.full((0, dc.N_U), -1, dtype=np.int32),
            ul=np.zeros((0, dc.N_UL), dtype=np.int64),
            um=np.zeros((0, 2), dtype=np.uint64),
            heap=np.zeros(max(1, sc.replay.outstanding), dtype=np.int64),
            iwin=np.zeros(max(1, d.flare.idle_flush_outstanding), dtype=np.int64),
            rec=np.zeros((1 << 16, N_REC), dtype=np.int64),  # grows when one request could overflow it
        )
        return state

    @staticmethod
    def _new_vol_rows(n: int) -> np.ndarray:
        v = np.zeros((n, dc.N_V), dtype=np.int64)
        v[:, [dc.V_FH, dc.V_FT, dc.V_LP, dc.V_LN]] = -1
        return v

    def _ensure_volumes(self, state: ArrayState, n_vol: int) -> None:
        if n_vol <= state.n_vol:
            return
        if state.vol.shape[0] < n_vol:
            rows = self._new_vol_rows(max(n_vol, 2 * state.vol.shape[0]))
            rows[: state.vol.shape[0]] = state.vol
            state.vol = rows
        sc = self.scenario
        for vid in range(state.n_vol, n_vol):
            name = state.volume_names[vid] if vid < len(state.volume_names) else f"#{vid}"
            p = sc.pool_of_volume(name)
            state.vol[vid, V_POOL] = p
            state.vol[vid, V_BASE] = vid % len(sc.pools[p].raid_groups)
        state.n_vol = n_vol

    def _ensure_units(self, state: ArrayState, n_units: int) -> None:
        have = state.ui.shape[0]
        if n_units <= have:
            return
        rows = max(n_units, 2 * have, 1024)
        ui = _grow_rows(state.ui, rows, -1)
        ui[have:, dc.U_FLAGS] = 0
        state.ui = ui
        ul = _grow_rows(state.ul, rows, 0)
        ul[have:, UL_SFIRST] = -1
        state.ul = ul
        state.um = _grow_rows(state.um, rows, np.uint64(0))

    # -- replay ---------------------------------------------------------------------------
    def prepare(self, state: ArrayState, chunk: Chunk):
        """Per-page unit ids, page bits and unit numbers; per-request page offsets."""
        if chunk.page_size != self.page_bytes:
            raise ValueError(f"array: chunk has {chunk.page_size} B pages, the scenario's cache uses "
                             f"{self.page_bytes} B pages")
        ppu = self.scenario.dram.pages_per_unit
        shift = ppu.bit_length() - 1
        unit_no = chunk.page_no >> shift
        vol = chunk.volume[chunk.page_req].astype(np.int64)
        keys = (vol << PAGE_BITS) | unit_no
        unit = state.unit_ids.assign(keys)
        pbit = (chunk.page_no & (ppu - 1)).astype(np.int64)
        counts = chunk.pages_per_request()
        pstart = np.zeros(chunk.n_requests + 1, dtype=np.int64)
        np.cumsum(counts, out=pstart[1:])
        return unit, pbit, unit_no, pstart

    def replay(self, state: ArrayState, chunk: Chunk) -> Outcomes:
        n = chunk.n_requests
        out = np.empty((N_O, n), dtype=np.int64)  # one contiguous row per outcome, all written
        if n:
            self._ensure_volumes(state, int(chunk.volume.max()) + 1)
            unit, pbit, unit_no, pstart = self.prepare(state, chunk)
            self._ensure_units(state, state.unit_ids.n_ids)
            state.pi[PI_ID_SHIFT] = state.unit_ids.shift
            i = 0
            ts = np.ascontiguousarray(chunk.ts_ns, dtype=np.int64)
            op = np.ascontiguousarray(chunk.op, dtype=np.uint8)
            vol = np.ascontiguousarray(chunk.volume, dtype=np.int32)
            size = np.ascontiguousarray(chunk.size_bytes, dtype=np.int64)
            tmp = np.zeros(be.N_UP, dtype=np.int64)
            while i < n:
                nxt = run_requests(*state.arrays(), i, ts, op, vol, size, pstart, unit, pbit, unit_no, out, tmp)
                if nxt == i and state.G[G_REC_N] == 0:  # one request may need more room than the buffer
                    state.rec = np.zeros((2 * state.rec.shape[0], N_REC), dtype=np.int64)
                i = nxt
                self._stash_records(state)
        return {name: out[k] for k, name in enumerate(OUTCOMES)}

    def _stash_records(self, state: ArrayState) -> None:
        r = int(state.G[G_REC_N])
        if r:
            state.records.append(state.rec[:r].copy())
            state.G[G_REC_N] = 0

    def drain_records(self, state: ArrayState) -> dict[str, np.ndarray]:
        """Flush and forced-flush records produced since the last drain (columns REC_COLUMNS)."""
        self._stash_records(state)
        if state.records:
            block = np.concatenate(state.records)
        else:
            block = np.zeros((0, N_REC), dtype=np.int64)
        state.records = []
        return {name: np.ascontiguousarray(block[:, k]) for k, name in enumerate(REC_COLUMNS)}

    def counters(self, state: ArrayState) -> dict[str, int | float]:
        c: dict[str, int | float] = {k: int(state.G[i]) for k, i in dc.GLOBAL_COUNTERS.items()}
        c["write_cache_pages"] = int(state.G[G_CAP1])
        c["read_cache_pages"] = int(state.G[G_CAP0])
        c["cached_pages"] = int(state.G[G_USED0] + state.G[G_USED1])
        c["dirty_units"] = int(state.G[G_DUNITS])
        c["read_hit_ratio"] = c["read_hit_pages"] / c["read_pages"] if c["read_pages"] else 0.0
        c["write_hit_ratio"] = c["write_hit_pages"] / c["write_pages"] if c["write_pages"] else 0.0
        c["drive_busy_ns"] = int(state.ddyn[:, qk.DD_BUSY].sum())
        return c

    def rg_counters(self, state: ArrayState) -> list[dict[str, int | float]]:
        """Per RAID group: flush ops/pages, back-end write I/Os, drive busy time, current
        pre-cleaning age (MCx) and dirty pages."""
        out = []
        for gi, rg in enumerate(self.scenario.raid_groups):
            d0, w = int(state.rgi[gi, be.RG_DRIVE0]), int(state.rgi[gi, be.RG_WIDTH])
            out.append({
                "rg": rg.name,
                "flush_ops": int(state.rgs[gi, RS_FLUSH_OPS]),
                "flush_pages": int(state.rgs[gi, RS_FLUSH_PAGES]),
                "backend_write_ios": int(state.rgs[gi, RS_BE_IOS]),
                "drive_busy_ns": int(state.ddyn[d0:d0 + w, qk.DD_BUSY].sum()),
                "dirty_pages": int(state.rgs[gi, RS_DPAGES]),
                "pre_cleaning_age_ms": float(state.rgf[gi, RF_AGE]) / 1e6,
            })
        return out
