"""CLOCK: a ring of ``capacity`` page ids with an n-bit reference counter per page and a hand.

Same variant as libCacheSim's ``Clock`` (default ``n-bit-counter=1``): a new page enters with
counter 0; a hit raises the counter by one up to ``2^bits - 1``; on a miss in a full cache the
hand starts at the oldest page, and while the page under it has a counter >= 1 it decrements the
counter and moves on (libCacheSim moves that page from tail to head, which on a full ring is the
same as advancing the hand); the first page with counter 0 is replaced by the new page, and the
hand moves past it.
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

HAND, SIZE = 0, 1  # meta slots


@njit
def clock_access(page_ids, hit, ring, counter, resident, meta, max_count):
    capacity = ring.shape[0]
    hand = meta[HAND]
    size = meta[SIZE]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(resident, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        if resident[x]:
            hit[i] = 1
            if counter[x] < max_count:
                counter[x] += 1
            continue
        if size < capacity:
            ring[size] = x
            size += 1
        else:
            while True:
                v = ring[hand]
                if counter[v] >= 1:
                    counter[v] -= 1
                    hand += 1
                    if hand == capacity:
                        hand = 0
                else:
                    break
            resident[v] = 0
            ring[hand] = x
            hand += 1
            if hand == capacity:
                hand = 0
        resident[x] = 1
        counter[x] = 0
    meta[HAND] = hand
    meta[SIZE] = size


@register
class CLOCK(CacheModel):
    """CLOCK / second chance with ``counter_bits``-bit counters (libCacheSim ``Clock``)."""

    name = "clock"
    id_arrays = {"counter": (np.uint8, 0), "resident": (np.uint8, 0)}

    def __init__(self, cache_bytes: int, page_size_bytes: int = 4096, counter_bits: int = 1):
        super().__init__(cache_bytes, page_size_bytes)
        if not 1 <= int(counter_bits) <= 7:
            raise ValueError(f"clock: counter_bits must be 1..7, got {counter_bits}")
        self.counter_bits = int(counter_bits)  # libCacheSim n-bit-counter, default 1

    def _init_state(self, state: CacheState) -> None:
        state.fixed["ring"] = np.full(self.capacity_pages, -1, dtype=np.int32)

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        a = state.by_id
        clock_access(page_ids, hit, state.fixed["ring"], a["counter"], a["resident"], state.meta,
                     (1 << self.counter_bits) - 1)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[SIZE])
