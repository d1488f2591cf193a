"""Per-interval group sums of a replay's per-request outcomes in compiled code (issue 29).

The array replay's request and latency-histogram tables are sums and maxima per (interval,
volume, RAID group[, latency bucket]). A Polars group-by per segment on a frame of every
request's outcomes cost a third of an end-to-end replay; here the keys are packed into one
int64 per request (:func:`pack_keys`) and :func:`group_reduce` sums each column per key in an
open-addressing hash table, one pass, no frame. Integer sums and maxima: the same rows and values
as the Polars group-by, in another order (the aggregators sort when they merge).
"""

from __future__ import annotations

import math

import numpy as np

from replay.jit import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: packed keys use at most this many bits (the sign bit stays clear, -1 marks an empty slot)
KEY_BITS_MAX = 62


@njit
def _slot(k, mask, shift):
    return np.int64((np.uint64(k) * _GOLDEN) >> np.uint64(shift)) & mask


@njit
def _table_ids(key, cap_bits):
    """Group id per row (first-appearance order) and the packed key of each group."""
    n = key.shape[0]
    cap = np.int64(1) << cap_bits
    mask = cap - 1
    table = np.full(cap, -1, dtype=np.int64)  # slot -> group id
    gkeys = np.empty(max(16, cap // 2), dtype=np.int64)
    gid = np.empty(n, dtype=np.int64)
    ng = 0
    last_k = -1
    last_g = -1
    for r in range(n):
        k = key[r]
        if k == last_k:  # runs of one key (one volume, one window) skip the table
            gid[r] = last_g
            continue
        s = _slot(k, mask, 64 - cap_bits)
        while True:
            g = table[s]
            if g < 0:
                if 2 * (ng + 1) > cap:  # keep the load under 1/2: grow, re-insert the groups
                    cap_bits += 1
                    cap = np.int64(1) << cap_bits
                    mask = cap - 1
                    table = np.full(cap, -1, dtype=np.int64)
                    bigger = np.empty(cap // 2, dtype=np.int64)
                    bigger[:ng] = gkeys[:ng]
                    gkeys = bigger
                    for q in range(ng):
                        t = _slot(gkeys[q], mask, 64 - cap_bits)
                        while table[t] >= 0:
                            t = (t + 1) & mask
                        table[t] = q
                    s = _slot(k, mask, 64 - cap_bits)
                    continue
                table[s] = ng
                gkeys[ng] = k
                g = ng
                ng += 1
                break
            if gkeys[g] == k:
                break
            s = (s + 1) & mask
        gid[r] = g
        last_k = k
        last_g = g
    return gid, gkeys[:ng].copy()


@njit
def _reduce(gid, ng, sums, n_sums, maxes, n_maxes):
    """Row counts, column sums and column maxima per group id (column by column: a tight loop)."""
    n = gid.shape[0]
    counts = np.zeros(ng, dtype=np.int64)
    out_s = np.zeros((n_sums, ng), dtype=np.int64)
    out_m = np.full((n_maxes, ng), np.iinfo(np.int64).min, dtype=np.int64)
    for r in range(n):
        counts[gid[r]] += 1
    for c in range(n_sums):
        col = sums[c]
        acc = out_s[c]
        for r in range(n):
            acc[gid[r]] += col[r]
    for c in range(n_maxes):
        col = maxes[c]
        acc = out_m[c]
        for r in range(n):
            v = col[r]
            if v > acc[gid[r]]:
                acc[gid[r]] = v
    return counts, out_s, out_m


@njit
def lat_buckets(latency_ns, log_base):
    """``floor(ln(max(latency, 1)) / log_base)`` per request, as int32 (the Polars expression
    ``pipelines.replay._lat_bucket``: the same libm ``log``)."""
    out = np.empty(latency_ns.shape[0], dtype=np.int32)
    for r in range(latency_ns.shape[0]):
        v = latency_ns[r]
        out[r] = np.int32(math.floor(math.log(np.float64(max(v, 1))) / log_base))
    return out


@njit
def timestamp_stats(ts, has_last, last_ts, last_run, gcd0):
    """The trace clock of one segment in time order, continuing the previous one's: the gcd of the
    positive timestamp steps with ``gcd0``, the longest run of one timestamp and the last run's
    length (``pipelines.replay._Aggregates._note_timestamps``)."""
    g = gcd0
    best = 0
    run = 0
    prev = 0
    for r in range(ts.shape[0]):
        t = ts[r]
        if r == 0:
            if has_last and t > last_ts:
                d = t - last_ts
                g = _gcd(g, d)
            run = last_run + 1 if has_last and t == last_ts else 1
        else:
            d = t - prev
            if d > 0:
                g = _gcd(g, d)
            if d != 0:
                best = max(best, run)
                run = 1
            else:
                run += 1
        prev = t
    best = max(best, run)
    return g, best, run


@njit
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def field_bits(lo: int, hi: int) -> int:
    """Bits holding ``hi - lo`` (a field's span in a packed key)."""
    return max(1, int(hi - lo).bit_length())


def pack_keys(fields: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, int]]] | None:
    """One int64 key per row from integer columns: each field minus its minimum, in its own bits.
    Returns the keys and each field's (minimum, bits), or None when they need more than
    ``KEY_BITS_MAX`` bits (the caller groups another way)."""
    layout = []
    total = 0
    for f in fields:
        lo, hi = int(f.min()), int(f.max())
        b = field_bits(lo, hi)
        layout.append((lo, b))
        total += b
    if total > KEY_BITS_MAX:
        return None
    key = np.zeros(fields[0].shape[0], dtype=np.int64)
    for f, (lo, b) in zip(fields, layout, strict=True):
        key <<= b
        key |= f.astype(np.int64) - lo
    return key, layout


def unpack_keys(keys: np.ndarray, layout: list[tuple[int, int]]) -> list[np.ndarray]:
    """The fields of packed keys, in :func:`pack_keys`' order."""
    out = []
    shift = 0
    for lo, b in reversed(layout):
        out.append(((keys >> shift) & ((1 << b) - 1)) + lo)
        shift += b
    return out[::-1]


def group_ids(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A group id per row (first-appearance order) and each group's key."""
    return _table_ids(np.ascontiguousarray(key, dtype=np.int64), 10)


def group_reduce(key: np.ndarray, sums: tuple[np.ndarray, ...], maxes: tuple[np.ndarray, ...],
                 ids: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct key (first-appearance order): the key, the row count, each ``sums`` column's
    sum and each ``maxes`` column's maximum (integer columns, one value per row; sums and maxima
    as int64, columns of the result in the order given). ``ids``: :func:`group_ids` of ``key``
    when already known."""
    gid, gkeys = group_ids(key) if ids is None else ids
    ng = gkeys.shape[0]
    if not sums and not maxes:
        counts = np.bincount(gid, minlength=ng).astype(np.int64)
        return gkeys, counts, np.zeros((0, ng), np.int64), np.zeros((0, ng), np.int64)
    as64 = [np.require(a, np.int64, ['C', 'W']) for a in (*sums, *maxes)]  # one type: writable (a tuple of arrays)
    zero = np.zeros(0, dtype=np.int64)  # a tuple is never empty (numba types an empty one apart)
    s = tuple(as64[: len(sums)]) or (zero,)
    m = tuple(as64[len(sums):]) or (zero,)
    counts, out_s, out_m = _reduce(gid, ng, s, len(sums), m, len(maxes))
    return gkeys, counts, out_s, out_m


def coarser_ids(ids: tuple[np.ndarray, np.ndarray], shift: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_ids` of ``key >> shift`` from those of ``key`` (the groups' keys are grouped,
    not the rows again)."""
    gid, gkeys = ids
    sub, subkeys = group_ids(gkeys >> shift)
    return sub[gid], subkeys
