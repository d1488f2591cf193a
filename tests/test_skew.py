"""``replay.skew`` / ``tiercast skew``: the skew curve over slices, checked against a plain Python
count on tiny traces; untouched slices and known capacities count; the CLI's JSON shape and
option errors."""

from __future__ import annotations

import json
from collections import Counter

import duckdb
import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import ingest_file
from replay.skew import SkewCounter, skew
from schemas.trace import OPS, POLARS_SCHEMA
from traces import synth

MiB = 1 << 20


def frame(rows) -> pl.DataFrame:
    """Requests (volume, op, offset, size) with the canonical dtypes (time = row number)."""
    return pl.DataFrame({"ts_ns": list(range(len(rows))), "volume": [r[0] for r in rows], "op": [r[1] for r in rows],
                         "offset": [r[2] for r in rows], "size": [r[3] for r in rows]},
                        schema={k: POLARS_SCHEMA[k] for k in ("ts_ns", "volume", "op", "offset", "size")})


def random_trace(seed: int, n: int = 2000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    vols = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    hot = rng.random(n) < 0.7
    offset = np.where(hot, rng.integers(0, 8 * MiB, n), rng.integers(0, 200 * MiB, n))
    return frame(list(zip(vols.tolist(), rng.choice(OPS, n).tolist(), offset.tolist(),
                          rng.integers(1, 256 << 10, n).tolist(), strict=True)))


def brute_force(df: pl.DataFrame, slice_bytes: int, capacities: dict | None = None) -> dict:
    """The same skew with a Python loop over the rows."""
    counts, end = Counter(), {v: c for v, c in (capacities or {}).items()}
    for volume, op, offset, size in df.select("volume", "op", "offset", "size").iter_rows():
        if op in ("read", "write"):
            counts[(volume, offset // slice_bytes)] += 1
            end[volume] = max(end.get(volume, 0), offset + size)
    n = sum((e + slice_bytes - 1) // slice_bytes for e in end.values())
    ordered = sorted(counts.values(), reverse=True) + [0] * (n - len(counts))
    total = sum(ordered)
    curve, cum, point, need = [], 0, None, {}
    for k, c in enumerate(ordered, start=1):
        cum += c
        curve.append({"capacity_share": k / n, "io_share": cum / total})
        if point is None and cum / total + k / n >= 1:
            point = curve[-1]
        for p in (0.8, 0.9, 0.95):
            if str(p) not in need and cum >= p * total:
                need[str(p)] = k * slice_bytes
    return {"slice_bytes": slice_bytes, "slices": n, "skew_point": point, "capacity_for_io_share": need,
            "curve": curve}


@pytest.mark.parametrize("seed, slice_bytes", [(0, MiB), (1, 4 * MiB), (2, 3 * MiB + 512), (3, 256 * MiB)])
def test_equals_a_python_loop_over_the_rows(seed, slice_bytes):
    df = random_trace(seed)
    assert skew([df], slice_bytes).summary() == brute_force(df, slice_bytes)


@pytest.mark.parametrize("slice_bytes, far", [(MiB, False), (3 * MiB + 512, False), (4096, True)])
def test_part_files_counted_by_row_group_equal_a_python_loop(tmp_path, monkeypatch, slice_bytes, far):
    """add_parquet (pyarrow row groups on threads, numpy counts) against the loop, per volume, with
    many row groups, trims and flushes, a slice size that is not a power of two, and offsets so far
    apart that the slices are counted sorted instead of in a dense array (with op as plain text)."""
    import replay.skew as skew_mod

    monkeypatch.setattr(skew_mod, "_COUNT_THREADS", 3)
    monkeypatch.setattr(skew_mod.os, "cpu_count", lambda: 3)
    df = random_trace(7, 5000)
    if far:
        df = df.with_columns(offset=pl.col("offset") * 101)  # up to ~20 GiB: ~5 M slices, beyond _DENSE_SLICES
    counter = SkewCounter(slice_bytes)
    for (volume,), part in df.partition_by("volume", as_dict=True).items():
        path = tmp_path / f"{volume}.parquet"
        # op as the Enum (a Parquet dictionary, as ingested) or, in the far case, as plain text
        (part.with_columns(pl.col("op").cast(pl.String)) if far else part).write_parquet(path, row_group_size=100)
        assert pq.ParquetFile(path).metadata.num_row_groups > 3
        assert counter.add_parquet(path) == part.filter(pl.col("op").is_in(["read", "write"])).height
    got, want = counter.result().summary(), brute_force(df, slice_bytes)
    if far:  # ~5 M slices: the curve is sampled to MAX_CURVE_POINTS, so compare its ends
        got_curve, want_curve = got.pop("curve"), want.pop("curve")
        assert got_curve[0] == want_curve[0] and got_curve[-1] == want_curve[-1]
    assert got == want


def test_manifest_statistics_skip_the_op_and_size_columns(tmp_path, monkeypatch):
    """With the ingest manifest's per-volume statistics (every request a read or a write, and the
    highest byte), add_parquet reads the offsets only, and the skew equals the brute force; a
    volume with trims still reads op and size. Checked on a real ingest (its manifest)."""
    import replay.skew as skew_mod
    from pipelines.analytics import skew_trace
    from pipelines.catalog import find_trace, volume_of

    df = random_trace(11, 4000)
    rw = df.filter(pl.col("op").is_in(["read", "write"]) | (pl.col("volume") != pl.col("volume").min()))
    src = tmp_path / "t.parquet"
    rw.write_parquet(src)
    trace = find_trace(tmp_path / "data", ingest_file(src, tmp_path / "data", validate="off").trace_id)
    seen = []
    real = skew_mod._count_row_group
    monkeypatch.setattr(skew_mod, "_count_row_group", lambda t, sb: seen.append(tuple(t.column_names)) or real(t, sb))
    by_volume = {}
    for f in trace.volume_files:
        seen.clear()
        SkewCounter(MiB).add_parquet(f, trace.manifest["volumes"][volume_of(f)])
        by_volume[volume_of(f)] = set(seen)
    only_rw = rw.group_by("volume").agg(pl.col("op").is_in(["read", "write"]).all()).rows()
    assert any(ok for _, ok in only_rw) and not all(ok for _, ok in only_rw)
    for volume, ok in only_rw:
        assert by_volume[str(volume)] == ({("offset",)} if ok else {("op", "offset", "size")})
    assert skew_trace(trace, MiB).summary() == brute_force(rw, MiB)


def test_hand_checked_tiny_trace():
    # volume a: slices 0..3 (highest byte 4 MiB); slice 0 gets 3 I/Os, slice 2 one; the trim and
    # flush count for nothing; the 2 MiB read at 1.5 MiB counts once, for slice 1 (its first byte)
    df = frame([("a", "read", 0, 4096), ("a", "write", 4096, 4096), ("a", "read", 100, 1),
                ("a", "read", 1536 << 10, 2 * MiB), ("a", "write", 2 * MiB, 2 * MiB),
                ("a", "trim", 3 * MiB, 4096), ("a", "flush", 0, 0)])
    s = skew([df], MiB)
    assert (s.slices, s.ios, s.counts.tolist()) == (4, 5, [3, 1, 1])
    doc = s.summary()
    # hottest first: (1/4, 3/5): 0.85 < 1; (2/4, 4/5): 1.3 >= 1
    assert doc["skew_point"] == {"capacity_share": 0.5, "io_share": 0.8}
    assert doc["capacity_for_io_share"] == {"0.8": 2 * MiB, "0.9": 3 * MiB, "0.95": 3 * MiB}
    assert doc["curve"][-1] == {"capacity_share": 1.0, "io_share": 1.0}  # the untouched slice 3 last


def test_untouched_slices_count_in_capacity():
    # 10 I/Os on slice 0 and one at the end of a 100-slice range: 98 slices untouched
    df = frame([("v", "read", 0, 512)] * 10 + [("v", "read", 99 * MiB, 512)])
    doc = skew([df], MiB).summary()
    assert doc["slices"] == 100 and len(doc["curve"]) == 100
    assert doc["curve"][:3] == [{"capacity_share": 0.01, "io_share": 10 / 11},  # 0.919 < 1
                                {"capacity_share": 0.02, "io_share": 1.0}, {"capacity_share": 0.03, "io_share": 1.0}]
    assert doc["skew_point"] == {"capacity_share": 0.02, "io_share": 1.0}
    assert doc["capacity_for_io_share"] == {"0.8": MiB, "0.9": MiB, "0.95": 2 * MiB}
    assert doc == brute_force(df, MiB)


def test_known_capacity_extends_the_range_and_covers_idle_volumes():
    df = frame([("v", "read", 0, 512), ("v", "write", MiB, 512)])
    assert skew([df], MiB).slices == 2  # up to the highest byte accessed
    caps = {"v": 10 * MiB, "idle": 5 * MiB + 1}  # a volume without I/O still has capacity: 6 slices
    s = skew([df], MiB, caps)
    assert s.slices == 16 and s.summary() == brute_force(df, MiB, caps)
    assert s.summary()["skew_point"] == {"capacity_share": 2 / 16, "io_share": 1.0}  # 1/16 + 1/2 < 1


def test_chunking_and_order_do_not_matter():
    df = random_trace(7, 5000)
    want = skew([df], 2 * MiB).summary()
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.choice(np.arange(1, df.height), 12, replace=False)).tolist()
    parts = [df[a:b] for a, b in zip([0, *cuts], [*cuts, df.height], strict=True)]
    assert skew(reversed(parts), 2 * MiB).summary() == want
    assert skew(df.sample(fraction=1.0, shuffle=True, seed=2).iter_slices(333), 2 * MiB).summary() == want


def test_partial_counts_are_merged_exactly(monkeypatch):
    monkeypatch.setattr("replay.skew._MERGE_ROWS", 10)
    df = random_trace(8)
    c = SkewCounter(MiB)
    for part in df.iter_slices(100):
        c.add(part)
    assert len(c._parts) < df.height // 100
    assert c.result().summary() == brute_force(df, MiB)


def test_long_curves_are_sampled_keeping_first_last_and_skew_point():
    rng = np.random.default_rng(4)
    df = frame([("v", "read", int(o) * 4096, 4096) for o in rng.zipf(1.3, 30_000) % 25_000])
    s = skew([df], 4096)
    curve = s.curve(max_points=1000)
    assert 1000 <= len(curve) <= 1001
    full = s.curve(max_points=s.slices)
    assert curve[0] == full[0] and curve[-1] == full[-1] and s.point(s.skew_index()) in curve
    assert all(p in full for p in curve)


def test_no_reads_or_writes_is_an_error():
    with pytest.raises(ValueError, match="no reads or writes"):
        skew([frame([("v", "trim", 0, 512)])], MiB)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("skew-data")
    w = synth.Workload(distribution="zipf:1.0", requests=20_000, region_bytes=4 << 30, seed=3, volume="vol0")
    synth.write(w, d / "w.parquet")
    return d, ingest_file(d / "w.parquet", d, validate="off").trace_id, synth.generate(w)


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], handle_errors=True)


def test_cli_json_shape_and_values(trace):
    d, tid, df = trace
    r = run("skew", tid[:8], "--slice", "64MiB", "--data-dir", d, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert list(doc) == ["slice_bytes", "slices", "skew_point", "capacity_for_io_share", "curve"]
    assert set(doc["skew_point"]) == {"io_share", "capacity_share"}
    assert list(doc["capacity_for_io_share"]) == ["0.8", "0.9", "0.95"]
    assert all(set(p) == {"capacity_share", "io_share"} for p in doc["curve"])
    assert doc == brute_force(df, 64 * MiB)


def test_cli_table(trace):
    d, tid, _ = trace
    r = run("skew", tid, "--data-dir", d)
    assert r.exit_code == 0, r.output
    for words in ("skew point", "flash for  80 % of the I/O", "95 %", "capacity"):
        assert words in r.stdout
    # a uniform trace: the skew point is near 50 / 50 and the remark says tiering cannot help
    w = synth.Workload(requests=20_000, region_bytes=4 << 30, seed=5, volume="flat")
    synth.write(w, d / "flat.parquet")
    flat = ingest_file(d / "flat.parquet", d, validate="off").trace_id
    r = run("skew", flat, "--slice", "64MiB", "--data-dir", d)
    assert r.exit_code == 0 and "tiering cannot help" in r.stdout
    assert "tiering cannot help" not in run("skew", tid, "--slice", "64MiB", "--data-dir", d).stdout


def test_cli_known_capacity_through_ingest(tmp_path):
    csv = tmp_path / "io.csv"
    csv.write_text("time_us,lun,dir,lba,xfer_bytes\n0,lun7,R,0,4096\n10,lun7,W,8,4096\n20,lun7,R,0,4096\n")
    spec = tmp_path / "spec.toml"
    spec.write_text('[file]\ntype = "csv"\nseparator = ","\nheader = true\n'
                    '[columns]\nts = "time_us"\nvolume = "lun"\nop = "dir"\noffset = "lba"\nsize = "xfer_bytes"\n'
                    '[units]\nts = "us"\noffset = "sectors"\nsize = "bytes"\n[ops]\nR = "read"\nW = "write"\n'
                    '[capacities]\nlun7 = "1GiB"\n')
    d = tmp_path / "d"
    tid = ingest_file(csv, d, fmt="generic", options={"mapping": str(spec)}, validate="off").trace_id
    doc = json.loads(run("skew", tid, "--slice", "256MiB", "--data-dir", d, "--json").stdout)
    assert doc["slices"] == 4  # the 1 GiB capacity, not the 8 KiB reached
    assert doc["skew_point"] == {"capacity_share": 0.25, "io_share": 1.0}


@pytest.mark.parametrize("value, message", [
    ("0", "must be a positive size such as 256MiB, got '0'"),
    ("abc", "not a size: 'abc'"),
    ("1.5B", "not a whole number of bytes"),
])
def test_bad_slice_is_one_line_exit_2(trace, value, message):
    d, tid, _ = trace
    r = run("skew", tid, "--slice", value, "--data-dir", d)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Invalid value for '--slice'") and message in lines[0]
    r = run("skew", tid, "--slice", value, "--data-dir", d, "--json")
    assert r.exit_code == 2 and "--slice" in json.loads(r.stdout)["error"]


def test_kept_keyed_loaded_and_drawn_hand_worked(tmp_path):
    """1 MiB slices of one volume whose highest byte is in slice 3 (no capacity known: 4 slices).
    I/Os per slice: 5, 3, 0 (only a trim, which does not count), 2 -> sorted 5, 3, 2, 0 of 10:
    the curve (k/4, cumulative/10) = (.25, .5), (.5, .8), (.75, 1), (1, 1); the skew point is
    k = 2 (.8 + .5 >= 1, .5 + .25 < 1); 80 % of the I/O fits in 2 slices (2 MiB), 90 and 95 %
    in 3. ``tiercast skew`` keeps it keyed on (trace, data version, slice, code version), the
    warehouse holds exactly that curve, and the report draws it."""
    from test_report import figures_of

    from pipelines.analytics import skew_key, skew_paths
    from pipelines.catalog import find_trace
    from pipelines.load import load
    from pipelines.report import write_report
    from replay.version import SKEW_MODEL, model_version

    csv = tmp_path / "io.csv"
    rows = [("R", 0), ("R", 4096), ("W", 8192), ("R", 0), ("W", 512 << 10), ("R", MiB), ("R", MiB + 4096),
            ("W", MiB + (512 << 10)), ("T", 2 * MiB), ("R", 3 * MiB), ("W", 3 * MiB + 4096)]
    csv.write_text("t,lun,dir,off,len\n" + "".join(f"{i},lun7,{op},{off},4096\n" for i, (op, off) in enumerate(rows)))
    spec = tmp_path / "spec.toml"
    spec.write_text('[file]\ntype = "csv"\nseparator = ","\nheader = true\n'
                    '[columns]\nts = "t"\nvolume = "lun"\nop = "dir"\noffset = "off"\nsize = "len"\n'
                    '[units]\nts = "us"\noffset = "bytes"\nsize = "bytes"\n[ops]\nR = "read"\nW = "write"\nT = "trim"\n')
    d = tmp_path / "d"
    tid = ingest_file(csv, d, fmt="generic", options={"mapping": str(spec)}, validate="off").trace_id
    trace = find_trace(d, tid)
    assert run("skew", tid, "--slice", "1MiB", "--data-dir", d).exit_code == 0
    paths = skew_paths(d, trace, MiB)
    key = skew_key(trace, MiB)
    assert paths["summary"].name == paths["curve"].name == f"{MiB}-{key}.parquet"
    assert run("skew", tid, "--slice", "1MiB", "--data-dir", d).exit_code == 0  # the same key: replaced, not added
    assert [p.name for p in paths["summary"].parent.iterdir()] == [paths["summary"].name]
    # another reader version of the same trace (new data under the same id) is another result
    newer = trace.__class__(tid, trace.path, {**trace.manifest, "reader_version": "other"})
    assert skew_key(newer, MiB) != key and skew_key(trace, 2 * MiB) != key
    load(d)
    con = duckdb.connect(str(d / "tiercast.duckdb"), read_only=True)
    curve = con.execute("SELECT hottest_slices, capacity_share, io_share, ios FROM skew_curve WHERE skew_key = ? "
                        "ORDER BY 1", [key]).fetchall()
    assert curve == [(1, 0.25, 0.5, 5), (2, 0.5, 0.8, 8), (3, 0.75, 1.0, 10), (4, 1.0, 1.0, 10)]
    [row] = con.execute("SELECT slices, ios, skew_capacity_share, skew_io_share, flash_bytes_80pct, flash_bytes_90pct, "
                        "flash_bytes_95pct, data_version, model_version FROM skew").fetchall()
    assert row == (4, 10, 0.5, 0.8, 2 * MiB, 3 * MiB, 3 * MiB, trace.data_version, model_version(SKEW_MODEL))
    con.close()
    out = write_report(d, tmp_path / "skew.html")
    fig = figures_of(out)["skew"]
    [line] = [t for t in fig["data"] if t["meta"] == ["trace_curve", tid, MiB]]
    assert (line["x"], line["y"]) == ([c[1] for c in curve], [c[2] for c in curve])
    [mark] = [t for t in fig["data"] if t["meta"][0] == "skew"]
    assert (mark["x"], mark["y"]) == ([0.5], [0.8])
    assert "50.0 % of the capacity serves 80.0 % of the I/O; 80 % of the I/O fits in 2 MiB of flash" in out.read_text()
