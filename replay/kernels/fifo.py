"""FIFO: a ring of ``capacity`` page ids in insertion order; hits change nothing.

Same variant as libCacheSim's ``FIFO``: a miss on a full cache evicts the oldest insertion.
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

POS, SIZE = 0, 1  # meta slots: ring position of the oldest page once full, pages held


@njit
def fifo_access(page_ids, hit, ring, resident, meta):
    capacity = ring.shape[0]
    pos = meta[POS]
    size = meta[SIZE]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(resident, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        if resident[x]:
            hit[i] = 1
            continue
        if size < capacity:
            ring[size] = x
            size += 1
        else:
            resident[ring[pos]] = 0
            ring[pos] = x
            pos += 1
            if pos == capacity:
                pos = 0
        resident[x] = 1
    meta[POS] = pos
    meta[SIZE] = size


@register
class FIFO(CacheModel):
    """First in, first out (libCacheSim ``FIFO``)."""

    name = "fifo"
    id_arrays = {"resident": (np.uint8, 0)}

    def _init_state(self, state: CacheState) -> None:
        state.fixed["ring"] = np.full(self.capacity_pages, -1, dtype=np.int32)

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        fifo_access(page_ids, hit, state.fixed["ring"], state.by_id["resident"], state.meta)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[SIZE])
