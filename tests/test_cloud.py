"""Cloud block-storage volumes (``replay/mech/cloud``, issue 28): the hand-calculated checks of the
issue (gp2's burst bucket, gp3's throughput cap, gp3's price), a plain-Python token bucket as an
independent replay of the credit balance, I/O accounting, the instance bucket, service times,
limits refused by name, and the outputs in ``replay --json``, the terminal and the warehouse."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from test_backend import assert_segmenting_invariant
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import ingest_file
from pipelines.load import load as load_warehouse
from pipelines.load import query
from pipelines.replay import replay_frames
from replay.prices import monthly_cost
from replay.scenario import load
from schemas.trace import OP_READ, OP_WRITE, OPS, POLARS_SCHEMA

SEC = 10**9
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def constant(n: int, iops: float, size: int, *, op: str = "R", sequential: bool = False, volume: str = "vol0",
             seed: int = 0) -> pl.DataFrame:
    """``n`` requests at exactly ``iops`` per second (canonical trace columns): random offsets over
    100 GiB, or one sequential stream."""
    rng = np.random.default_rng(seed)
    offsets = (np.arange(n, dtype=np.int64) * size if sequential
               else rng.integers(0, (100 * GIB) // size, n, dtype=np.int64) * size)
    ops = {"R": OPS[OP_READ], "W": OPS[OP_WRITE]}
    return pl.DataFrame({
        "ts_ns": (np.arange(n, dtype=np.float64) * (SEC / iops)).astype(np.int64),
        "volume": pl.repeat(volume, n, eager=True).cast(pl.Categorical),
        "op": pl.repeat(ops[op], n, eager=True).cast(POLARS_SCHEMA["op"]),
        "offset": offsets, "size": np.full(n, size, dtype=np.int32),
        "latency_ns": pl.repeat(None, n, dtype=pl.Int64, eager=True),
        "src_line": np.arange(1, n + 1, dtype=np.int64)}, schema=POLARS_SCHEMA)


def replay(preset: str, df: pl.DataFrame, *sets: str, interval: str = "1s"):
    sc = load(preset, [f"replay.interval={interval}", *sets])
    return replay_frames([df], sc, "t", total=df.height)


# ---- gp2: the burst bucket (the hand calculation) --------------------------------------
@pytest.fixture(scope="module")
def gp2_cli(tmp_path_factory):
    """aws-gp2 at 100 GiB (300 IOPS baseline) driven at a constant 3,000 IOPS of 16 KiB random reads
    for 2,100 s, through ``tiercast replay --json``, the terminal and the warehouse."""
    d = tmp_path_factory.mktemp("cloud-cli")
    df = constant(6_300_000, 3000, 16 * KIB)
    df.write_parquet(d / "gp2.parquet")
    tid = ingest_file(d / "gp2.parquet", d, validate="off").trace_id
    args = ["replay", tid, "--scenario", "aws-gp2", "--set", "cloud.size_bytes=100GiB", "--set",
            "replay.interval=10s", "--data-dir", str(d)]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    return d, json.loads(r.stdout), text.stdout


def test_gp2_bucket_empties_after_2000_s_then_300_iops(gp2_cli):
    d, s, _ = gp2_cli
    # 5.4 M credits / (3,000 - 300) per second = 2,000 s
    assert s["burst_exhausted_s"] == pytest.approx(5.4e6 / (3000 - 300), rel=0.02)
    assert s["iops_after_burst"] == pytest.approx(300, rel=0.03)
    t = pl.read_parquet(d / "results" / "array_cloud_intervals" / f"{s['run_id']}.parquet")
    before = t.filter(pl.col("interval_end_ns") <= 1990 * SEC)
    after = t.filter((pl.col("interval_start_ns") >= 2010 * SEC) & (pl.col("interval_end_ns") <= 2800 * SEC))
    assert before["delivered_iops"].to_numpy() == pytest.approx(3000, rel=0.001)  # the burst: all offered
    assert before["throttled_requests"].sum() == 0
    assert after["delivered_iops"].to_numpy() == pytest.approx(300, rel=0.03)
    assert (after["credit_ios_max"] <= 1).all()  # spent as it refills
    # the balance falls by 2,700 a second during the burst: 5.4 M - 2,700 x 1,000 s at 1,000 s
    at = t.filter(pl.col("interval_start_ns") == 1000 * SEC).row(0, named=True)
    assert at["credit_ios_max"] == pytest.approx(5.4e6 - 2700 * 1000, rel=1e-4)
    assert s["cost_per_month"] == pytest.approx(10.00) and s["currency"] == "USD"  # 100 GiB x $0.10


def test_gp2_terminal_and_warehouse(gp2_cli):
    d, s, text = gp2_cli
    for words in ("cloud volume", "aws gp2 100 GiB", "300 IOPS", "bursting to 3,000 IOPS", "cost per month",
                  "10.00 USD (us-east-1)", "burst credits exhausted", "2,000.0 s", "instance burst exhausted"):
        assert words in text, words
    load_warehouse(d)
    row = query(d, f"SELECT burst_exhausted_s, cost_per_month, currency FROM run_summary "
                   f"WHERE run_id = '{s['run_id']}'").row(0)
    assert row == (pytest.approx(s["burst_exhausted_s"]), pytest.approx(10.0), "USD")
    n = query(d, f"SELECT count(*), min(credit_ios_min) FROM cloud_intervals WHERE run_id = '{s['run_id']}'").row(0)
    assert n[0] > 200 and n[1] == 0


def test_gp2_report_chart_is_the_cloud_intervals(gp2_cli, tmp_path):
    from test_report import figures_of, traces_of

    from pipelines.report import _time_axis, write_report

    d, s, _ = gp2_cli
    out = write_report(d, tmp_path / "r.html", run_ids=[s["run_id"]])
    fig = figures_of(out)["cloud_volume"]
    rows = query(d, f"SELECT credit_ios_min, delivered_iops FROM cloud_intervals WHERE run_id = '{s['run_id']}' "
                    "ORDER BY interval_start_ns")
    assert traces_of(fig, s["run_id"], "credit_ios_min")["y"] == pytest.approx(rows["credit_ios_min"].to_list())
    assert traces_of(fig, s["run_id"], "delivered_iops")["y"] == pytest.approx(rows["delivered_iops"].to_list())
    div, unit = _time_axis(float(rows.height * 10))  # the chart's time unit: 10 s intervals over ~2,900 s
    assert unit == "min" and [v["x0"] * div for v in fig["layout"]["shapes"]] == pytest.approx([s["burst_exhausted_s"]] * 3)
    page = out.read_text()
    assert "at 10.00 USD/month: burst credits ran out at" in page and "cost_per_month" in page


# ---- an independent token bucket -----------------------------------------------------------------
def python_bucket(ts_ns: np.ndarray, peak: float, base: float, cap: float, balance: float, window: float = 1e-3):
    """A plain token bucket over arrival times (one token per request, FCFS; the peak rate enforced
    with ``window`` seconds of tolerance): start times and the balance right after each request's
    token, in float seconds and tokens."""
    starts, bals = [], []
    due = last = None  # when the next token is due at the peak rate
    for t in ts_ns / 1e9:
        s = t if due is None else max(t, due - window)
        if last is not None:
            balance = min(cap, balance + (s - last) * base)
        if balance < 1:
            s += (1 - balance) / base
            balance = 1.0
        balance -= 1
        last, due = s, max(s, due or s) + 1 / peak
        starts.append(s)
        bals.append(balance)
    return np.array(starts), np.array(bals)


def test_credit_balance_equals_a_plain_python_token_bucket():
    """Bursty arrivals (Poisson at 250 IOPS, with 20 s bursts at 2,000 IOPS) on gp2 20 GiB (100
    IOPS baseline, so the bucket drains and refills): per 1 s interval the kernel's lowest and
    highest balance equal the plain replay's, and so do the start times."""
    rng = np.random.default_rng(7)
    parts, t0 = [], 0.0
    for rate, secs in ((250, 30), (2000, 20), (250, 60), (2000, 20), (50, 120)):
        gaps = rng.exponential(1 / rate, int(rate * secs))
        parts.append(t0 + np.cumsum(gaps))
        t0 = parts[-1][-1]
    ts = (np.concatenate(parts) * 1e9).astype(np.int64)
    df = constant(ts.size, 1.0, 16 * KIB).with_columns(ts_ns=pl.Series(ts))
    cap = 30_000.0
    pct = 100 * cap / 5.4e6
    res = replay("aws-gp2", df, "cloud.size_bytes=20GiB", f"cloud.initial_credit_pct={pct}")
    starts, bals = python_bucket(ts, 3000.0, 100.0, 5.4e6, cap)
    mine = pl.DataFrame({"start": (starts * 1e9 + 0.5).astype(np.int64), "bal": bals})
    want = (mine.with_columns(interval_start_ns=pl.col("start") // SEC * SEC).group_by("interval_start_ns")
            .agg(lo=(pl.col("bal") + 0.5).floor().min(), hi=(pl.col("bal") + 0.5).floor().max(), n=pl.len())
            .sort("interval_start_ns"))
    got = res.tables["cloud_intervals"].filter(pl.col("started") > 0).sort("interval_start_ns")
    assert got["interval_start_ns"].to_list() == want["interval_start_ns"].to_list()
    assert got["started"].to_list() == want["n"].to_list()
    assert got["credit_ios_min"].to_numpy() == pytest.approx(want["lo"].to_numpy(), abs=1)
    assert got["credit_ios_max"].to_numpy() == pytest.approx(want["hi"].to_numpy(), abs=1)
    assert want["lo"].min() == 0 and res.summary["burst_exhausted_s"] is not None  # it did run dry
    assert res.summary["warnings"] == [] or all(w["severity"] != "model_error" for w in res.summary["warnings"])


def test_outcomes_do_not_depend_on_segmenting():
    rows = [(i * 200_000 + (i % 7) * 13_000, "v0" if i % 3 else "v1", "read" if i % 4 else "write",
             (i // 2) * 16384 if i % 5 else i * 1_000_000_000, 16384 if i % 9 else 1 << 20) for i in range(3000)]
    c = assert_segmenting_invariant(load("aws-gp2", ["cloud.size_bytes=20GiB", "cloud.initial_credit_pct=0.01"]),
                                    rows, [1, 7, 500, [10, 11, 2999]])
    assert c["cloud_throttled"] > 1000 and c["cloud_volume_iops_exhausted_ns"] > 0 and c["cloud_merged"] > 0
    c = assert_segmenting_invariant(load("aws-st1", ["cloud.initial_credit_pct=0.001"]), rows, [64, [1, 1500]])
    assert c["cloud_volume_bytes_exhausted_ns"] > 0


# ---- caps, accounting, the instance bucket ------------------------------------------------------
def test_gp3_throughput_cap_holds_1_mib_sequential_reads_to_125_iops():
    df = constant(6000, 500, MIB, sequential=True)  # 500 MiB/s offered for 12 s
    res = replay("aws-gp3", df)
    t = res.tables["cloud_intervals"].filter(pl.col("started") > 0)
    assert t["delivered_iops"].max() <= 125 + 1
    busy = t.head(t.height - 1)  # the last interval is partial
    assert busy["delivered_iops"].to_numpy() == pytest.approx(125, rel=0.01)
    assert busy["delivered_mib_per_s"].to_numpy() == pytest.approx(125, rel=0.01)
    # merged into 256 KiB units: 4 I/Os per MiB, 500 IOPS: far under the 3,000 IOPS
    assert res.summary["cloud_ios"] == 4 * 6000


def test_ebs_merges_sequential_small_ios_into_256_kib_and_azure_does_not():
    seq = constant(6400, 1000, 4 * KIB, sequential=True, op="W")
    assert replay("aws-gp3", seq).summary["cloud_ios"] == 6400 * 4 // 256  # 64 writes per 256 KiB unit
    assert replay("aws-gp3", constant(6400, 1000, 4 * KIB, op="W")).summary["cloud_ios"] == 6400
    assert replay("azure-premium-v2", seq).summary["cloud_ios"] == 6400
    big = constant(1000, 100, MIB)  # random 1 MiB reads: 4 units each, not merged
    assert replay("azure-premium-v2", big).summary["cloud_ios"] == 4000


def test_st1_charges_a_random_io_a_whole_mib_of_throughput_credit():
    """st1 2,000 GiB: 78.125 MiB/s baseline, 488.28 MiB/s burst, credits 1 TiB per TiB. Random 16
    KiB reads at 1,000 offered per second: 500 IOPS cap, 488 MiB/s of 1 MiB credits while they last,
    then 78.1 IOPS: each costs 1 MiB. With 1 % of the credits (20,480 MiB) they last
    20,480 / (488.28 - 78.125) = 49.9 s."""
    res = replay("aws-st1", constant(120_000, 1000, 16 * KIB), "cloud.initial_credit_pct=1")
    s = res.summary
    assert s["burst_exhausted_s"] == pytest.approx(2000 * 1024 * 0.01 / (2000 * 250 / 1024 - 2000 * 40 / 1024),
                                                   rel=0.02)
    t = res.tables["cloud_intervals"]
    early = t.filter((pl.col("interval_start_ns") >= 2 * SEC) & (pl.col("interval_end_ns") <= 45 * SEC))
    assert early["delivered_iops"].to_numpy() == pytest.approx(2000 * 250 / 1024, rel=0.01)
    late = t.filter((pl.col("interval_start_ns") >= 60 * SEC) & (pl.col("interval_end_ns") <= 300 * SEC))
    assert late["delivered_iops"].to_numpy() == pytest.approx(2000 * 40 / 1024, rel=0.03)
    # sequential 1 MiB reads pay their bytes: 488 MiB/s on credits, under the 500 IOPS cap
    seq = replay("aws-st1", constant(5000, 1000, MIB, sequential=True)).tables["cloud_intervals"]
    assert seq.head(4)["delivered_mib_per_s"].to_numpy() == pytest.approx(2000 * 250 / 1024, rel=0.01)


def test_azure_p20_credit_bursting_and_p30_none():
    """P20 (512 GiB): 2,300 IOPS, credit bursting to 3,500 IOPS; a full bucket lasts 30 min at
    3,500, so it holds 1,200 x 1,800 = 2.16 M credits. 1 % of them at 3,500 offered: 18 s."""
    df = constant(140_000, 3500, 16 * KIB)
    p20 = replay("azure-premium-p30", df, "cloud.size_bytes=512GiB", "cloud.initial_credit_pct=1")
    assert p20.summary["cloud_tier"] == "P20" and p20.summary["cost_per_month"] == pytest.approx(73.22)
    assert p20.summary["burst_exhausted_s"] == pytest.approx(0.01 * 1200 * 1800 / (3500 - 2300), rel=0.02)
    t = p20.tables["cloud_intervals"]
    late = t.filter((pl.col("interval_start_ns") >= 25 * SEC) & (pl.col("interval_end_ns") <= 50 * SEC))
    assert late["delivered_iops"].to_numpy() == pytest.approx(2300, rel=0.01)
    p30 = replay("azure-premium-p30", df)  # 5,000 IOPS, no credit bursting: nothing waits
    assert p30.summary["burst_exhausted_s"] is None and p30.summary["cloud_throttled"] == 0
    assert p30.summary["cloud_tier"] == "P30" and p30.summary["cost_per_month"] == pytest.approx(135.17)


def test_instance_bucket_in_front_of_the_volume():
    """gp3 with 16,000 IOPS behind an instance of 1,000 IOPS bursting to 2,000 for 10 s (10,000
    credits): 2,000 offered IOPS drain them at 1,000 a second, then the instance gives 1,000."""
    sets = ("cloud.iops=16000", "cloud.mib_per_s=500", "cloud.instance_iops=1000", "cloud.instance_burst_iops=2000",
            "cloud.instance_burst_s=10")
    res = replay("aws-gp3", constant(60_000, 2000, 16 * KIB), *sets)
    s = res.summary
    assert s["instance_burst_exhausted_s"] == pytest.approx(10, rel=0.02) and s["burst_exhausted_s"] is None
    t = res.tables["cloud_intervals"]
    assert t.filter(pl.col("interval_end_ns") <= 9 * SEC)["delivered_iops"].to_numpy() == pytest.approx(2000)
    late = t.filter((pl.col("interval_start_ns") >= 12 * SEC) & (pl.col("interval_end_ns") <= 50 * SEC))
    assert late["delivered_iops"].to_numpy() == pytest.approx(1000, rel=0.01)


def test_service_times_follow_the_published_median_and_tail_and_littles_law_holds_closed_loop():
    """Far under every limit nothing waits: the response time is the service time, lognormal
    through the preset's median 0.6 ms and p99 2.5 ms. Closed loop at 8 outstanding: N = X R."""
    s = replay("aws-gp3", constant(200_000, 1000, 16 * KIB)).summary
    assert s["cloud_throttled"] == 0
    assert s["latency_p50_ms"] == pytest.approx(0.6, rel=0.02)
    assert s["latency_p99_ms"] == pytest.approx(2.5, rel=0.04)
    closed = replay("aws-gp3", constant(100_000, 1000, 16 * KIB), "replay.mode=closed", "replay.outstanding=64")
    c = closed.summary
    assert c["iops"] * c["latency_mean_ms"] / 1e3 == pytest.approx(64, rel=0.01)
    assert c["iops"] == pytest.approx(3000, rel=0.01)  # 64 in flight would do ~85,000: the 3,000 IOPS cap holds
    assert not [w for w in c["warnings"] if w["severity"] == "model_error"]


# ---- money ------------------------------------------------------------------------------------------
def test_gp3_price_is_the_list_price_arithmetic():
    # 1,000 GiB x $0.08 = $80.00; 6,000 IOPS adds 3,000 x $0.005 = $15.00; 250 MiB/s adds 125 x $0.04
    assert monthly_cost(load("aws-gp3").cloud)["cost_per_month"] == pytest.approx(80.00)
    assert monthly_cost(load("aws-gp3", ["cloud.iops=6000"]).cloud)["cost_per_month"] == pytest.approx(95.00)
    c = monthly_cost(load("aws-gp3", ["cloud.iops=6000", "cloud.mib_per_s=250"]).cloud)
    assert (c["cost_capacity"], c["cost_iops"], c["cost_throughput"]) == pytest.approx((80.0, 15.0, 5.0))
    # io2's IOPS price is tiered: 32,000 x $0.065 + 8,000 x $0.0455 for 40,000 IOPS, plus 1,000 GiB x $0.125
    io2 = monthly_cost(load("aws-io2", ["cloud.iops=40000"]).cloud)
    assert io2["cost_per_month"] == pytest.approx(125 + 32000 * 0.065 + 8000 * 0.0455)
    # overridden with --set
    assert monthly_cost(load("aws-gp3", ["cloud.price_per_gib_month=0.07"]).cloud)["cost_per_month"] == \
        pytest.approx(70.00)


def test_unknown_region_names_the_table_s_regions():
    with pytest.raises(ValueError, match=r"no aws prices for region 'mars-1'.*has: us-east-1"):
        load("aws-gp3", ["cloud.region=mars-1"])
    with pytest.raises(ValueError, match=r"has: eastus"):
        load("azure-premium-v2", ["cloud.region=us-east-1"])


# ---- bad input: refused naming the published limit ------------------------------------------------
@pytest.mark.parametrize("preset, sets, message", [
    ("aws-gp2", ["cloud.size_bytes=20TiB"], r"size_bytes: 20,480.00 GiB is outside gp2's published size limits "
                                            r"1 GiB to 16,384 GiB"),
    ("aws-st1", ["cloud.size_bytes=100GiB"], r"outside st1's published size limits 125 GiB"),
    ("aws-gp3", ["cloud.iops=20000"], r"iops: 20,000 is above gp3's published maximum 16,000 IOPS"),
    ("aws-gp3", ["cloud.iops=2000"], r"iops: 2,000 is below gp3's published minimum 3,000 IOPS"),
    ("aws-gp3", ["cloud.size_bytes=10GiB", "cloud.iops=10000"], r"published limit of 500 IOPS per GiB: 5,000 IOPS "
                                                               r"at 10.00 GiB"),
    ("aws-gp3", ["cloud.mib_per_s=1200"], r"mib_per_s: 1,200 is above gp3's published maximum 1,000 MiB/s"),
    ("aws-gp3", ["cloud.mib_per_s=900"], r"0.25 MiB/s per provisioned IOPS: 750 MiB/s at 3,000 IOPS"),
    ("aws-io2", ["cloud.iops=300000"], r"above io2's published maximum 256,000 IOPS"),
    ("aws-gp2", ["cloud.iops=3000"], r"gp2 has no provisioned IOPS"),
    ("aws-gp2", ["cloud.provider=azure"], r"'gp2' is a aws volume type, not azure's"),
    ("azure-premium-p30", ["cloud.size_bytes=40TiB"], r"premium-ssd's published size limits 4 GiB to 32,767 GiB"),
    ("aws-gp3", ["cloud.read_latency_p99_ms=0.1"], r"below the median read_latency_ms"),
])
def test_values_outside_the_published_limits_are_refused_naming_the_limit(preset, sets, message):
    with pytest.raises(ValueError, match=message):
        load(preset, sets)


def test_every_cloud_preset_replays_a_database_pattern_with_sane_physics():
    """Every cloud preset on one open-loop 8 KiB 67 % read workload at 2,500 IOPS: all requests
    served, no model error, a price in its currency."""
    rng = np.random.default_rng(3)
    df = constant(20_000, 2500, 8 * KIB).with_columns(
        op=pl.Series(np.where(rng.random(20_000) < 0.67, OPS[OP_READ], OPS[OP_WRITE])).cast(POLARS_SCHEMA["op"]))
    from replay.scenario import preset_names
    cloud = [p for p in preset_names() if load(p).cloud]
    assert len(cloud) == 8
    for p in cloud:
        s = replay(p, df).summary
        assert s["requests"] == 20_000 and s["mechanisms"] == ["host", "cloud"], p
        assert not [w for w in s["warnings"] if w["severity"] == "model_error"], (p, s["warnings"])
        assert s["cost_per_month"] > 0 and s["currency"] == "USD", p


# ---- size --cloud -------------------------------------------------------------------------------
def test_size_cloud_finds_the_cheapest_volume_the_runner_up_and_why_cheaper_ones_fail(tmp_path):
    """5,000 IOPS of 16 KiB random reads for 20 s over 100 GiB, p99 <= 5 ms on AWS, by hand: gp2
    bursts to 3,000 IOPS at most below 1,000 GiB and reaches 6,000 only at 2,000 GiB ($200); st1
    does 500 IOPS; gp3 needs 5,000 provisioned IOPS: 100 GiB x $0.08 + 2,000 x $0.005 = $18.00
    (78 MiB/s: the included 125 MiB/s suffice). io2 at 5,000 IOPS costs $337.50. So: gp3 at
    $18.00, runner-up gp2 2,000 GiB at $200.00."""
    d = tmp_path / "data"
    constant(100_000, 5000, 16 * KIB).write_parquet(tmp_path / "t.parquet")
    tid = ingest_file(tmp_path / "t.parquet", d, validate="off").trace_id
    r = CliRunner().invoke(app, ["size", tid, "--cloud", "aws", "--target", "p99_ms<=5", "--data-dir", str(d),
                                 "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    ch, ru = doc["chosen"], doc["runner_up"]
    assert ch["label"] == "gp3 100 GiB, 5,000 IOPS, 125 MiB/s" and ch["cost_per_month"] == pytest.approx(18.00)
    assert ch["latency_p99_ms"] <= 5
    assert ru["label"] == "gp2 2,000 GiB, 6,000 IOPS, 250 MiB/s" and ru["cost_per_month"] == pytest.approx(200.00)
    failed = {c["label"]: c for c in doc["cheaper_failed"]}
    miss = failed["gp3 100 GiB, 4,000 IOPS, 125 MiB/s"]
    assert "p99_ms" in miss["why"] and "waited for tokens" in miss["why"] and miss["latency_p99_ms"] > 5
    # gp2 up to 170 GiB: 128 MiB/s; its 3,000 IOPS burst is the limit (5.4 M credits last the 20 s)
    gp2 = failed["gp2 100 GiB, 300 IOPS, 128 MiB/s (burst 3,000 IOPS)"]
    assert gp2["latency_p99_ms"] > 5 and gp2["burst_exhausted_s"] is None
    assert all(c["cost_per_month"] < 18.00 for c in doc["cheaper_failed"])
    text = CliRunner().invoke(app, ["size", tid, "--cloud", "aws", "--target", "p99_ms<=5", "--data-dir", str(d)])
    assert "cheapest meeting p99_ms<=5: gp3 100 GiB, 5,000 IOPS, 125 MiB/s at 18.00 USD/month" in text.stdout
    assert "runner-up: gp2 2,000 GiB, 6,000 IOPS, 250 MiB/s at 200.00 USD/month" in text.stdout
    bad = CliRunner().invoke(app, ["size", tid, "--cloud", "oracle", "--target", "p99_ms<=5", "--data-dir", str(d)])
    assert bad.exit_code == 2 and "one of aws, azure, gcp" in bad.output
    bad = CliRunner().invoke(app, ["size", tid, "--target", "p99_ms<=5", "--data-dir", str(d)])
    assert bad.exit_code == 2 and "give --base and --vary (or --cloud aws|azure|gcp)" in bad.output
    # compare puts an array beside a cloud volume, with the volume's price
    r = CliRunner().invoke(app, ["compare", tid, "--scenario", "vnx5400", "--scenario", "aws-gp3", "--no-report",
                                 "--data-dir", str(d), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rows = {row["scenario"]: row for row in doc["rows"]}
    assert rows["aws-gp3"]["cost_per_month"] == pytest.approx(80.00) and rows["aws-gp3"]["currency"] == "USD"
    assert rows["vnx5400"]["cost_per_month"] is None
    # the decision block carries the answer's money when it has a price
    s = doc["summary"]
    best = rows[s["recommendation"].split(" has the lowest")[0]]
    assert (s["cost_per_month"], s["currency"]) == (best["cost_per_month"], best["currency"])
    if best["cost_per_month"] is not None:
        assert "80.00 USD per month" in s["recommendation"]


def test_results_are_keyed_on_the_cloud_code_and_the_price_tables(monkeypatch):
    """The cloud mechanism's modules key the numba cache and the model version, and so do the
    price tables (a summary carries cost_per_month: a new price is a new run)."""
    from replay import version
    from replay.mech import kernel_modules

    assert {"replay.mech.cloud.kernel", "replay.mech.cloud.types"} <= set(kernel_modules())
    files = dict(version.source_files(version.ARRAY_MODEL))
    assert {"replay.prices/aws.toml", "replay.prices/__init__.py", "replay.mech/cloud/results.py"} <= set(files)
    version.clear_cache()
    before = version.model_version(version.ARRAY_MODEL)
    real = version._read
    monkeypatch.setattr(version, "_read", lambda p: real(p) + (b"\n# new\n" if p.name == "aws.toml" else b""))
    version.clear_cache()
    assert version.model_version(version.ARRAY_MODEL) != before
    monkeypatch.setattr(version, "_read", real)
    version.clear_cache()
