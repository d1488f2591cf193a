"""FAST VP auto-tiering (seed 000; docs/models/sources.md#fast-vp-tiering): slices of a pool move between
tiers of RAID groups by temperature.

**Layout.** The tiered pool's RAID groups form tiers by drive class (``DriveClass.fast_vp_tier``:
flash = extreme performance, 10k/15k SAS = performance, NL-SAS = capacity). A volume of the pool
is cut into slices of the pool's ``slice_bytes`` (256 MB on VNX2, 1 GB on VNX1); each slice lives
on one RAID group, ``BackendState.slice_rg[gid]``, read by ``replay.mech.backend.kernel.place_unit``. A slice
is allocated when a request first touches it (thin LUNs; an untouched slice takes no space and no
I/O), by its volume's policy:

* ``highest_available`` and ``start_high_then_auto_tier``: the highest tier with room;
* ``lowest_available``: the lowest tier with room;
* ``auto_tier``: the tier with the largest free share, so new data spreads over all tiers (doc:
  Auto-Tier "distributes the data over all available storage tiers");

"room" keeps ``free_pct`` of the tier free; when every tier is at that limit the reserve is used,
and when the pool is full the slice overcommits the least full group (``tier_overcommitted``).
Inside a tier the group with the fewest allocated slices (share of capacity) takes it.

**Temperature and relocation.** The kernel counts each slice's I/Os (a request counts for the slice
of its first byte, as :mod:`replay.skew` does, in the ranking interval of its issue time). Every
``rank_interval_s`` of simulated time it stops and :meth:`Tiering.rank` decays the temperatures, ``T = T * 0.5 ** (interval / half_life)
+ I/Os``, vectorized over all slices. At each window start the planner (:meth:`Tiering.plan`)
ranks the allocated slices (policy class first: highest-available above auto-tier slices; then
temperature), gives each the tier its rank earns by filling tiers from the top up to their
``free_pct`` limits (lowest-available slices fill from the bottom and never rise), and orders the
moves: promotions hottest first, each preceded by the demotions its target tier needs for room,
then the remaining demotions, then rebalancing inside each tier (the hottest slice that evens out
the hottest and coolest group, until no group is more than ``rebalance_tolerance_pct`` above
the tier's mean). A promotion that needs a demotion for room happens only if the slice is
``promote_margin_pct`` hotter than the one it displaces (equals do not swap places every day);
demotions that free no needed room happen only while a tier is above its free-space limit.
Moves start ``slice_bytes / relocation_mb_per_s`` apart, as many as end inside the window;
slices left off their target tier are counted (``deferred``), and a plan that a new window
replaces before it finished counts its remaining moves as ``dropped``.

**Moves in the kernel.** A move copies its slice in pieces of :data:`PIECE_BYTES` at the
relocation rate: sequential background reads on the source group's drives and full-stripe writes
on the target's, through the same drive queues as host I/O (so relocation load shows in response
times). When the last piece is written the slice switches group, and the DRAM cache forgets the
placement of its units (``dram_cache.forget_placement``; a dirty unit is destaged to the old
group once, then placed anew). Each move leaves a ``relocation`` record.

State: :class:`TierState` (slices as a structured array ``slices[gid]``, the plan, counters ``c``);
the slice -> RAID group map and each volume's first slice id are back-end placement
(``BackendState.slice_rg``, ``vol_slice0``). Slice ids of a volume are contiguous and reserved in
powers of two; :meth:`Tiering.ensure` re-lays them out (between kernel calls) when a volume grows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from replay.events import INF, append, room
from replay.jit import kernel
from replay.layout import record
from replay.mech.backend import kernel as be
from replay.mech.backend.schema import TIER_NAMES
from replay.mech.dram_cache import kernel as dc
from replay.mech.tiering.schema import POLICIES as TIER_POLICIES
from replay.scenario import Scenario

I4, I8, F8 = np.int32, np.int64, np.float64

#: a relocation copies its slice in pieces of this size (one background read / write per drive each)
PIECE_BYTES = 8 << 20
#: policy classes in the ranking (higher ranks first); lowest-available slices fill from the bottom
POLICY_CLASS = {"highest_available": 2, "auto_tier": 1, "start_high_then_auto_tier": 1, "lowest_available": 0}
POL_HIGHEST, POL_AUTO, POL_START_HIGH, POL_LOWEST = range(4)
MOVE_KINDS = ("promotion", "demotion", "rebalance")
COUNTERS = ("allocated", "overcommitted", "moves", "promotions", "demotions", "rebalances", "moved_bytes",
            "relocation_ios", "relocation_busy_ns", "windows", "deferred", "dropped")

#: A slice (``TierState.slices``, indexed by slice id).
SLICE = record([
    ("no", I8),  # slice number within its volume (-1: a reserved, unused id)
    ("ios", I8),  # I/Os since the last ranking
    ("total_ios", I8),
    ("alloc_ns", I8),  # allocation time
    ("temp", F8),  # temperature after the last ranking
    ("vol", I4),
    ("policy", I4),  # POL_* of its volume
    ("first_rg", I4),  # allocation group (-1: not allocated)
    ("moves", I4),
])

#: Counters and the relocation clock (one record, ``TierState.c``).
TIER = record([(n, I8) for n in (
    "next_rank_ns",  # the kernel stops for a ranking when the simulated time reaches it
    "rank_due",  # set by the kernel when it stopped for that
    "late_gid", "late_ns",  # the one I/O issued after next_rank_ns before the kernel stopped (-1: none)
    "ranks",
    "plan_n", "plan_k", "piece",  # the plan: moves, the next one, its next piece
    "next_move_ns",  # when the next piece is due (INF: none)
    "window", "windows",  # index of the next window; windows planned
    "allocated", "overcommitted",
    "moves", "promotions", "demotions", "rebalances", "moved_bytes", "relocation_ios", "relocation_busy_ns",
    "dropped",  # planned moves the window ended before
    "deferred",  # slices left off their target tier (rate budget, promotion margin, no room)
    "move_ios", "move_busy_ns",  # of the move in progress
)])


class TierParams(NamedTuple):
    """Immutable parameters (``on`` = 0: no FAST VP)."""

    on: int
    pool: int
    slice_bytes: int  # bytes
    units_per_slice: int  # DRAM flush units per slice
    piece_bytes: int  # bytes per relocation piece
    pieces: int  # pieces per slice
    piece_ns: int  # one piece at the relocation rate
    rg_tier: np.ndarray  # int32 per RAID group: tier index (TIER_NAMES), -1 outside the tiered pool
    rg_cap: np.ndarray  # int64 per RAID group: slices it holds
    rg_limit: np.ndarray  # int64 per RAID group: slices before the free reserve
    tier_rgs: np.ndarray  # int32 [3, max groups] (-1 padded)
    tier_nrg: np.ndarray  # int32 [3]


class TierState(NamedTuple):
    slices: np.ndarray  # SLICE [n_ids] (grows)
    rg_used: np.ndarray  # int64 per RAID group: slices allocated on it
    vol_cap: np.ndarray  # int64 per volume: slice ids reserved (0: not in the tiered pool)
    vol_policy: np.ndarray  # int32 per volume: POL_*
    plan_ts: np.ndarray  # int64 per move: start
    plan_vol: np.ndarray  # int32 per move
    plan_no: np.ndarray  # int64 per move: slice number in the volume
    plan_rg: np.ndarray  # int32 per move: target group
    c: np.ndarray  # TIER [1]


def new_slices(n: int) -> np.ndarray:
    s = np.zeros(n, SLICE)
    s["vol"] = -1
    s["no"] = -1
    s["first_rg"] = -1
    return s


# --------------------------------------------------------------------------------------------
# kernel side
# --------------------------------------------------------------------------------------------
@kernel
def slices_needed(vol, unit_no, units_per_slice, top):
    """``top[v]`` = at least 1 + the highest slice number of volume v among the pages (a loop:
    ``np.maximum.at`` costs ~10x more per page)."""
    for i in range(vol.shape[0]):
        s = unit_no[i] // units_per_slice + 1
        if s > top[vol[i]]:
            top[vol[i]] = s


@kernel
def allocate(tp, ts, bs, gid, t):
    """Place a new slice by its policy (module docstring); returns its RAID group."""
    pol = ts.slices[gid].policy
    best = -1
    for phase in range(3):  # 0: within the free reserve, 1: into it, 2: overcommit
        best_score = 1e300
        for k in range(3):
            tier = 2 - k if pol == POL_LOWEST else k
            if tp.tier_nrg[tier] == 0:
                continue
            used = 0
            lim = 0
            for j in range(tp.tier_nrg[tier]):
                r = tp.tier_rgs[tier, j]
                used += ts.rg_used[r]
                lim += tp.rg_limit[r] if phase == 0 else tp.rg_cap[r]
            if phase < 2 and used >= lim:
                continue
            # auto-tier spreads (the emptiest tier); the others take the first tier in their order
            score = (used / lim if lim > 0 else 1e9) if (pol == POL_AUTO or phase == 2) else float(k)
            if score < best_score:
                best_score = score
                best = tier
        if best >= 0:
            if phase == 2:
                ts.c[0].overcommitted += 1
            break
    g = -1
    gs = 1e300
    for j in range(tp.tier_nrg[best]):
        r = tp.tier_rgs[best, j]
        share = ts.rg_used[r] / tp.rg_cap[r]
        if share < gs:
            gs = share
            g = r
    ts.rg_used[g] += 1
    bs.slice_rg[gid] = g
    sl = ts.slices[gid]
    sl.alloc_ns = t
    sl.first_rg = g
    ts.c[0].allocated += 1
    return g


@kernel
def touch(tp, ts, bs, v, u_first, u_last, t):
    """A data request to volume v covering DRAM units ``u_first..u_last`` at t: allocate the
    slices it reaches, count one I/O for the slice of its first byte."""
    g0 = bs.vol_slice0[v]
    if g0 < 0:
        return
    s0 = u_first // tp.units_per_slice
    s1 = u_last // tp.units_per_slice
    for s in range(s0, s1 + 1):
        if bs.slice_rg[g0 + s] < 0:
            allocate(tp, ts, bs, g0 + s, t)
    sl = ts.slices[g0 + s0]
    sl.total_ios += 1
    c = ts.c[0]
    if t >= c.next_rank_ns:  # belongs to a later ranking interval (the kernel stops before the next request)
        c.late_gid = g0 + s0
        c.late_ns = t
    else:
        sl.ios += 1


@kernel
def relocate(tp, ts, dp, ds, bp, bs, rlog, utab, shift, now):
    """Run the plan's pieces due by ``now`` (each at its own time); a slice switches group when
    its last piece is written. Stops early when the relocation log is full (then ``next_move_ns``
    is still due: the caller drains the logs and calls again)."""
    c = ts.c[0]
    while c.plan_k < c.plan_n and room(rlog, 1):
        k = c.plan_k
        t = ts.plan_ts[k] + c.piece * tp.piece_ns
        if t > now:
            break
        v = ts.plan_vol[k]
        s = ts.plan_no[k]
        gid = bs.vol_slice0[v] + s
        src = bs.slice_rg[gid]
        dst = ts.plan_rg[k]
        done, busy, ios = be.copy_piece(bp, bs, src, dst, t, tp.piece_bytes)
        c.relocation_ios += ios
        c.relocation_busy_ns += busy
        c.move_ios += ios
        c.move_busy_ns += busy
        c.piece += 1
        if c.piece == tp.pieces:
            bs.slice_rg[gid] = dst
            ts.rg_used[src] -= 1
            ts.rg_used[dst] += 1
            ts.slices[gid].moves += 1
            dc.forget_placement(dp, ds, utab, shift, v, s * tp.units_per_slice, tp.units_per_slice)
            t0 = ts.plan_ts[k]
            x = rlog.rows[append(rlog)]
            x.ts_ns = t0
            x.volume = v
            x.slice = s
            x.source_rg = src
            x.target_rg = dst
            x.bytes = tp.slice_bytes
            x.ios = c.move_ios
            x.busy_ns = c.move_busy_ns
            x.copy_ns = done - t0
            c.move_ios = 0
            c.move_busy_ns = 0
            c.moves += 1
            c.moved_bytes += tp.slice_bytes
            st = tp.rg_tier[src]
            dt = tp.rg_tier[dst]
            if dt < st:
                c.promotions += 1
            elif dt > st:
                c.demotions += 1
            else:
                c.rebalances += 1
            c.piece = 0
            c.plan_k += 1
    c.next_move_ns = ts.plan_ts[c.plan_k] + c.piece * tp.piece_ns if c.plan_k < c.plan_n else INF


# --------------------------------------------------------------------------------------------
# Python side: parameters, layout, ranking, planning
# --------------------------------------------------------------------------------------------
def params(sc: Scenario) -> TierParams:
    return Tiering(sc).params


def new_state(sc: Scenario, p) -> TierState:
    """``p``: every mechanism's parameters (``replay.array.Params``)."""
    tp = p.tiering
    c = np.zeros(1, TIER)
    c["next_rank_ns"] = round(sc.tiering.rank_interval_s * 1e9) if tp.on else INF
    c["late_gid"] = -1
    c["next_move_ns"] = INF
    z8 = np.zeros(0, dtype=I8)
    return TierState(slices=new_slices(0), rg_used=np.zeros(tp.rg_tier.shape[0], dtype=I8),
                     vol_cap=np.zeros(0, dtype=I8), vol_policy=np.zeros(0, dtype=I4), plan_ts=z8,
                     plan_vol=np.zeros(0, dtype=I4), plan_no=z8, plan_rg=np.zeros(0, dtype=I4), c=c)


def counters(sc: Scenario, p, state) -> dict[str, int]:
    """``tier_*``: slices allocated and overcommitted, relocations by kind, bytes and I/Os moved,
    windows planned, slices deferred and moves dropped."""
    c = state.tiering.c[0]
    return {f"tier_{k}": int(c[k]) for k in COUNTERS}


class Tiering:
    """FAST VP of one scenario: builds :class:`TierParams`, lays out slice ids, ranks and plans."""

    def __init__(self, sc: Scenario):
        unit_bytes = sc.dram.flush_unit_bytes
        self.scenario = sc
        self.cfg = sc.tiering
        n_rg = len(be.raid_groups(sc))
        rg_tier = np.full(n_rg, -1, dtype=I4)
        rg_cap = np.zeros(n_rg, dtype=I8)
        rg_limit = np.zeros(n_rg, dtype=I8)
        tier_rgs = np.full((3, max(1, n_rg)), -1, dtype=I4)
        tier_nrg = np.zeros(3, dtype=I4)
        if self.cfg is None:
            self.params = TierParams(0, -1, 1, 1, 1, 1, 1, rg_tier, rg_cap, rg_limit, tier_rgs, tier_nrg)
            return
        pool = sc.pools[sc.pool_index(self.cfg.pool)]
        sl = pool.slice_bytes
        for name in pool.raid_groups:
            r = sc.rg_index(name)
            rg = sc.raid_groups[r]
            tier = TIER_NAMES.index(sc.rg_tier(rg))
            rg_tier[r] = tier
            rg_cap[r] = sc.drive_classes[rg.drive_class].capacity_bytes * rg.data_drives // sl
            rg_limit[r] = int(rg_cap[r] * (1.0 - self.cfg.free_pct / 100.0))
            tier_rgs[tier, tier_nrg[tier]] = r
            tier_nrg[tier] += 1
        piece = min(PIECE_BYTES, sl)
        rate = self.cfg.relocation_mb_per_s * 1e6
        self.params = TierParams(
            on=1, pool=sc.pool_index(self.cfg.pool), slice_bytes=sl, units_per_slice=sl // unit_bytes,
            piece_bytes=piece, pieces=sl // piece, piece_ns=max(1, round(piece / rate * 1e9)),
            rg_tier=rg_tier, rg_cap=rg_cap, rg_limit=rg_limit, tier_rgs=tier_rgs, tier_nrg=tier_nrg,
        )
        self.rank_ns = round(self.cfg.rank_interval_s * 1e9)
        self.decay = 0.5 ** (self.cfg.rank_interval_s / 3600.0 / self.cfg.half_life_h)
        self.move_ns = self.params.pieces * self.params.piece_ns

    @property
    def on(self) -> bool:
        return bool(self.params.on)

    # -- slice ids ------------------------------------------------------------------------
    def ensure(self, ts: TierState, bs: be.BackendState, vol_pool: np.ndarray, volume_names: list[str],
               need: dict[int, int]) -> tuple[TierState, be.BackendState]:
        """Reserve slice ids so that volume v (of the tiered pool) has at least ``need[v]`` slices;
        re-lays out every volume's ids when one grows (powers of two). Returns the new states."""
        n_vol = vol_pool.shape[0]
        cap = np.zeros(n_vol, dtype=I8)
        cap[: ts.vol_cap.shape[0]] = ts.vol_cap
        grow = False
        for v, n in need.items():
            if vol_pool[v] != self.params.pool:
                continue
            if n > cap[v]:
                cap[v] = 1 << max(0, int(n - 1).bit_length())
                grow = True
        if not grow and n_vol == ts.vol_cap.shape[0]:
            return ts, bs
        policy = np.zeros(n_vol, dtype=I4)
        policy[: ts.vol_policy.shape[0]] = ts.vol_policy
        for v in range(ts.vol_policy.shape[0], n_vol):
            name = volume_names[v] if v < len(volume_names) else f"#{v}"
            policy[v] = TIER_POLICIES.index(self.cfg.policy_of(name))
        start = np.full(n_vol, -1, dtype=I8)
        tiered = cap > 0
        start[tiered] = np.concatenate([[0], np.cumsum(cap[tiered])[:-1]]) if tiered.any() else []
        total = int(cap.sum())
        slices = new_slices(total)
        slice_rg = np.full(total, -1, dtype=I4)
        old0 = bs.vol_slice0
        for v in np.flatnonzero(tiered):
            lo = int(start[v])
            slices["vol"][lo: lo + cap[v]] = v
            slices["no"][lo: lo + cap[v]] = np.arange(cap[v])
            slices["policy"][lo: lo + cap[v]] = policy[v]
            if v < ts.vol_cap.shape[0] and ts.vol_cap[v] > 0:
                o, n = int(old0[v]), int(ts.vol_cap[v])
                slices[lo: lo + n] = ts.slices[o: o + n]
                slice_rg[lo: lo + n] = bs.slice_rg[o: o + n]
        ts = ts._replace(slices=slices, vol_cap=cap, vol_policy=policy)
        bs = bs._replace(slice_rg=slice_rg, vol_slice0=start)
        return ts, bs

    # -- ranking and planning (between kernel calls) ---------------------------------------
    def rank(self, ts: TierState, bs: be.BackendState, now_ns: int) -> TierState:
        """Every ranking interval passed by ``now_ns``: decay the temperatures and add the I/Os
        since the last one; at a window start, plan the window's moves. Returns the new state."""
        c = ts.c[0]
        sl = ts.slices
        while c["next_rank_ns"] <= now_ns:
            sl["temp"] = sl["temp"] * self.decay + sl["ios"]
            sl["ios"] = 0
            t = int(c["next_rank_ns"])
            c["ranks"] += 1
            c["next_rank_ns"] = t + self.rank_ns
            if c["late_gid"] >= 0 and c["late_ns"] < c["next_rank_ns"]:
                sl["ios"][c["late_gid"]] += 1
                c["late_gid"] = -1
            w = int(c["window"])
            w_start = self.window_start_ns(w)
            if t >= w_start:
                c["window"] = w + 1 + max(0, (t - w_start) // self.window_every_ns())
                ts = self.plan(ts, bs, max(t, w_start), w_start + round(self.cfg.window_hours * 3600e9))
                c = ts.c[0]
        c["rank_due"] = 0
        return ts

    def window_start_ns(self, w: int) -> int:
        return round(self.cfg.window_start_h * 3600e9) + w * self.window_every_ns()

    def window_every_ns(self) -> int:
        return round(self.cfg.window_every_h * 3600e9)

    def targets(self, rg: np.ndarray, temp: np.ndarray, policy: np.ndarray) -> np.ndarray:
        """Target tier of each allocated slice (vectorized): tiers filled from the top up to their
        limits in rank order (policy class, then temperature); lowest-available slices from the
        bottom; the last tier with groups takes any overflow."""
        tp = self.params
        limit = np.array([tp.rg_limit[tp.tier_rgs[k, : tp.tier_nrg[k]]].sum() for k in range(3)], dtype=I8)
        target = np.empty(rg.shape[0], dtype=I4)
        low = policy == POL_LOWEST
        present = [k for k in range(3) if tp.tier_nrg[k]]
        # lowest available: bottom up
        n_low = int(low.sum())
        room = limit.copy()
        if n_low:
            order = np.argsort(-temp[low], kind="stable")
            bounds = np.cumsum([room[k] for k in present[::-1]])
            idx = np.minimum(np.searchsorted(bounds, np.arange(n_low), side="right"), len(present) - 1)
            tiers = np.array(present[::-1], dtype=I4)[idx]
            t_low = np.empty(n_low, dtype=I4)
            t_low[order] = tiers
            target[low] = t_low
            for k in present:
                room[k] = max(0, room[k] - int((t_low == k).sum()))
        rest = ~low
        n_rest = int(rest.sum())
        if n_rest:
            cls = np.array([POLICY_CLASS[p] for p in TIER_POLICIES])[policy[rest]]
            order = np.lexsort((-temp[rest], -cls))
            bounds = np.cumsum([room[k] for k in present])
            idx = np.minimum(np.searchsorted(bounds, np.arange(n_rest), side="right"), len(present) - 1)
            t_rest = np.empty(n_rest, dtype=I4)
            t_rest[order] = np.array(present, dtype=I4)[idx]
            target[rest] = t_rest
        return target

    def plan(self, ts: TierState, bs: be.BackendState, start_ns: int, end_ns: int) -> TierState:
        """``ts`` with the window's moves (module docstring) as its plan."""
        tp = self.params
        c = ts.c[0]
        c["windows"] += 1
        gids = np.flatnonzero(bs.slice_rg >= 0)
        if gids.size == 0:
            return ts
        sl = ts.slices[gids]
        rg = bs.slice_rg[gids].astype(I4)
        temp = sl["temp"]
        cur = tp.rg_tier[rg]
        target = self.targets(rg, temp, sl["policy"])
        used = ts.rg_used.copy()
        heat = np.bincount(rg, weights=temp, minlength=used.shape[0]).astype(F8)
        budget = max(0, (end_ns - start_ns) // self.move_ns)
        moves: list[tuple[int, int]] = []  # (index into gids, target group)
        where = rg.copy()

        tier_limit = [int(tp.rg_limit[tp.tier_rgs[k, : tp.tier_nrg[k]]].sum()) for k in range(3)]

        def pick_group(tier: int) -> int:
            """The group of ``tier`` with room inside its free-space limit and the least heat
            (-1: none): moves never eat into the reserve."""
            best, best_heat = -1, np.inf
            for r in tp.tier_rgs[tier, : tp.tier_nrg[tier]]:
                if used[r] < tp.rg_limit[r] and heat[r] < best_heat:
                    best, best_heat = int(r), heat[r]
            return best

        def move(i: int, r: int) -> None:
            used[where[i]] -= 1
            heat[where[i]] -= temp[i]
            used[r] += 1
            heat[r] += temp[i]
            where[i] = r
            moves.append((i, r))

        low = sl["policy"] == POL_LOWEST
        downs = {}
        for k in range(3):
            cand = np.flatnonzero((cur == k) & (target > k))
            downs[k] = [int(i) for i in cand[np.argsort(temp[cand], kind="stable")]]
        margin = 1.0 + self.cfg.promote_margin_pct / 100.0

        def demote(tier: int, hotter_than: float, depth: int = 0) -> bool:
            """Demote the coldest slice of ``tier`` that should go down, if it is colder than
            ``hotter_than`` by the margin (recursively making room below)."""
            while downs[tier]:
                i = downs[tier][0]
                if where[i] != rg[i]:
                    downs[tier].pop(0)
                    continue
                if temp[i] * margin >= hotter_than and not low[i]:
                    return False
                downs[tier].pop(0)
                to = int(target[i])
                r = pick_group(to)
                if r < 0 and depth < 2 and demote(to, np.inf, depth + 1):
                    r = pick_group(to)
                if r < 0:
                    return False
                move(i, r)
                return True
            return False

        ups = np.flatnonzero(target < cur)
        for i in ups[np.argsort(-temp[ups], kind="stable")]:
            if len(moves) >= budget:
                break
            to = int(target[i])
            r = pick_group(to)
            if r < 0:
                if not demote(to, temp[i]) or len(moves) >= budget:
                    continue
                r = pick_group(to)
            if r >= 0:
                move(int(i), r)
        # then what must go down: a tier above its free-space limit, lowest-available slices
        for k in range(3):
            while downs[k] and len(moves) < budget:
                over = used[tp.tier_rgs[k, : tp.tier_nrg[k]]].sum() > tier_limit[k]
                if not demote(k, np.inf if over else -1.0):
                    break
        if self.cfg.rebalance:
            self._rebalance(tp, where, temp, used, heat, moves, budget, move)
        c["deferred"] += int((target != tp.rg_tier[where]).sum())
        idx = np.array([m[0] for m in moves], dtype=np.int64)
        return self._set_plan(ts, start_ns + np.arange(len(moves), dtype=I8) * self.move_ns,
                              sl["vol"][idx].astype(I4), sl["no"][idx].astype(I8),
                              np.array([m[1] for m in moves], dtype=I4))

    def _rebalance(self, tp, where, temp, used, heat, moves, budget, move) -> None:
        tol = 1.0 + self.cfg.rebalance_tolerance_pct / 100.0
        for k in range(3):
            groups = [int(r) for r in tp.tier_rgs[k, : tp.tier_nrg[k]]]
            if len(groups) < 2:
                continue
            while len(moves) < budget:
                hot = max(groups, key=lambda r: heat[r])
                cool = min(groups, key=lambda r: heat[r])
                mean = sum(heat[r] for r in groups) / len(groups)
                if mean <= 0 or heat[hot] <= mean * tol or used[cool] >= tp.rg_limit[cool]:
                    break
                gap = (heat[hot] - heat[cool]) / 2.0
                cand = np.flatnonzero((where == hot) & (temp <= gap) & (temp > 0))
                if cand.size == 0:
                    break
                move(int(cand[np.argmax(temp[cand])]), cool)

    @staticmethod
    def _set_plan(ts: TierState, plan_ts, plan_vol, plan_no, plan_rg) -> TierState:
        """``ts`` with a new plan (unfinished moves of the previous one are dropped: its window
        ended)."""
        c = ts.c[0]
        if c["plan_k"] < c["plan_n"]:
            c["dropped"] += int(c["plan_n"] - c["plan_k"])
        c["plan_n"] = plan_ts.shape[0]
        c["plan_k"] = 0
        c["piece"] = 0
        c["next_move_ns"] = int(plan_ts[0]) if plan_ts.shape[0] else INF
        return ts._replace(plan_ts=plan_ts, plan_vol=plan_vol, plan_no=plan_no, plan_rg=plan_rg)
