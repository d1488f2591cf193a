"""Calibration: the seed figures that parameters of the presets were FITTED to. Each test asserts
that its fit still holds (a model change that breaks it must refit, or say why not); none of
them is evidence that the model is right. The figures no parameter was fitted to are checked in
tests/test_seed_validation.py; pipelines/seed_figures.py measures both and holds the seed-figures table (docs/models/seed-figures.md).

Seed 000: 15 SAS 10k drives (planning 150 IOPS each) in three RAID 5 4+1 groups, IOMeter's
database pattern (8 KB, 67 % read, 100 % random) over a 15 GB test file, ~4 GB of SP cache:
2250 = X * 0.67 + 4 * X * 0.33 gives X ~ 1130 host IOPS with the drives at their planning rate;
"in peak loads we usually get 1.5-2 times higher figures"; a 2 GB file fits in the cache.

Seed 002: one RAID 5 4+1 group of 10k drives, 1 worker with 16 outstanding 100 % random 8 KB
unaligned writes: FLARE ~513 IOPS, MCx ~900 (ratio 1.75).

SSD caches. Seed 000: FAST Cache (2 x 100 GB SSD, RAID 1) ~20 % full after the 75-minute test on a
150 GB file. Seed 003: QCache 2.0 on 8 SSDs, 4 KB random reads at QD 128 over 90 GB go from 4,512
to 216,434 IOPS after ~7 minutes; writes (mirrored read-write cache) reach 143,898.
"""

from __future__ import annotations

import pytest

from pipelines.seed_figures import (
    FC_MINUTES,
    PLANNING_000,
    SEED000_PEAK,
    at_minute,
    seed000_2gb,
    seed000_curve,
    seed000_fastcache,
    seed000_fastcache_ramp,
    seed000_planning_iops,
    seed002_cached,
    seed003_qcache,
)

pytestmark = pytest.mark.calibration


def test_seed000_planning_iops():
    """fit: ``dirty_target_pct`` 5 (MCx dirty share; 10 gives +17 %). The host IOPS where each
    drive does 150 back-end IOPS is within 15 % of 2250 / (0.67 + 4 x 0.33). 15 %: the
    bar for array models (docs/models/sources.md#how-good-must-a-storage-model-be) (Uysal et al.: 15 % average error); the fit sits at +12 %."""
    curve = seed000_curve()
    x = seed000_planning_iops(curve)
    assert abs(x / PLANNING_000 - 1) <= 0.15, (x, {n: (r["backend_iops_per_drive"], r["iops"]) for n, r in curve.items()})


def test_seed000_backend_ios_per_host_io_sanity():
    """Sanity check (holds for any correct RAID 5 accounting, not a seed figure): back-end I/Os per
    host I/O = 0.67 x read misses + 4 x 0.33 x writes not coalesced, less where dirty pages of a
    64 KB unit are adjacent and go to disk in one read-modify-write: with MCx holding up to its
    throttle room (30 % of the pool) dirty, 3.45 back-end writes per flushed page instead of 4 were
    measured at 12 outstanding (0.90 of the formula), so at most 15 % less; a lost parity write
    would give about half."""
    for n, r in seed000_curve().items():
        expect = 0.67 * (1 - r["read_hit_ratio"]) + 4 * 0.33 * (1 - r["write_hit_ratio"])
        assert 0.85 * expect <= r["backend_ios_per_request"] <= expect, (n, r["backend_ios_per_request"], expect)


def test_seed000_deep_queues_peak():
    """fit: ``reorder_efficiency`` 0.35 (the share of the ideal SPTF gain the drives realise). At 96 and 192 outstanding
    the pool gives 1.5-2x the planning IOPS: the article's range is the tolerance."""
    curve = seed000_curve()
    lo, hi = SEED000_PEAK
    for n in (96, 192):
        assert lo <= curve[n]["iops"] <= hi, (n, curve[n]["iops"], SEED000_PEAK)


def test_seed000_2gb_runs_from_cache():
    """fit: ``overhead_us`` 30 µs (SP time per host I/O: the ceiling of a cache-resident load;
    nothing else sets it). The article: the VNX5400 did 20-25 % better than the VNXe3200's
    23,800 IOPS (at 8 ms) on the 2 GB file at 192 streams -> 28,560-29,750 IOPS; tolerance 15 %
    around the middle. The cache behaviour around it is the model's own (not fitted): after the
    warm-up > 98 % of reads hit; writes are acknowledged from the cache, most of them onto a page
    still dirty (MCx flushes a page at most 120 s after it was dirtied, and each page is rewritten
    every ~30 s here), and throttling stays negligible."""
    r = seed000_2gb()
    assert abs(r["iops"] / (23_800 * 1.225) - 1) <= 0.15, r["iops"]
    assert r["read_hit_ratio"] > 0.98
    assert r["write_hit_ratio"] > 0.6 and r["throttle_delay_sum_ms"] / r["measured_requests"] < 0.1


def test_seed002_mcx_over_flare():
    """Calibration by assumption: the article does not give its test-file size, and over 8 GiB to
    1 TiB the model's ratio runs from 0.5 to 1.7 (the sensitivity table of docs/models/seed-figures.md); the full-LUN file
    assumed (1 TiB) is what makes it 1.70. Tolerance 15 % (as above). Both regimes must be the
    ones the article describes: FLARE lives in forced-flush cycles, MCx throttles and never
    force-flushes."""
    flare, fs = seed002_cached("vnx1-flare")
    mcx, ms = seed002_cached("vnx2-mcx")
    assert fs["forced_flush_count"] >= 4
    assert ms["forced_flush_count"] == 0 and ms["throttle_delay_sum_ms"] > 0
    assert abs((mcx / flare) / (900 / 513) - 1) <= 0.15, (mcx, flare)


def test_seed000_fast_cache_150gb_fill_after_75_minutes():
    """fit: ``fill_mib_per_s`` 6.0 (FAST Cache's promotion copy bandwidth; not published). The
    database pattern over 150 GB, run as the article did (12 -> 24 -> 48 -> 96 -> 192 outstanding,
    15 minutes each), fills 20 % (±15 % of that: 17-23 %) of the 100 GB FAST Cache by the end, and
    the fill only grows; at a steady 48 outstanding it is within the same band."""
    fills = [s["fill_pct"] for s in seed000_fastcache_ramp(150, True)]
    assert 17.0 <= fills[-1] <= 23.0 and fills == sorted(fills), fills
    assert 17.0 <= at_minute(seed000_fastcache(150, True), "fill_t", FC_MINUTES) <= 23.0


def test_seed003_qcache_read_warm_up_and_plateau():
    """fit: ``fill_mib_per_s`` 200 (QCache's population copy bandwidth) to the ~7 min warm-up, and the SSD
    class's ``read_iops`` 28,000 to 216,434 IOPS; tolerance 15 % each. The warm-up is when the
    cache first holds 90 % of the 90 GB working set; every 4 MB block of it is populated (23,040)."""
    r = seed003_qcache("read")
    assert abs(r["warmup_s"] / 420 - 1) <= 0.15, r["warmup_s"]
    assert abs(r["plateau_iops"] / 216_434 - 1) <= 0.15, r["plateau_iops"]
    assert r["ssd_promotions"] == 90 * 1024 // 4


def test_seed003_qcache_write_plateau():
    """fit: the SSD class's ``write_iops`` 36,000 (each host write is flushed onto a mirrored pair:
    2 x 143,898 / 8 SSDs); tolerance 15 %."""
    r = seed003_qcache("write")
    assert abs(r["plateau_iops"] / 143_898 - 1) <= 0.15, r["plateau_iops"]


def test_every_seed_run_passes_the_physics_checks():
    """The seed programs (closed loop at the articles' depths) on their presets: no model error
    from ``pipelines/physics.py`` on any (utilisation vs latency, throttle and stall triggers,
    Little's law, mass balance). Seed 002's MCx run throttles, and its throttle is explained."""
    from pipelines.physics import model_errors
    from pipelines.seed_figures import seed003_cached, seed004

    runs = {f"seed000 at {n}": r for n, r in seed000_curve().items()}
    runs["seed000 2 GB"] = seed000_2gb()
    for p in ("vnx1-flare", "vnx2-mcx"):
        runs[f"seed002 {p}"] = seed002_cached(p)[1]
    for k in ("read", "write"):
        runs[f"seed003 {k}"] = seed003_cached(k)[1]
    runs["seed004 row"] = seed004("row")["summary"]
    assert {k: model_errors(r["warnings"]) for k, r in runs.items() if model_errors(r["warnings"])} == {}
    assert all(r.get("mode", "closed") == "closed" for r in runs.values())
    assert runs["seed002 vnx2-mcx"]["throttled_requests"] > 0
