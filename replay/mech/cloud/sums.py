"""A cloud volume's per-segment interval sums in one compiled pass (``results.Results.add``): the
requests by arrival (throttled ones, their waits) and by the moment they had their tokens (data
requests, accounted I/Os, bytes, credit balances). numpy needed eight passes and six temporary
columns for them."""

from __future__ import annotations

import numpy as np

from replay.groupby import window_runs
from replay.jit import njit
from schemas.trace import OP_READ, OP_WRITE

#: columns of :func:`segment_sums`' two tables
ARRIVED = ("window", "requests", "throttled_requests", "throttle_wait_sum_ns")
STARTED = ("window", "started", "ios", "bytes", "credit_ios_min", "credit_bytes_min", "credit_ios_max",
           "credit_bytes_max")


@njit
def segment_sums(arrival, start, op, size, wait_ns, ios, credit_ios, credit_bytes, interval_ns):
    """Per run of one window of ``arrival`` (``ARRIVED``) and of ``start`` (``STARTED``), summed in
    registers until a row leaves it (a window met again gets a row of its own, which the
    aggregation merges). The runs are counted first, so the tables are never rebound in the loop
    (numba would count references on every row); nothing branches on a request's op."""
    n = arrival.shape[0]
    a = np.empty((window_runs(arrival, interval_ns), len(ARRIVED)), dtype=np.int64)
    s = np.empty((window_runs(start, interval_ns), len(STARTED)), dtype=np.int64)
    ka = -1
    ks = -1
    alo = np.int64(1)
    ahi = np.int64(0)
    slo = np.int64(1)
    shi = np.int64(0)
    for r in range(n):
        t = arrival[r]
        if t < alo or t >= ahi:
            ka += 1
            a[ka, 0] = t // interval_ns
            a[ka, 1:] = 0
            alo = a[ka, 0] * interval_ns
            ahi = alo + interval_ns
        w = wait_ns[r]
        a[ka, 1] += 1
        a[ka, 2] += w > 0
        a[ka, 3] += w
        t = start[r]
        if t < slo or t >= shi:
            ks += 1
            s[ks, 0] = t // interval_ns
            s[ks, 1:4] = 0
            s[ks, 4:6] = np.iinfo(np.int64).max
            s[ks, 6:8] = np.iinfo(np.int64).min
            slo = s[ks, 0] * interval_ns
            shi = slo + interval_ns
        o = op[r]
        data = np.int64(o == OP_READ) | np.int64(o == OP_WRITE)
        s[ks, 1] += data
        s[ks, 2] += ios[r]
        s[ks, 3] += data * size[r]
        ci = credit_ios[r]
        cb = credit_bytes[r]
        s[ks, 4] = min(s[ks, 4], ci)
        s[ks, 5] = min(s[ks, 5], cb)
        s[ks, 6] = max(s[ks, 6], ci)
        s[ks, 7] = max(s[ks, 7], cb)
    return a, s
