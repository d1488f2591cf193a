"""RAID placement and write cost, drive service times and the queueing kernels, by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.seed_figures import scenario_of, seed003
from replay.array import ArrayModel
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.pages import SegmentBuilder
from replay.scenario import load, loads

MS = 1_000_000


def scenario(level: int, width: int, extra: str = "") -> str:
    return f"""
name = "t"
[dram]
mode = "mcx"
cache_bytes = "64MiB"
flush_queue_depth = 1
[dram.mcx]
initial_age_ms = 10
min_age_ms = 10
[drive_classes.sas]
planning_iops = 150
rpm = 10000
[[raid_groups]]
name = "rg0"
level = {level}
width = {width}
drive_class = "sas"
[[pools]]
name = "p"
raid_groups = ["rg0"]
{extra}
"""


def replay_rows(sc, rows, segment_rows=None):
    """rows: (ts_ns, volume, op, offset, size); ``segment_rows``: rows per segment or a list of segment
    boundaries; returns model, state, outcomes, records."""
    df = pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")
    m = ArrayModel(sc)
    st = m.new_state()
    b = SegmentBuilder(sc.dram.page_bytes)
    if isinstance(segment_rows, list):  # segment boundaries (row indexes)
        cuts = [0, *segment_rows, df.height]
    else:
        cuts = [*range(0, df.height, segment_rows or df.height), df.height]
    outs = []
    for i, j in zip(cuts[:-1], cuts[1:], strict=True):
        ch = b.build(df.slice(i, j - i))
        st.volume_names = list(b.volumes)
        outs.append(m.replay(st, ch))
    out = {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}
    return m, st, out, m.drain_records(st)


def assert_segmenting_invariant(sc, rows, segmentings) -> dict:
    """Replays ``rows`` in one pass and in each of ``segmentings`` (rows per segment or boundary
    lists): outcomes, records and counters must be identical. Returns the one-pass counters."""
    m1, st1, out1, rec1 = replay_rows(sc, rows)
    for segment_rows in segmentings:
        m2, st2, out2, rec2 = replay_rows(sc, rows, segment_rows=segment_rows)
        for k in out1:
            assert np.array_equal(out1[k], out2[k]), (segment_rows, k)
        for kind in rec1:
            for k in rec1[kind]:
                assert np.array_equal(rec1[kind][k], rec2[kind][k]), (segment_rows, kind, k)
        assert m1.counters(st1) == m2.counters(st2)
    return m1.counters(st1)


def test_planning_arithmetic_of_seed_000():
    # 15 x 150 = 2250 = X*0.67 + 4*X*0.33  ->  X = 2250 / 1.99 = 1130.65
    assert be.planning_host_iops(150, 15, 0.67, 4) == pytest.approx(2250 / 1.99)
    assert be.planning_host_iops(150, 15, 1.0, 4) == pytest.approx(2250)


@pytest.mark.parametrize("level, width, ios", [(5, 5, 4), (6, 6, 6), (10, 4, 2), (1, 2, 2), (0, 3, 1)])
def test_small_write_costs_the_raid_penalty(level, width, ios):
    """One 8 KiB write, flushed once it is older than the 10 ms pre-cleaning age: RAID 5 = 4
    back-end I/Os (read and write data and parity), RAID 6 = 6, RAID 1/10 = 2, RAID 0 = 1."""
    sc = loads(scenario(level, width), "t.toml")
    m, st, out, rec = replay_rows(sc, [(0, "a", "write", 8192 * 3, 8192), (10**9, "b", "read", 0, 8192)])
    c = m.counters(st)
    assert (c["flush_ops"], c["flush_pages"], c["backend_write_ios"]) == (1, 1, ios)
    assert c["backend_read_ios"] == 1 and c["dirty_pages"] == 0
    assert rec["flush"]["ios"].tolist() == [ios] and rec["flush"]["pages"].tolist() == [1]


def test_full_stripe_write_avoids_the_penalty():
    """RAID 5 4+1, 64 KiB elements: 256 KiB at offset 0 fills a whole stripe -> 5 writes
    (4 data + parity), no reads; 192 KiB fills 3 units of a stripe -> 3 read-modify-writes."""
    sc = loads(scenario(5, 5), "t.toml")
    m, st, _, rec = replay_rows(sc, [(0, "a", "write", 0, 256 << 10), (10**9, "b", "read", 0, 8192)])
    c = m.counters(st)
    assert (c["full_stripe_writes"], c["flush_ops"], c["flush_pages"], c["backend_write_ios"]) == (1, 1, 32, 5)
    m, st, _, rec = replay_rows(sc, [(0, "a", "write", 0, 192 << 10), (10**9, "b", "read", 0, 8192)])
    c = m.counters(st)
    assert (c["full_stripe_writes"], c["flush_ops"], c["flush_pages"], c["backend_write_ios"]) == (0, 3, 24, 12)


#: FLARE with write-aside at 128 KiB (the read cache small enough to leave a write cache of 48 MiB)
WRITE_ASIDE = '[dram.flare]\nread_cache_bytes = "16MiB"\nwrite_aside_bytes = "128KiB"\n'


def flare(level: int, width: int, extra: str = WRITE_ASIDE):
    return loads(scenario(level, width, extra).replace('mode = "mcx"', 'mode = "flare"'), "t.toml")


def assert_mass_balance(c: dict) -> None:
    assert c["write_pages"] == (c["write_hit_pages"] + c["write_through_pages"] + c["write_aside_pages"]
                                + c["flush_pages"] + c["dirty_pages"] + c["trimmed_dirty_pages"]
                                + c["write_aside_superseded_pages"])


def test_flare_write_aside_goes_past_the_cache():
    """Writes above ``write_aside_bytes`` (128 KiB) are not cached: 256 KiB at offset 0 is one
    full stripe of the 4+1 group (5 writes, no reads, the host waits for the drives: ms, not the
    0.1 ms mirror hop); 192 KiB covers 3 units of a stripe: 3 read-modify-writes (3 data drives
    x 2 + parity 3 x 2 = 12 I/Os); 64 KiB is cached (8 dirty pages, no drive I/O). Nothing is
    flushed, and every host page is accounted for."""
    rows = [(0, "a", "write", 0, 256 << 10), (10**9, "a", "write", 512 << 10, 192 << 10),
            (2 * 10**9, "a", "write", 2 << 20, 64 << 10)]
    sc = flare(5, 5)
    c = assert_segmenting_invariant(sc, rows, [1, 2])
    m, st, out, _ = replay_rows(sc, rows)
    assert (c["write_aside_stripes"], c["write_aside_pages"], c["write_pages"], c["dirty_pages"]) == (1, 56, 64, 8)
    assert (c["flush_ops"], c["full_stripe_writes"], c["backend_write_ios"], c["backend_read_ios"]) == (0, 0, 17, 0)
    assert out["backend_ios"].tolist() == [5, 12, 0]
    latency_ms = (out["done_ns"] - out["arrival_ns"]) / MS
    assert latency_ms[0] > 3 and latency_ms[1] > latency_ms[0] and latency_ms[2] < 0.5
    assert_mass_balance(c)
    off = flare(5, 5, WRITE_ASIDE.replace('"128KiB"', "0"))
    m, st, _, _ = replay_rows(off, rows)
    c = m.counters(st)
    assert (c["write_aside_pages"], c["dirty_pages"]) == (0, 64)


def test_write_aside_supersedes_dirty_pages_and_mcx_has_none():
    """A cached 8 KiB write, then a 256 KiB write-aside over it: the dirty page is superseded (never
    flushed), the stripe written whole. MCx has no write-aside: the same setting changes nothing."""
    rows = [(0, "a", "write", 0, 8 << 10), (10**6, "a", "write", 0, 256 << 10)]
    m, st, _, _ = replay_rows(flare(5, 5), rows)
    c = m.counters(st)
    assert (c["write_aside_superseded_pages"], c["write_aside_pages"], c["write_aside_stripes"]) == (1, 32, 1)
    assert (c["flush_pages"], c["dirty_pages"], c["backend_write_ios"]) == (0, 0, 5)
    assert_mass_balance(c)
    mcx = loads(scenario(5, 5, WRITE_ASIDE), "t.toml")
    m, st, _, _ = replay_rows(mcx, rows)
    c = m.counters(st)
    assert (c["write_aside_pages"], c["write_pages"], c["write_hit_pages"]) == (0, 33, 1)


def test_raid5_placement_rotates_parity():
    sc = loads(scenario(5, 5), "t.toml")
    m = ArrayModel(sc)
    bp, bs = m.kernel_params.backend, m.new_state().backend
    out = be.new_place()

    def place(unit_no):
        be.place_unit(unit_no, 64 << 10, 0, 0, 0, bp, bs, out)
        return {k: int(out[0][k]) for k in be.PLACE.names}

    # stripe 0: parity on drive 4, data units 0..3 on drives 0..3
    assert [(place(u)["data"], place(u)["p1"]) for u in range(4)] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    # stripe 1: parity on drive 3, data starts after it (left-symmetric)
    assert [(place(u)["data"], place(u)["p1"]) for u in range(4, 8)] == [(4, 3), (0, 3), (1, 3), (2, 3)]
    assert place(5)["sfirst"] == 4 and place(5)["sunits"] == 4


def test_pool_spreads_slices_round_robin():
    sc = load("vnx5400")
    m = ArrayModel(sc)
    bp, bs = m.kernel_params.backend, m.new_state().backend
    out = be.new_place()
    per_slice = (256 << 20) // (64 << 10)
    rgs = []
    for s in range(6):
        be.place_unit(s * per_slice, 64 << 10, 0, 1, 1, bp, bs, out)
        rgs.append(int(out[0]["rg"]))
    assert rgs == [1, 2, 0, 1, 2, 0]  # volume base 1: slices start on the second group


def test_hdd_service_time_is_the_planning_rate_at_queue_depth_one():
    ba = be.build(loads(scenario(5, 5)))  # a drive class with planning IOPS only (the presets': datasheets)
    queues = qk.new_queues(5)
    done, svc = qk.drive_submit(ba.drives, queues, 0, 0, 1, 8192, 1.0, True)
    assert svc == round(1e9 / 150) and done == svc  # 6.667 ms: seek 3.61 + rotation 3.0 + transfer
    # a second read queued behind it: q = 1 + backlog / nominal = 2 requests, positioning / 2**0.12
    done2, svc2 = qk.drive_submit(ba.drives, queues, 0, 0, 1, 8192, 1.0, True)
    pos = ba.drives[0]["pos_rand_ns"]
    assert svc2 == round(pos / 2 ** 0.12 + 8192 * ba.drives[0]["xfer_ns_per_byte"])
    assert done2 == done + svc2


def test_drive_write_cache_acknowledges_early_and_keeps_the_platters_time():
    """A drive with a 32 KiB write cache and 8 KiB flush writes: the platters' time is what it is
    without the cache (free_all, the service), but a write is acknowledged once at most four
    writes' platter time is ahead of it: the first ones after the command overhead and the
    transfer, later ones at media_done - 4 x their service. A read-modify-write's read goes to the
    platters first."""
    plain, cached = (be.build(loads(scenario(5, 5, "").replace('rpm = 10000', f'rpm = 10000\n{x}')))
                     for x in ("", 'write_cache_bytes = "32KiB"'))
    assert cached.drives[0]["wcache_bytes"] == 32 << 10 and plain.drives[0]["wcache_bytes"] == 0
    q_plain, q_cached = qk.new_queues(5), qk.new_queues(5)
    dv = cached.drives[0]
    for i in range(8):
        d1, s1 = qk.drive_submit(plain.drives, q_plain, 0, 0, 1, 8192, 1.0, qk.BG_WRITE)
        d2, s2 = qk.drive_submit(cached.drives, q_cached, 0, 0, 1, 8192, 1.0, qk.BG_WRITE)
        assert s2 == s1 and q_cached[0]["free_all"] == q_plain[0]["free_all"] == d1
        taken = dv["overhead_ns"] + 8192 * dv["xfer_ns_per_byte"]
        assert d2 == pytest.approx(max(taken, d1 - 4 * s1), abs=2) and d2 < d1, i  # s1: this write's service
        if i == 0:
            assert d2 == pytest.approx(taken, abs=1)
    assert d2 == pytest.approx(d1 - 4 * s1, abs=2)  # the eighth: four writes' platter time before its own end
    # a read-modify-write (2 operations) on an idle drive: its read first, then the cache takes the write
    q = qk.new_queues(5)
    d, s = qk.drive_submit(cached.drives, q, 1, 0, 2, 8192, 1.0, qk.BG_WRITE)
    assert q[1]["free_all"] == s and d == pytest.approx(s / 2 + dv["overhead_ns"] + 8192 * dv["xfer_ns_per_byte"], abs=2)
    # host reads are not affected
    assert qk.drive_submit(cached.drives, qk.new_queues(5), 0, 0, 1, 8192, 1.0, qk.HOST_READ) == \
        qk.drive_submit(plain.drives, qk.new_queues(5), 0, 0, 1, 8192, 1.0, qk.HOST_READ)


def test_drive_write_caches_lift_a_write_bound_array():
    """Seed 003's 4 KB random writes at QD 128 on ``xs5224d`` (its cache cut to 1 GiB so 600,000
    writes run six forced-flush cycles): with the drives' 16 MiB write caches on, the flushers keep
    more writes queued, the drives reorder them, and the sustained IOPS rise by over 15 % (1,047 ->
    1,323); no host read is involved."""
    small = ["dram.cache_bytes=1GiB", "dram.flare.read_cache_bytes=256MiB"]
    off, s_off = seed003("write", scenario_of("xs5224d", small), requests=600_000)
    on, s_on = seed003("write", scenario_of("xs5224d", [*small, "drive_classes.nlsas7k.write_cache_bytes=16MiB"]),
                       requests=600_000)
    assert s_off["forced_flush_count"] >= 3 and s_on["forced_flush_count"] >= 3
    assert on > 1.15 * off


def test_sorted_sweep_seeks_short_and_host_reads_jump_the_flush_queue():
    ba = be.build(loads(scenario(5, 5)))
    drives = ba.drives
    # a sweep over 10,000 writes per drive: track-to-track + k*sqrt(1e-4) instead of the 3.61 ms seek
    short = qk.positioning_ns(drives[0], 10_000.0)
    k = (drives[0]["seek_rand_ns"] - drives[0]["tmin_ns"]) / be.SQRT_DISTANCE_MEAN
    assert short == pytest.approx(0.5 * MS + k * 0.01 + 3.0 * MS)
    assert qk.queue_gain(drives[0], 8.7) == pytest.approx(8 ** 0.12)  # whole requests
    assert qk.queue_gain(drives[0], 5000.0) == pytest.approx(256 ** 0.12)  # capped at queue_depth_max
    queues = qk.new_queues(5)
    d1, s1 = qk.drive_submit(drives, queues, 0, 0, 2, 8192, 1.0, False)  # a 2-op read-modify-write
    d2, s2 = qk.drive_submit(drives, queues, 0, 0, 2, 8192, 1.0, False)  # another one queued
    assert d1 == s1 and d2 == s1 + s2 and s2 < s1  # FCFS; the second saw a queue of 2 ops
    # a host read at 1 ms waits half an operation (the mean residual), not the 28 ms of backlog
    d3, s3 = qk.drive_submit(drives, queues, 0, MS, 1, 8192, 1.0, True)
    assert d3 == MS + int(0.5 * s2 / 2) + s3
    assert queues[0]["free_all"] == d2 + s3  # the flush backlog is pushed back by the read


def test_fcfs_server_and_heap_kernels():
    free = np.zeros(1, dtype=np.int64)
    # Lindley: done = max(arrival, previous done) + service
    assert [qk.fcfs_server(free, 0, a, s) for a, s in ((0, 3), (1, 3), (2, 3), (10, 1))] == [3, 6, 9, 11]
    # the closed-loop heap: N = 2 in flight, the next issues at the earliest completion
    heap = np.zeros(2, dtype=np.int64)
    n = qk.heap_push(heap, 0, 5)
    n = qk.heap_push(heap, n, 1)
    assert n == 2 and heap[0] == 1
    qk.heap_replace_top(heap, n, 2)  # the request issued at 1 completes at 2
    assert heap[0] == 2
    qk.heap_replace_top(heap, n, 13)
    assert heap[0] == 5
