"""FAST VP (replay.mech.tiering.kernel) on hand-worked cases: where new slices go under each policy, the
temperature's decay, what a relocation window moves (rate, window, 10 % free), what a move costs
on the drives, rebalancing inside a tier, the slice table and skew, chunked replay = one pass."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from test_backend import assert_segmenting_invariant, replay_rows

from pipelines.replay import replay_frames
from replay.mech.backend.schema import TIER_NAMES
from replay.scenario import load, loads

H = 3600 * 10**9
S = 10**9
MIB = 1 << 20
SLICE = 64 * MIB


def scenario(policy: str = "start_high_then_auto_tier", *, extra: str = "", perf_groups: int = 1,
             capacity_tier: bool = True) -> str:
    """A FAST VP pool of 64 MiB slices: flash = one RAID 1 pair of 1 GiB SSDs (16 slices, 14 before
    the 10 % reserve), performance = RAID 5 4+1 groups of 1 GiB 10k SAS drives (64 slices, 57),
    capacity = one RAID 5 4+1 of 1 GiB 7.2k drives (64, 57). Relocation at 67.108864 MB/s: one
    slice per second, in 8 pieces of 8 MiB; ranking hourly; a window at 1 h lasting 5 s, daily."""
    perf = "".join(f"""
[[raid_groups]]
name = "perf{i}"
level = 5
width = 5
drive_class = "sas"
""" for i in range(perf_groups))
    cap = """
[[raid_groups]]
name = "cap0"
level = 5
width = 5
drive_class = "nlsas"
""" if capacity_tier else ""
    members = ["flash0", *(f"perf{i}" for i in range(perf_groups)), *(["cap0"] if capacity_tier else [])]
    return f"""
name = "tiers"
[dram]
mode = "mcx"
cache_bytes = "64MiB"
[drive_classes.sas]
planning_iops = 150
rpm = 10000
capacity_bytes = "1GiB"
[drive_classes.nlsas]
planning_iops = 90
rpm = 7200
capacity_bytes = "1GiB"
[drive_classes.ssd]
kind = "ssd"
read_iops = 20000
write_iops = 10000
read_latency_us = 150
transfer_mb_per_s = 400
capacity_bytes = "1GiB"
[[raid_groups]]
name = "flash0"
level = 1
width = 2
drive_class = "ssd"
{perf}{cap}
[[pools]]
name = "p"
raid_groups = {json.dumps(members)}
slice_bytes = "64MiB"
[replay]
mode = "open"
[tiering]
policy = "{policy}"
half_life_h = 24
window_start_h = 1
window_hours = {5 / 3600!r}
relocation_mb_per_s = 67.108864
{extra}
"""


def reads(slices_ios, t0=0, spacing=10**6, volume="a"):
    """One 8 KiB read per I/O: ``slices_ios`` = [(slice, count), ...] in order, ``spacing`` ns apart."""
    rows, t = [], t0
    for s, n in slices_ios:
        for k in range(n):
            rows.append((t, volume, "read", s * SLICE + (k % 64) * 8192 * 16, 8192))
            t += spacing
    return rows


def tiers_of(m, st, slices):
    rg = st.backend.slice_rg
    g0 = int(st.backend.vol_slice0[0])
    return [TIER_NAMES[int(m.tiering.params.rg_tier[rg[g0 + s]])] for s in slices]


@pytest.mark.parametrize("policy, expect", [
    ("highest_available", ["extreme_performance"] * 14 + ["performance"] * 6),
    ("start_high_then_auto_tier", ["extreme_performance"] * 14 + ["performance"] * 6),
    ("lowest_available", ["capacity"] * 20),
])
def test_new_slices_go_where_the_policy_says_keeping_the_reserve(policy, expect):
    """Highest first (flash holds 16 slices, 14 before its 10 % reserve), or lowest first."""
    sc = loads(scenario(policy), "t.toml")
    m, st, _, _ = replay_rows(sc, reads([(s, 1) for s in range(20)]))
    assert tiers_of(m, st, range(20)) == expect
    assert m.counters(st)["tier_allocated"] == 20 and int(st.tiering.c[0]["overcommitted"]) == 0


def test_auto_tier_spreads_new_slices_over_the_tiers_by_free_share():
    """Auto-Tier: each new slice goes to the tier with the smallest used share of its limit
    (14 / 57 / 57 slices): 26 slices give 3 / 12 / 11 (shares 0.21, 0.21, 0.19)."""
    sc = loads(scenario("auto_tier"), "t.toml")
    m, st, _, _ = replay_rows(sc, reads([(s, 1) for s in range(26)]))
    t = tiers_of(m, st, range(26))
    counts = [t.count(n) for n in TIER_NAMES]
    shares = [c / lim for c, lim in zip(counts, (14, 57, 57), strict=True)]
    assert sum(counts) == 26 and max(shares) - min(shares) <= 1 / 14
    assert counts[0] in (3, 4) and t[0] == "extreme_performance"


def test_a_full_pool_overcommits_and_says_so():
    sc = loads(scenario("highest_available", capacity_tier=False), "t.toml")
    m, st, _, _ = replay_rows(sc, reads([(s, 1) for s in range(16 + 64 + 2)]))
    assert int(st.tiering.c[0]["overcommitted"]) == 2
    assert st.tiering.rg_used.sum() == 82


def test_temperature_decays_with_the_half_life():
    """Half-life 1 h, ranked hourly: 8 I/Os in hour 0 -> 8 after it, 4 after hour 1 (none), then
    2 + 3 = 5 after hour 2 with 3 more I/Os."""
    sc = loads(scenario(extra="", policy="highest_available").replace("half_life_h = 24", "half_life_h = 1")
               .replace("window_start_h = 1", "window_start_h = 100"), "t.toml")
    rows = (reads([(0, 8)]) + reads([(1, 1)], t0=H + 1) + reads([(0, 3)], t0=2 * H + 1) + reads([(1, 1)], t0=3 * H)
            + reads([(1, 1)], t0=3 * H + S))  # a request after 3 h makes the kernel stop for that ranking
    m, st, _, _ = replay_rows(sc, rows)
    g0 = int(st.backend.vol_slice0[0])
    assert st.tiering.slices["temp"][g0] == pytest.approx(5.0)
    assert st.tiering.slices["temp"][g0 + 1] == pytest.approx(0.5)  # its I/O at 1 h + 1 ns counts in hour 1
    assert int(st.tiering.c[0]["ranks"]) == 3


def window_rows():
    """14 cold slices touched first (they fill flash to its limit under start-high), then 6 hot
    slices (on the performance tier), all in the first hour; a read each second after 1 h."""
    rows = reads([(s, 1) for s in range(14)]) + reads([(s, 20) for s in range(14, 20)], t0=10**9)
    rows += [(H + k * 10**8, "a", "read", 0, 8192) for k in range(200)]
    return rows


def test_a_window_moves_the_hottest_slices_up_at_the_rate_inside_the_window():
    """At 1 h the 6 hot slices rank first: promoting each needs room (flash is at its 14-slice
    limit), so the coldest flash slice goes down first. The window (5 s at one slice per second)
    fits 5 moves: down, up, down, up, down -> 2 hot slices on flash; flash never above its limit."""
    sc = loads(scenario(), "t.toml")
    m, st, out, rec = replay_rows(sc, window_rows())
    mv = rec["relocation"]
    assert mv["ts_ns"].tolist() == [H + i * S for i in range(5)]
    assert (mv["ts_ns"] + mv["copy_ns"]).max() <= H + 5 * S + S // 2  # ends with the window (+ queueing)
    to_flash = mv["target_rg"] == 0
    assert to_flash.tolist() == [False, True, False, True, False]
    assert mv["slice"][to_flash].tolist() == [14, 15]  # hottest first (equal heat: first touched)
    c = m.counters(st)
    assert (c["tier_moves"], c["tier_promotions"], c["tier_demotions"]) == (5, 2, 3)
    assert st.tiering.rg_used[0] == 13 <= 14
    assert c["tier_deferred"] == 7  # 4 hot slices still below, 3 cold ones still above their target
    assert tiers_of(m, st, [14, 15, 16]) == ["extreme_performance", "extreme_performance", "performance"]


def test_a_move_copies_the_slice_through_the_drives():
    """A demotion flash (RAID 1) -> performance (RAID 5 4+1) of a 64 MiB slice in 64 KiB elements:
    1,024 sequential reads from the mirror (one copy), 256 full stripes = 1,280 writes."""
    sc = loads(scenario(), "t.toml")
    rows = reads([(s, 1) for s in range(14)]) + reads([(14, 20)], t0=10**9)
    rows += [(H + k * 10**8, "a", "read", 0, 8192) for k in range(100)]
    m, st, out, rec = replay_rows(sc, rows)
    mv = rec["relocation"]
    assert len(mv["ts_ns"]) >= 1
    assert mv["source_rg"][0] == 0 and mv["target_rg"][0] > 0  # flash -> a disk group
    assert mv["ios"][0] == 1024 + 1280
    assert mv["bytes"][0] == SLICE


def test_requests_follow_their_slice_after_it_moved():
    sc = loads(scenario(), "t.toml")
    rows = window_rows() + reads([(14, 4)], t0=H + 30 * S)
    m, st, out, rec = replay_rows(sc, rows)
    tail = out["rg"][-4:]
    assert (tail == 0).all()  # slice 14 is on flash0 now: its units were placed anew, cached or not


def test_rebalancing_spreads_hot_slices_over_the_groups_of_a_tier():
    """Two performance groups, no room anywhere else: slices alternate perf0, perf1; the even ones
    are hot (10 I/Os) -> heat 40 vs 4. One move of a 10-I/O slice (<= (40 - 4) / 2) to perf1
    leaves 30 vs 14; no slice on perf0 is <= (30 - 14) / 2 = 8, so it stops."""
    text = scenario("lowest_available", perf_groups=2, capacity_tier=False)
    sc = loads(text, "t.toml")
    rows = reads([(s, 10 if s % 2 == 0 else 1) for s in range(8)]) + [(H + k * 10**8, "a", "read", 0, 8192)
                                                                         for k in range(100)]
    # lowest available on a pool without a capacity tier: the performance tier first
    m, st, out, rec = replay_rows(sc, rows)
    mv = rec["relocation"]
    names = [rg.name for rg in sc.raid_groups]
    assert [(names[a], names[b]) for a, b in zip(mv["source_rg"], mv["target_rg"], strict=True)] == [
        ("perf0", "perf1")]
    assert m.counters(st)["tier_rebalances"] == 1


def test_chunked_replay_with_relocations_equals_one_pass():
    """With writes to the moving slices during the window (dirty units are destaged to the old
    group, then placed anew)."""
    sc = loads(scenario(), "t.toml")
    rows = window_rows() + reads([(14, 4)], t0=H + 30 * S)
    rows += [(H + 5 * 10**7 + k * 10**8, "a", "write", (14 + k % 3) * SLICE + (k % 7) * 65536, 8192) for k in range(60)]
    rows.sort(key=lambda r: r[0])
    rng = np.random.default_rng(7)
    cuts = [sorted(rng.choice(np.arange(1, len(rows)), size=6, replace=False).tolist()) for _ in range(3)]
    c = assert_segmenting_invariant(sc, rows, [1, 37, *cuts])
    assert c["tier_moves"] == 5


def test_replay_tables_and_skew_against_brute_force():
    """The pipeline's tier tables on a two-volume trace: slice I/O counts equal a brute-force
    count of reads and writes by (volume, offset // slice); the skew point equals the first k
    with ios(k)/ios + k/N >= 1 over those counts; every move appears once."""
    rng = np.random.default_rng(3)
    n = 4000
    vol = rng.choice(["a", "b"], n)
    sl = np.where(rng.random(n) < 0.7, rng.integers(0, 3, n), rng.integers(0, 40, n))
    off = sl * SLICE + rng.integers(0, SLICE // 8192, n) * 8192
    ts = np.sort(rng.integers(0, 3 * H, n))
    df = pl.DataFrame({"ts_ns": ts, "volume": vol, "op": rng.choice(["read", "write"], n), "offset": off,
                       "size": np.full(n, 8192)})
    res = replay_frames([df], loads(scenario(), "t.toml"))
    slices = res.tables["tier_slices"]
    brute = df.group_by("volume", slice=pl.col("offset") // SLICE).agg(ios=pl.len())
    got = slices.select("volume", "slice", "ios").join(brute, on=["volume", "slice"], how="full", coalesce=True)
    assert got.filter(pl.col("ios") != pl.col("ios_right")).height == 0 and got.height == slices.height
    counts = np.sort(brute["ios"].to_numpy())[::-1]
    cum = np.cumsum(counts)
    k = int(np.argmax(cum / cum[-1] + np.arange(1, len(counts) + 1) / len(counts) >= 1)) + 1
    assert res.summary["tier_skew_io_share"] == pytest.approx(cum[k - 1] / cum[-1])
    assert res.summary["tier_skew_capacity_share"] == pytest.approx(k / len(counts))
    moves = res.tables["tier_moves"]
    assert moves.height == res.summary["tier_moves"] > 0
    assert set(moves["kind"]) <= {"promotion", "demotion", "rebalance"}
    w = res.tables["tier_windows"]
    assert int(w["moves"].sum()) == moves.height and w["window_start_ns"].to_list()[0] == H
    ti = res.tables["tier_intervals"]
    assert int(ti["requests"].sum()) == n and set(ti["tier"]) <= set(TIER_NAMES)
    assert int(ti["slices_in"].sum()) == int((moves["kind"] != "rebalance").sum())
    tiers = res.summary["tiers"]
    assert [t["tier"] for t in tiers] == list(TIER_NAMES) and sum(t["requests"] for t in tiers) == n
    assert res.rg_intervals.filter(pl.col("rg") == "flash0")["tier"].unique().to_list() == ["extreme_performance"]


def test_the_preset_is_seed_000s_pool():
    sc = load("vnx5400-fastvp")
    from replay.array import ArrayModel

    tp = ArrayModel(sc).tiering.params
    names = [rg.name for rg in sc.raid_groups]
    flash = names.index("flash0")
    assert TIER_NAMES[tp.rg_tier[flash]] == "extreme_performance"
    assert {TIER_NAMES[tp.rg_tier[names.index(n)]] for n in ("rg0", "rg1", "rg2")} == {"performance"}
    # 3 x 100 GB SSD in RAID 5 (2 data drives) and 15 x 900 GB in three RAID 5 4+1: 256 MiB slices
    assert tp.rg_cap[flash] == 2 * (100 << 30) // (256 << 20)
    assert tp.rg_cap[names.index("rg0")] == 4 * (900 << 30) // (256 << 20)
    assert tp.rg_limit[flash] == int(tp.rg_cap[flash] * 0.9)


def test_tiercast_replay_prints_and_writes_the_tier_tables(tmp_path):
    """``tiercast replay`` with FAST VP (a window every 30 s of an open-loop synthetic trace)."""
    from typer.testing import CliRunner

    from pipelines.cli import app
    from pipelines.ingest import ingest_file
    from traces import synth

    w = synth.Workload(distribution="zipf:1.2", requests=20_000, region_bytes=40 << 30, block_size_bytes=8192,
                       read_pct=67, iops=200.0, seed=5)
    synth.write(w, tmp_path / "w.parquet")
    tid = ingest_file(tmp_path / "w.parquet", tmp_path, validate="off").trace_id
    args = ["replay", tid, "--scenario", "vnx5400-fastvp", "--data-dir", str(tmp_path), "--set", "replay.mode=open",
            "--set", f"tiering.window_start_h={30 / 3600!r}", "--set", f"tiering.window_every_h={30 / 3600!r}",
            "--set", f"tiering.window_hours={20 / 3600!r}", "--set", "tiering.rank_interval_s=10"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert re.search(r"tier extreme_performance\s+[\d.]+ % of I/O", r.stdout)
    assert re.search(r"relocations up / down / rebalance\s+[1-9][\d,]* / ", r.stdout)
    r = CliRunner().invoke(app, [*args, "--json"])
    s = json.loads(r.stdout)
    run = tmp_path / "results"
    for name in ("tier_intervals", "tier_moves", "tier_slices", "tier_windows"):
        t = pl.read_parquet(run / f"array_{name}" / f"{s['run_id']}.parquet")
        assert t.height > 0 and (t["run_id"] == s["run_id"]).all()
    moves = pl.read_parquet(run / "array_tier_moves" / f"{s['run_id']}.parquet")
    assert moves.height == s["tier_moves"] and s["tier_promotions"] > 0
