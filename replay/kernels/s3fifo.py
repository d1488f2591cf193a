"""S3-FIFO (Yang et al., SOSP'23): a small FIFO S, a main FIFO M with reinsertion, a ghost FIFO G.

Follows libCacheSim's ``S3FIFO`` (as bundled in the libcachesim 0.3.5 wheel) with its defaults (``fifo-size-ratio=0.10``,
``ghost-size-ratio=0.90``, ``move-to-main-threshold=2``), including its details:

* sizes: ``|S| = floor(0.1 c)``, ``|M| = c - |S|``, ghost ``floor(0.9 c)`` entries (pages);
* while the cache has never evicted (warm-up), a new page goes to M once S holds ``|S|`` pages
  (libCacheSim's S3FIFO.c since Dec 2024, the version bundled in libcachesim 0.3.5; its older
  S3FIFOv0 and the SOSP'23 paper keep filling S);
* a hit in S or M adds one to the page's counter (counters never cap while resident);
* a miss first removes the page from G if it is there ("ghost hit"); then, while S and M
  together hold ``c`` pages, one eviction runs: from M if M holds more than ``|M|`` pages or S
  is empty, else from S. Then the page goes to the head of M on a ghost hit, else to the head
  of S, with counter 0;
* evicting from S walks its tail: a page with counter >= threshold moves to M's head with
  counter 0 (M may overfill; that is what sends later evictions to M), until one page with a
  lower counter leaves S for G (G drops its oldest entry when full);
* evicting from M walks its tail: a page with counter ``f >= 1`` goes back to M's head with
  counter ``min(f, 3) - 1``; the first page with counter 0 leaves the cache.

libCacheSim cannot run a cache whose small queue has fewer than 2 pages (it refuses to insert
at 0 and crashes at 1), so neither does this model: ``capacity * small_ratio >= 2`` is required.
Ring buffers hold S and M (pages leave them only at the tail); G is a linked list because a
ghost hit removes an entry from its middle.
"""

from __future__ import annotations

import math

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

S_START, S_COUNT, M_START, M_COUNT, G_HEAD, G_TAIL, G_COUNT, EVICTED = range(8)  # meta slots
IN_S, IN_M, IN_G = 1, 2, 3  # values of ``where`` (0: nowhere)
FREQ_CAP = 1 << 30  # counters saturate here; only ">= threshold" and "min(f, 3)" are ever read


@njit
def _ring_push(ring, meta, start_slot, count_slot, x):
    cap = ring.shape[0]
    j = meta[start_slot] + meta[count_slot]
    if j >= cap:
        j -= cap
    ring[j] = x
    meta[count_slot] += 1


@njit
def _ring_pop(ring, meta, start_slot, count_slot):
    cap = ring.shape[0]
    s = meta[start_slot]
    x = ring[s]
    s += 1
    if s == cap:
        s = 0
    meta[start_slot] = s
    meta[count_slot] -= 1
    return x


@njit
def s3fifo_access(page_ids, hit, small, main, freq, where, gprev, gnext, meta,
                  capacity, small_size, main_size, ghost_size, threshold):
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(where, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        w = where[x]
        if w == IN_S or w == IN_M:
            hit[i] = 1
            if freq[x] < FREQ_CAP:
                freq[x] += 1
            continue
        ghost_hit = False
        if w == IN_G:  # unlink from the ghost list
            ghost_hit = True
            p = gprev[x]
            n = gnext[x]
            if p >= 0:
                gnext[p] = n
            else:
                meta[G_HEAD] = n
            if n >= 0:
                gprev[n] = p
            else:
                meta[G_TAIL] = p
            meta[G_COUNT] -= 1
            where[x] = 0
        while meta[S_COUNT] + meta[M_COUNT] + 1 > capacity:
            meta[EVICTED] = 1
            if meta[M_COUNT] > main_size or meta[S_COUNT] == 0:
                while meta[M_COUNT] > 0:  # evict from M
                    v = _ring_pop(main, meta, M_START, M_COUNT)
                    f = freq[v]
                    if f >= 1:
                        freq[v] = min(f, 3) - 1
                        _ring_push(main, meta, M_START, M_COUNT, v)
                    else:
                        where[v] = 0
                        break
            else:
                while meta[S_COUNT] > 0:  # evict from S
                    v = _ring_pop(small, meta, S_START, S_COUNT)
                    if freq[v] >= threshold:
                        freq[v] = 0
                        where[v] = IN_M
                        _ring_push(main, meta, M_START, M_COUNT, v)
                    else:
                        if ghost_size > 0:
                            if meta[G_COUNT] + 1 > ghost_size:  # drop the oldest ghost
                                t = meta[G_TAIL]
                                where[t] = 0
                                pt = gprev[t]
                                meta[G_TAIL] = pt
                                if pt >= 0:
                                    gnext[pt] = -1
                                else:
                                    meta[G_HEAD] = -1
                                meta[G_COUNT] -= 1
                            h = meta[G_HEAD]
                            gprev[v] = -1
                            gnext[v] = h
                            if h >= 0:
                                gprev[h] = v
                            else:
                                meta[G_TAIL] = v
                            meta[G_HEAD] = v
                            meta[G_COUNT] += 1
                            where[v] = IN_G
                        else:
                            where[v] = 0
                        break
        freq[x] = 0
        if ghost_hit or (meta[EVICTED] == 0 and meta[S_COUNT] >= small_size):
            where[x] = IN_M
            _ring_push(main, meta, M_START, M_COUNT, x)
        else:
            where[x] = IN_S
            _ring_push(small, meta, S_START, S_COUNT, x)


@register
class S3FIFO(CacheModel):
    """S3-FIFO with libCacheSim's defaults (libCacheSim ``S3FIFO``)."""

    name = "s3fifo"
    id_arrays = {"freq": (np.int32, 0), "where": (np.uint8, 0),
                 "gprev": (np.int32, -1), "gnext": (np.int32, -1)}

    def __init__(self, cache_bytes: int, page_size_bytes: int = 4096, small_ratio: float = 0.10,
                 ghost_ratio: float = 0.90, move_threshold: int = 2):
        super().__init__(cache_bytes, page_size_bytes)
        # Defaults: libCacheSim S3FIFO.c DEFAULT_CACHE_PARAMS (and the SOSP'23 paper's 10 % / 90 %).
        if not 0.0 < float(small_ratio) < 1.0:
            raise ValueError(f"s3fifo: small_ratio must be in (0, 1), got {small_ratio}")
        if float(ghost_ratio) < 0.0:
            raise ValueError(f"s3fifo: ghost_ratio must be >= 0, got {ghost_ratio}")
        if int(move_threshold) < 1:
            raise ValueError(f"s3fifo: move_threshold must be >= 1, got {move_threshold}")
        self.small_ratio = float(small_ratio)
        self.ghost_ratio = float(ghost_ratio)
        self.move_threshold = int(move_threshold)
        c = self.capacity_pages
        self.small_pages = int(math.floor(c * self.small_ratio))  # C: (int64_t) truncation
        self.main_pages = c - self.small_pages
        self.ghost_pages = int(math.floor(c * self.ghost_ratio))
        if self.small_pages < 2:
            raise ValueError(f"s3fifo: the small queue would hold {self.small_pages} page(s) "
                             f"({c} pages x {self.small_ratio}); it needs at least 2")

    def _init_state(self, state: CacheState) -> None:
        state.fixed["small"] = np.full(self.capacity_pages, -1, dtype=np.int32)
        state.fixed["main"] = np.full(self.capacity_pages, -1, dtype=np.int32)
        state.meta[G_HEAD] = state.meta[G_TAIL] = -1

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        a = state.by_id
        s3fifo_access(page_ids, hit, state.fixed["small"], state.fixed["main"], a["freq"], a["where"],
                      a["gprev"], a["gnext"], state.meta, self.capacity_pages, self.small_pages, self.main_pages,
                      self.ghost_pages, self.move_threshold)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[S_COUNT] + state.meta[M_COUNT])
