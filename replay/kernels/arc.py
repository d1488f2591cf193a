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

import numba
import numpy as np

from replay.kernels.base import CacheModel, CacheState
from replay.model import register

T1, T2, B1, B2 = 1, 2, 3, 4  # values of ``where`` (0: in no list)
# meta slots: head of list L at L-1, tail at 4+L-1, length at 8+L-1; fmeta[0] is p


@numba.njit(cache=True, nogil=True, inline="always")
def _unlink(x, lst, prev, nxt, meta):
    p = prev[x]
    n = nxt[x]
    if p >= 0:
        nxt[p] = n
    else:
        meta[lst - 1] = n
    if n >= 0:
        prev[n] = p
    else:
        meta[4 + lst - 1] = p
    meta[8 + lst - 1] -= 1


@numba.njit(cache=True, nogil=True, inline="always")
def _push(x, lst, prev, nxt, where, meta):
    h = meta[lst - 1]
    prev[x] = -1
    nxt[x] = h
    if h >= 0:
        prev[h] = x
    else:
        meta[4 + lst - 1] = x
    meta[lst - 1] = x
    meta[8 + lst - 1] += 1
    where[x] = lst


@numba.njit(cache=True, nogil=True, inline="always")
def _replace(hit_in_b2, prev, nxt, where, meta, fmeta):
    t1 = meta[8 + T1 - 1]
    p = fmeta[0]
    if (t1 > 0 and (t1 > p or (t1 == p and hit_in_b2))) or meta[8 + T2 - 1] == 0:
        v = meta[4 + T1 - 1]
        _unlink(v, T1, prev, nxt, meta)
        _push(v, B1, prev, nxt, where, meta)
    else:
        v = meta[4 + T2 - 1]
        _unlink(v, T2, prev, nxt, meta)
        _push(v, B2, prev, nxt, where, meta)


@numba.njit(cache=True, nogil=True)
def arc_access(page_ids, hit, prev, nxt, where, meta, fmeta, capacity):
    c = capacity
    for i in range(page_ids.shape[0]):
        x = page_ids[i]
        w = where[x]
        if w == T1:
            hit[i] = 1
            _unlink(x, T1, prev, nxt, meta)
            _push(x, T2, prev, nxt, where, meta)
            continue
        if w == T2:
            hit[i] = 1
            if meta[T2 - 1] != x:
                _unlink(x, T2, prev, nxt, meta)
                _push(x, T2, prev, nxt, where, meta)
            continue
        ghost = 0
        if w == B1:
            ghost = B1
            d = max(meta[8 + B2 - 1] / meta[8 + B1 - 1], 1.0)
            fmeta[0] = min(fmeta[0] + d, float(c))
            _unlink(x, B1, prev, nxt, meta)
            where[x] = 0
        elif w == B2:
            ghost = B2
            d = max(meta[8 + B1 - 1] / meta[8 + B2 - 1], 1.0)
            fmeta[0] = max(fmeta[0] - d, 0.0)
            _unlink(x, B2, prev, nxt, meta)
            where[x] = 0
        t1 = meta[8 + T1 - 1]
        t2 = meta[8 + T2 - 1]
        if t1 + t2 + 1 > c:  # full: make room for one page
            if ghost != 0:
                _replace(ghost == B2, prev, nxt, where, meta, fmeta)
            else:
                b1 = meta[8 + B1 - 1]
                b2 = meta[8 + B2 - 1]
                if t1 + b1 + 1 > c:
                    if b1 > 0:
                        v = meta[4 + B1 - 1]
                        _unlink(v, B1, prev, nxt, meta)
                        where[v] = 0
                        _replace(False, prev, nxt, where, meta, fmeta)
                    else:
                        v = meta[4 + T1 - 1]
                        _unlink(v, T1, prev, nxt, meta)
                        where[v] = 0
                else:
                    if t1 + t2 + b1 + b2 >= 2 * c and b2 > 0:
                        v = meta[4 + B2 - 1]
                        _unlink(v, B2, prev, nxt, meta)
                        where[v] = 0
                    _replace(False, prev, nxt, where, meta, fmeta)
        _push(x, T2 if ghost != 0 else T1, prev, nxt, where, meta)


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
