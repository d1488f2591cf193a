"""The demo job end to end (small) and the HTML report it writes."""

from __future__ import annotations

import csv
import re

import duckdb
import polars as pl
import pytest

from pipelines.demo import DEMO_REPLAYS, DEMO_WORKLOADS, run_demo
from pipelines.load import query


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


def test_report_has_charts_and_tables_that_match_the_warehouse(demo):
    d, _, _, report = demo
    page = report.read_text()
    # traces, curves, array runs (one figure per replayed trace) and the sweep
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 1 + len(DEMO_REPLAYS) + 1
    tables = report.parent / "demo_tables"
    with open(tables / "array_runs.csv") as f:
        rows = list(csv.DictReader(f))
    con = duckdb.connect(str(d / "data" / "tiercast.duckdb"), read_only=True)
    want = dict(con.sql("select run_id, iops from run_summary").fetchall())
    assert {r["run_id"]: float(r["iops"]) for r in rows} == pytest.approx(want)
    with open(tables / "traces.csv") as f:
        assert sorted(int(r["requests"]) for r in csv.DictReader(f)) == sorted(
            20_000 * m for *_, m in DEMO_WORKLOADS
        )
