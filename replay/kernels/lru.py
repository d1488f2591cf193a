"""LRU: a doubly linked list, both links of an entry in one int64 (predecessor + 1 in the high
32 bits, successor + 1 in the low ones), in one of two layouts chosen by the cache's size:

* **per page** (``link``, indexed by dense page id; -1: not resident). One word per page instead of
  separate ``prev``, ``next`` and ``resident`` arrays: an access touches one cache line per page,
  not three (1.07-1.5x on 20 M accesses over 4-16 M pages, ``docs/performance.md``).
* **per slot**, for caches whose slot table fits in the CPU caches (``SLOT_TABLE_MAX_BYTES``): a page
  id maps to one of ``capacity`` slots (``slot``, int32, -1: not resident), and the links and the
  page of each slot live in two arrays of ``capacity`` entries. The list moves (a hit unlinks its
  slot and touches both neighbours) then stay in the CPU caches instead of touching two random
  lines of a per-page table as large as the footprint. 50 M Zipf(1.0) accesses over 16 M pages
  (2026-11-28, same hits): 1 % cache 22-33 -> 56-62 M accesses/s, 0.1 % 64 -> 90, 3 % 22-26 -> 32-36;
  at 6 % (16 MiB of slots) the two are alike and at 10 % the per-page layout is faster (33-40
  against 27-30 M/s), hence the limit.

Same variant as libCacheSim's ``LRU``: a hit moves the page to the head, a miss evicts the tail
when the cache is full and inserts at the head; both layouts give the same hits. The loops prefetch
(``replay.prefetch``) the page's entry ``ACCESS_AHEAD`` accesses ahead and the next page to evict
after an eviction; the per-page loop also prefetches, ``NEIGHBOURS_AHEAD`` accesses ahead, the two
neighbours of a resident page, which a hit will relink (10 / 50 % caches: 33 -> 39, 45 -> 74 M/s).
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from replay.kernels.base import ACCESS_AHEAD, CacheModel, CacheState
from replay.model import register
from replay.prefetch import prefetch

HEAD, TAIL, SIZE = 0, 1, 2  # meta slots
#: caches whose slot table (links + page: 12 B a slot) is at most this large use the per-slot
#: layout: measured on a 32 MiB L3, the layouts are alike at 16 MiB of slots (module doc)
SLOT_TABLE_MAX_BYTES = 8 << 20
SLOT_BYTES = 12
#: the per-page loop prefetches the list neighbours of the page this many accesses ahead (its own
#: entry, prefetched ACCESS_AHEAD ahead, is in the cache by then)
NEIGHBOURS_AHEAD = 8
_LOW = np.int64(0xFFFFFFFF)  # the successor's field
_HIGH = np.int64(-1) ^ _LOW  # the predecessor's


@njit
def _to_head(links, x, lx, head, tail):
    """Move resident entry ``x`` (links ``lx``, not the head) to the head of ``links``; the tail after it."""
    p = (lx >> 32) - 1
    n = (lx & _LOW) - 1
    links[p] = (links[p] & _HIGH) | (n + 1)
    if n >= 0:
        links[n] = ((p + 1) << 32) | (links[n] & _LOW)
    else:
        tail = p
    links[x] = head + 1
    links[head] = ((x + 1) << 32) | (links[head] & _LOW)
    return tail


@njit
def _push_head(links, x, head, tail):
    """Link entry ``x`` (not resident) in front of ``head`` (-1: the list is empty); the tail after it."""
    links[x] = head + 1  # no predecessor
    if head >= 0:
        links[head] = ((x + 1) << 32) | (links[head] & _LOW)
    else:
        tail = x
    return tail


@njit
def lru_access(page_ids, hit, link, meta, capacity):
    head = meta[HEAD]
    tail = meta[TAIL]
    size = meta[SIZE]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(link, page_ids[i + ACCESS_AHEAD])
        if i + NEIGHBOURS_AHEAD < n_access:
            ly = link[page_ids[i + NEIGHBOURS_AHEAD]]
            if ly > 0:
                prefetch(link, (ly >> 32) - 1)
                prefetch(link, (ly & _LOW) - 1)
        x = page_ids[i]
        lx = link[x]
        if lx >= 0:
            hit[i] = 1
            if x != head:
                tail = _to_head(link, x, lx, head, tail)
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
        tail = _push_head(link, x, head, tail)
        head = x
        size += 1
    meta[HEAD] = head
    meta[TAIL] = tail
    meta[SIZE] = size


@njit
def lru_slot_access(page_ids, hit, slot, slot_link, slot_page, meta, capacity):
    """``lru_access`` over slots: ``slot[page]`` its slot (-1: not resident), ``slot_link[s]`` the
    slot's links (over slots), ``slot_page[s]`` its page. Slots fill in order; an eviction frees
    the tail's slot for the page that evicted it."""
    head = meta[HEAD]
    tail = meta[TAIL]
    size = meta[SIZE]
    n_access = page_ids.shape[0]
    for i in range(n_access):
        if i + ACCESS_AHEAD < n_access:
            prefetch(slot, page_ids[i + ACCESS_AHEAD])
        x = page_ids[i]
        s = slot[x]
        if s >= 0:
            hit[i] = 1
            if s != head:
                tail = _to_head(slot_link, s, slot_link[s], head, tail)
                head = s
            continue
        if size == capacity:  # evict the tail; its slot takes x
            s = tail
            tail = (slot_link[s] >> 32) - 1
            slot[slot_page[s]] = -1
            if tail >= 0:
                slot_link[tail] &= _HIGH
                prefetch(slot, slot_page[tail])  # the next eviction's page
            else:
                head = -1
        else:
            s = size
            size += 1
        slot[x] = s
        slot_page[s] = x
        tail = _push_head(slot_link, s, head, tail)
        head = s
    meta[HEAD] = head
    meta[TAIL] = tail
    meta[SIZE] = size


@register
class LRU(CacheModel):
    """Least recently used (libCacheSim ``LRU``)."""

    name = "lru"
    id_arrays = {"link": (np.int64, -1)}

    def __init__(self, cache_bytes: int, page_size_bytes: int = 4096):
        super().__init__(cache_bytes, page_size_bytes)
        self.slotted = self.capacity_pages * SLOT_BYTES <= SLOT_TABLE_MAX_BYTES
        if self.slotted:
            self.id_arrays = {"slot": (np.int32, -1)}

    def _init_state(self, state: CacheState) -> None:
        state.meta[HEAD] = state.meta[TAIL] = -1
        if self.slotted:
            state.fixed["slot_link"] = np.zeros(self.capacity_pages, dtype=np.int64)
            state.fixed["slot_page"] = np.zeros(self.capacity_pages, dtype=np.int32)

    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        if self.slotted:
            lru_slot_access(page_ids, hit, state.by_id["slot"], state.fixed["slot_link"], state.fixed["slot_page"],
                            state.meta, self.capacity_pages)
        else:
            lru_access(page_ids, hit, state.by_id["link"], state.meta, self.capacity_pages)

    def _resident(self, state: CacheState) -> int:
        return int(state.meta[SIZE])
