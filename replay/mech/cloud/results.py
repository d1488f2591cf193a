"""What a replay through a cloud volume adds to its results: per interval the credit balances,
throttled requests and their waits, delivered IOPS and MiB/s (the ``cloud_intervals`` table), and
in the summary when the burst credits ran out (``burst_exhausted_s``), the volume's rates and its
monthly list price (``cost_per_month``, ``currency``; ``replay.prices``).

Intervals: credits, accounted I/Os and delivered IOPS / MiB/s are counted when a request had its
tokens (``cloud_start_ns``: what the buckets limit); throttled requests and their waits when they
arrived, as in the other interval tables.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from replay.intervals import IntervalAggregator
from replay.mech.cloud.sums import ARRIVED, STARTED, segment_sums
from replay.mech.cloud.types import GIB
from replay.outputs import Column
from replay.prices import monthly_cost
from schemas.trace import OP_READ, OP_WRITE

#: the per-run tables (``results/array_<table>/<run_id>.parquet``, the warehouse table of that name)
TABLES = ("cloud_intervals",)

#: the summary fields it adds
SUMMARY = (
    Column("burst_exhausted_s", "s", "when a request first waited for the volume's burst credits, after the first "
                                     "request (None: never)"),
    Column("instance_burst_exhausted_s", "s", "the same for the instance's burst bucket"),
    Column("iops_after_burst", "IOPS", "requests per second that had their tokens from then to the last one"),
    Column("cost_per_month", "currency/month", "the volume's list price per month (replay/prices)"),
    Column("currency", "", "the price table's currency"),
    Column("cloud_iops", "IOPS", "the volume's baseline (or provisioned) IOPS"),
    Column("cloud_mib_per_s", "MiB/s", "its baseline (or provisioned) throughput"),
    Column("cloud_burst_iops", "IOPS", "its burst IOPS while it has credits (0: none)"),
    Column("cloud_delivered_iops_max", "IOPS", "the most requests per second an interval started"),
    Column("cloud_delivered_mib_per_s_max", "MiB/s", "the most MiB per second an interval started"),
)

_DATA = (pl.col("op") == OP_READ) | (pl.col("op") == OP_WRITE)


class Results:
    """Per-interval sums and extremes of the cloud outcome columns, as a replay streams."""

    def __init__(self, model, interval_ns: int):
        self.started = IntervalAggregator(interval_ns, sums={
            "started": _DATA.sum().cast(pl.Int64),
            "ios": pl.col("cloud_ios").sum(),
            "bytes": pl.when(_DATA).then(pl.col("size_bytes")).otherwise(0).sum()}, ratios={},
            mins={"credit_ios_min": pl.col("cloud_credit_ios").min(),
                  "credit_bytes_min": pl.col("cloud_credit_bytes").min()},
            maxes={"credit_ios_max": pl.col("cloud_credit_ios").max(),
                   "credit_bytes_max": pl.col("cloud_credit_bytes").max()})
        self.arrived = IntervalAggregator(interval_ns, sums={
            "requests": pl.len().cast(pl.Int64),
            "throttled_requests": (pl.col("throttle_ns") > 0).sum().cast(pl.Int64),
            "throttle_wait_sum_ns": pl.col("throttle_ns").sum()}, ratios={})

    def add(self, requests: Mapping[str, np.ndarray], logs: dict[str, pl.DataFrame]) -> None:
        """One segment's requests (``ts_ns`` = arrival, op, size_bytes and the outcome columns), in
        one compiled pass (``sums.segment_sums``; the Polars expressions above say what each is)."""
        n = self.started.interval_ns
        if not len(requests["ts_ns"]):
            return
        a, s = segment_sums(requests["ts_ns"], requests["cloud_start_ns"], requests["op"], requests["size_bytes"],
                            requests["throttle_ns"], requests["cloud_ios"], requests["cloud_credit_ios"],
                            requests["cloud_credit_bytes"], np.int64(n))
        for agg, table, names in ((self.arrived, a, ARRIVED), (self.started, s, STARTED)):
            cols = {c: table[:, i] for i, c in enumerate(names)}
            cols["interval_start_ns"] = cols.pop("window") * n
            agg.add_part(pl.DataFrame({k: cols[k] for k in ("interval_start_ns", *agg.sums, *agg.maxes, *agg.mins)}))

    def coarsen(self, interval_ns: int) -> None:
        self.started.coarsen(interval_ns)
        self.arrived.coarsen(interval_ns)

    def table(self) -> pl.DataFrame:
        n = self.started.interval_ns
        sec = n / 1e9
        a, s = self.arrived.result(), self.started.result()
        t = s.join(a, on="interval_start_ns", how="full", coalesce=True).sort("interval_start_ns")
        t = t.with_columns(pl.col(c).fill_null(0) for c in ("started", "ios", "bytes", "requests",
                                                              "throttled_requests", "throttle_wait_sum_ns"))
        return t.select(
            "interval_start_ns", interval_end_ns=pl.col("interval_start_ns") + n,
            requests=pl.col("requests"), throttled_requests=pl.col("throttled_requests"),
            throttle_wait_sum_ms=pl.col("throttle_wait_sum_ns") / 1e6,
            started=pl.col("started"), accounted_ios=pl.col("ios"),
            delivered_iops=pl.col("started") / sec, accounted_iops=pl.col("ios") / sec,
            delivered_mib_per_s=pl.col("bytes") / sec / (1 << 20),
            credit_ios_min=pl.col("credit_ios_min"), credit_ios_max=pl.col("credit_ios_max"),
            credit_bytes_min=pl.col("credit_bytes_min"), credit_bytes_max=pl.col("credit_bytes_max"))

    def finish(self, model, state) -> tuple[dict, dict[str, pl.DataFrame]]:
        """The summary fields (``SUMMARY``, plus the volume's description and the cost's parts) and tables."""
        sc, cp = model.scenario, model.kernel_params.cloud
        c = sc.cloud
        lim = c.limits
        first = int(state.host.c[0]["first_arrival"])
        b = state.cloud.buckets
        vol_ex = [int(b[k]["exhausted_ns"]) for k in (0, 1) if cp.cap[k] > 0 and b[k]["exhausted_ns"] >= 0]
        inst_ex = [int(b[k]["exhausted_ns"]) for k in (2, 3) if cp.cap[k] > 0 and b[k]["exhausted_ns"] >= 0]
        table = self.table()
        ex = min(vol_ex) if vol_ex else None
        after = None
        if ex is not None and table.height:
            n = self.started.interval_ns
            last = int(table.filter(pl.col("started") > 0)["interval_start_ns"].max())
            full = table.filter((pl.col("interval_start_ns") >= ex) & (pl.col("interval_start_ns") < last))
            if full.height:
                after = float(full["started"].sum()) / (full.height * n / 1e9)
        burst = " bursting to " + (f"{lim.burst_iops:,.0f} IOPS" if lim.burst_iops else "") + (
            " / " if lim.burst_iops and lim.burst_mib_per_s else "") + (
            f"{lim.burst_mib_per_s:,.0f} MiB/s" if lim.burst_mib_per_s else "") + " on credits"
        summary = {
            "burst_exhausted_s": (ex - first) / 1e9 if ex is not None else None,
            "instance_burst_exhausted_s": (min(inst_ex) - first) / 1e9 if inst_ex else None,
            "iops_after_burst": after,
            **monthly_cost(c),
            "cloud_provider": c.provider, "cloud_volume_type": c.volume_type, "cloud_region": c.region,
            "cloud_size_gib": c.size_bytes / GIB, "cloud_tier": lim.tier,
            "cloud_tier_text": f" ({lim.tier})" if lim.tier else "",
            "cloud_iops": lim.iops, "cloud_mib_per_s": lim.mib_per_s, "cloud_burst_iops": lim.burst_iops,
            "cloud_burst_mib_per_s": lim.burst_mib_per_s,
            "cloud_burst_text": burst if (lim.burst_iops or lim.burst_mib_per_s) else "",
            "cloud_delivered_iops_max": float(table["delivered_iops"].max() or 0.0) if table.height else 0.0,
            "cloud_delivered_mib_per_s_max": float(table["delivered_mib_per_s"].max() or 0.0) if table.height else 0.0,
        }
        return summary, {"cloud_intervals": table}
