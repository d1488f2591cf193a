"""Page streams (replay/page_stream.py, pipelines.simulate.TraceSegments): results are identical with
and without the stream and whatever the segmenting; the stream is invalidated with the trace and by
a code change; damaged, partial and interrupted streams are never used and are written again."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines import simulate as sim
from pipelines.catalog import PAGES_DIR, find_trace
from pipelines.cli import app
from pipelines.ingest import ingest_file
from replay.intervals import CacheIntervals, IntervalAggregator, outcome_frame
from replay.kernels import cache_model
from replay.page_stream import HEADER_BYTES, PageStream, StreamError
from replay.pages import SegmentBuilder
from schemas.trace import ARROW_SCHEMA
from tests.conftest import shared_path

PAGE = 4096
S = 1_000_000_000


def _requests(seed: int, n: int, volumes=("v0", "v1")) -> pl.DataFrame:
    """Two volumes, unaligned multi-page requests, trims and flushes (size 0), 1 s apart on average."""
    rng = np.random.default_rng(seed)
    offset = (rng.zipf(1.2, n) % 2000).astype(np.int64) * 4096 + rng.choice([0, 512, 2048], n)
    op = rng.choice(["read", "write", "trim", "flush"], n, p=[0.55, 0.4, 0.03, 0.02])
    size = np.where(op == "flush", 0, rng.choice([512, 4096, 8192, 12288, 40960], n))
    return pl.DataFrame({"ts_ns": np.cumsum(rng.integers(1, 2 * S, n)), "volume": rng.choice(list(volumes), n),
                         "op": op, "offset": offset, "size": size.astype(np.int32), "latency_ns": [None] * n,
                         "src_line": np.arange(1, n + 1)})


def _ingest(tmp_path, df: pl.DataFrame, name: str = "t.parquet"):
    src = tmp_path / name
    pq.write_table(df.to_arrow().cast(ARROW_SCHEMA), src)
    return find_trace(tmp_path, ingest_file(src, tmp_path, validate="off").trace_id)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    return d, _ingest(d, _requests(5, 6000))


def _streams(trace) -> list:
    root = trace.path / PAGES_DIR
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def _run_both(trace, d, batch_rows, page_stream=True):
    """simulate (summary + intervals written under d) and the exact curve."""
    s = sim.simulate(trace, d, "arc", 300 * PAGE, PAGE, interval="10s", batch_rows=batch_rows,
                     page_stream=page_stream)
    intervals = pl.read_parquet(f"{s.pop('results_dir')}/intervals.parquet")
    curve = sim.mrc(trace, None, PAGE, sizes=[64 * PAGE, 512 * PAGE, 4096 * PAGE], batch_rows=batch_rows,
                    page_stream=page_stream)
    return s, intervals, curve


def test_results_identical_with_and_without_the_stream_and_any_segmenting(mixed, tmp_path):
    d, trace = mixed
    without = _run_both(trace, tmp_path / "a", 1 << 20, page_stream=False)
    assert _streams(trace) == []
    first = _run_both(trace, tmp_path / "b", 700)  # builds and writes the stream
    (stream_dir,) = _streams(trace)
    assert stream_dir.name.startswith(f"{PAGE}-")
    assert sim.TraceSegments(trace, PAGE).from_stream
    again = _run_both(trace, tmp_path / "c", 333)  # from the stream, other segment boundaries
    for other in (first, again):
        assert other[0] == without[0]
        assert other[1].equals(without[1])
        assert other[2].equals(without[2])
    assert without[0]["requests"] == 6000 and without[0]["distinct_pages"] > 1000
    # SHARDS reads keys from the stream: the same sample as from the Parquet files
    shards = [sim.mrc(trace, None, PAGE, sizes=[64 * PAGE, 512 * PAGE], method="shards", rate=0.2)
              for _ in range(2)]
    (stream_dir / "manifest.json").unlink()  # now from the Parquet files
    assert shards[0].equals(sim.mrc(trace, None, PAGE, sizes=[64 * PAGE, 512 * PAGE], method="shards", rate=0.2))


def test_stream_segments_equal_the_builders(mixed):
    d, trace = mixed
    sim.simulate(trace, None, "lru", 100 * PAGE, PAGE, interval=None)
    stream = PageStream(_streams(trace)[0])
    assert not stream.single_page and stream.multi_volume and sorted(stream.volumes) == ["v0", "v1"]
    built = SegmentBuilder(PAGE).build(pl.concat(list(sim.read_frames(trace))))
    (got,) = list(stream.segments(1 << 20))
    for name in ("ts_ns", "op", "volume", "offset", "size_bytes", "page_id", "page_no", "page_req", "page_bytes"):
        a, b = getattr(got, name), getattr(built, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert got.n_ids == built.n_ids == stream.n_ids


def test_single_page_single_volume_stream_has_no_page_columns(tmp_path):
    df = _requests(2, 3000, volumes=("only",)).with_columns(offset=pl.col("offset") // 4096 * 4096,
                                                            size=pl.lit(4096, pl.Int32), op=pl.lit("read"))
    trace = _ingest(tmp_path, df)
    ref = sim.simulate(trace, None, "lru", 50 * PAGE, PAGE, interval="5s", page_stream=False)
    assert sim.simulate(trace, None, "lru", 50 * PAGE, PAGE, interval="5s") == ref
    (d,) = _streams(trace)
    assert sorted(p.name for p in d.iterdir()) == ["manifest.json", "offset.npy", "op.npy", "page_id.npy",
                                                   "size_bytes.npy", "ts_ns.npy"]
    assert sim.simulate(trace, None, "lru", 50 * PAGE, PAGE, interval="5s", batch_rows=128) == ref
    # the files are plain .npy: numpy maps them
    ids = np.load(d / "page_id.npy", mmap_mode="r")
    assert ids.shape == (3000,) and ids.dtype == np.int32 and int(ids.max()) + 1 == ref["distinct_pages"]


def test_stream_is_invalidated_with_the_trace_and_by_a_code_change(tmp_path, monkeypatch):
    src_df = _requests(7, 2000)
    trace = _ingest(tmp_path, src_df)
    sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None)
    assert len(_streams(trace)) == 1
    # a re-ingest replaces the trace directory, streams included
    ingest_file(tmp_path / "t.parquet", tmp_path, validate="off", force=True)
    assert _streams(trace) == []
    sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None)
    (old,) = _streams(trace)
    # another data version (a re-ingest by another reader) or other code: another key, the old
    # stream is not read and is replaced by the new one
    newer = type(trace)(trace.trace_id, trace.path, {**trace.manifest, "reader_version": "0123456789abcdef"})
    assert sim.page_stream_dir(newer, PAGE) != old
    assert not sim.TraceSegments(newer, PAGE).from_stream
    monkeypatch.setattr(sim, "STREAM_CODE", (*sim.STREAM_CODE, "replay.kernels"))
    assert sim.page_stream_dir(trace, PAGE) != old
    sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None)
    assert _streams(trace) == [sim.page_stream_dir(trace, PAGE)]
    # another page size: a stream of its own, next to the first
    sim.simulate(trace, None, "lru", 64 * 8192, 8192, interval=None)
    assert len(_streams(trace)) == 2


def _damage_truncate(d):
    p = d / "page_id.npy"
    p.write_bytes(p.read_bytes()[:-4])


def _damage_manifest(d):
    (d / "manifest.json").write_text('{"format": 1, "key": ')


def _damage_header(d):
    p = d / "ts_ns.npy"
    data = bytearray(p.read_bytes())
    data[10:20] = b"garbage!!!"
    p.write_bytes(bytes(data))


def _damage_missing(d):
    (d / "op.npy").unlink()


def _damage_page_ids(d):
    """Same length, ids beyond the distinct count: only seen while the segments are read."""
    p = d / "page_id.npy"
    ids = np.fromfile(p, dtype=np.int32, offset=HEADER_BYTES)
    ids[len(ids) // 2] = 1 << 30
    with open(p, "r+b") as f:
        f.seek(HEADER_BYTES)
        ids.tofile(f)


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_manifest, _damage_header, _damage_missing,
                                    _damage_page_ids])
def test_damaged_stream_is_ignored_and_written_again(tmp_path, damage):
    trace = _ingest(tmp_path, _requests(9, 3000))
    ref = sim.simulate(trace, None, "s3fifo", 100 * PAGE, PAGE, interval="10s", page_stream=False)
    sim.simulate(trace, None, "s3fifo", 100 * PAGE, PAGE, interval="10s")
    (d,) = _streams(trace)
    damage(d)
    if damage is not _damage_page_ids:
        with pytest.raises(StreamError):
            PageStream(d)
    else:
        with pytest.raises(StreamError, match="outside"):
            list(PageStream(d).segments(1000))
    assert sim.simulate(trace, None, "s3fifo", 100 * PAGE, PAGE, interval="10s", batch_rows=1000) == ref
    (d2,) = _streams(trace)  # rewritten, now whole
    assert list(PageStream(d2).segments(1 << 20))[0].n_requests == 3000
    assert sim.simulate(trace, None, "s3fifo", 100 * PAGE, PAGE, interval="10s") == ref


def test_interrupted_first_run_leaves_no_stream(tmp_path):
    trace = _ingest(tmp_path, _requests(4, 4000))

    def stop(done, total):
        if done >= 1000:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None, batch_rows=500, progress=stop)
    root = trace.path / PAGES_DIR
    assert list(root.iterdir()) == []  # neither a stream nor its staging directory
    assert not sim.TraceSegments(trace, PAGE).from_stream
    ref = sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None, page_stream=False)
    assert sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None) == ref
    assert sim.TraceSegments(trace, PAGE).from_stream


def test_cache_intervals_equal_the_polars_group_by():
    df = _requests(1, 5000).drop("latency_ns", "src_line")
    model = cache_model("lru", 200 * PAGE, PAGE)
    state = model.new_state()
    builder = SegmentBuilder(PAGE)
    compiled, grouped = CacheIntervals("7s"), IntervalAggregator("7s")
    sparse, sparse_ref = CacheIntervals(1000), IntervalAggregator(1000)  # far more windows than requests
    for a in range(0, df.height, 900):
        segment = builder.build(df.slice(a, 900))
        out = model.replay(state, segment)
        compiled.add_outcomes(segment, out)
        grouped.add(outcome_frame(segment, out))
        sparse.add_outcomes(segment, out)
        sparse_ref.add(outcome_frame(segment, out))
    r = compiled.result()
    assert r.equals(grouped.result())
    assert sparse.result().equals(sparse_ref.result())
    assert r["requests"].sum() == 5000 and r["pages"].sum() == model.counters(state)["pages"]


def test_cache_intervals_running_sums_grow_both_ways_and_flush_when_too_wide(monkeypatch):
    """Segments out of time order (the running window sums grow down and up) and a span wider
    than ``ACC_WINDOWS_MAX`` (the sums go to a part and start again): the Polars group-by's rows."""
    df = _requests(2, 6000).drop("latency_ns", "src_line")
    model = cache_model("lru", 200 * PAGE, PAGE)
    state = model.new_state()
    builder = SegmentBuilder(PAGE)
    segments = [builder.build(df.slice(a, 700)) for a in range(0, df.height, 700)]
    order = [3, 1, 4, 0, 8, 2, 7, 5, 6]
    for narrow in (False, True):
        if narrow:
            monkeypatch.setattr(CacheIntervals, "ACC_WINDOWS_MAX", 4)
        got, want = CacheIntervals("2s"), IntervalAggregator("2s")
        for i in order:
            out = model.replay(state, segments[i])
            got.add_outcomes(segments[i], out)
            want.add(outcome_frame(segments[i], out))
        r = got.result()
        assert r.height > 20 and r.equals(want.result())


@pytest.mark.parametrize("one_page", [True, False])
def test_replay_into_intervals_equals_replay_then_add_outcomes(one_page):
    """The fused pass (totals and window sums from the hit flags, one-page requests) against the
    per-request outcomes path; multi-page segments take the latter inside replay_into too."""
    df = _requests(3, 6000).drop("latency_ns", "src_line")
    if one_page:  # aligned 4 KiB requests (trims kept, flushes of size 0 dropped: they touch no page)
        df = df.filter(pl.col("size") > 0).with_columns(offset=pl.col("offset") // PAGE * PAGE,
                                                         size=pl.lit(PAGE, pl.Int32))
    model = cache_model("lru", 300 * PAGE, PAGE)
    fused_state, ref_state = model.new_state(), model.new_state()
    builder = SegmentBuilder(PAGE)
    fused, ref = CacheIntervals("5s"), CacheIntervals("5s")
    taken = []
    for a in range(0, df.height, 1300):
        segment = builder.build(df.slice(a, 1300))
        taken.append(CacheIntervals("5s").add_hits(segment, model.page_hits(model.new_state(), segment),
                                                   np.zeros(11, dtype=np.int64)))
        model.replay_into(fused_state, segment, fused)
        ref.add_outcomes(segment, model.replay(ref_state, segment))
    assert taken == [one_page] * len(taken)
    assert model.counters(fused_state) == model.counters(ref_state)
    assert fused.result().equals(ref.result())
    c = model.counters(fused_state)
    assert c["requests"] == df.height and c["skipped_requests"] == df.filter(pl.col("op").is_in(["trim", "flush"])).height
    assert 0 < c["full_hit_requests"] and (c["full_hit_requests"] == c["hits"]) == one_page


def test_traces_du_shows_the_page_streams(mixed):
    d, trace = mixed
    sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None)
    r = CliRunner().invoke(app, ["traces", "--du", "--json", "--data-dir", str(d)])
    assert r.exit_code == 0, r.output
    (row,) = [x for x in json.loads(r.output) if x["trace_id"] == trace.trace_id]
    streams = sum(f.stat().st_size for f in (trace.path / PAGES_DIR).rglob("*") if f.is_file())
    assert row["page_stream_bytes"] == streams > 6000 * 22  # ts, offset, op, size, volume, page_id...
    assert 0 < row["trace_bytes"] < streams
    r = CliRunner().invoke(app, ["traces", "--du", "--data-dir", str(d)])
    assert "page streams" in r.output


def test_a_stream_that_cannot_be_written_costs_the_stream_not_the_replay(tmp_path, monkeypatch):
    trace = _ingest(tmp_path, _requests(6, 3000))
    ref = sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval="10s", page_stream=False)

    def full(self, segment):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sim.PageStreamWriter, "add", full)
    assert sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval="10s", batch_rows=500) == ref
    assert list((trace.path / PAGES_DIR).iterdir()) == []
    monkeypatch.undo()

    def read_only(root):
        raise OSError(30, "Read-only file system", str(root))

    monkeypatch.setattr(sim, "Staging", read_only)
    assert sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval="10s") == ref
    assert list((trace.path / PAGES_DIR).iterdir()) == []


def test_max_requests_cuts_the_trace_and_writes_no_stream(mixed, tmp_path):
    """What the array replay's --requests needs: the first N requests, from the stream or not."""
    d, trace = mixed
    reqs = pl.concat(list(sim.read_frames(trace))).head(2500)
    want = SegmentBuilder(PAGE).build(reqs)
    fresh = _ingest(tmp_path, _requests(5, 6000))
    for t in (fresh, trace):  # without a stream (none is written), then from the fixture's
        sim.simulate(trace, None, "lru", 64 * PAGE, PAGE, interval=None)
        segments = list(sim.TraceSegments(t, PAGE, batch_rows=1000, max_requests=2500))
        assert [c.n_requests for c in segments] == [1000, 1000, 500]
        for name in ("ts_ns", "op", "offset", "page_id", "page_req", "page_bytes"):
            got = np.concatenate([getattr(c, name) + (c.first_request if name == "page_req" else 0)
                                  for c in segments])
            assert np.array_equal(got, getattr(want, name)), name
    assert _streams(fresh) == []


def test_array_replay_reads_the_page_stream_with_identical_results(tmp_path):
    """``tiercast replay`` writes the trace's page stream at the cache's 8 KiB page on its first
    pass; the next replay reads it, and its summary, interval tables and tier tables equal the
    first run's (FAST VP on: volume names and slice ids come from the stream)."""
    from pipelines import replay as rp
    from replay.scenario import load

    trace = _ingest(tmp_path, _requests(7, 5000))
    sc = load("vnx5400-fastvp", ["replay.mode=open", "tiering.window_start_h=0.5", "tiering.window_every_h=0.5",
                                 "tiering.window_hours=0.25", "tiering.rank_interval_s=60"])
    assert sim.open_page_stream(trace, 8192) is None
    first = rp.replay_trace(trace, tmp_path, sc, force=True)
    paths = rp.run_paths(tmp_path, first["run_id"])
    tables = {k: pl.read_parquet(paths[k]) for k in ("volume_intervals", "rg_intervals", "tier_slices", "tier_moves")}
    assert sim.open_page_stream(trace, 8192) is not None
    second = rp.replay_trace(trace, tmp_path, sc, force=True)
    for k, t in tables.items():
        assert pl.read_parquet(paths[k]).equals(t), k
    assert first["tier_moves"] > 0
    assert {k: v for k, v in first.items() if k != "already_done"} == {
        k: v for k, v in second.items() if k != "already_done"}


@pytest.mark.parametrize("preset", ["vnx5400-fastcache", "vnx2-mcx"])
def test_array_replay_of_a_real_trace_does_not_depend_on_the_segment_size(tmp_path, preset):
    """``replay_trace`` cuts the trace into segments of ``ARRAY_BATCH_ROWS`` requests (a speed
    choice); the CloudPhysics trace (113,872 requests) replayed in segments of 5,000 and of 100,003
    gives the same summary and interval tables as in one segment."""
    from pipelines import replay as rp
    from replay.scenario import load

    assert rp.ARRAY_BATCH_ROWS == 1 << 19
    d = tmp_path / "d"
    trace = find_trace(d, ingest_file(shared_path("traces", "vscsi", "cloudPhysicsIO.vscsi"), d).trace_id)
    runs = []
    for batch in (rp.ARRAY_BATCH_ROWS, 5000, 100_003):
        s = rp.replay_trace(trace, d, load(preset), batch_rows=batch, force=True)
        paths = rp.run_paths(d, s["run_id"])
        runs.append(({k: v for k, v in s.items() if k != "already_done"},
                     {k: pl.read_parquet(paths[k]) for k in ("volume_intervals", "rg_intervals")}))
    (one, one_tables), *others = runs
    assert one["requests"] == 113_872 and one["flush_ops"] > 0
    for summary, tables in others:
        assert summary == one
        for k, t in tables.items():
            assert t.equals(one_tables[k]), k
