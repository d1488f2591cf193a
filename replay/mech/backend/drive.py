"""A hard drive from its datasheet: seek curve, zoned transfer, the stroke the data occupies and the
gain of command reordering, as numbers for the back end's drive records (``kernel.build``).

* **Seek curve** (Ruemmler & Wilkes, IEEE Computer 1994: square root for short seeks, where the arm
  accelerates and coasts, linear for long ones): ``seek(d) = t2t + k sqrt(d)`` up to the distance
  ``d0`` (a share of the full stroke), ``b + c d`` beyond, joined smoothly at ``d0``. The datasheet's
  three figures fix it: single-track (``t2t``), full-stroke (``seek(1)``) and average (the mean over
  uniform random pairs of cylinders, the way manuals define it). Without a full-stroke figure the
  curve is the square root alone through the average.
* **Zones.** Outer tracks hold more sectors: the media rate falls from ``outer`` at LBA 0 to
  ``inner`` at the last LBA, linearly in the cylinder; data on the first ``s`` of the LBAs sits on
  the first ``c(s) <= s`` of the cylinders, transferred at the byte-weighted mean rate there.
* **Reordering** (shortest positioning time first, as SAS drives do with tagged queues): a
  simulated closed queue of ``q`` requests uniform over the occupied cylinders and angles; the
  drive serves the one whose seek plus rotational wait is least, and a new request takes its place
  (the requests left behind are the awkward ones, so the gain is below a fresh draw's minimum).
  The gain at q is the mean positioning at queue depth 1 over that at q.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from replay.jit import njit
from replay.mech.backend.schema import seek_range

#: queue depths the reordering gain is simulated at (linear interpolation between them)
GAIN_DEPTHS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
#: served requests per simulated depth (after as many again to settle the queue's mix)
GAIN_OPS = 4000
_GRID = 4001  # quadrature points over [0, 1]
#: for two uniform random points on [0, 1], E[sqrt(|x - y|)] = 8/15
SQRT_DISTANCE_MEAN = 8.0 / 15.0


class SeekCurve(NamedTuple):
    """``seek(d) = t2t + k sqrt(d)`` for ``d <= d0``, ``b + c d`` beyond (ms; d: share of the stroke)."""

    t2t_ms: float
    k_ms: float
    d0: float
    b_ms: float
    c_ms: float

    def at(self, d):
        d = np.asarray(d, dtype=float)
        return np.where(d <= self.d0, self.t2t_ms + self.k_ms * np.sqrt(d), self.b_ms + self.c_ms * d)

    def mean_over(self, span: float) -> float:
        """Mean seek between two uniform random points of the first ``span`` of the stroke (the
        distance ``span x u`` has density ``2 (1 - u)``)."""
        if self.d0 >= 1.0:  # square root throughout: closed form
            return self.t2t_ms + self.k_ms * SQRT_DISTANCE_MEAN * math.sqrt(span)
        u = np.linspace(0.0, 1.0, _GRID)
        return float(np.trapezoid(self.at(span * u) * 2.0 * (1.0 - u), u))


def _curve(t2t: float, full: float, d0: float) -> SeekCurve:
    # C1 join: c = k / (2 sqrt d0), b = t2t + k sqrt(d0) / 2; seek(1) = full fixes k
    r = math.sqrt(d0)
    k = (full - t2t) / ((r + 1.0 / r) / 2.0)
    c = k / (2.0 * r)
    return SeekCurve(t2t, k, d0, t2t + k * r / 2.0, c)


@lru_cache(maxsize=256)
def seek_curve(t2t_ms: float, avg_ms: float, full_ms: float | None) -> SeekCurve:
    """The curve through the datasheet's single-track, average and full-stroke seeks (ValueError
    when the average is out of :func:`seek_range`). Cached: its bisection (60 quadratures of 4,001
    points) takes 2.5 ms, and a replay asks for its drives' curves 9 times (docs/performance.md,
    *Fixed costs of a small replay*)."""
    if full_ms is None:
        k = (avg_ms - t2t_ms) / SQRT_DISTANCE_MEAN
        return SeekCurve(t2t_ms, k, 1.0, t2t_ms + k / 2.0, k / 2.0)
    lo, hi = seek_range(t2t_ms, full_ms)
    if not lo <= avg_ms <= hi:
        raise ValueError(f"an average seek of {avg_ms} ms does not fit a curve from {t2t_ms} ms (single track) to "
                         f"{full_ms} ms (full stroke): it must be {lo:.2f}-{hi:.2f} ms")
    a, z = 1e-9, 1.0  # the mean grows with d0 (more of the curve is the concave square root)
    for _ in range(60):
        m = (a + z) / 2.0
        if _curve(t2t_ms, full_ms, m).mean_over(1.0) < avg_ms:
            a = m
        else:
            z = m
    return _curve(t2t_ms, full_ms, (a + z) / 2.0)


def stroke_share(lba_share: float, outer: float, inner: float) -> float:
    """The share of the cylinders the first ``lba_share`` of the LBAs occupies, with the track
    capacity falling linearly from ``outer`` to ``inner`` across the stroke."""
    if outer == inner:
        return lba_share
    # lba_share = (outer c - (outer - inner) c^2 / 2) / ((outer + inner) / 2), smaller root
    g = outer - inner
    disc = outer * outer - g * lba_share * (outer + inner)
    return min(1.0, (outer - math.sqrt(max(disc, 0.0))) / g)


def mean_rate(cyl_share: float, outer: float, inner: float) -> float:
    """Byte-weighted mean media rate over the first ``cyl_share`` of the cylinders (the rate of
    the bytes stored there, in the unit of ``outer`` and ``inner``)."""
    return outer - (outer - inner) * cyl_share / 2.0


@njit
def _sptf_mean_ns(q, span, t2t, k, d0, b, c, rev_ns, xfer_ns, ops, seed):
    """Mean positioning (seek + rotational wait, ns) of a drive serving a closed queue of ``q``
    requests shortest-positioning-first; requests uniform over ``span`` of the stroke and angle."""
    np.random.seed(seed)
    cyl = np.random.random(q) * span
    ang = np.random.random(q)
    head = np.random.random() * span
    t = 0.0
    total = 0.0
    for step in range(2 * ops):
        best = 1e30
        bi = 0
        for j in range(q):
            d = abs(cyl[j] - head)
            s = t2t + k * math.sqrt(d) if d <= d0 else b + c * d
            w = ang[j] - (t + s) / rev_ns
            w = (w - math.floor(w)) * rev_ns
            if s + w < best:
                best = s + w
                bi = j
        t += best + xfer_ns
        if step >= ops:
            total += best
        head = cyl[bi]
        cyl[bi] = np.random.random() * span
        ang[bi] = np.random.random()
    return total / ops


@lru_cache(maxsize=256)
def reorder_gain(curve: SeekCurve, cyl_span: float, rpm: int, xfer_ns: float, depth_max: int,
                 efficiency: float = 1.0) -> tuple[float, ...]:
    """Positioning gain of SPTF at whole queue depths 0 .. ``GAIN_TABLE - 1`` (the back end's gain
    table), flat beyond ``depth_max`` (the tagged commands the drive takes); ``efficiency`` is the
    share of the ideal gain a drive's firmware realises (``1 + efficiency x (ideal - 1)``)."""
    from replay.mech.backend.queueing import GAIN_TABLE

    rev_ns = 60e9 / rpm
    args = (cyl_span, curve.t2t_ms * 1e6, curve.k_ms * 1e6, curve.d0, curve.b_ms * 1e6, curve.c_ms * 1e6, rev_ns,
            xfer_ns, GAIN_OPS, 12345)
    depths = [d for d in GAIN_DEPTHS if d < depth_max] + [depth_max]
    means = [_sptf_mean_ns(d, *args) for d in depths]
    gains = [1.0 + efficiency * (means[0] / m - 1.0) for m in means]
    qs = np.arange(GAIN_TABLE, dtype=float)
    table = np.interp(np.clip(qs, 1.0, depth_max), depths, gains)
    return tuple(float(g) for g in table)
