"""LRU: a doubly linked list over dense page ids, both links of a page in one int64 (``link``:
predecessor + 1 in the high 32 bits, successor + 1 in the low ones; -1: not resident).

Same variant as libCacheSim's ``LRU``: a hit moves the page to the head, a miss evicts the tail
when the cache is full and inserts at the head. One word per page instead of separate ``prev``,
``next`` and ``resident`` arrays: an access touches one cache line per page, not three (the
kernel is bound by memory latency on large footprints: 1.07-1.5x on 20 M accesses over 4-16 M
pages, ``docs/performance.md``). The loop prefetches (``replay.prefetch``) the link of the page
``ACCESS_AHEAD`` accesses ahead and, after an eviction, the link of the next page to evict, so
their memory loads overlap the current access's work.
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

HEAD, TAIL, SIZE = 0, 1, 2  # meta slots
_LOW = np.int64(0xFFFFFFFF)  # the successor's field
_HIGH = np.int64(-1) ^ _LOW  # the predecessor's


@njit
def lru_access(page_ids, hit, link, meta, capacity):
    head = meta[HEAD]
    tail = meta[TAIL]
    size = meta[SIZE]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(link, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        lx = link[x]
        if lx >= 0:
            hit[i] = 1
            if x != head:  # unlink x (it has a predecessor), push at head
                p = (lx >> 32) - 1
                n = (lx & _LOW) - 1
                link[p] = (link[p] & _HIGH) | (n + 1)
                if n >= 0:
                    link[n] = ((p + 1) << 32) | (link[n] & _LOW)
                else:
                    tail = p
                link[x] = head + 1
                link[head] = ((x + 1) << 32) | (link[head] & _LOW)
                head = x
            continue
        if size == capacity:  # evict the tail
            v = tail
            tail = (link[v] >> 32) - 1
            link[v] = -1
            if tail >= 0:
                lt = link[tail] & _HIGH
                link[tail] = lt
                if lt > 0:  # the next eviction's page
                    prefetch(link, (lt >> 32) - 1)
            else:
                head = -1
            size -= 1
        link[x] = head + 1  # no predecessor
        if head >= 0:
            link[head] = ((x + 1) << 32) | (link[head] & _LOW)
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
    id_arrays = {"link": (np.int64, -1)}

    def _init_state(self, state: CacheState) -> None:
        state.meta[HEAD] = state.meta[TAIL] = -1

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        lru_access(page_ids, hit, state.by_id["link"], state.meta, self.capacity_pages)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[SIZE])
