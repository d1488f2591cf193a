"""LRU: a doubly linked list over dense page ids (``prev``/``next`` int32 arrays).

Same variant as libCacheSim's ``LRU``: a hit moves the page to the head, a miss evicts the tail
when the cache is full and inserts at the head.
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import CacheModel, CacheState
from replay.model import register

HEAD, TAIL, SIZE = 0, 1, 2  # meta slots


@njit
def lru_access(page_ids, hit, prev, nxt, resident, meta, capacity):
    head = meta[HEAD]
    tail = meta[TAIL]
    size = meta[SIZE]
    for i in range(page_ids.shape[0]):
        x = page_ids[i]
        if resident[x]:
            hit[i] = 1
            if x != head:  # unlink x (it has a predecessor), push at head
                p = prev[x]
                n = nxt[x]
                nxt[p] = n
                if n >= 0:
                    prev[n] = p
                else:
                    tail = p
                prev[x] = -1
                nxt[x] = head
                prev[head] = x
                head = x
            continue
        if size == capacity:  # evict the tail
            v = tail
            resident[v] = 0
            tail = prev[v]
            if tail >= 0:
                nxt[tail] = -1
            else:
                head = -1
            size -= 1
        resident[x] = 1
        prev[x] = -1
        nxt[x] = head
        if head >= 0:
            prev[head] = x
        else:
            tail = x
        head = x
        size += 1
    meta[HEAD] = head
    meta[TAIL] = tail
    meta[SIZE] = size


@register
class LRU(CacheModel):
    """Least recently used (libCacheSim ``LRU``)."""

    name = "lru"
    id_arrays = {"prev": (np.int32, -1), "next": (np.int32, -1), "resident": (np.uint8, 0)}

    def _init_state(self, state: CacheState) -> None:
        state.meta[HEAD] = state.meta[TAIL] = -1

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        a = state.by_id
        lru_access(page_ids, hit, a["prev"], a["next"], a["resident"], state.meta, self.capacity_pages)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[SIZE])
