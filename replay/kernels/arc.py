"""ARC (Megiddo & Modha, FAST'03): two resident LRU lists T1/T2, two ghost lists B1/B2, target p.

All four lists are doubly linked over dense page ids and share one ``prev``/``next`` pair (a
page is in at most one list); ``where`` says which. This follows libCacheSim's ``ARC`` step by
step, including its choices where the paper leaves room:

* a ghost hit in B1 raises ``p`` by ``max(|B2|/|B1|, 1)`` (capped at the capacity), one in B2
  lowers it by ``max(|B1|/|B2|, 1)`` (floored at 0), sizes taken before the ghost is removed;
  the page is then a miss and is inserted at the head of T2; if the cache is full, REPLACE
  runs first;
* REPLACE demotes the T1 tail to B1 if ``|T1| > 0 and (|T1| > p or (|T1| == p and the hit was
  in B2))`` or if T2 is empty, else the T2 tail to B2;
* a miss in all four lists on a full cache (case IV): if ``|T1| + |B1| + 1 > c`` then, if B1
  is not empty, drop the B1 tail and REPLACE, else drop the T1 tail without a ghost; otherwise
  drop the B2 tail when ``|T1|+|T2|+|B1|+|B2| >= 2c`` (and B2 is not empty), then REPLACE.
  The page goes to the head of T1;
* nothing is evicted while the cache is not full (as in libCacheSim, which evicts only to make
  room).
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

T1, T2, B1, B2 = 1, 2, 3, 4  # values of ``where`` (0: in no list)
# meta slots: head of list L at L-1, tail at 4+L-1, length at 8+L-1; fmeta[0] is p.
# The kernel keeps them in local variables (helpers return the new head/tail) so the compiler
# can hold them in registers: read from the meta array on every access, ARC ran 5x slower.
# The helpers are plain njit functions that LLVM inlines; numba's inline="always" (IR-level
# inlining) made the same code 3x slower.


@njit
def _unlink(x, prev, nxt, head, tail):
    p = prev[x]
    n = nxt[x]
    if p >= 0:
        nxt[p] = n
    else:
        head = n
    if n >= 0:
        prev[n] = p
    else:
        tail = p
    return head, tail


@njit
def _push(x, prev, nxt, head, tail):
    prev[x] = -1
    nxt[x] = head
    if head >= 0:
        prev[head] = x
    else:
        tail = x
    return x, tail


@njit
def arc_access(page_ids, hit, prev, nxt, where, meta, fmeta, capacity):
    c = capacity
    h1, h2, hb1, hb2 = meta[0], meta[1], meta[2], meta[3]
    t1, t2, tb1, tb2 = meta[4], meta[5], meta[6], meta[7]
    n1, n2, nb1, nb2 = meta[8], meta[9], meta[10], meta[11]
    p = fmeta[0]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(where, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        w = where[x]
        if w == T1:
            hit[i] = 1
            h1, t1 = _unlink(x, prev, nxt, h1, t1)
            n1 -= 1
            h2, t2 = _push(x, prev, nxt, h2, t2)
            n2 += 1
            where[x] = T2
            continue
        if w == T2:
            hit[i] = 1
            if h2 != x:
                h2, t2 = _unlink(x, prev, nxt, h2, t2)
                h2, t2 = _push(x, prev, nxt, h2, t2)
            continue
        ghost = 0
        if w == B1:
            ghost = B1
            p = min(p + max(nb2 / nb1, 1.0), float(c))
            hb1, tb1 = _unlink(x, prev, nxt, hb1, tb1)
            nb1 -= 1
            where[x] = 0
        elif w == B2:
            ghost = B2
            p = max(p - max(nb1 / nb2, 1.0), 0.0)
            hb2, tb2 = _unlink(x, prev, nxt, hb2, tb2)
            nb2 -= 1
            where[x] = 0
        if n1 + n2 + 1 > c:  # full: make room for one page
            replace = True
            if ghost == 0:
                if n1 + nb1 + 1 > c:
                    if nb1 > 0:  # drop the oldest B1 ghost, then REPLACE
                        v = tb1
                        hb1, tb1 = _unlink(v, prev, nxt, hb1, tb1)
                        nb1 -= 1
                        where[v] = 0
                    else:  # drop T1's tail without a ghost
                        v = t1
                        h1, t1 = _unlink(v, prev, nxt, h1, t1)
                        n1 -= 1
                        where[v] = 0
                        replace = False
                elif n1 + n2 + nb1 + nb2 >= 2 * c and nb2 > 0:
                    v = tb2
                    hb2, tb2 = _unlink(v, prev, nxt, hb2, tb2)
                    nb2 -= 1
                    where[v] = 0
            if replace:  # REPLACE: demote T1's or T2's tail to its ghost list
                if (n1 > 0 and (n1 > p or (n1 == p and ghost == B2))) or n2 == 0:
                    v = t1
                    h1, t1 = _unlink(v, prev, nxt, h1, t1)
                    n1 -= 1
                    hb1, tb1 = _push(v, prev, nxt, hb1, tb1)
                    nb1 += 1
                    where[v] = B1
                else:
                    v = t2
                    h2, t2 = _unlink(v, prev, nxt, h2, t2)
                    n2 -= 1
                    hb2, tb2 = _push(v, prev, nxt, hb2, tb2)
                    nb2 += 1
                    where[v] = B2
        if ghost != 0:
            h2, t2 = _push(x, prev, nxt, h2, t2)
            n2 += 1
            where[x] = T2
        else:
            h1, t1 = _push(x, prev, nxt, h1, t1)
            n1 += 1
            where[x] = T1
    meta[0], meta[1], meta[2], meta[3] = h1, h2, hb1, hb2
    meta[4], meta[5], meta[6], meta[7] = t1, t2, tb1, tb2
    meta[8], meta[9], meta[10], meta[11] = n1, n2, nb1, nb2
    fmeta[0] = p


@register
class ARC(CacheModel):
    """Adaptive replacement cache (libCacheSim ``ARC``)."""

    name = "arc"
    id_arrays = {"prev": (np.int32, -1), "next": (np.int32, -1), "where": (np.uint8, 0)}

    def _init_state(self, state: CacheState) -> None:
        state.meta[0:8] = -1  # heads and tails of T1, T2, B1, B2
        state.fmeta[0] = 0.0  # p, the target size of T1

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        a = state.by_id
        arc_access(page_ids, hit, a["prev"], a["next"], a["where"], state.meta, state.fmeta,
                   self.capacity_pages)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[8 + T1 - 1] + state.meta[8 + T2 - 1])
