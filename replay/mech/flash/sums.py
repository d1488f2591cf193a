"""The all-flash array's per-segment sums in one compiled pass each (what ``pipelines.replay``
aggregates for ``[flash]``): the interval sums of ``_FLASH_SUMS`` and the writes before and after
the write cliff, together. numpy needed five to eight passes and as many temporary columns for them, 10-13 ns
a request on ``violin6232``, whose kernel takes ~75."""

from __future__ import annotations

import numpy as np

from replay.groupby import window_runs
from replay.jit import njit
from schemas.trace import OP_WRITE


@njit
def segment_sums(arrival, done, op, size, gc_bytes, wait_ns, free_bytes, interval_ns, searching):
    """One pass over a segment's requests (in time order) for both:

    * per window of ``arrival // interval_ns`` that has requests: (window, host write bytes, GC
      bytes, GC wait ns, GC waits, least free bytes), summed in registers until a row leaves the
      window (a window met again gets a row of its own, which the aggregation merges);
    * the writes about the write cliff (``pipelines.replay._Aggregates._split_at_cliff``;
      ``searching``: the cliff is not found yet): the first write that waited for GC (or the
      segment's length), the bound (its arrival, else the last arrival), writes and bytes done
      before the bound, the indices of the writes before it not done by the bound, writes and
      bytes from it on.

    One pass, not two: the loops are bound by memory (8.2 -> 4.8 ns a request in a ``violin6232``
    replay).
    The windows are counted first, so the result is never rebound in the loop (numba would count
    references on every row), and nothing branches on a request's op (a read or a write is a coin
    toss to the branch predictor: 6.7 -> 1.8 ns a request for the cliff's counts alone)."""
    n = arrival.shape[0]
    cut = 0
    if searching:
        cut = n
        for r in range(n):
            if wait_ns[r] > 0 and op[r] == OP_WRITE:
                cut = r
                break
    bound = arrival[cut] if cut < n else arrival[n - 1]
    out = np.empty((window_runs(arrival, interval_ns), 6), dtype=np.int64)
    late = np.empty(cut + 1, dtype=np.int64)
    n_late = 0
    pre_w = np.int64(0)
    pre_b = np.int64(0)
    post_w = np.int64(0)
    post_b = np.int64(0)
    k = -1
    lo = np.int64(1)
    hi = np.int64(0)
    wb = np.int64(0)
    gb = np.int64(0)
    ws = np.int64(0)
    wn = np.int64(0)
    fmin = np.iinfo(np.int64).max
    for r in range(n):
        t = arrival[r]
        if t < lo or t >= hi:
            if k >= 0:
                _window_row(out, k, wb, gb, ws, wn, fmin)
            k += 1
            out[k, 0] = t // interval_ns
            lo = out[k, 0] * interval_ns
            hi = lo + interval_ns
            wb = 0
            gb = 0
            ws = 0
            wn = 0
            fmin = np.iinfo(np.int64).max
        is_w = np.int64(op[r] == OP_WRITE)
        b = is_w * size[r]
        wb += b
        gb += gc_bytes[r]
        wt = wait_ns[r]
        ws += wt
        wn += wt > 0
        fmin = min(fmin, free_bytes[r])
        if r < cut:
            pre = is_w * np.int64(done[r] < bound)
            pre_w += pre
            pre_b += pre * size[r]
            late[n_late] = r
            n_late += is_w - pre
        else:
            post_w += is_w
            post_b += b
    if k >= 0:
        _window_row(out, k, wb, gb, ws, wn, fmin)
    return out, cut, bound, pre_w, pre_b, late[:n_late], post_w, post_b


@njit
def _window_row(out, k, wb, gb, ws, wn, fmin):
    out[k, 1] = wb
    out[k, 2] = gb
    out[k, 3] = ws
    out[k, 4] = wn
    out[k, 5] = fmin
