"""The DRAM cache in the array model, on hand-worked cases: coalescing, watermark flushing, forced
flushing (FLARE) against throttling (MCx), closed loop, and segmented replay = one pass."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import polars as pl
import pytest
from test_backend import assert_segmenting_invariant, replay_rows

from replay.array import LOG_ROWS_MAX, ArrayModel
from replay.events import new_log
from replay.pages import SegmentBuilder
from replay.scenario import loads

FLARE_SMALL = """
name = "wm"
[dram]
mode = "flare"
cache_bytes = "800KiB"          # 100 pages of 8 KiB, all write cache
flush_unit_bytes = "8KiB"       # one page per flush unit: dirty pages = dirty units
[dram.flare]
read_cache_bytes = 0
idle_flush_outstanding = 0      # watermark flushing only
[drive_classes.sas]
planning_iops = 150
rpm = 10000
[[raid_groups]]
name = "rg0"
level = 5
width = 5
drive_class = "sas"
stripe_element_bytes = "64KiB"
[[pools]]
name = "p"
raid_groups = ["rg0"]
"""


def two_groups(mode: str, extra: str = "", idle_flush: int = 0) -> str:
    """A flooded RAID 5 of 7.2k drives and an application volume on a RAID 10 of SSDs."""
    return f"""
name = "two"
[dram]
mode = "{mode}"
cache_bytes = "9MiB"            # 1024 pages of 8 KiB of write cache (FLARE: + 1 MiB read cache)
[dram.flare]
read_cache_bytes = "1MiB"
idle_flush_outstanding = {idle_flush}
[drive_classes.nl]
planning_iops = 90
rpm = 7200
[drive_classes.ssd]
kind = "ssd"
planning_iops = 5000
transfer_mb_per_s = 500
[[raid_groups]]
name = "slow"
level = 5
width = 5
drive_class = "nl"
[[raid_groups]]
name = "fast"
level = 10
width = 4
drive_class = "ssd"
[[pools]]
name = "slow"
raid_groups = ["slow"]
[[pools]]
name = "fast"
raid_groups = ["fast"]
[volumes]
default_pool = "slow"
[[volumes.map]]
pattern = "app"
pool = "fast"
{extra}
"""


def flood_and_app(flood_writes: int = 1100):
    """``flood_writes`` distinct 8 KiB pages written at 10k/s from t=0, and an application
    reading one of 64 pages every 10 ms for 1 s."""
    rows = [(i * 100_000, "flood", "write", (i * 977 % 100_000) * 8192, 8192) for i in range(flood_writes)]
    rows += [(i * 10_000_000 + 5_000, "app", "read", (i % 64) * 8192, 8192) for i in range(100)]
    rows.sort()
    app = np.array([r[1] == "app" for r in rows])
    return rows, app


def test_write_coalescing_counts():
    sc = loads(two_groups("mcx", "[dram.mcx]\ninitial_age_ms = 60000"), "c.toml")
    rows = [(0, "v", "write", 0, 8192), (1000, "v", "write", 0, 8192), (2000, "v", "write", 8192, 8192),
            (3000, "v", "write", 0, 4096), (4000, "v", "write", 4096, 8192)]  # last one: pages 0 and 1
    m, st, out, _ = replay_rows(sc, rows)
    c = m.counters(st)
    assert out["write_pages"].tolist() == [1, 1, 1, 1, 2]
    assert out["write_hit_pages"].tolist() == [0, 1, 0, 1, 2]
    assert (c["write_pages"], c["write_hit_pages"], c["dirty_pages"], c["flush_ops"]) == (6, 4, 2, 0)
    assert c["write_hit_ratio"] == pytest.approx(4 / 6)
    # a read of a dirty page hits
    m, st, out, _ = replay_rows(sc, rows + [(5000, "v", "read", 8192, 8192)])
    assert out["read_hit_pages"][-1] == 1 and m.counters(st)["backend_read_ios"] == 0


def test_watermark_flushing_stops_at_the_low_mark():
    sc = loads(FLARE_SMALL, "wm.toml")
    ms = 1_000_000
    # 79 dirty pages (every third page: no full stripes): below the high watermark (80 % of
    # 100 pages), nothing is flushed
    rows = [(i * ms, "a", "write", 3 * i * 8192, 8192) for i in range(79)] + [(10_000 * ms, "b", "read", 0, 8192)]
    m, st, _, _ = replay_rows(sc, rows)
    assert (m.counters(st)["dirty_pages"], m.counters(st)["flush_ops"]) == (79, 0)
    # the 80th reaches the high watermark: flushing runs down to exactly 60 pages, then stops
    rows = [(i * ms, "a", "write", 3 * i * 8192, 8192) for i in range(80)] + [(10_000 * ms, "b", "read", 0, 8192)]
    m, st, out, rec = replay_rows(sc, rows)
    c = m.counters(st)
    assert (c["dirty_pages"], c["flush_ops"], c["flush_pages"], c["backend_write_ios"]) == (60, 20, 20, 80)
    assert rec["flush"]["rg_dirty_pages"].tolist() == list(range(79, 59, -1))  # dirty pages after each flush
    assert c["forced_flush_count"] == 0 and out["stall_ns"].sum() == 0
    # flushed pages are the oldest (lowest offsets were written first) and stay readable
    rows2 = rows + [(10_001 * ms, "a", "read", 3 * i * 8192, 8192) for i in range(20)]
    m, st, out, _ = replay_rows(sc, rows2)
    assert out["read_hit_pages"][-20:].sum() == 20 and m.counters(st)["backend_read_ios"] == 1


def test_forced_flush_stalls_another_volume_on_another_raid_group_under_flare():
    rows, app = flood_and_app()
    m, st, out, rec = replay_rows(loads(two_groups("flare"), "ff.toml"), rows)
    c = m.counters(st)
    stalls = rec["forced_flush"]
    assert c["forced_flush_count"] == 1 == len(stalls["ts_ns"])
    t0, dur = int(stalls["ts_ns"][0]), int(stalls["stall_ns"][0])
    assert dur == c["forced_flush_stall_ns"] > 100_000_000  # flushing 40 % of 1024 pages on 7.2k drives
    # the flush that ended the stall brought dirty pages to the low watermark (60 % of 1024)
    assert rec["flush"]["rg_dirty_pages"].min() <= int(1024 * 0.6)
    arr = out["arrival_ns"]
    inside = app & (arr >= t0) & (arr < t0 + dur)
    assert inside.sum() >= 10  # the application kept issuing reads during the stall...
    # ... and each waited exactly until the end of the stall, though it never touched the slow group
    assert (out["stall_ns"][inside] == t0 + dur - arr[inside]).all()
    assert (out["done_ns"][inside] >= t0 + dur).all()
    assert (out["stall_ns"][app & (arr < t0)] == 0).all()
    assert out["rg"][app].tolist() == [1] * app.sum()


def test_a_forced_flush_until_the_next_flush_stalls_briefly_but_often():
    """``forced_flush_until = "next_flush"`` (EMC's best practices: forced flushes take milliseconds,
    tens a second) against the default (down to the low watermark), on a flood the 7.2k RAID 5 cannot
    absorb: many more stalls, each one flush write behind the queued ones (~130-180 ms here, not the
    ~2.8 s of flushing 40 % of the cache); the back end bounds the run either way; overlapping stalls
    count once, so their sum stays within the run."""
    rows, app = flood_and_app(3000)
    runs = {}
    for until in ("low_watermark", "next_flush"):
        text = two_groups("flare").replace("[dram.flare]\n", f'[dram.flare]\nforced_flush_until = "{until}"\n', 1)
        m, st, out, rec = replay_rows(loads(text, f"{until}.toml"), rows)
        runs[until] = (m.counters(st), out, rec)
    (c0, out0, rec0), (c, out, rec) = runs["low_watermark"], runs["next_flush"]
    stalls = rec["forced_flush"]
    assert c["forced_flush_count"] == len(stalls["ts_ns"]) >= 10 * c0["forced_flush_count"] > 0
    assert int(stalls["stall_ns"].max()) * 5 < int(rec0["forced_flush"]["stall_ns"].min())
    assert rec0["flush"]["rg_dirty_pages"].min() <= int(1024 * 0.6) < rec["flush"]["rg_dirty_pages"].min()
    assert out["done_ns"].max() == pytest.approx(out0["done_ns"].max(), rel=0.15)  # back-end bound
    ends = stalls["ts_ns"] + stalls["stall_ns"]
    before = np.r_[0, np.maximum.accumulate(ends)[:-1]]
    union = int(np.clip(ends - np.maximum(stalls["ts_ns"], before), 0, None).sum())
    assert c["forced_flush_stall_ns"] == union <= int(out["done_ns"].max())


def test_mcx_throttles_only_the_group_that_cannot_keep_up():
    rows, app = flood_and_app(5000)  # 0.5 s of flood: more than the pool holds
    m, st, out, _ = replay_rows(loads(two_groups("mcx"), "ff.toml"), rows)
    c = m.counters(st)
    assert c["forced_flush_count"] == 0 and out["stall_ns"].sum() == 0
    assert out["throttle_ns"][~app].sum() > 1_000_000_000  # the flood's writes were held back
    assert out["throttle_ns"][app].sum() == 0
    lat = out["done_ns"] - out["arrival_ns"]
    assert lat[app].max() < 1_000_000  # SP + mirror-free SSD read: well under 1 ms, flood or not
    assert out["rg"][app].tolist() == [1] * app.sum()


def test_closed_loop_issues_when_the_earliest_outstanding_completes():
    sc = loads(two_groups("mcx"), "cl.toml").with_replay(mode="closed", outstanding=4)
    rows = [(0, "app", "read", i * 8192, 8192) for i in range(12)]  # all misses on the SSD group
    _, _, out, _ = replay_rows(sc, rows)
    arr, done = out["arrival_ns"], out["done_ns"]
    assert (arr[:4] == 0).all()
    for i in range(4, 12):  # request i issues at the i-3rd smallest completion so far
        assert arr[i] == np.sort(done[:i])[i - 4]


@pytest.mark.parametrize("mode, closed", [("flare", False), ("mcx", False), ("mcx", True), ("flare", True)])
def test_segmented_replay_equals_one_pass(mode, closed):
    rng = np.random.default_rng(7)
    n = 6000
    ops = rng.choice(["read", "write", "write", "trim"], n, p=[0.45, 0.25, 0.25, 0.05])
    vols = rng.choice(["app", "flood", "other"], n)
    vols[n // 2:] = rng.choice(["app", "other"], n - n // 2)  # "flood" goes idle half way
    offs = rng.integers(0, 4000, n) * 4096
    sizes = rng.choice([4096, 8192, 65536], n)
    ts = np.cumsum(rng.exponential(300_000, n)).astype(np.int64)
    rows = list(zip(ts.tolist(), vols.tolist(), ops.tolist(), offs.tolist(), sizes.tolist(), strict=True))
    sc = loads(two_groups(mode, idle_flush=2), "ch.toml")
    if closed:
        sc = sc.with_replay(mode="closed", outstanding=8)
    c1 = assert_segmenting_invariant(sc, rows, (1, 17, 999))
    assert c1["flush_ops"] > 100 and c1["trimmed_pages"] > 0  # the case exercises flushing and trims
    if mode == "flare" and not closed:
        assert c1["idle_flush_ops"] > 0


def test_records_kept_in_order_when_the_buffer_fills_mid_segment():
    """A segment whose records overflow the record buffer (started at 128 rows here) makes the
    kernel stop, the rows move out and the buffer double; the drained records and the outcomes
    equal those of a run whose buffer never filled."""
    rng = np.random.default_rng(11)
    n = 6000
    ops = rng.choice(["read", "write"], n, p=[0.3, 0.7])
    offs = rng.integers(0, 4000, n) * 4096
    ts = np.cumsum(rng.exponential(300_000, n)).astype(np.int64)
    rows = list(zip(ts.tolist(), ["app"] * n, ops.tolist(), offs.tolist(), [8192] * n, strict=True))
    sc = loads(two_groups("mcx"), "r.toml")
    _, _, out1, rec1 = replay_rows(sc, rows)
    m = ArrayModel(sc)
    st = m.new_state()
    st.logs = st.logs._replace(flush=new_log("flush", 128))
    b = SegmentBuilder(sc.dram.page_bytes)
    ch = b.build(pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row"))
    st.volume_names = list(b.volumes)
    out2 = m.replay(st, ch)
    assert len(st.records["flush"]) >= 1 and 128 < st.logs.flush.rows.shape[0] <= LOG_ROWS_MAX  # stopped, grew
    rec2 = m.drain_records(st)
    assert rec1["flush"]["ts_ns"].shape[0] > 4 * 128
    for kind in rec1:
        for k in rec1[kind]:
            assert np.array_equal(rec1[kind][k], rec2[kind][k]), (kind, k)
    for k in out1:
        assert np.array_equal(out1[k], out2[k]), k
    assert st.records == {} and m.drain_records(st)["flush"]["ts_ns"].shape[0] == 0


def test_outcome_arrays_are_reused_only_once_the_caller_let_them_go():
    """``ArrayModel`` hands a replay's outcome buffer to the next replay of the same size only
    when nothing holds it (``sys.getrefcount``): outcomes a caller keeps are never overwritten."""
    rng = np.random.default_rng(5)
    n = 3000
    rows = list(zip(np.cumsum(rng.exponential(300_000, n)).astype(np.int64).tolist(), ["app"] * n,
                    rng.choice(["read", "write"], n).tolist(), (rng.integers(0, 4000, n) * 4096).tolist(),
                    [8192] * n, strict=True))
    df = pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")
    sc = loads(two_groups("mcx"), "s.toml")
    m = ArrayModel(sc)
    st = m.new_state()
    b = SegmentBuilder(sc.dram.page_bytes)
    segments = [b.build(df.slice(i, 1000)) for i in range(0, n, 1000)]
    st.volume_names = list(b.volumes)
    kept = m.replay(st, segments[0])
    kept_copy = {k: v.copy() for k, v in kept.items()}
    second = m.replay(st, segments[1])
    assert not np.shares_memory(kept["done_ns"], second["done_ns"])
    assert all(np.array_equal(kept[k], kept_copy[k]) for k in kept)  # untouched by the second replay
    addr = second["arrival_ns"].ctypes.data
    del second
    third = m.replay(st, segments[2])
    assert third["arrival_ns"].ctypes.data == addr  # the released buffer, reused
    assert all(np.array_equal(kept[k], kept_copy[k]) for k in kept)
    clone = pickle.loads(pickle.dumps(m))  # spare buffers are not part of the model
    assert clone._spares == {} and clone.kernel_params.dram_cache == m.kernel_params.dram_cache


def test_state_is_picklable_and_forks():
    rows, _ = flood_and_app(300)
    sc = loads(two_groups("flare"), "p.toml")
    m, st, _, _ = replay_rows(sc, rows)
    clone = pickle.loads(pickle.dumps(st))
    fork = copy.deepcopy(st)
    assert m.counters(clone) == m.counters(fork) == m.counters(st)
    assert np.array_equal(clone.dram_cache.units, st.dram_cache.units) and clone.unit_ids.n_ids == st.unit_ids.n_ids


def test_raise_outstanding_mid_run_like_an_iometer_ramp():
    """2 outstanding, then 4: the two new I/Os issue when the next one would have (the earliest
    outstanding completion), later ones at each completion; a loop cannot shrink."""
    sc = loads(two_groups("mcx"), "r.toml").with_replay(mode="closed", outstanding=2)
    m = ArrayModel(sc)
    st = m.new_state()
    b = SegmentBuilder(sc.dram.page_bytes)
    rows = [(0, "app", "read", i * 65536, 8192) for i in range(10)]
    df = pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")
    first = m.replay(st, b.build(df.slice(0, 4)))
    heap_min = int(np.sort(np.concatenate([first["done_ns"]]))[-2])  # the 2 still outstanding: the last two
    m.raise_outstanding(st, 4)
    second = m.replay(st, b.build(df.slice(4, 6)))
    assert second["arrival_ns"][0] == second["arrival_ns"][1] == heap_min
    done = np.concatenate([first["done_ns"], second["done_ns"]])
    for i in range(6, 10):  # request i issues at the (i-3)th smallest completion so far
        assert second["arrival_ns"][i - 4] == np.sort(done[:i])[i - 4]
    with pytest.raises(ValueError, match="can only grow"):
        m.raise_outstanding(st, 3)


def test_tables_are_cache_line_records():
    """Units (64 B) and SSD chunks with their cache entries (64 B) start on a 64-byte boundary,
    so a record never straddles two cache lines, and empty records hold the documented defaults."""
    from replay.mech.dram_cache import kernel as dc
    from replay.mech.ssd_cache import kernel as ssd

    assert (dc.UNIT.itemsize, ssd.CHUNK.itemsize) == (64, 64)
    units = dc.grow(dc.new_units(3), 1000, dc.new_units)
    chunks = ssd.new_chunks(1000)
    for a in (units, chunks):
        assert a.ctypes.data % 64 == 0
    assert (units["lp"] == -1).all() and (units["part"] == -1).all() and (units["sfirst"] == -1).all()
    assert (units["flags"] == 0).all() and (units["valid"] == 0).all() and (units["since"] == 0).all()
    assert (chunks["slot"] == -1).all() and (chunks["accesses"] == 0).all()
    for link in ("lru_prev", "lru_next", "dirty_prev", "dirty_next"):
        assert (chunks[link] == -1).all()


def test_split_units_matches_numpy_with_empty_requests():
    """The compiled per-page split equals the numpy expressions it replaced; a request without
    pages (a host flush) gets an empty page range."""
    from replay.array import split_units

    page_no = np.array([0, 9, 17, 70, 71, 1_000_003], dtype=np.int64)
    page_req = np.array([0, 0, 2, 2, 3, 5], dtype=np.int64)  # requests 1, 4 and 6 have no pages
    volume = np.array([0, 1, 1, 2, 0, 3, 0], dtype=np.int64)
    unit_no, pbit, keys = (np.empty(6, dtype=np.int64) for _ in range(3))
    pstart = np.empty(8, dtype=np.int64)
    split_units(page_no, page_req, volume, 3, 44, unit_no, pbit, keys, pstart)
    assert unit_no.tolist() == [0, 1, 2, 8, 8, 125_000]
    assert pbit.tolist() == [0, 1, 1, 6, 7, 3]
    assert keys.tolist() == ((volume[page_req] << 44) | (page_no >> 3)).tolist()
    assert pstart.tolist() == [0, 2, 2, 4, 5, 5, 6, 6]


def test_placement_beyond_int16_is_refused():
    """Units keep placement in int16 fields: 64 MiB elements x 4 data drives / 8 KiB units =
    32,768 units per stripe is one too many, refused by name rather than truncated."""
    big = FLARE_SMALL.replace('stripe_element_bytes = "64KiB"', 'stripe_element_bytes = "64MiB"')
    with pytest.raises(ValueError, match=r"^scenario 'wm': 32,768 flush units in one stripe; the array model "
                                         r"handles at most 32,767$"):
        ArrayModel(loads(big, "big.toml"))


def test_two_controllers_each_serve_the_pools_they_own():
    """Cache hits are storage-processor bound: 1 / (overhead + bytes / bandwidth) per controller.
    Seed 003's dual setup (a pool per controller) serves two volumes' hits twice as fast as one
    controller owning both pools; pools on a controller that does not exist are refused."""
    from dataclasses import replace as dc_replace

    from pipelines.replay import replay_frames
    from pipelines.seed_figures import dual_controller
    from replay.scenario import PRESET_DIR

    dual = dual_controller("xs5224d")
    dual = dc_replace(dual, controller=dc_replace(dual.controller, overhead_us=10.0))
    single = dc_replace(dual, controller=dc_replace(dual.controller, count=1),
                        pools=tuple(dc_replace(p, controller=0) for p in dual.pools))
    n = 200_000
    df = pl.DataFrame({"ts_ns": np.arange(n, dtype=np.int64), "volume": ["c0-0", "c1-0"] * (n // 2), "op": ["read"] * n,
                       "offset": (np.arange(n, dtype=np.int64) // 2 % 256) * 4096, "size": [4096] * n})
    per_io_s = 10e-6 + 4096 / 6000e6
    iops = {}
    for name, sc in (("single", single), ("dual", dual)):
        res = replay_frames([df], sc.with_replay(mode="closed", outstanding=64, warmup_pct=10), total=n)
        assert res.summary["read_hit_ratio"] > 0.99
        iops[name] = res.summary["iops"]
    assert iops["single"] == pytest.approx(1 / per_io_s, rel=0.03)
    assert iops["dual"] == pytest.approx(2 / per_io_s, rel=0.03)
    text = (PRESET_DIR / "xs5224d.toml").read_text().replace("span_fraction = 0.012", "span_fraction = 0.012\ncontroller = 1")
    with pytest.raises(ValueError, match=r"line 64: \[\[pools\]\] #1 controller: pool 'pool1': controller 1 of 1"):
        loads(text)
