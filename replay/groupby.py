"""Per-interval group sums of a replay's per-request outcomes in compiled code (issue 29).

The array replay's request and latency-histogram tables are sums and maxima per (interval,
volume, RAID group[, latency bucket]). A Polars group-by per segment on a frame of every
request's outcomes cost a third of an end-to-end replay; here the keys are packed into one
int64 per request (:func:`pack_keys`) and :func:`group_reduce` sums each column per key in an
open-addressing hash table, one pass, no frame. Integer sums and maxima: the same rows and values
as the Polars group-by, in another order (the aggregators sort when they merge).
"""

from __future__ import annotations

import numpy as np

from replay.jit import njit, step

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: packed keys use at most this many bits (the sign bit stays clear, -1 marks an empty slot)
KEY_BITS_MAX = 62


@njit
def _slot(k, mask, shift):
    return np.int64((np.uint64(k) * _GOLDEN) >> np.uint64(shift)) & mask


@njit
def _ids_until_full(key, r0, table, gkeys, gid, ng, cap_bits):
    """:func:`_table_ids` from row ``r0`` until the end, or until a new key would fill the table
    past half: returns (the next row, the groups so far). The tables are arguments, never rebound
    in the loop (numba would incref an array variable that a loop rebinds, on every row)."""
    n = key.shape[0]
    mask = (np.int64(1) << cap_bits) - 1
    last_k = -1
    last_g = -1
    for r in range(r0, n):
        k = key[r]
        if k == last_k:  # runs of one key (one volume, one window) skip the table
            gid[r] = last_g
            continue
        s = _slot(k, mask, 64 - cap_bits)
        while True:
            g = table[s]
            if g < 0:
                if 2 * (ng + 1) > table.shape[0]:  # keep the load under 1/2: the caller grows it
                    return r, ng
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
    return n, ng


@njit
def _table_ids(key, cap_bits):
    """Group id per row (first-appearance order) and the packed key of each group."""
    n = key.shape[0]
    cap = np.int64(1) << cap_bits
    table = np.full(cap, -1, dtype=np.int64)  # slot -> group id
    gkeys = np.empty(max(16, cap // 2), dtype=np.int64)
    gid = np.empty(n, dtype=np.int64)
    r, ng = _ids_until_full(key, 0, table, gkeys, gid, 0, cap_bits)
    while r < n:  # grow, re-insert the groups
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
        r, ng = _ids_until_full(key, r, table, gkeys, gid, ng, cap_bits)
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
def _reduce_rows(gid, ng, sums, highs):
    """:func:`_reduce` with the columns as rows of two 2-D arrays: one compiled type whatever the
    number of columns (a tuple of k arrays is a type of its own for each k, each compiled anew)."""
    out_s = np.zeros((sums.shape[0], ng), dtype=np.int64)
    out_h = np.full((highs.shape[0], ng), np.iinfo(np.int64).min, dtype=np.int64)
    for c in range(sums.shape[0]):
        col = sums[c]
        acc = out_s[c]
        for r in range(gid.shape[0]):
            acc[gid[r]] += col[r]
    for c in range(highs.shape[0]):
        col = highs[c]
        acc = out_h[c]
        for r in range(gid.shape[0]):
            if col[r] > acc[gid[r]]:
                acc[gid[r]] = col[r]
    return out_s, out_h


@njit
def timestamp_stats(ts, has_last, last_ts, last_run, gcd0):
    """The trace clock of one segment in time order, continuing the previous one's: the gcd of the
    positive timestamp steps with ``gcd0``, the longest run of one timestamp and the last run's
    length (``pipelines.replay._Aggregates._note_timestamps``)."""
    g = gcd0
    best = 0
    run = 0
    prev = 0
    last_d = 0  # a step equal to the last one leaves the gcd as it is: skip the division
    for r in range(ts.shape[0]):
        t = ts[r]
        if r == 0:
            if has_last and t > last_ts:
                d = t - last_ts
                g = _gcd(g, d)
            run = last_run + 1 if has_last and t == last_ts else 1
        else:
            d = t - prev
            if d > 0 and d != last_d and g != 1:  # (a gcd of 1 stays 1: ns-resolution traces)
                g = _gcd(g, d)
                last_d = d
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


def group_reduce_rows(key: np.ndarray, sums: np.ndarray, highs: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct key (first-appearance order): the key, the sums of each row of ``sums`` and
    the maxima of each row of ``highs`` (int64 2-D arrays, one column per table row)."""
    gid, gkeys = group_ids(key)
    out_s, out_h = _reduce_rows(gid, gkeys.shape[0], sums, highs)
    return gkeys, out_s, out_h


@njit
def _run_sums(win, col, acc):
    """``acc[win[r]] += col[r]``, summed in a register along each run of one window (a store per
    run, not per row: no chain of stores and loads of one cell)."""
    cur = win[0]
    v = np.int64(0)
    for r in range(win.shape[0]):
        if win[r] != cur:
            acc[cur] += v
            cur = win[r]
            v = 0
        v += col[r]
    acc[cur] += v


@njit
def _run_extremes(win, col, acc, lows):
    """``acc[win[r]] = max(acc[win[r]], col[r])`` (``lows``: min) along the runs of one window."""
    cur = win[0]
    v = acc[cur]
    for r in range(win.shape[0]):
        if win[r] != cur:
            acc[cur] = v
            cur = win[r]
            v = acc[cur]
        v = min(v, col[r]) if lows else max(v, col[r])
    acc[cur] = v


@njit
def window_runs(ts, interval_ns):
    """How many runs of one window ``ts // interval_ns`` has (rows in time order: one per window)."""
    k = 0
    lo = np.int64(1)
    hi = np.int64(0)
    for r in range(ts.shape[0]):
        t = ts[r]
        if t < lo or t >= hi:
            k += 1
            lo = t // interval_ns * interval_ns
            hi = lo + interval_ns
    return k


@njit
def _window_reduce(ts, interval_ns, w0, nw, sums, n_sums, highs, n_highs, lows, n_lows):
    """Row counts, sums, maxima and minima per window ``ts // interval_ns - w0`` (dense, ``nw``
    windows): the window of each row first (rows mostly in time order: recomputed only when a row
    leaves the last one), then each column along the runs of one window. Four sums and a maximum
    of 2 M time-ordered rows: 5.1 ns a row with every column in the row loop (a tuple indexed by a
    variable is a branch per column and row), 4.0 with a loop per column, 3.4 along runs."""
    n = ts.shape[0]
    win = np.empty(n, dtype=np.int32)
    counts = np.zeros(nw, dtype=np.int64)
    lo = np.int64(1)
    hi = np.int64(0)
    w = np.int64(0)
    run = np.int64(0)
    for r in range(n):
        t = ts[r]
        if t < lo or t >= hi:
            counts[w] += run
            run = 0
            w = t // interval_ns - w0
            lo = (w + w0) * interval_ns
            hi = lo + interval_ns
        win[r] = w
        run += 1
    counts[w] += run
    out_s = np.zeros((n_sums, nw), dtype=np.int64)
    out_h = np.full((n_highs, nw), np.iinfo(np.int64).min, dtype=np.int64)
    out_l = np.full((n_lows, nw), np.iinfo(np.int64).max, dtype=np.int64)
    for c in range(n_sums):
        _run_sums(win, sums[c], out_s[c])
    for c in range(n_highs):
        _run_extremes(win, highs[c], out_h[c], False)
    for c in range(n_lows):
        _run_extremes(win, lows[c], out_l[c], True)
    return counts, out_s, out_h, out_l


def window_reduce(ts_ns: np.ndarray, interval_ns: int, sums: tuple[np.ndarray, ...], highs: tuple[np.ndarray, ...],
                  lows: tuple[np.ndarray, ...]):
    """Per window of ``interval_ns`` that has rows (time order not needed): its number, the row
    count, each ``sums`` column's sum, each ``highs`` column's maximum and each ``lows`` column's
    minimum (int64). No hash table: the windows are counted densely, so None when they
    span more than ``DENSE_WINDOWS_MAX`` and more windows than rows (the caller groups by hash)."""
    ts = np.ascontiguousarray(ts_ns, dtype=np.int64)
    w0, w1 = int(ts.min()) // interval_ns, int(ts.max()) // interval_ns
    nw = w1 - w0 + 1
    if nw > max(DENSE_WINDOWS_MAX, ts.shape[0]):
        return None
    cols = [np.require(a, np.int64, ["C"]) for a in (*sums, *highs, *lows)]
    zero = np.zeros(0, dtype=np.int64)  # a tuple is never empty (numba types an empty one apart)
    k1, k2 = len(sums), len(sums) + len(highs)
    counts, s, h, lo = _window_reduce(ts, np.int64(interval_ns), np.int64(w0), nw, tuple(cols[:k1]) or (zero,), k1,
                                      tuple(cols[k1:k2]) or (zero,), len(highs), tuple(cols[k2:]) or (zero,), len(lows))
    used = np.flatnonzero(counts)
    return used + w0, counts[used], s[:, used], h[:, used], lo[:, used]


#: :func:`window_reduce` counts windows densely up to this many (or as many as its rows)
DENSE_WINDOWS_MAX = 1 << 16


def coarser_ids(ids: tuple[np.ndarray, np.ndarray], shift: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_ids` of ``key >> shift`` from those of ``key`` (the groups' keys are grouped,
    not the rows again)."""
    gid, gkeys = ids
    sub, subkeys = group_ids(gkeys >> shift)
    return sub[gid], subkeys


# --------------------------------------------------------------------------------------------
# a hash table keyed on (interval, volume, RAID group[, bucket]) rows (``replay.tally``)
# --------------------------------------------------------------------------------------------
#: the array replay's request table (``replay.tally``): its sums, in column order; with an SSD
#: cache the four SSD sums follow
REQUEST_SUMS = ("requests", "reads", "writes", "read_pages", "read_hit_pages", "write_pages", "write_hit_pages",
                "bytes", "latency_sum_ns", "stall_sum_ns", "stalled_requests", "throttle_sum_ns",
                "throttled_requests", "backend_read_ios", "backend_read_busy_ns", "dirty_sum", "rg_dirty_sum")
SSD_SUMS = ("ssd_read_hits", "ssd_read_misses", "ssd_through_hits", "ssd_through_misses")
REQUEST_MAXES = ("latency_max_ns", "dirty_max", "rg_dirty_max")


@step
def _hash(k0, k1, k2, k3, shift):
    h = (np.uint64(k0) * _GOLDEN) ^ np.uint64(k1)
    h = (h * _GOLDEN) ^ np.uint64(k2)
    h = (h * _GOLDEN) ^ np.uint64(k3)
    h *= _GOLDEN
    return np.int64(h >> np.uint64(shift))


@step
def find_row(tab, keys, k0, k1, k2, k3, bits):
    """The group of key (k0, k1, k2[, k3]) in the table (``keys`` has 3 or 4 columns), or
    ``-1 - slot`` of the empty slot where it goes."""
    mask = tab.shape[0] - 1
    s = _hash(k0, k1, k2, k3, 64 - bits)
    four = keys.shape[1] == 4
    while True:
        g = tab[s]
        if g < 0:
            return -1 - s
        if keys[g, 0] == k0 and keys[g, 1] == k1 and keys[g, 2] == k2 and (not four or keys[g, 3] == k3):
            return g
        s = (s + 1) & mask


@njit
def rehash(keys, ng, bits):
    tab = np.full(np.int64(1) << bits, -1, dtype=np.int64)
    four = keys.shape[1] == 4
    for q in range(ng):
        f = find_row(tab, keys, keys[q, 0], keys[q, 1], keys[q, 2], keys[q, 3] if four else 0, bits)
        tab[-1 - f] = q
    return tab


@njit
def grown(a, rows, fill):
    out = np.full((rows, a.shape[1]), fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit
def _dense_counts(group, bucket, n_groups, b0, nb):
    out = np.zeros((n_groups, nb), dtype=np.int64)
    for r in range(group.shape[0]):
        out[group[r], bucket[r] - b0] += 1
    return out


#: :func:`latency_hist` counts in a dense (group x bucket) matrix up to this many cells (8 B each)
DENSE_CELLS_MAX = 1 << 22


def latency_hist(group: np.ndarray, bucket: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Requests per (request group, latency bucket): (group, bucket, count) of each non-empty pair.
    A dense matrix when it is small (requests come in time order, so the groups being counted at
    any moment, one interval's, sit together in it: cache-friendly), else a hash table."""
    b0, b1 = int(bucket.min()), int(bucket.max())
    nb = b1 - b0 + 1
    if n_groups * nb <= DENSE_CELLS_MAX:
        m = _dense_counts(group, bucket, n_groups, b0, nb)
        gi, bi = np.nonzero(m)
        return gi, bi + b0, m[gi, bi]
    keys, counts, _, _ = group_reduce(group.astype(np.int64) * nb + (bucket - b0), (), ())
    return keys // nb, keys % nb + b0, counts
