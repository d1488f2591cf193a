"""The datasheet drive (``replay.mech.backend.drive``): seek curve, zones, SPTF gain, footprint span."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from pipelines.catalog import TraceRef
from pipelines.replay import max_end_bytes, resolve_mode
from replay.mech.backend import drive as dr
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.scenario import load

MS = 1_000_000
# Seagate Savvio 10K.4 SAS product manual (100539221 Rev. A, 2009), 4.2.1, without controller overhead
SAVVIO = {"t2t_ms": 0.30, "avg_ms": 3.8, "full_ms": 7.81}
DATASHEET = [f"drive_classes.sas10k.{v}" for v in (
    "avg_seek_ms=3.8", "track_to_track_ms=0.3", "full_stroke_ms=7.81", "write_seek_extra_ms=0.6",
    "command_overhead_ms=0.2", "transfer_mb_per_s=149.0", "transfer_inner_mb_per_s=77.0", "reordering='sptf'",
    "queue_depth_max=64")]


def test_seek_curve_passes_through_the_datasheet_figures():
    c = dr.seek_curve(SAVVIO["t2t_ms"], SAVVIO["avg_ms"], SAVVIO["full_ms"])
    assert float(c.at(0.0)) == pytest.approx(0.30)
    assert float(c.at(1.0)) == pytest.approx(7.81)
    assert c.mean_over(1.0) == pytest.approx(3.8, abs=1e-6)
    # an independent mean: random pairs of cylinders, plain Monte Carlo
    rng = np.random.default_rng(1)
    x, y = rng.random(400_000), rng.random(400_000)
    assert float(c.at(np.abs(x - y)).mean()) == pytest.approx(3.8, rel=0.01)
    # square root below d0, linear above, joined with equal value and slope
    assert 0.0 < c.d0 < 1.0
    lo, hi = c.d0 * (1 - 1e-6), c.d0 * (1 + 1e-6)
    assert float(c.at(hi)) == pytest.approx(float(c.at(lo)), rel=1e-5)
    assert c.c_ms == pytest.approx(c.k_ms / (2 * math.sqrt(c.d0)))
    # without a full-stroke figure: the square root through the average, as the planning model had
    s = dr.seek_curve(0.3, 3.8, None)
    assert s.mean_over(1.0) == pytest.approx(3.8) and s.k_ms == pytest.approx(3.5 * 15 / 8)


def test_an_average_seek_outside_what_the_curve_can_have_is_refused():
    with pytest.raises(ValueError, match=r"must be 2\.80-4\.31 ms"):
        dr.seek_curve(0.3, 5.0, 7.81)
    with pytest.raises(ValueError, match=r"full_stroke_ms.*does not fit a curve.*must be 2\.80-4\.31 ms"):
        load("vnx5400", ["drive_classes.sas10k.avg_seek_ms=5.0", "drive_classes.sas10k.full_stroke_ms=7.81"])
    with pytest.raises(ValueError, match=r"transfer_inner_mb_per_s.*faster than the outer"):
        load("vnx5400", ["drive_classes.sas10k.transfer_inner_mb_per_s=200.0"])


def test_zones_put_the_first_lbas_on_fewer_cylinders_at_the_outer_rate():
    assert dr.stroke_share(1.0, 160.0, 80.0) == pytest.approx(1.0)
    assert dr.stroke_share(0.5, 100.0, 100.0) == 0.5
    c = dr.stroke_share(0.5, 160.0, 80.0)
    # hand check: bytes on the first c of the cylinders, 160 c - 40 c^2, are half of 120
    assert 160 * c - 40 * c * c == pytest.approx(60.0)
    assert c < 0.5
    assert dr.mean_rate(1.0, 160.0, 80.0) == 120.0  # bytes/track x rev/s averaged over the stroke
    assert dr.mean_rate(0.0, 160.0, 80.0) == 160.0


def _closed_queue_numpy(q: int, rev_ns: float, seek_ns: float, ops: int, seed: int) -> float:
    """An independent SPTF closed queue with a constant seek (rotation alone decides), vectorised."""
    rng = np.random.default_rng(seed)
    ang = rng.random(q)
    t = 0.0
    total = 0.0
    for i in range(2 * ops):
        w = (ang - (t + seek_ns) / rev_ns) % 1.0 * rev_ns
        j = int(np.argmin(w))
        t += seek_ns + w[j]
        if i >= ops:
            total += seek_ns + w[j]
        ang[j] = rng.random()
    return total / ops


@pytest.mark.parametrize("q", [1, 2, 8])
def test_sptf_positioning_agrees_with_an_independent_simulation(q):
    rev = 6e6  # 10k rpm
    seek = 0.5 * MS
    # span 1e-12: every seek is the single-track time
    mine = dr._sptf_mean_ns(q, 1e-12, seek, 0.0, 1.0, seek, 0.0, rev, 0.0, 20_000, 7)
    other = _closed_queue_numpy(q, rev, seek, 20_000, 8)
    assert mine == pytest.approx(other, rel=0.03)
    if q == 1:
        assert mine == pytest.approx(seek + rev / 2, rel=0.02)  # hand: seek + half a rotation
    else:
        assert mine < seek + rev / (q + 1) * 1.5  # near a fresh draw's minimum, T / (q + 1)


def test_sptf_gain_grows_with_depth_shrinks_with_stroke_and_stops_at_the_tag_limit():
    c = dr.seek_curve(**SAVVIO)
    full = dr.reorder_gain(c, 1.0, 10_000, 50_000.0, 64)
    short = dr.reorder_gain(c, 0.01, 10_000, 50_000.0, 64)
    assert full[1] == pytest.approx(1.0) and full[0] == pytest.approx(1.0)
    assert all(a <= b * 1.02 for a, b in zip(full[1:65], full[2:66], strict=True))
    assert full[64] == full[1024]  # flat beyond the drive's tagged queue
    # full stroke: ~1.8x at 8 and ~2.7x at 32 (published SPTF studies: 2-3x at 16-32 for random I/O)
    assert 1.6 < full[8] < 2.1 and 2.3 < full[32] < 3.1
    assert short[8] > full[8]  # a short stroke leaves rotation, which reordering cuts most


def test_drive_record_from_the_datasheet():
    sc = load("vnx5400", DATASHEET)
    x = be.build(sc).drives[0]
    c = dr.seek_curve(**SAVVIO)
    assert x["pos_rand_ns"] == pytest.approx((c.mean_over(1.0) + 3.0) * MS)  # span 1: the full stroke
    assert x["xfer_ns_per_byte"] == pytest.approx(1e9 / (113.0 * 1e6))  # (149 + 77) / 2 MB/s
    assert x["overhead_ns"] == 0.2 * MS and x["write_extra_ns"] == 0.6 * MS
    # a read costs positioning + transfer + overhead; a background write 0.6 ms more
    queues = qk.new_queues(1)
    _, r = qk.drive_submit(be.build(sc).drives, queues, 0, 0, 1, 8192, 1.0, qk.HOST_READ)
    assert r == round(x["pos_rand_ns"] + 8192 * x["xfer_ns_per_byte"] + 0.2 * MS)
    queues = qk.new_queues(1)
    _, w = qk.drive_submit(be.build(sc).drives, queues, 0, 0, 1, 8192, 1.0, qk.BG_WRITE)
    assert w == r + 0.6 * MS
    # a sorted sweep of 10 requests per drive seeks 1/10 of the stroke on the curve
    assert qk.positioning_ns(x, 10.0) == pytest.approx((float(c.at(0.1)) + 3.0) * MS)


def test_span_comes_from_the_workload_footprint():
    sc = load("vnx5400")
    assert sc.pools[0].span_fraction == 1.0  # the preset says so: the footprint does not override it
    assert sc.with_footprint({"lun0": 45 << 30}).pools[0].span_fraction == 1.0
    auto = load("vnx5400", DATASHEET)
    free = replace(auto, pools=tuple(replace(p, span_fraction=None) for p in auto.pools))
    cap = free.data_capacity_bytes(free.pools[0])
    assert cap == 3 * 4 * (900 << 30)  # three 4+1 groups of "900GB" drives (the preset's GB: GiB)
    sized = free.with_footprint({"lun0": 45 * 10**9, "lun1": 63 * 10**9})
    assert sized.pools[0].span_fraction == pytest.approx(108e9 / cap)
    assert sized.hash != free.hash  # runs are keyed on the span used
    near = be.build(sized).drives[0]
    far = be.build(free.with_footprint({"lun0": 10**15})).drives[0]
    assert far["span"] == 1.0 and near["span"] < 0.01
    assert near["pos_rand_ns"] < 0.5 * far["pos_rand_ns"] + 3.0 * MS
    assert be.build(free).drives[0]["span"] == 1.0  # no footprint: full stroke


def test_a_trace_replay_takes_the_span_from_the_manifest(tmp_path):
    sc = load("xs5224d", ["replay.mode='closed'"])
    free = replace(sc, pools=tuple(replace(p, span_fraction=None) for p in sc.pools))
    ref = TraceRef("t", tmp_path, {"volumes": {"a": {"max_end": 45 << 30}, "b": {"max_end": 45 << 30}}})
    assert ref.max_end_bytes() == {"a": 45 << 30, "b": 45 << 30}
    got, _ = resolve_mode(free, ref)
    # seed 003: two 45 GiB volumes on 15 data drives of 500 "GB": 1.2 %, what the preset states
    assert got.pools[0].span_fraction == pytest.approx(90 / (15 * 500))
    assert got.pools[0].span_fraction == pytest.approx(sc.pools[0].span_fraction, rel=0.01)
    df = pl.DataFrame({"volume": ["a", "a", "b"], "offset": [0, 4096, 100], "size": [4096, 8192, 512]})
    assert max_end_bytes(df) == {"a": 12288, "b": 612}
