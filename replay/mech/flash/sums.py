"""The all-flash array's per-segment sums in one compiled pass each (what ``pipelines.replay``
aggregates for ``[flash]``): the interval sums of ``_FLASH_SUMS`` and the writes before and after
the write cliff. numpy needed five to eight passes and as many temporary columns for them, 10-13 ns
a request on ``violin6232``, whose kernel takes ~75."""

from __future__ import annotations

import numpy as np

from replay.jit import njit
from schemas.trace import OP_WRITE


@njit
def windows(arrival, interval_ns, op, size, gc_bytes, wait_ns, free_bytes):
    """Per window of ``arrival // interval_ns`` that has requests (rows in time order: a window is
    summed in registers until a row leaves it; a window met again gets a row of its own, which the
    aggregation merges): (window, host write bytes, GC bytes, GC wait ns, GC waits, least free
    bytes)."""
    n = arrival.shape[0]
    out = np.empty((64, 6), dtype=np.int64)
    k = -1
    lo = np.int64(1)
    hi = np.int64(0)
    for r in range(n):
        t = arrival[r]
        if t < lo or t >= hi:
            k += 1
            if k == out.shape[0]:
                bigger = np.empty((2 * k, 6), dtype=np.int64)
                bigger[:k] = out
                out = bigger
            w = t // interval_ns
            lo = w * interval_ns
            hi = lo + interval_ns
            out[k, 0] = w
            out[k, 1] = 0
            out[k, 2] = 0
            out[k, 3] = 0
            out[k, 4] = 0
            out[k, 5] = np.iinfo(np.int64).max
        if op[r] == OP_WRITE:
            out[k, 1] += size[r]
        out[k, 2] += gc_bytes[r]
        wt = wait_ns[r]
        out[k, 3] += wt
        out[k, 4] += wt > 0
        out[k, 5] = min(out[k, 5], free_bytes[r])
    return out[: k + 1]


@njit
def cliff_split(op, size, arrival, done, wait_ns, searching):
    """One segment's writes about the cliff (``pipelines.replay._Aggregates._split_at_cliff``).
    ``searching``: the cliff is not found yet. Returns (the first write that waited for GC, or the
    segment's length; the bound: its arrival, else the last arrival; writes and bytes done before
    the bound; the indices of the writes before it not done by the bound; writes and bytes from
    it on)."""
    n = op.shape[0]
    cut = 0
    if searching:
        cut = n
        for r in range(n):
            if op[r] == OP_WRITE and wait_ns[r] > 0:
                cut = r
                break
    bound = arrival[cut] if cut < n else arrival[n - 1]
    pre_w = np.int64(0)
    pre_b = np.int64(0)
    late = np.empty(cut, dtype=np.int64)
    n_late = 0
    for r in range(cut):
        if op[r] == OP_WRITE:
            if done[r] < bound:
                pre_w += 1
                pre_b += size[r]
            else:
                late[n_late] = r
                n_late += 1
    post_w = np.int64(0)
    post_b = np.int64(0)
    for r in range(cut, n):
        if op[r] == OP_WRITE:
            post_w += 1
            post_b += size[r]
    return cut, bound, pre_w, pre_b, late[:n_late], post_w, post_b
