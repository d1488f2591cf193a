"""Dense integer ids for page keys, in first-appearance order, carried across segments.

Kernels keep their state in plain arrays indexed by dense id, so every page key (an int64
packing volume id and page number, see ``replay.pages``) must become 0, 1, 2, ... in the order
it first appears in the trace. ``polars rank("dense")`` does it in sorted order and costs
~1.5 s per 10 M keys (docs/architecture/pitfalls.md#polars); a hash join on a growing dictionary costs as much. This is
an open-addressing table (linear probing, Fibonacci hashing) held in two numpy arrays and filled
by a numba loop: one probe sequence per key, no Python objects. The table doubles when it would
pass half full, so it serves traces of any size, segment after segment.

Optionally (``direct_max`` > 0, used by ``replay.pages.SegmentBuilder``) keys are first mapped
through a plain array indexed by the key itself while every key seen is below ``direct_max``:
a single-volume trace's page numbers usually are, and one array read per key is ~4x cheaper
than a probe. The first key beyond it moves every pair into the hash table (same ids).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replay.jit import njit
from replay.prefetch import prefetch

_EMPTY = np.int64(-1)  # keys are non-negative (volume id and page number packed, see replay.pages)
_FIB = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Knuth's multiplicative hashing
MAX_LOAD = 0.5  # grow before the table is half full: short probe runs with linear probing
#: ``_assign`` prefetches the home slot of the key this many keys ahead: a table larger than the
#: CPU caches costs one memory wait per key otherwise (see ``replay.prefetch``).
AHEAD = 16


@njit
def slot(key, shift, mask):
    """Home slot of ``key`` in a table of ``mask + 1`` slots: the top bits of key x 2^64/phi
    (``shift`` = 64 - log2(slots): :attr:`IdMap.shift`). Compiled code that probes an
    ``IdMap.table`` itself (``replay.array``) must use this same hash."""
    return np.int64((np.uint64(key) * _FIB) >> np.uint64(shift)) & mask


@njit
def _assign(table, keys, out, start, count, limit, shift):
    """Map keys[start:] into out; stop before the table would hold more than ``limit`` keys.
    ``table`` interleaves (key, id) per slot so a probe touches one cache line. Returns
    (index reached, new count, status): status 0 done, 1 table full, 2 negative key at index."""
    mask = (table.shape[0] >> 1) - 1
    n = keys.shape[0]
    for i in range(start, n):
        if i + AHEAD < n:  # (a negative key is refused below; its prefetch is harmless)
            prefetch(table, 2 * slot(keys[i + AHEAD], shift, mask))
        k = keys[i]
        if k < 0:
            return i, count, 2
        s = slot(k, shift, mask)
        while True:
            tk = table[2 * s]
            if tk == k:
                out[i] = table[2 * s + 1]
                break
            if tk == _EMPTY:
                if count >= limit:
                    return i, count, 1
                table[2 * s] = k
                table[2 * s + 1] = count
                out[i] = count
                count += 1
                break
            s = (s + 1) & mask
    return keys.shape[0], count, 0


@njit
def _assign_direct(direct, keys, out, start, count):
    """Like ``_assign`` through a key-indexed array; status 3: a key at or beyond its length."""
    n = direct.shape[0]
    for i in range(start, keys.shape[0]):
        k = keys[i]
        if k < 0:
            return i, count, 2
        if k >= n:
            return i, count, 3
        v = direct[k]
        if v < 0:
            v = count
            direct[k] = v
            count += 1
        out[i] = v
    return keys.shape[0], count, 0


@njit
def _insert_pairs(table, keys, ids, shift):
    mask = (table.shape[0] >> 1) - 1
    for j in range(keys.shape[0]):
        s = slot(keys[j], shift, mask)
        while table[2 * s] != _EMPTY:
            s = (s + 1) & mask
        table[2 * s] = keys[j]
        table[2 * s + 1] = ids[j]


@njit
def _rehash(old, new, shift):
    mask = (new.shape[0] >> 1) - 1
    for j in range(old.shape[0] >> 1):
        k = old[2 * j]
        if k != _EMPTY:
            s = slot(k, shift, mask)
            while new[2 * s] != _EMPTY:
                s = (s + 1) & mask
            new[2 * s] = k
            new[2 * s + 1] = old[2 * j + 1]


@njit
def _lookup(table, keys, out, shift):
    mask = (table.shape[0] >> 1) - 1
    for i in range(keys.shape[0]):
        k = keys[i]
        s = slot(k, shift, mask)
        out[i] = -1
        while True:
            tk = table[2 * s]
            if tk == k:
                out[i] = table[2 * s + 1]
                break
            if tk == _EMPTY:
                break
            s = (s + 1) & mask


def _shift(slots: int) -> int:
    """Right shift that keeps the top log2(slots) bits of the 64-bit product."""
    return 64 - (slots.bit_length() - 1)


@dataclass
class IdMap:
    """Page key -> dense id table; an explicit, picklable state object.

    ``assign(keys)`` returns the ids of ``keys`` (int64), giving unseen keys the next free ids
    in order of appearance; ``n_ids`` is how many distinct keys it has seen."""

    #: small: a fresh map costs its table's fill (a 64 k-slot table was a third of a short device
    #: replay, ``pipelines.device_calibration.predict``), and doubling to any size is amortised
    initial_slots: int = 1 << 10
    direct_max: int = 0  # > 0: key-indexed array while every key is below this (see module doc)
    table: np.ndarray = field(init=False, repr=False)  # slot s: table[2s] key, table[2s+1] id
    direct: np.ndarray = field(init=False, repr=False)  # direct[key] = id or -1 (direct mode)
    n_ids: int = 0

    def __post_init__(self) -> None:
        self.table = self._empty(1 << max(4, int(self.initial_slots - 1).bit_length()))
        self.direct = np.full(min(self.direct_max, 1 << 16), -1, dtype=np.int32)

    @property
    def direct_mode(self) -> bool:
        return self.direct.shape[0] > 0

    def _leave_direct(self) -> None:
        """Move every (key, id) of the direct array into the hash table."""
        keys = np.flatnonzero(self.direct >= 0).astype(np.int64)
        ids = self.direct[keys].astype(np.int64)
        self.reserve(max(self.n_ids, 1) * 2)
        _insert_pairs(self.table, keys, ids, _shift(self.slots))
        self.direct = np.zeros(0, dtype=np.int32)

    def _assign_direct(self, keys: np.ndarray, out: np.ndarray) -> int:
        """Assign through the direct array as far as possible; returns the index reached."""
        start = 0
        while True:
            start, self.n_ids, status = _assign_direct(self.direct, keys, out, start, self.n_ids)
            if status == 0:
                return start
            if status == 2:
                raise ValueError(f"page key {keys[start]} at index {start}: keys must be non-negative")
            need = 1 << int(keys[start]).bit_length()
            if need > self.direct_max:
                self._leave_direct()
                return start
            grown = np.full(need, -1, dtype=np.int32)
            grown[: self.direct.shape[0]] = self.direct
            self.direct = grown

    @staticmethod
    def _empty(slots: int) -> np.ndarray:
        table = np.empty(2 * slots, dtype=np.int64)
        table[0::2] = _EMPTY
        return table

    @property
    def slots(self) -> int:
        return self.table.shape[0] >> 1

    @property
    def shift(self) -> int:
        """The ``shift`` argument of :func:`slot` for the current table."""
        return _shift(self.slots)

    def reserve(self, n_keys: int) -> None:
        """Grow so that ``n_keys`` distinct keys fit without another rehash."""
        need = int(n_keys / MAX_LOAD) + 1
        if need > self.slots:
            self._grow(1 << (need - 1).bit_length())

    def _grow(self, slots: int) -> None:
        new = self._empty(slots)
        _rehash(self.table, new, _shift(slots))
        self.table = new

    def assign(self, keys: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The ids of ``keys`` (into ``out``, an int64 array as long as ``keys``, when given)."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if out is None:
            out = np.empty(keys.shape[0], dtype=np.int64)
        start = self._assign_direct(keys, out) if self.direct_mode else 0
        if start == keys.shape[0]:
            return out
        while True:
            limit = int(self.slots * MAX_LOAD)
            start, self.n_ids, status = _assign(self.table, keys, out, start, self.n_ids, limit,
                                                _shift(self.slots))
            if status == 0:
                return out
            if status == 2:
                raise ValueError(f"page key {keys[start]} at index {start}: keys must be non-negative")
            self._grow(self.slots * 2)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Ids of ``keys`` without assigning new ones (-1 where unseen)."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        out = np.empty(keys.shape[0], dtype=np.int64)
        if self.direct_mode:
            inside = (keys >= 0) & (keys < self.direct.shape[0])
            out[:] = -1
            out[inside] = self.direct[keys[inside]]
            return out
        _lookup(self.table, keys, out, _shift(self.slots))
        return out
