"""Snapshots in the array replay (replay.mech.snapshots.kernel, seed 004): redirect-on-write copies
nothing and counts first writes (its back-end costs: tests/test_snapshot_row_costs.py);
copy-on-first-write copies each chunk once per snapshot before the write; the pipeline's space
timeline equals the trace-level accounting of replay.snapshots; chunked replay = one pass."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from test_backend import assert_segmenting_invariant, replay_rows

from pipelines.replay import replay_frames
from replay.mech.snapshots.space import snapshot_space
from replay.scenario import load, loads

S = 10**9
UNIT = 64 << 10


def preset(*overrides: str):
    return load("vnx5400", ["replay.mode=open", *overrides])


def writes(n=4000, seed=1, span_units=600, spacing=5_000_000):
    rng = np.random.default_rng(seed)
    off = rng.integers(0, span_units * 8, n) * 8192
    return [(int(i * spacing), "a", "write" if rng.random() < 0.7 else "read", int(o), 8192 * int(rng.integers(1, 4)))
            for i, o in enumerate(off)]


def test_redirect_on_write_copies_nothing_and_counts_first_writes():
    """The cache sees the same pages as without snapshots (only the drives' timing moves, by the
    map's background I/O); the first writes are the distinct (snapshot interval of the issue time,
    64 KB chunk) pairs among the writes (brute force)."""
    rows = writes()
    _, _, plain, _ = replay_rows(preset(), rows)
    m, st, out, _ = replay_rows(preset("snapshots.every_s=4"), rows)
    for k in ("read_pages", "write_pages", "arrival_ns", "rg"):
        assert np.array_equal(plain[k], out[k]), k
    seen, per_request = set(), []
    for ts, _, op, off, size in rows:
        new = 0
        if op == "write":
            for u in range(off // UNIT, (off + size - 1) // UNIT + 1):
                if (ts // (4 * S), u) not in seen:
                    seen.add((ts // (4 * S), u))
                    new += 1
        per_request.append(new)
    assert out["snapshot_first_writes"].tolist() == per_request
    c = m.counters(st)
    assert c["snapshot_first_writes"] == len(seen) and c["snapshot_cofw_copies"] == 0


def test_copy_on_first_write_copies_once_per_snapshot_and_holds_the_write():
    """One 8 KiB write at 1 s (snapshot 0 taken at 0): the chunk is read (1 I/O) and written to the
    reserved area (RAID 5 small write: 4 I/Os) before the write; a second write to it in the same
    interval copies nothing; the first one after the next snapshot (10 s) copies again."""
    sc = preset("snapshots.every_s=10", "snapshots.mode=cofw")
    rows = [(1 * S, "a", "write", 0, 8192), (2 * S, "a", "write", 8192, 8192), (11 * S, "a", "write", 0, 8192)]
    m, st, out, _ = replay_rows(sc, rows)
    c = m.counters(st)
    assert (c["snapshot_first_writes"], c["snapshot_cofw_copies"], c["snapshot_cofw_ios"]) == (2, 2, 10)
    lat = out["done_ns"] - out["arrival_ns"]
    _, _, plain, _ = replay_rows(preset(), rows)
    plain_lat = plain["done_ns"] - plain["arrival_ns"]
    assert lat[0] > plain_lat[0] + 5_000_000  # waited for an HDD read and a read-modify-write (> 5 ms)
    assert lat[1] == plain_lat[1]
    assert c["snapshot_cofw_wait_ns"] == (lat[0] - plain_lat[0]) + (lat[2] - plain_lat[2])


def test_space_timeline_equals_the_trace_level_accounting():
    """Open loop: the replay's snapshot_intervals (first writes per interval on its clock) equal
    replay.snapshots.snapshot_space over the same rows at 64 KiB blocks."""
    rows = writes(n=6000, spacing=3_000_000)
    df = pl.DataFrame(rows, schema=["ts_ns", "volume", "op", "offset", "size"], orient="row")
    res = replay_frames([df], preset("snapshots.every_s=3", "snapshots.keep_s=7"))
    got = res.tables["snapshot_intervals"]
    want = snapshot_space([df], 3 * S, 7 * S, UNIT).rows()
    cols = ["interval", "start_ns", "writes", "write_bytes", "blocks_overwritten", "retained_snapshots",
            "snapshot_bytes"]
    assert got.select(cols).equals(want.select(cols))
    assert res.summary["snapshot_peak_bytes"] == int(want["snapshot_bytes"].max())
    assert res.summary["snapshot_retained_max"] == 3


def test_chunked_replay_with_copies_equals_one_pass():
    sc = preset("snapshots.every_s=5", "snapshots.mode=cofw")
    rows = writes(n=1500)
    rng = np.random.default_rng(2)
    cuts = sorted(rng.choice(np.arange(1, len(rows)), size=5, replace=False).tolist())
    c = assert_segmenting_invariant(sc, rows, [1, 97, cuts])
    assert c["snapshot_cofw_copies"] > 0


def test_bad_snapshot_keys_are_named():
    base = (load("vnx5400").source and open(load("vnx5400").source).read())
    with pytest.raises(ValueError, match=r"\[snapshots\] mode.*'copy'.*row"):
        loads(base + '\n[snapshots]\nmode = "copy"\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[snapshots\].*unknown key.*every\b"):
        loads(base + '\n[snapshots]\nevery = 3600\n', "s.toml")
    assert "snapshots:row" in load("vnx5500-snapshots").features()
