"""``replay.mech.snapshots.space`` / ``tiercast snapshots``: redirect-on-write snapshot space checked
against a plain Python count; retention, blocks straddled by one write, reads not counted, and
the same result for any chunking of the trace."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import ingest_file
from replay.mech.snapshots.space import SnapshotSpace, snapshot_space
from schemas.trace import OPS, POLARS_SCHEMA
from traces import synth

S = 1_000_000_000
KiB = 1 << 10
COLS = ("ts_ns", "volume", "op", "offset", "size")


def frame(rows) -> pl.DataFrame:
    """(ts_ns, volume, op, offset, size) rows with the canonical dtypes."""
    return pl.DataFrame([list(c) for c in zip(*rows, strict=True)] if rows else [[]] * 5,
                        schema={k: POLARS_SCHEMA[k] for k in COLS}, orient="col")


def random_trace(seed: int, n: int = 3000, span_s: int = 100) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, span_s * S, n))
    return frame(list(zip(ts.tolist(), rng.choice(["a", "b", "c"], n).tolist(), rng.choice(OPS, n).tolist(),
                          (rng.integers(0, 2000, n) * 512).tolist(), rng.integers(1, 40 * KiB, n).tolist(),
                          strict=True)))


def brute_force(df: pl.DataFrame, every: int, keep: int, block: int) -> dict:
    """Per interval with plain Python: sets of (volume, block) written, and the rolling sum."""
    n = max(df["ts_ns"]) // every + 1
    sets, writes, nbytes = [set() for _ in range(n)], [0] * n, [0] * n
    for ts, volume, op, offset, size in df.select(COLS).iter_rows():
        if op == "write":
            i = ts // every
            writes[i] += 1
            nbytes[i] += size
            for b in range(offset // block, (offset + size - 1) // block + 1):
                sets[i].add((volume, b))
    k = -(-keep // every)
    rows = []
    for i in range(n):
        live = range(max(0, i - k + 1), i + 1)
        rows.append({"interval": i, "start_ns": i * every, "writes": writes[i], "write_bytes": nbytes[i],
                     "blocks_overwritten": len(sets[i]), "new_snapshot_bytes": len(sets[i]) * block,
                     "retained_snapshots": len(live),
                     "snapshot_bytes": sum(len(sets[j]) for j in live) * block})
    peak = max(range(n), key=lambda i: (rows[i]["snapshot_bytes"], -i))
    return {"every_ns": every, "keep_ns": keep, "block_bytes": block, "retained_max": k, "intervals": rows,
            "peak": {"snapshot_bytes": rows[peak]["snapshot_bytes"], "interval": peak, "start_ns": peak * every,
                     "end_ns": (peak + 1) * every}}


@pytest.mark.parametrize("seed, every, keep, block", [
    (0, 10 * S, 40 * S, 8 * KiB), (1, 7 * S, 30 * S, 4 * KiB), (2, 25 * S, 25 * S, 64 * KiB), (3, 3 * S, 1 * S, 512),
])
def test_equals_a_python_loop_over_the_rows(seed, every, keep, block):
    df = random_trace(seed)
    assert snapshot_space([df], every, keep, block).summary() == brute_force(df, every, keep, block)


def test_hand_checked_retention_straddling_and_reads():
    every, keep, block = 10 * S, 20 * S, 8 * KiB  # two snapshots kept
    df = frame([
        (1 * S, "v", "write", 0, 16 * KiB),          # interval 0: blocks 0, 1
        (2 * S, "v", "write", 4 * KiB, 8 * KiB),     # blocks 0, 1 again (straddles both): nothing new
        (3 * S, "v", "read", 80 * KiB, 8 * KiB),     # a read holds no snapshot space
        (4 * S, "v", "trim", 160 * KiB, 8 * KiB),    # nor a trim
        (12 * S, "v", "write", 8 * KiB - 1, 2),      # interval 1: blocks 0 and 1 (one 2-byte write)
        (13 * S, "w", "write", 0, 8 * KiB),          # another volume's block 0 is another block
        (25 * S, "v", "read", 0, 8 * KiB),           # interval 2: reads only
        (31 * S, "v", "write", 1 * 8 * KiB, 24 * KiB),  # interval 3: blocks 1, 2, 3
    ])
    doc = snapshot_space([df], every, keep, block).summary()
    iv = doc["intervals"]
    assert [r["blocks_overwritten"] for r in iv] == [2, 3, 0, 3]
    assert [r["writes"] for r in iv] == [2, 2, 0, 1]
    assert [r["retained_snapshots"] for r in iv] == [1, 2, 2, 2]
    # snapshot 0 (2 blocks) is deleted when snapshot 2 is taken: 2, 2+3, 3+0, 0+3
    assert [r["snapshot_bytes"] // block for r in iv] == [2, 5, 3, 3]
    assert doc["peak"] == {"snapshot_bytes": 5 * block, "interval": 1, "start_ns": 10 * S, "end_ns": 20 * S}
    assert doc == brute_force(df, every, keep, block)


def test_keep_shorter_than_every_keeps_one_and_long_keep_keeps_all():
    df = random_trace(5, 500)
    short = snapshot_space([df], 10 * S, 1, 4096)
    assert short.retained_max == 1 and (short.snapshot_blocks == short.blocks).all()
    forever = snapshot_space([df], 10 * S, 10**6 * S, 4096)
    assert (forever.snapshot_blocks == np.cumsum(forever.blocks)).all()


def chunkings(df: pl.DataFrame, rng: np.random.Generator):
    """The same rows cut at random boundaries, one row per frame, and volume by volume."""
    cuts = np.sort(rng.choice(np.arange(1, df.height), 25, replace=False)).tolist()
    yield [df[a:b] for a, b in zip([0, *cuts], [*cuts, df.height], strict=True)]
    yield list(df[:200].iter_slices(1)) + [df[200:]]
    yield [part for _, g in df.group_by("volume", maintain_order=True) for part in g.iter_slices(97)]
    yield [df]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunk_invariance(seed):
    df = random_trace(seed + 10, 4000)
    want = snapshot_space([df], 9 * S, 27 * S, 8 * KiB).summary()
    for frames in chunkings(df, np.random.default_rng(seed)):
        assert snapshot_space(frames, 9 * S, 27 * S, 8 * KiB).summary() == want


def test_open_intervals_are_closed_as_volumes_advance():
    df = random_trace(4, 4000)
    acc = SnapshotSpace(5 * S, 10 * S, 8 * KiB)
    for part in df.iter_slices(100):
        acc.add(part)
        opened = pl.concat(acc._open) if acc._open else None
        if opened is not None:  # only the interval each volume is in stays open
            last = opened.group_by("volume").agg(pl.col("interval").min())
            assert all(acc._last[v] == i for v, i in last.iter_rows())
    assert acc.result().summary() == brute_force(df, 5 * S, 10 * S, 8 * KiB)


def test_rows_out_of_time_order_are_refused():
    acc = SnapshotSpace(S, S, 4096)
    acc.add(frame([(5 * S, "v", "write", 0, 4096)]))
    acc.add(frame([(5 * S + 1, "v", "write", 0, 4096), (1, "w", "write", 0, 4096)]))  # another volume: fine
    with pytest.raises(ValueError, match="out of time order"):
        acc.add(frame([(2 * S, "v", "write", 0, 4096)]))


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], handle_errors=True)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("snap-data")
    w = synth.Workload(requests=20_000, region_bytes=256 << 20, read_pct=50, iops=2.0, seed=3, volume="vol0")
    synth.write(w, d / "w.parquet")
    return d, ingest_file(d / "w.parquet", d, validate="off").trace_id, synth.generate(w)


def test_cli_json_and_table(trace):
    d, tid, df = trace
    r = run("snapshots", tid[:8], "--every", "15min", "--keep", "1h", "--block", "8KiB", "--data-dir", d, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc == brute_force(df, 900 * S, 3600 * S, 8 * KiB)
    assert doc["retained_max"] == 4 and len(doc["intervals"]) > 8
    r = run("snapshots", tid, "--every", "15min", "--keep", "1h", "--data-dir", d)
    assert r.exit_code == 0, r.output
    assert "peak snapshot space" in r.stdout and "+0:15:00" in r.stdout


@pytest.mark.parametrize("args, option", [
    (["--every", "0s"], "--every"), (["--keep", "soon"], "--keep"), (["--block", "0"], "--block"),
])
def test_bad_options_are_one_line_exit_2(trace, args, option):
    d, tid, _ = trace
    r = run("snapshots", tid, *args, "--data-dir", d)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: Invalid value for '{option}'")
