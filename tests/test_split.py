"""``ingest --split-by volume`` (issue 29 item 4): one dataset per volume, holding exactly that
volume's requests, replayed independently in worker processes with the results of one process."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from pipelines import replay as rp
from pipelines.catalog import find_trace
from pipelines.cli import app
from pipelines.ingest import ingest_file, split_by_volume
from pipelines.workers import run_all
from replay.scenario import load
from traces import synth

VOLUMES = ("db-a", "db b", "logs")


def _multi_volume(path: Path) -> Path:
    parts = [synth.generate(synth.pattern("database", requests=6_000 + 2_000 * i, region_bytes=1 << 30, seed=i,
                                          volume=v)) for i, v in enumerate(VOLUMES)]
    df = pl.concat(parts).sort("ts_ns", maintain_order=True).with_columns(src_line=pl.int_range(1, 24_001))
    df.write_parquet(path)
    return path


def _summary(data_dir: str, trace_id: str) -> dict:
    """A worker's task: replay one per-volume trace; its summary less where it was written."""
    trace = find_trace(Path(data_dir), trace_id)
    s = rp.replay_trace(trace, data_dir, load("vnx5400", ["replay.mode=closed", "replay.outstanding=8"]))
    return {k: v for k, v in s.items() if k not in ("already_done", "results_dir")}  # the data directory differs


def test_split_datasets_hold_each_volume_and_replay_the_same_on_two_workers(tmp_path):
    src = _multi_volume(tmp_path / "multi.parquet")
    whole = ingest_file(src, tmp_path / "one", validate="off")
    parts = split_by_volume(whole.trace_id, tmp_path / "one", validate="off")
    assert [next(iter(p.volumes)) for p in parts] == sorted(VOLUMES)
    assert [p.rows_accepted for p in parts] == [whole.volumes[v] for v in sorted(VOLUMES)] == [8_000, 6_000, 10_000]
    full = find_trace(tmp_path / "one", whole.trace_id).scan().collect()
    for p in parts:
        [vol] = p.volumes
        mine = find_trace(tmp_path / "one", p.trace_id).scan().collect()
        theirs = full.filter(pl.col("volume") == vol).sort("ts_ns", maintain_order=True)
        for c in ("op", "offset", "size"):
            assert mine[c].to_list() == theirs[c].to_list(), (vol, c)
        # the same clock, from the volume's own first request
        assert (mine["ts_ns"] - mine["ts_ns"][0]).to_list() == (theirs["ts_ns"] - theirs["ts_ns"][0]).to_list()
    # a second split ingests nothing again
    again = split_by_volume(whole.trace_id, tmp_path / "one", validate="off")
    assert all(p.already_ingested for p in again) and [p.trace_id for p in again] == [p.trace_id for p in parts]
    # the per-volume replays on two worker processes (fresh data directory) equal one process's
    one = [_summary(str(tmp_path / "one"), p.trace_id) for p in parts]
    two_dir = tmp_path / "two"
    ids = [x.trace_id for x in split_by_volume(ingest_file(src, two_dir, validate="off").trace_id, two_dir,
                                                 validate="off")]
    assert ids == [p.trace_id for p in parts]
    two = run_all(_summary, [(str(two_dir), t) for t in ids], jobs=2)
    for a, b in zip(one, two, strict=True):
        assert {k for k in a if a[k] != b.get(k)} == set()
    assert two == one and [s["requests"] for s in two] == [8_000, 6_000, 10_000]


def test_cli_split_by_volume_json(tmp_path):
    src = _multi_volume(tmp_path / "multi.parquet")
    r = CliRunner().invoke(app, ["ingest", str(src), "--split-by", "volume", "--validate", "off", "--json",
                                 "--data-dir", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["split_by"] == "volume" and sum(p["rows_accepted"] for p in doc["parts"]) == doc["rows_accepted"] == 24_000
    bad = CliRunner().invoke(app, ["ingest", str(src), "--split-by", "rg", "--data-dir", str(tmp_path / "d")])
    assert bad.exit_code == 2


def test_order_rules_read_part_by_part_count_as_over_the_whole_volume(tmp_path):
    """The ingest's order checks (time steps backwards, rows below an earlier timestamp, repeated
    source lines) now read one part file at a time (bounded memory at 100 M+ rows): on parts of
    700 rows they count what they count on one part per volume, steps across part boundaries
    included."""
    import numpy as np

    from pipelines.catalog import volume_dir
    from schemas import trace_suite

    whole = ingest_file(_multi_volume(tmp_path / "multi.parquet"), tmp_path / "d", validate="off")
    df = find_trace(tmp_path / "d", whole.trace_id).scan().collect()
    rng = np.random.default_rng(4)
    ts = df["ts_ns"].to_numpy().copy()
    back = rng.choice(ts.size, 300, replace=False)
    ts[back] -= rng.integers(1, 5_000_000_000, 300)  # rows below earlier ones, some far back
    lines = df["src_line"].to_numpy().copy()
    lines[rng.choice(lines.size, 40, replace=False)] = 7  # repeated source lines
    df = df.with_columns(ts_ns=pl.Series(np.maximum(ts, 0)), src_line=pl.Series(lines))

    def dataset(root: Path, rows: int):
        for (vol,), part in df.partition_by("volume", as_dict=True, maintain_order=True).items():
            d = volume_dir(root, vol)
            d.mkdir(parents=True)
            for i in range(0, part.height, rows):
                part.slice(i, rows).write_parquet(d / f"part-{i // rows:05d}.parquet")
        return trace_suite.exact_check(root, {})

    one, many = dataset(tmp_path / "one", 1 << 30), dataset(tmp_path / "many", 700)
    assert sum(len(fs) for fs in trace_suite.volume_files(tmp_path / "many").values()) > 30
    assert one == many
    assert sum(s["out_of_order"] for s in one[1].values()) > 250 and max(one[0].values()) >= 39
    lines_once = trace_suite._Lines(100)
    for v in (np.array([1, 2, 3]), np.array([3, 4]), np.array([4, 4, 10_000])):  # the last past the bitmap
        lines_once.add(v)
    assert lines_once.duplicates() == trace_suite._duplicates(
        [np.array([1, 2, 3]), np.array([3, 4]), np.array([4, 4, 10_000])]) == 3
