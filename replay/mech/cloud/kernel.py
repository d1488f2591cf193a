"""A cloud block-storage volume (``[cloud]``): AWS EBS gp2 / gp3 / io2 / st1, Azure Premium SSD
(with the credit bursting of P20 and below) and Premium SSD v2, GCP pd-balanced and Hyperdisk
Balanced. Like the all-flash array it replaces the DRAM cache and the RAID back end
(``replay.array.run_volume_requests``: its own event loop); the host issues requests as for every
array (open loop at the trace's times, or closed loop at N outstanding).

**I/O path.** A request is accounted in the provider's units (EBS: an SSD volume counts up to 256
KiB as one I/O and merges physically sequential I/Os of one kind into 256 KiB units, an HDD volume
does the same in 1 MiB units and charges a random I/O a whole 1 MiB of throughput; Azure and GCP:
256 KiB units, no merging), then takes its tokens from up to four buckets (volume IOPS,
volume throughput, instance IOPS, instance throughput; FCFS: a request starts at the earliest
time all of them can give its tokens at once), then is served after a service time drawn from a lognormal through the
type's median and 99th percentile (``read_latency_ms`` / ``read_latency_p99_ms`` ...), with no
limit on I/Os in flight: the volume's limits are its buckets, the host's queue is the FCFS wait.
With a ``[device]`` (``replay.mech.device.kernel``, e.g. ``tiercast calibrate`` of the volume measured
from an instance) the device serves what the buckets let through instead, with its queue,
parallelism, write cache and cap: a cloud volume is a device with token buckets in front.

**A bucket** (:func:`ready`, :func:`commit`) has a peak rate (tokens per second it never exceeds over a window: a
request's tokens leave ``u / peak`` apart, but up to ``rate_window_ms`` of them may pass back to
back, so two requests a microsecond apart on a trace's clock do not wait), and optionally credits: a balance of at most ``cap`` tokens that refills
at the baseline rate and pays for every token taken. While credits remain the volume runs at its
peak (gp2: 3,000 IOPS); when a request finds too few it waits until the baseline refill has made
them (the volume then runs at the baseline: gp2 100 GiB, 300 IOPS). That is AWS's gp2 bucket: 5.4 M
credits drain at (3,000 - 300) per second at a constant 3,000 IOPS and last 2,000 s. Without
credits a bucket is a plain rate limit at its peak (gp3 IOPS and MiB/s, io2, pd-balanced).
``exhausted_ns`` records the first wait for credits (``burst_exhausted_s`` in the summary).

The service times are drawn from a hash of ``seed`` and the request's number, so a trace fed in
any number of segments gives the same outcomes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replay.jit import step
from replay.layout import record
from schemas.trace import OP_READ, OP_WRITE

I8, F8 = np.int64, np.float64
Z99 = 2.3263478740408408  # the standard normal's 99th percentile
#: the buckets, in the order a request takes their tokens
BUCKETS = ("volume_iops", "volume_bytes", "instance_iops", "instance_bytes")
IOPS_BUCKETS = (0, 2)  # tokens: accounted I/Os; the others: bytes

#: One bucket's state (``CloudState.buckets[k]``): credit balance, when it was last refilled (-1: not
#: yet), its peak rate's theoretical arrival time, when its credits first held a request back, how
#: many they held back, and the tokens it gave.
BUCKET = record([("bal", F8), ("last", F8), ("free", F8), ("exhausted_ns", I8), ("waits", I8), ("tokens", F8)])
#: The volume's counters and its I/O accounting state (one record, ``CloudState.c``).
CLOUD = record([(n, I8) for n in (  # requests and bytes by op: the host's counters (host.count)
    "ios",  # accounted I/Os (after merging, in the type's units)
    "merged",  # requests merged into the I/O before them (no I/O of their own)
    "throttled", "throttle_ns",  # requests that waited for tokens, and their waits added up
    "last_vol", "last_end", "last_op", "run_bytes",  # the sequential run being merged
)])


class CloudParams(NamedTuple):
    """Immutable parameters (from the scenario's ``[cloud]``; ``on = 0`` without it)."""

    on: int
    peak_ns: np.ndarray  # float64 [4]: ns per token at the bucket's peak rate (0: no bucket)
    base: np.ndarray  # float64 [4]: credit refill, tokens per ns (credit buckets)
    cap: np.ndarray  # float64 [4]: credit bucket size in tokens (0: a plain rate limit)
    tau_ns: float  # the peak rates' tolerance (``rate_window_ms``)
    unit_bytes: int  # the accounting unit (256 KiB SSD, 1 MiB HDD)
    merge: int  # merge physically sequential I/Os into units
    random_unit: int  # HDD: a random I/O costs a whole unit of throughput
    read_mu: float  # ln of the read service median, ns
    read_sigma: float
    write_mu: float
    write_sigma: float
    seed: int


class CloudState(NamedTuple):
    buckets: np.ndarray  # 4 BUCKET records
    c: np.ndarray  # one CLOUD record


def _lognormal(median_ms: float, p99_ms: float) -> tuple[float, float]:
    return math.log(median_ms * 1e6), math.log(p99_ms / median_ms) / Z99


def bucket_rates(sc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(peak rate, credit refill rate, credit cap) per bucket (:data:`BUCKETS`), in tokens per
    second and tokens; 0 peak: no such bucket."""
    c = sc.cloud
    lim = c.limits
    mib = float(1 << 20)
    peak = np.zeros(4)
    base = np.zeros(4)
    cap = np.zeros(4)
    peak[0], base[0], cap[0] = (lim.burst_iops, lim.iops, lim.credit_ios) if lim.burst_iops else (lim.iops, 0, 0)
    peak[1], base[1], cap[1] = ((lim.burst_mib_per_s * mib, lim.mib_per_s * mib, lim.credit_bytes)
                                if lim.burst_mib_per_s else (lim.mib_per_s * mib, 0, 0))
    for k, rate, burst, unit in ((2, c.instance_iops, c.instance_burst_iops, 1.0),
                                 (3, c.instance_mib_per_s, c.instance_burst_mib_per_s, mib)):
        if rate:
            if burst > rate:
                peak[k], base[k], cap[k] = burst * unit, rate * unit, (burst - rate) * unit * c.instance_burst_s
            else:
                peak[k] = rate * unit
    return peak, base, cap


def params(sc) -> CloudParams:
    c = sc.cloud
    if c is None:
        z = np.zeros(4)
        return CloudParams(0, z, z, z, 0.0, 1 << 18, 0, 0, 0.0, 0.0, 0.0, 0.0, 0)
    peak, base, cap = bucket_rates(sc)
    t = c.type
    rm, rs = _lognormal(c.read_latency_ms, c.read_latency_p99_ms)
    wm, ws = _lognormal(c.write_latency_ms, c.write_latency_p99_ms)
    return CloudParams(
        on=1, peak_ns=np.where(peak > 0, 1e9 / np.where(peak > 0, peak, 1.0), 0.0), base=base / 1e9, cap=cap,
        tau_ns=c.rate_window_ms * 1e6,
        unit_bytes=int(t.io_unit_bytes), merge=int(t.merge_sequential), random_unit=int(t.random_costs_unit),
        read_mu=rm, read_sigma=rs, write_mu=wm, write_sigma=ws, seed=int(c.seed))


def new_state(sc, p) -> CloudState:
    cp = p.cloud
    b = np.zeros(4, BUCKET)
    b["exhausted_ns"] = -1
    b["last"] = -1.0  # the first request's time starts the refill clock
    pct = sc.cloud.initial_credit_pct / 100.0 if sc.cloud is not None else 1.0
    b["bal"] = cp.cap * pct
    c = np.zeros(1, CLOUD)
    c["last_vol"] = -1
    c["last_op"] = -1
    return CloudState(buckets=b, c=c)


# ---- kernel steps ----------------------------------------------------------------------------
@step
def ready(peak_ns, base, cap, tau, b, t, u):
    """The earliest time from ``t`` (float ns) at which bucket ``b`` can give ``u`` tokens: peak
    pacing (tokens leave ``peak_ns`` apart, with a tolerance of ``tau`` ns: the generic cell rate
    algorithm, ``b.free`` its theoretical arrival time), then credits (refilled at ``base`` per ns
    up to ``cap``; too few: wait for the refill). Changes nothing."""
    if u <= 0.0 or peak_ns == 0.0:
        return t
    if t < b.free - tau:
        t = b.free - tau
    if cap > 0.0:
        bal = b.bal + (t - b.last) * base if b.last >= 0.0 else b.bal
        if bal > cap:
            bal = cap
        if bal < u:
            t += (u - bal) / base
    return t


@step
def commit(peak_ns, base, cap, b, s, t, u):
    """Bucket ``b`` gives ``u`` tokens at ``s`` to a request that was ready at ``t``; records the
    first time its credits held it back (``exhausted_ns``)."""
    if u <= 0.0 or peak_ns == 0.0:
        return
    if cap > 0.0:
        bal = b.bal + (s - b.last) * base if b.last >= 0.0 else b.bal
        if bal > cap:
            bal = cap
        if bal < u * (1.0 + 1e-9) + 1e-9 and s - t >= 1.0:  # its credits set the start: it ran dry
            b.waits += 1
            if b.exhausted_ns < 0:
                b.exhausted_ns = np.int64(s + 0.5)
        bal -= u
        b.bal = bal if bal > 0.0 else 0.0
        b.last = s
    b.free = (s if s > b.free else b.free) + u * peak_ns
    b.tokens += u


@step
def _mix(x):
    """splitmix64's finaliser: a well-spread 64-bit hash of ``x`` (uint64)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@step
def service_ns(cp, op, n):
    """The service time of request number ``n``: lognormal (Box-Muller on two hashed uniforms)."""
    h1 = _mix(np.uint64(n) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(cp.seed) * np.uint64(2) + np.uint64(1))
    h2 = _mix(h1 + np.uint64(0x9E3779B97F4A7C15))
    u1 = (np.float64(h1 >> np.uint64(11)) + 0.5) / 9007199254740992.0
    u2 = np.float64(h2 >> np.uint64(11)) / 9007199254740992.0
    z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    if op == OP_WRITE:
        return np.int64(math.exp(cp.write_mu + cp.write_sigma * z) + 0.5)
    return np.int64(math.exp(cp.read_mu + cp.read_sigma * z) + 0.5)


@step
def account(cp, c, vol, op, offset, size):
    """(accounted I/Os, accounted throughput bytes) of a request; merges a physically sequential
    I/O of the same kind into the unit before it."""
    unit = cp.unit_bytes
    seq = cp.merge != 0 and vol == c.last_vol and op == c.last_op and offset == c.last_end and c.run_bytes > 0
    if seq:
        total = c.run_bytes + size
        units = (total + unit - 1) // unit
        ios = units - 1
        c.run_bytes = total - (units - 1) * unit
        c.merged += ios == 0
    else:
        ios = (size + unit - 1) // unit
        if ios < 1:
            ios = 1
        c.run_bytes = size - (ios - 1) * unit
    c.last_vol = vol
    c.last_op = op
    c.last_end = offset + size
    c.ios += ios
    acct = size
    if cp.random_unit != 0 and not seq:
        acct = ios * unit
    return ios, acct


@step
def tokens(cp, cs, vol, op, offset, size, t):
    """A host request ready at ``t`` takes its tokens. Returns (when it had them, its wait for
    them, accounted I/Os); a trim or flush moves no data and takes none."""
    c = cs.c[0]
    if op != OP_READ and op != OP_WRITE:
        return t, np.int64(0), np.int64(0)
    ios, acct = account(cp, c, vol, op, offset, size)
    b = cs.buckets
    u_io = np.float64(ios)
    u_b = np.float64(acct)
    # the earliest time every bucket can give its tokens at once (each only moves it later: a few rounds)
    t0 = np.float64(t)
    s = t0
    for _ in range(16):
        s1 = ready(cp.peak_ns[0], cp.base[0], cp.cap[0], cp.tau_ns, b[0], s, u_io)
        s1 = ready(cp.peak_ns[1], cp.base[1], cp.cap[1], cp.tau_ns, b[1], s1, u_b)
        s1 = ready(cp.peak_ns[2], cp.base[2], cp.cap[2], cp.tau_ns, b[2], s1, u_io)
        s1 = ready(cp.peak_ns[3], cp.base[3], cp.cap[3], cp.tau_ns, b[3], s1, u_b)
        if s1 <= s:
            break
        s = s1
    commit(cp.peak_ns[0], cp.base[0], cp.cap[0], b[0], s, t0, u_io)
    commit(cp.peak_ns[1], cp.base[1], cp.cap[1], b[1], s, t0, u_b)
    commit(cp.peak_ns[2], cp.base[2], cp.cap[2], b[2], s, t0, u_io)
    commit(cp.peak_ns[3], cp.base[3], cp.cap[3], b[3], s, t0, u_b)
    # to the trace's nanosecond: less than one is the float clock's rounding, not a wait
    start = t if s - t < 1.0 else np.int64(s + 0.5)
    wait = start - t
    if wait > 0:
        c.throttled += 1
        c.throttle_ns += wait
    return start, wait, ios


def counters(sc, p, state) -> dict[str, int | float]:
    """``cloud_*`` counters: requests, accounted I/Os, merges, waits; per bucket its tokens,
    the requests its credits held back and when they first did."""
    cs = state.cloud
    c = cs.c[0]
    out: dict[str, int | float] = {f"cloud_{k}": int(c[k]) for k in ("ios", "merged", "throttled", "throttle_ns")}
    cp = p.cloud
    for k, name in enumerate(BUCKETS):
        b = cs.buckets[k]
        if cp.peak_ns[k] == 0:
            continue
        out[f"cloud_{name}_credit_waits"] = int(b["waits"])
        out[f"cloud_{name}_tokens"] = float(b["tokens"])
        out[f"cloud_{name}_exhausted_ns"] = int(b["exhausted_ns"])
        if cp.cap[k] > 0:
            out[f"cloud_{name}_credits_end"] = float(b["bal"])
    return out
