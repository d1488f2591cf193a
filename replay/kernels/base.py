"""What every cache kernel shares: parameters, the state object, growth and the per-request tally.

A policy module supplies one numba function ``access(page_ids, hit_out, <state arrays...>)`` that
plays page ids through the policy in order, writing 1/0 per page into ``hit_out``, and a
``CacheModel`` subclass that says which arrays it needs. Everything else lives here:

* capacity is in pages: ``cache_bytes // page_size_bytes``;
* reads and writes are accesses; trims and flushes are not (they are counted as
  ``skipped_requests`` and touch no page; write-back and invalidation come with the array models);
* hit ratio is per page access (what libCacheSim reports on a page-id sequence); byte hit ratio
  weights each page access by the bytes of the request that fall inside that page, so a 6 KiB
  read of two 4 KiB pages where only the first hits has 4 or 2 hit bytes depending on alignment,
  never a whole page of bytes the host did not ask for.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from replay.jit import njit
from replay.model import Model, Outcomes, Segment
from replay.pages import check_page_size
from schemas.trace import OP_READ, OP_WRITE

if TYPE_CHECKING:
    from replay.intervals import CacheIntervals

MAX_IDS = (1 << 31) - 2  # id-indexed link arrays are int32 (half the memory traffic of int64)
#: how many accesses ahead a policy kernel prefetches the id-indexed state of a page
#: (``replay.prefetch``): those arrays outgrow the CPU caches and each access waits for one
#: random load otherwise. LRU, 100 M Zipf accesses over 12.8 M pages, best of 3 on a noisy
#: machine: 32 ahead 1.28-1.83x (cache 0.1 / 1 / 10 % of the pages), 48 and 64 alike, 8 1.3x
#: Each kernel writes the two lines (``if i + ACCESS_AHEAD < n: prefetch(state, page_ids[i +
#: ACCESS_AHEAD])``) itself: a compiled helper for them (``inline="always"``) made the kernels 1.2-4x
#: slower (FIFO 0.115 -> 0.31 s, CLOCK 0.20 -> 0.80 s, LRU 0.36-0.62 -> 0.71-1.07 s on 20 M Zipf
#: accesses over 4 M pages, alternated with the repeated lines, same hits; 2026-11-27). Likely cause:
#: numba counts references on the inlined copies of the array arguments.
ACCESS_AHEAD = 32

# Order of the cumulative counters in CacheState.totals.
TOTALS = ("requests", "skipped_requests", "pages", "hits", "bytes", "hit_bytes",
          "read_pages", "read_hits", "write_pages", "write_hits", "full_hit_requests")


@dataclass
class CacheState:
    """State of one cache kernel: id-indexed arrays (grown as new pages appear), fixed-size
    arrays (rings), integer and float scalars, and cumulative totals. Plain numpy, picklable."""

    by_id: dict[str, np.ndarray]
    fills: dict[str, int]
    fixed: dict[str, np.ndarray] = field(default_factory=dict)
    meta: np.ndarray = field(default_factory=lambda: np.zeros(16, dtype=np.int64))
    fmeta: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.float64))
    totals: np.ndarray = field(default_factory=lambda: np.zeros(len(TOTALS), dtype=np.int64))

    def ensure_ids(self, n_ids: int) -> None:
        """Grow the id-indexed arrays to hold ids 0..n_ids-1 (doubling, so growth is amortized)."""
        if n_ids > MAX_IDS:
            raise ValueError(f"{n_ids} distinct pages: cache kernels hold at most {MAX_IDS}")
        for name, arr in self.by_id.items():
            if arr.shape[0] < n_ids:
                new = np.full(min(max(n_ids, 2 * arr.shape[0]), MAX_IDS), self.fills[name], dtype=arr.dtype)
                new[: arr.shape[0]] = arr
                self.by_id[name] = new


@njit
def _tally(page_req, page_bytes, page_hit, op, n_pages_req, hit_pages, hit_bytes, totals):
    """Per-request pages / hit pages / hit bytes and the segment's contribution to the cumulative
    totals. Sums live in local variables (stores into ``totals`` inside the loop would be
    reloaded on every iteration: the compiler cannot rule out aliasing with the outputs)."""
    n_req = op.shape[0]
    pages = hits = nbytes = hbytes = rpages = rhits = wpages = whits = 0
    single = page_req.shape[0] == n_req  # one page per request (the common aligned case)
    if single:
        for r in range(n_req):
            single &= page_req[r] == r
    skipped = full = 0
    if single:
        for r in range(n_req):
            o = op[r]
            if o != OP_READ and o != OP_WRITE:
                skipped += 1
                continue
            b = page_bytes[r]
            h = page_hit[r]
            n_pages_req[r] = 1
            pages += 1
            nbytes += b
            if h:
                hit_pages[r] = 1
                hit_bytes[r] = b
                hits += 1
                hbytes += b
                full += 1
            if o == OP_READ:
                rpages += 1
                rhits += h
            else:
                wpages += 1
                whits += h
    else:
        for j in range(page_req.shape[0]):
            r = page_req[j]
            o = op[r]
            if o != OP_READ and o != OP_WRITE:
                continue  # pages of trims/flushes: no access
            b = page_bytes[j]
            h = page_hit[j]
            n_pages_req[r] += 1
            pages += 1
            nbytes += b
            if h:
                hit_pages[r] += 1
                hit_bytes[r] += b
                hits += 1
                hbytes += b
            if o == OP_READ:
                rpages += 1
                rhits += h
            else:
                wpages += 1
                whits += h
        for r in range(n_req):
            if op[r] != OP_READ and op[r] != OP_WRITE:
                skipped += 1
            elif n_pages_req[r] > 0 and hit_pages[r] == n_pages_req[r]:
                full += 1
    add_totals(totals, n_req, skipped, pages, hits, nbytes, hbytes, rpages, rhits, wpages, whits, full)


@njit
def add_totals(totals, n_req, skipped, pages, hits, nbytes, hbytes, rpages, rhits, wpages, whits, full):
    """Add one segment's sums to ``totals`` (in the order of :data:`TOTALS`)."""
    totals[0] += n_req
    totals[1] += skipped
    totals[2] += pages
    totals[3] += hits
    totals[4] += nbytes
    totals[5] += hbytes
    totals[6] += rpages
    totals[7] += rhits
    totals[8] += wpages
    totals[9] += whits
    totals[10] += full


class CacheModel(Model):
    """Base of the page-cache policies (LRU, FIFO, CLOCK, ARC, S3-FIFO): one level, capacity in
    pages, every read/write page access is looked up and, on a miss, inserted."""

    # id-indexed arrays the policy needs: name -> (dtype, fill value)
    id_arrays: ClassVar[dict[str, tuple[type, int]]] = {}

    def __init__(self, cache_bytes: int, page_size_bytes: int = 4096):
        self.page_size_bytes = check_page_size(page_size_bytes)
        self.cache_bytes = int(cache_bytes)
        if self.cache_bytes < self.page_size_bytes:
            raise ValueError(f"{self.name}: cache of {self.cache_bytes} B holds no {self.page_size_bytes} B page")
        self.capacity_pages = self.cache_bytes // self.page_size_bytes
        if self.capacity_pages > MAX_IDS:
            raise ValueError(f"{self.name}: at most {MAX_IDS} pages of cache")

    # -- what a policy implements -------------------------------------------------------
    def _init_state(self, state: CacheState) -> None:
        """Allocate fixed arrays and set scalars (policy specific)."""

    @abstractmethod
    def _access(self, state: CacheState, page_ids: np.ndarray, hit: np.ndarray) -> None:
        """Play ``page_ids`` through the policy in order; 1 in ``hit`` where a page hit."""

    @abstractmethod
    def _resident(self, state: CacheState) -> int:
        """Pages in the cache now."""

    # -- the shared contract ------------------------------------------------------------
    def new_state(self) -> CacheState:
        state = CacheState(
            by_id={k: np.full(0, fill, dtype=dt) for k, (dt, fill) in self.id_arrays.items()},
            fills={k: fill for k, (_, fill) in self.id_arrays.items()},
        )
        self._init_state(state)
        return state

    def page_hits(self, state: CacheState, segment: Segment) -> np.ndarray:
        """uint8 hit flag per page access of ``segment`` (0 for pages of trims/flushes)."""
        if segment.page_size != self.page_size_bytes:
            raise ValueError(f"{self.name}: segment has {segment.page_size} B pages, model expects "
                             f"{self.page_size_bytes} B")
        state.ensure_ids(segment.n_ids)
        hit = np.zeros(segment.n_pages, dtype=np.uint8)
        op = segment.op
        if op.size and op.max() > OP_WRITE:  # trims/flushes in this segment: access the others only
            access = op[segment.page_req] <= OP_WRITE
            sub = np.zeros(int(access.sum()), dtype=np.uint8)
            self._access(state, np.ascontiguousarray(segment.page_id[access]), sub)
            hit[access] = sub
        else:
            self._access(state, segment.page_id, hit)
        return hit

    def replay(self, state: CacheState, segment: Segment) -> Outcomes:
        """Per-request ``hit`` (every page hit), ``pages``, ``hit_pages``, ``hit_bytes``."""
        return self._outcomes(state, segment, self.page_hits(state, segment))

    def replay_into(self, state: CacheState, segment: Segment, intervals: CacheIntervals | None) -> None:
        """:meth:`replay` with the outcomes summed into ``intervals`` (when given) and not
        returned: for one-page requests in one compiled pass from the hit flags, with no
        per-request arrays (``CacheIntervals.add_hits``)."""
        self.record_hits(state, segment, self.page_hits(state, segment), intervals)

    def record_hits(self, state: CacheState, segment: Segment, hit: np.ndarray,
                    intervals: CacheIntervals | None) -> None:
        """The second half of :meth:`replay_into`: ``segment``'s hit flags into ``state.totals``
        and ``intervals``. It reads no kernel state, so it may run in another thread while the
        kernel replays the next segment (segments in order)."""
        if intervals is None:
            self._outcomes(state, segment, hit)
        elif not intervals.add_hits(segment, hit, state.totals):
            intervals.add_outcomes(segment, self._outcomes(state, segment, hit))

    def _outcomes(self, state: CacheState, segment: Segment, hit: np.ndarray) -> Outcomes:
        n = segment.n_requests
        pages = np.zeros(n, dtype=np.int32)
        hit_pages = np.zeros(n, dtype=np.int32)
        hit_bytes = np.zeros(n, dtype=np.int64)
        _tally(segment.page_req, segment.page_bytes, hit, segment.op, pages, hit_pages, hit_bytes, state.totals)
        return {"hit": (pages > 0) & (hit_pages == pages), "pages": pages,
                "hit_pages": hit_pages, "hit_bytes": hit_bytes}

    def counters(self, state: CacheState) -> dict[str, int | float]:
        c: dict[str, int | float] = {k: int(v) for k, v in zip(TOTALS, state.totals, strict=True)}
        c["misses"] = c["pages"] - c["hits"]
        c["hit_ratio"] = c["hits"] / c["pages"] if c["pages"] else 0.0
        c["byte_hit_ratio"] = c["hit_bytes"] / c["bytes"] if c["bytes"] else 0.0
        c["resident_pages"] = self._resident(state)
        c["capacity_pages"] = self.capacity_pages
        return c
