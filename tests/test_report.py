"""The what-if report (pipelines/report.py): every chart's numbers against the warehouse rows and
the model's own counters, the CSVs, the seed-figure table, and the page in headless Chromium
(offline: no request, no console error). Also the demo job end to end (small)."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import require, require_module

from pipelines.analytics import skew_trace
from pipelines.catalog import find_trace
from pipelines.demo import DEMO_REPLAYS, DEMO_WORKLOADS, run_demo
from pipelines.ingest import ingest_file
from pipelines.load import query
from pipelines.replay import LAT_BASE, replay_trace, sweep_trace
from pipelines.report import COMFORT_MS, MAX_SERIES, Chart, Selection, _made, byte_ticks, iec, write_report
from pipelines.simulate import mrc
from replay.scenario import load as load_scenario
from traces import synth

DRAM = 32 << 20
SSD = 128 << 20
SMALL = [f"dram.cache_bytes={DRAM}", "replay.interval=0.5s"]
#: scenario -> extra overrides: seed 000's pair (FAST Cache off / on, small caches), FLARE for the
#: watermarks and forced flushes, FAST VP for the slices' skew, snapshots
SCENARIOS = {
    "vnx5400": [],
    "vnx5400-fastcache": [f"ssd_cache.capacity_bytes={SSD}"],
    "vnx1-flare": ["dram.flare.read_cache_bytes=8MiB"],
    "vnx5400-fastvp": [],
    "vnx5500-snapshots": ["dram.flare.read_cache_bytes=8MiB", "snapshots.every_s=2"],
}
SWEEP = [12, 48, 192]


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    """A database-pattern trace through the scenarios above, an all-flash array driven past its
    write cliff by random writes, the curve, skew and a sweep; the report over all of it."""
    d = tmp_path_factory.mktemp("whatif")
    data = d / "data"
    db = d / "db.parquet"
    synth.write(synth.pattern("database", requests=20_000, region_bytes=512 << 20, volume="lun-db"), db)
    rw = d / "rw.parquet"
    synth.write(synth.pattern("randwrite-4k", requests=20_000, region_bytes=48 << 20, volume="lun-rw"), rw)
    trace = find_trace(data, ingest_file(db, data).trace_id)
    writes = find_trace(data, ingest_file(rw, data).trace_id)
    runs = {name: replay_trace(trace, data, load_scenario(name, SMALL + extra))["run_id"]
            for name, extra in SCENARIOS.items()}
    runs["violin6232"] = replay_trace(writes, data, load_scenario(
        "violin6232", ["flash.user_capacity_bytes=48MiB", "replay.interval=5ms", "replay.mode=closed",
                       "replay.outstanding=64"]))["run_id"]
    mrc(trace, data, page_size=8192)
    skew_trace(trace, 16 << 20, data_dir=data)
    sweep_trace(trace, data, load_scenario("vnx5400", SMALL), SWEEP, max_requests=3000)
    figures = pl.DataFrame({"seed": ["000", "002"], "figure": ["s000_rt24", "s002_flare"],
                            "published": [14.0, 513.0], "model": [13.1, 665.3], "error_pct": [-6.4, 29.7],
                            "tolerance_pct": [15.0, 15.0], "kind": ["validation", "validation"], "ok": [True, False]})
    findings = pl.DataFrame({"seed": ["002"], "finding": ["MCx sustains more IOPS than FLARE"], "ok": [True]})
    out = d / "reports" / "whatif.html"
    write_report(data, out, "what-if", figures=figures, findings=findings, intro="A small comparison.")
    con = duckdb.connect(str(data / "tiercast.duckdb"), read_only=True)
    yield data, out, runs, con
    con.close()


def figures_of(page: Path) -> dict[str, dict]:
    """The figure JSON the page embeds, by chart name."""
    text = page.read_text()
    return {m[1]: json.loads(m[2].replace("<\\/", "</")) for m in re.finditer(
        r'<script type="application/json" class="figure" data-chart="(\w+)">(.*?)</script>', text, re.S)}


def traces_of(fig: dict, run_id: str, column: str) -> dict:
    [tr] = [t for t in fig["data"] if t.get("meta") == [run_id, column]]
    return tr


def sql_rows(con, q: str, *params) -> pl.DataFrame:
    return con.sql(q, params=list(params)).pl()


def sql_row(con, q: str, *params) -> tuple:
    [row] = con.execute(q, list(params)).fetchall()
    return row


def label(scenario: str) -> str:
    """How the page names a run: two traces are replayed, so with the trace's file name."""
    return f"{scenario} on {'rw' if scenario == 'violin6232' else 'db'}"


def test_every_chart_present_with_its_csv(comparison):
    data, out, runs, _ = comparison
    figs = figures_of(out)
    assert set(figs) == {"hit_ratio", "mrc", "write_cache", "ssd_cache", "sweeps", "latency", "rg_balance", "skew",
                         "snapshots", "write_cliff"}
    tables = out.parent / "whatif_tables"
    for name in figs:
        assert (tables / f"{name}.csv").stat().st_size > 0
    page = out.read_text()
    # the chart library once, no address outside the page
    assert page.count("Plotly.newPlot") == 1 and page.count("<script>") == 2
    own = re.sub(r"<script>.*?</script>", "", page, count=1, flags=re.S)  # the page less plotly.js
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", own)
    with open(tables / "runs.csv") as f:
        assert {r["run_id"] for r in csv.DictReader(f)} == set(runs.values())


def test_hit_ratio_chart_is_the_interval_rows(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["hit_ratio"]
    for name in ("vnx5400", "vnx5400-fastcache"):
        rows = sql_rows(con, "SELECT interval_start_ns, read_hit_pages, read_pages, ssd_read_hits, ssd_write_hits, "
                        "ssd_read_misses, ssd_write_misses FROM interval_metrics WHERE run_id = ? "
                        "ORDER BY interval_start_ns", runs[name])
        tr = traces_of(fig, runs[name], "dram_read_hit_ratio")
        assert tr["x"] == pytest.approx((rows["interval_start_ns"] / 1e9).to_list())
        want = (rows["read_hit_pages"] / rows["read_pages"]).to_list()  # 0 / 0: NaN, drawn as a gap (None)
        assert [math.nan if y is None else y for y in tr["y"]] == pytest.approx(want, nan_ok=True)
    ssd = traces_of(fig, runs["vnx5400-fastcache"], "ssd_hit_ratio")
    rows = sql_rows(con, "SELECT * FROM interval_metrics WHERE run_id = ? ORDER BY interval_start_ns",
                    runs["vnx5400-fastcache"])
    hits = rows["ssd_read_hits"] + rows["ssd_write_hits"]
    assert ssd["y"] == pytest.approx((hits / (hits + rows["ssd_read_misses"] + rows["ssd_write_misses"])).to_list())
    assert not [t for t in fig["data"] if t["meta"] == [runs["vnx5400"], "ssd_hit_ratio"]]  # no SSD cache: no line
    # the CSV holds the same numbers
    csv_rows = pl.read_csv(out.parent / "whatif_tables" / "hit_ratio.csv").filter(
        pl.col("run_id") == runs["vnx5400"])
    assert csv_rows["dram_read_hit_ratio"].to_list() == pytest.approx(
        traces_of(fig, runs["vnx5400"], "dram_read_hit_ratio")["y"], nan_ok=True)


def test_mrc_chart_marks_each_scenarios_cache_sizes(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["mrc"]
    curve = sql_rows(con, "SELECT cache_bytes, hit_ratio FROM mrc ORDER BY cache_bytes")
    [line] = [t for t in fig["data"] if t["meta"][1:] == ["exact", 8192]]
    assert line["x"] == curve["cache_bytes"].to_list() and line["y"] == pytest.approx(curve["hit_ratio"].to_list())
    # one series per cache kind, a point per run (labelled with the run and its size in IEC units)
    marks = {(c[0], t["meta"][1]): (xv, yv, c[1]) for t in fig["data"] if t["meta"][0] == "marks"
             for xv, yv, c in zip(t["x"], t["y"], t["customdata"], strict=True)}
    assert [t["meta"] for t in fig["data"] if t["meta"][0] == "marks"] == [["marks", "DRAM"], ["marks", "SSD"]]
    # the sizes the scenarios were given, on the curve (log-size interpolation)
    assert marks[(label("vnx5400"), "DRAM")][::2] == (DRAM, "32 MiB")
    assert marks[(label("vnx5400-fastcache"), "SSD")][::2] == (SSD, "128 MiB")
    x, y = np.log(curve["cache_bytes"].to_numpy().astype(float)), curve["hit_ratio"].to_numpy()
    assert marks[(label("vnx5400-fastcache"), "SSD")][1] == pytest.approx(np.interp(np.log(SSD), x, y))
    assert (label("vnx5400"), "SSD") not in marks  # FAST Cache off
    assert f"{label('vnx5400-fastcache')} SSD 128 MiB" in out.read_text()


def test_write_cache_chart_matches_intervals_and_model_counters(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["write_cache"]
    flare = runs["vnx1-flare"]
    rows = sql_rows(con, "SELECT interval_start_ns, dirty_pct_max, flush_mb_per_s, forced_flushes, "
                    "throttle_delay_sum_ms FROM interval_metrics WHERE run_id = ? ORDER BY 1", flare)
    for col in ("dirty_pct_max", "flush_mb_per_s", "forced_flushes", "throttle_delay_sum_ms"):
        assert traces_of(fig, flare, col)["y"] == pytest.approx(rows[col].to_list())
    # the forced flushes drawn add up to the model's own count (an independent counter)
    total = sql_row(con, "SELECT forced_flush_count FROM run_summary WHERE run_id = ?", flare)[0]
    assert total > 0 and sum(traces_of(fig, flare, "forced_flushes")["y"]) == total
    # FLARE's watermarks (80 / 60 %, doc) drawn on the dirty % panel, once per level with one label
    # naming the runs that have it (labels never print over each other); MCx has none
    assert sorted(s["y0"] for s in fig["layout"]["shapes"]) == [60.0, 80.0]  # flare + snapshots (FLARE)
    notes = sorted(a["text"] for a in fig["layout"]["annotations"] if "watermark" in a["text"])
    both = f"{label('vnx1-flare')}, {label('vnx5500-snapshots')}"
    assert notes == [f"high watermark 80 % ({both})", f"low watermark 60 % ({both})"]
    assert f"{label('vnx1-flare')} (FLARE): dirty up to" in out.read_text()


def test_ssd_cache_chart_matches_intervals_and_model_counters(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["ssd_cache"]
    fc = runs["vnx5400-fastcache"]
    assert {t["meta"][0] for t in fig["data"]} == {fc}  # only the run with an SSD cache
    rows = sql_rows(con, "SELECT * FROM interval_metrics WHERE run_id = ? ORDER BY interval_start_ns", fc)
    for col in ("ssd_read_hits_per_s", "ssd_read_misses_per_s", "ssd_write_hits_per_s", "ssd_write_misses_per_s",
                "ssd_fill_pct"):
        assert traces_of(fig, fc, col)["y"] == pytest.approx(rows[col].to_list())
    s = sql_row(con, "SELECT ssd_read_hits, ssd_fill_pct FROM run_summary WHERE run_id = ?", fc)
    # read hits/s x 0.5 s intervals = the model's read-hit counter; the last fill = the model's fill
    assert sum(traces_of(fig, fc, "ssd_read_hits_per_s")["y"]) * 0.5 == pytest.approx(s[0])
    assert traces_of(fig, fc, "ssd_fill_pct")["y"][-1] == pytest.approx(s[1])


def test_sweep_chart_is_the_sweep_rows_with_comfort_lines(comparison):
    _, out, _, con = comparison
    fig = figures_of(out)["sweeps"]
    rows = sql_rows(con, "SELECT sweep_id, outstanding, iops, latency_mean_ms FROM sweeps ORDER BY outstanding")
    sid = rows["sweep_id"][0]
    for col in ("iops", "latency_mean_ms"):
        tr = traces_of(fig, sid, col)
        assert tr["x"] == SWEEP and tr["y"] == pytest.approx(rows[col].to_list())
    comfort = {t["meta"][1]: t for t in fig["data"] if t["meta"][0] == "comfort"}
    assert set(comfort) == set(COMFORT_MS) and all(comfort[ms]["y"] == [ms, ms] for ms in COMFORT_MS)
    assert comfort[10.0]["x"] == [min(SWEEP), max(SWEEP)]
    peak = rows.sort("iops").row(-1, named=True)
    assert f"peak {peak['iops']:,.0f} IOPS at {peak['outstanding']} outstanding" in out.read_text()


def test_latency_cdf_gives_the_summary_percentiles(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["latency"]
    for name in ("vnx5400", "vnx5400-fastcache"):
        rid = runs[name]
        hist = sql_rows(con, "SELECT latency_hi_ms, requests FROM latency_hist WHERE run_id = ? ORDER BY lat_bucket",
                        rid)
        tr = traces_of(fig, rid, "cdf")
        cdf = np.cumsum(hist["requests"].to_numpy()) / hist["requests"].sum()
        assert tr["x"] == pytest.approx(hist["latency_hi_ms"].to_list()) and tr["y"] == pytest.approx(cdf)
        s = sql_row(con, "SELECT measured_requests, latency_p50_ms, latency_p95_ms, latency_p99_ms FROM run_summary "
                        "WHERE run_id = ?", rid)
        assert hist["requests"].sum() == s[0]
        # each summary percentile is the middle of the first bucket where the drawn CDF reaches it
        for q, want in zip((0.5, 0.95, 0.99), s[1:], strict=True):
            k = int(np.argmax(np.asarray(tr["y"]) >= q - 1e-12))
            assert tr["x"][k] / np.sqrt(LAT_BASE) == pytest.approx(want)


def test_rg_balance_chart_is_the_group_rows(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["rg_balance"]
    rid = runs["vnx5400"]
    rows = sql_rows(con, "SELECT rg, avg(utilization) u, sum(backend_ios) b FROM rg_intervals WHERE run_id = ? "
                    "GROUP BY rg ORDER BY rg", rid)
    tr = traces_of(fig, rid, "utilization_mean")
    assert tr["x"] == rows["rg"].to_list() and len(tr["x"]) >= 2
    assert tr["y"] == pytest.approx(rows["u"].to_list()) and tr["customdata"] == rows["b"].to_list()
    assert all(0 < u < 1 for u in tr["y"])


def test_skew_chart_curve_and_point(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["skew"]
    rid = runs["vnx5400-fastvp"]
    ios = sql_rows(con, "SELECT ios FROM tier_slices WHERE run_id = ? ORDER BY ios DESC", rid)["ios"].to_numpy()
    tr = traces_of(fig, rid, "io_share")
    assert tr["y"] == pytest.approx(np.cumsum(ios) / ios.sum()) and tr["y"][-1] == pytest.approx(1.0)
    assert tr["x"] == pytest.approx(np.arange(1, len(ios) + 1) / len(ios))
    point = sql_row(con, "SELECT skew_capacity_share, skew_io_share FROM skew")
    [mark] = [t for t in fig["data"] if t["meta"][0] == "skew"]
    assert (mark["x"][0], mark["y"][0]) == pytest.approx(point)
    assert mark["x"][0] + mark["y"][0] == pytest.approx(1.0, abs=0.1)  # the skew point sits near the diagonal


def test_snapshot_chart_is_the_snapshot_rows(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["snapshots"]
    rid = runs["vnx5500-snapshots"]
    rows = sql_rows(con, "SELECT start_ns, snapshot_bytes FROM snapshot_intervals WHERE run_id = ? ORDER BY 1", rid)
    tr = traces_of(fig, rid, "snapshot_bytes")
    assert tr["y"] == rows["snapshot_bytes"].to_list() and max(tr["y"]) > 0
    peak = sql_row(con, "SELECT snapshot_peak_bytes FROM run_summary WHERE run_id = ?", rid)[0]
    assert max(tr["y"]) == peak


def test_write_cliff_chart_marks_the_cliff(comparison):
    _, out, runs, con = comparison
    fig = figures_of(out)["write_cliff"]
    rid = runs["violin6232"]
    rows = sql_rows(con, "SELECT flash_free_pct, flash_gc_mib_per_s FROM interval_metrics WHERE run_id = ? "
                    "ORDER BY interval_start_ns", rid)
    assert traces_of(fig, rid, "flash_free_pct")["y"] == pytest.approx(rows["flash_free_pct"].to_list())
    assert traces_of(fig, rid, "flash_gc_mib_per_s")["y"] == pytest.approx(rows["flash_gc_mib_per_s"].to_list())
    cliff = sql_row(con, "SELECT flash_time_to_cliff_s FROM run_summary WHERE run_id = ?", rid)[0]
    assert cliff is not None and [s["x0"] for s in fig["layout"]["shapes"]] == pytest.approx([cliff] * 3)
    assert min(rows["flash_free_pct"]) < 1  # free space ran out: the cliff is real


def test_seed_figure_table_opens_the_page_with_misses_marked(comparison):
    _, out, _, _ = comparison
    page = out.read_text()
    assert page.index('data-table="seed_figures"') < page.index('data-table="runs"')
    table = page[page.index('data-table="seed_figures"'):]
    table = table[:table.index("</table>")]
    assert table.count('<tr class="miss">') == 1 and "s002_flare" in table.split('<tr class="miss">')[1]
    assert "2 figures, 1 within tolerance, 1 outside" in page and "A small comparison." in page
    with open(out.parent / "whatif_tables" / "seed_figures.csv") as f:
        assert [r["ok"] for r in csv.DictReader(f)] == ["true", "false"]


def test_selected_runs_only(comparison, tmp_path):
    data, _, runs, con = comparison
    out = write_report(data, tmp_path / "two.html", "two", run_ids=[runs["vnx5400"], runs["vnx5400-fastcache"]])
    figs = figures_of(out)
    assert {t["meta"][0] for t in figs["hit_ratio"]["data"]} == {runs["vnx5400"], runs["vnx5400-fastcache"]}
    assert "write_cliff" not in figs and "snapshots" not in figs
    # the caption compares each run with the first one selected of its trace
    base = sql_row(con, "SELECT latency_p95_ms FROM run_summary WHERE run_id = ?", runs["vnx5400"])[0]
    fc = sql_row(con, "SELECT latency_p95_ms FROM run_summary WHERE run_id = ?", runs["vnx5400-fastcache"])[0]
    assert f"vnx5400-fastcache: p95 {fc:.2f} ms ({100 * (fc / base - 1):+.0f} % vs vnx5400)" in out.read_text()
    with pytest.raises(LookupError, match="not in the warehouse"):
        write_report(data, tmp_path / "x.html", "x", run_ids=["0000000000000000"])


def test_cli_report_takes_runs_and_trace_by_prefix(comparison, tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    data, _, runs, con = comparison
    trace = sql_row(con, "SELECT trace_id FROM runs WHERE run_id = ?", runs["vnx5400"])[0]
    out = tmp_path / "cli.html"
    r = CliRunner().invoke(app, ["report", "--out", str(out), "--data-dir", str(data), "--trace", trace[:6],
                                 "--run", runs["vnx1-flare"][:8], "--run", runs["vnx5400"]], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    figs = figures_of(out)
    assert [t["meta"][0] for t in figs["latency"]["data"] if t["meta"][1] == "cdf"] == [runs["vnx1-flare"],
                                                                                      runs["vnx5400"]]
    [dram] = [t for t in figs["mrc"]["data"] if t["meta"] == ["marks", "DRAM"]]
    assert [c[0] for c in dram["customdata"]] == ["vnx1-flare", "vnx5400"]


def test_page_renders_offline_in_headless_chromium(comparison, tmp_path):
    """The page with every chart, and a compare page of the database trace's five runs (its summary
    block), in headless Chromium: offline, no console error, every chart drawn; at 1280 px the
    summary is seen without scrolling and the decision table needs no horizontal scroll; printed on
    A4 the decision table fits and per-interval tables are left out."""
    data, out, runs, _ = comparison
    compare = write_report(data, tmp_path / "compare.html", "compare 5 configurations on trace db",
                           run_ids=[rid for name, rid in runs.items() if name != "violin6232"])
    chromium = shutil.which("chromium")
    require(chromium, "Debian's chromium is not installed (.ci/run installs it)")
    sync_api = require_module("playwright.sync_api", "playwright (dev extra) drives Chromium")
    errors, requests = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri())
            page.wait_for_function("document.querySelectorAll('.chart .main-svg').length >= "
                                   "document.querySelectorAll('.chart').length")
            drawn = page.evaluate("Object.fromEntries(Array.from(document.querySelectorAll('.chart')).map(d => "
                                  "[d.id.slice(6), d.querySelectorAll('.scatterlayer .trace path.js-line, "
                                  ".scatterlayer .trace .point, .barlayer .point').length]))")
            png = tmp_path / "report.png"
            page.screenshot(path=str(png), full_page=True)
            page.goto(compare.as_uri())
            page.wait_for_function("document.querySelectorAll('.chart .main-svg').length >= "
                                   "document.querySelectorAll('.chart').length")
            # at 1280 px: the decision table needs no horizontal scroll, the summary is seen without scrolling
            runs = page.evaluate("(() => {const w = document.querySelector('table[data-table=runs]').parentElement;"
                                 "return [w.scrollWidth, w.clientWidth];})()")
            summary_bottom = page.evaluate("document.getElementById('summary').getBoundingClientRect().bottom")
            # printed (A4: 186 mm between the margins, ~703 px): the decision table fits the paper, per-interval
            # tables are not printed but counted, the folded id columns are left out
            page.emulate_media(media="print")
            page.set_viewport_size({"width": 703, "height": 1000})
            printed = page.evaluate("(() => {const t = document.querySelector('table[data-table=runs]');"
                                    "const long = document.querySelector('.tablewrap.long');"
                                    "const note = document.querySelector('.printonly');"
                                    "return [t.getBoundingClientRect().right, document.body.clientWidth,"
                                    "getComputedStyle(long).display, getComputedStyle(note).display,"
                                    "getComputedStyle(document.querySelector('details.more')).display];})()")
        finally:
            browser.close()
    assert errors == []
    assert requests == [out.as_uri(), compare.as_uri()]  # the pages themselves, nothing else
    assert set(drawn) == set(figures_of(out)) and all(n > 0 for n in drawn.values()), drawn
    assert runs[0] <= runs[1], runs
    assert 0 < summary_bottom <= 900
    right, body_width, long_display, note_display, details_display = printed
    assert right <= body_width and long_display == "none" and note_display == "block" and details_display == "none"
    from PIL import Image

    img = np.asarray(Image.open(png).convert("L"))
    assert img.shape[0] > 3000 and img.std() > 10 and (img < 128).mean() > 0.01  # not blank


def test_byte_axes_are_labelled_in_iec_units():
    """A byte axis says "1 GiB", never plotly's SI "1.07G" or "1B" (a billion): log axes at powers of
    two, linear ones at round steps of one unit."""
    assert iec(30 << 30) == "30 GiB" and iec(1536) == "1.5 KiB" and iec(0) == "0 B" and iec(1 << 40) == "1 TiB"
    log = byte_ticks(1 << 20, 8 << 30, log=True)
    assert log["ticktext"] == ["1 MiB", "4 MiB", "16 MiB", "64 MiB", "256 MiB", "1 GiB", "4 GiB", "16 GiB"]
    assert log["tickvals"] == [float(1 << p) for p in range(20, 35, 2)]
    assert byte_ticks(4096, 1 << 40, log=True)["ticktext"] == ["1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB",
                                                              "32 GiB", "1 TiB"]
    lin = byte_ticks(0, 30 << 30)
    assert lin["ticktext"][:7] == ["0 B", "5 GiB", "10 GiB", "15 GiB", "20 GiB", "25 GiB", "30 GiB"]
    assert lin["tickvals"][6] == 30 << 30


def test_charts_read_iec_axes_outside_legends_and_trace_names(comparison):
    _, out, _, _ = comparison
    figs = figures_of(out)
    mrc = figs["mrc"]["layout"]["xaxis"]
    assert mrc["ticktext"] == [iec(v) for v in mrc["tickvals"]] and mrc["ticktext"][:3] == ["64 KiB", "256 KiB", "1 MiB"]
    for axis in ("yaxis", "yaxis2"):  # space held and host writes of the snapshot chart
        ticks = figs["snapshots"]["layout"][axis]
        assert ticks["ticktext"][0] == "0 B" and ticks["ticktext"][1].endswith(" MiB")
    for name, fig in figs.items():  # every legend right of the plot area, never over a trace or axis title
        legend = fig["layout"]["legend"]
        assert legend["x"] >= 1 and legend["xanchor"] == "left", name
    for name, fig in figs.items():  # at most MAX_SERIES series in any panel
        panels: dict[tuple, int] = {}
        for t in fig["data"]:
            key = (t.get("xaxis", "x"), t.get("yaxis", "y"))
            panels[key] = panels.get(key, 0) + 1
        assert max(panels.values()) <= MAX_SERIES, (name, panels)
    # the trace's name, not its hash, in legends
    assert {t["name"] for t in figs["mrc"]["data"] if t["meta"][1:] == ["exact", 8192]} == {"db exact 8 KiB pages"}
    assert not [t["name"] for f in figs.values() for t in f["data"] if re.search(r"[0-9a-f]{12}", t.get("name", ""))]


def test_hit_ratio_chart_has_a_panel_per_tier_with_a_line_per_run(comparison):
    _, out, runs, _ = comparison
    fig = figures_of(out)["hit_ratio"]
    panels: dict[str, list] = {}
    for t in fig["data"]:
        panels.setdefault(t.get("yaxis", "y"), []).append(t["meta"])
    assert sorted(panels) == ["y", "y2", "y3"]  # DRAM read, DRAM write, SSD cache
    assert {m[1] for m in panels["y3"]} == {"ssd_hit_ratio"} and all(len(v) <= MAX_SERIES for v in panels.values())
    assert len(panels["y"]) == 5  # every run with a DRAM cache (not the all-flash one)


def test_each_run_has_one_legend_entry_at_its_first_panel_with_a_line():
    """A run with no DRAM read hit ratio (a write-only trace) still gets its legend entry, on the
    panel where it first has a line; no run gets two."""
    from pipelines.report import _lines, _subplots

    sel = Selection(pl.DataFrame({"run_id": ["a", "b"]}), [], None, {"a": "A", "b": "B"})
    df = pl.DataFrame({"run_id": ["a", "a", "b", "b"], "t_s": [0.0, 1.0, 0.0, 1.0],
                       "read": [0.5, 0.6, None, None], "write": [0.1, 0.2, 0.3, 0.4]})
    fig = _subplots(2, ["read", "write"], 500)
    shown: set[str] = set()
    for row, col in enumerate(("read", "write"), 1):
        _lines(fig, df, sel, col, row=row, legend=shown)
    entries = [(t.meta[0], t.meta[1]) for t in fig.data if t.showlegend]
    assert entries == [("a", "read"), ("b", "write")]


def test_per_run_charts_are_split_into_charts_of_six_runs():
    """Fifteen runs (the seed report's) make three charts of 6, 6 and 3 runs, in order, each titled
    with its runs."""
    from pipelines import report

    ids = [f"run{i:02d}" for i in range(15)]
    sel = Selection(pl.DataFrame({"run_id": ids}), [], None, {r: r for r in ids})

    def chart(_wh, s):
        return Chart("hit_ratio", "Hit ratio", "", {"data": []}, s.runs)

    charts = _made(chart, None, sel)  # a maker not in PER_RUN: one chart
    assert [c.name for c in charts] == ["hit_ratio"] and charts[0].table.height == 15
    report_per_run = report.PER_RUN
    try:
        report.PER_RUN = (chart,)
        charts = _made(chart, None, sel)
    finally:
        report.PER_RUN = report_per_run
    assert [c.name for c in charts] == ["hit_ratio", "hit_ratio_2", "hit_ratio_3"]
    assert [c.table["run_id"].to_list() for c in charts] == [ids[:6], ids[6:12], ids[12:]]
    assert [c.title for c in charts] == ["Hit ratio (runs 1-6 of 15)", "Hit ratio (runs 7-12 of 15)",
                                         "Hit ratio (runs 13-15 of 15)"]


def test_five_sweeps_make_two_charts_of_at_most_six_series(tmp_path):
    """Five sweeps (with the two comfort lines: 7 series in a panel) are drawn as 4 + 1."""
    data = tmp_path / "data"
    src = tmp_path / "rr.parquet"
    synth.write(synth.pattern("randread-4k", requests=2000, region_bytes=64 << 20, volume="lun"), src)
    trace = find_trace(data, ingest_file(src, data).trace_id)
    for mib in (16, 32, 64, 128, 256):
        sc = load_scenario("vnx5400", [f"dram.cache_bytes={mib}MiB"]).relabel(f"vnx5400 {mib} MiB")
        sweep_trace(trace, data, sc, [4, 16], max_requests=500)
    figs = figures_of(write_report(data, tmp_path / "sweeps.html", "sweeps"))
    assert [k for k in figs if k.startswith("sweeps")] == ["sweeps", "sweeps_2"]
    for name, n in (("sweeps", 4), ("sweeps_2", 1)):
        lines = [t for t in figs[name]["data"] if t["meta"][0] != "comfort"]
        assert len({t["meta"][0] for t in lines}) == n and len(lines) == 2 * n  # IOPS and latency per sweep
    page = (tmp_path / "sweeps.html").read_text()
    assert "IOPS and response time vs outstanding I/Os (sweeps 5-5 of 5)" in page


def test_runs_table_leads_with_the_decision_columns_ids_folded(comparison):
    _, out, runs, _ = comparison
    page = out.read_text()
    table = page[page.index('data-table="runs"'):]
    table = table[:table.index("</table>")]
    assert re.findall(r"<th>(.*?)</th>", table) == ["scenario", "p95 ms", "p99 ms", "mean ms", "IOPS", "MB/s"]
    assert runs["vnx5400"] not in table  # the ids are in the folded table below it, and in the CSV
    details = page[page.index('data-table="runs_details"'):]
    details = details[:details.index("</table>")]
    assert re.findall(r"<th>(.*?)</th>", details)[-3:] == ["trace_id", "run_id", "model_version"]
    assert runs["vnx5400"] in details
    with open(out.parent / "whatif_tables" / "runs.csv") as f:
        head = next(csv.reader(f))
    assert head[:6] == ["scenario", "latency_p95_ms", "latency_p99_ms", "latency_mean_ms", "iops", "mb_per_s"]
    assert head[-3:] == ["trace_id", "run_id", "model_version"]
    # per-interval tables are not printed: the print stylesheet hides them, a print-only line counts them
    hit = page[page.index('id="hit_ratio"'):]
    assert '<div class="tablewrap long">' in hit[:hit.index("</section>")]
    assert re.search(r'<p class="printonly">[\d,]+ rows, not printed: they are in hit_ratio.csv', page)


def test_report_opens_with_the_summary_of_its_runs(comparison, tmp_path):
    """``tiercast report`` (no summary given): per trace the run with the lowest p95, the next one,
    and what each run assumed; it comes before everything else."""
    data, _, runs, con = comparison
    out = write_report(data, tmp_path / "two.html", "two", run_ids=[runs["vnx5400"], runs["vnx1-flare"]])
    page = out.read_text()
    p95 = dict(con.execute("SELECT run_id, latency_p95_ms FROM run_summary").fetchall())
    best, other = sorted(["vnx5400", "vnx1-flare"], key=lambda n: p95[runs[n]])
    assert page.index('id="summary"') < page.index("<nav>") < page.index('id="runs"')
    assert f"On db, {best} has the lowest p95 ({p95[runs[best]]:,.2f} ms," in page
    assert f"<b>Runner-up.</b> {other} ({p95[runs[other]]:,.2f} ms p95)" in page
    assert "<li>vnx5400: DRAM cache 32 MiB, mcx write cache</li>" in page


# --- the demo job -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    lines: list[str] = []
    report = d / "reports" / "demo.html"
    results = run_demo(d / "data", requests=20_000, log=lines.append, report=report)
    return d, results, lines, report


def test_demo_ingests_replays_and_loads(demo):
    d, results, lines, _ = demo
    assert {name: r.rows_accepted for name, r in results.items()} == {
        name: 20_000 * mult for name, _, _, mult in DEMO_WORKLOADS
    }
    con = duckdb.connect(str(d / "data" / "tiercast.duckdb"), read_only=True)
    runs = con.sql("select scenario, requests, iops from latest_runs order by scenario, requests").fetchall()
    n_runs = sum(len(v) for v in DEMO_REPLAYS.values())
    assert len(runs) == n_runs and all(iops > 0 for _, _, iops in runs)
    assert con.sql("select count(distinct outstanding) from sweeps").fetchall() == [(5,)]
    assert query(d / "data", "select count(*) from requests").item() == sum(r.rows_accepted for r in results.values())
    # every hit ratio of the curves is a ratio, and the curve never falls as the cache grows
    curves = con.sql("select trace_id, cache_bytes, hit_ratio from mrc order by 1, 2").pl()
    assert curves["hit_ratio"].is_between(0, 1).all()
    falls = curves.group_by("trace_id").agg((pl.col("hit_ratio").diff() < -1e-12).sum().alias("n"))
    assert falls["n"].sum() == 0
    assert any(line.startswith("sweep database-15g on vnx5400") for line in lines)


def test_demo_report_charts_the_demo_runs(demo):
    d, _, _, report = demo
    figs = figures_of(report)
    assert {"hit_ratio", "mrc", "write_cache", "ssd_cache", "sweeps", "latency", "rg_balance"} <= set(figs)
    con = duckdb.connect(str(d / "data" / "tiercast.duckdb"), read_only=True)
    with open(report.parent / "demo_tables" / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    want = dict(con.sql("select run_id, iops from latest_runs").fetchall())
    assert {r["run_id"]: float(r["iops"]) for r in rows} == pytest.approx(want)
    with open(report.parent / "demo_tables" / "traces.csv") as f:
        assert sorted(int(r["requests"]) for r in csv.DictReader(f)) == sorted(20_000 * m for *_, m in DEMO_WORKLOADS)
