"""What a replay with snapshots adds to its results: the space the snapshots hold over the replay
(``replay.mech.snapshots.space`` accounting, on the replay's clock, in flush-unit chunks), as the
``snapshot_intervals`` table and the summary's peak and end.

The kernel marks, per write, the chunks it wrote first since the latest snapshot
(``snapshot_first_writes``); here they are summed per snapshot interval as the replay streams,
and so is redirect-on-write's back-end work (the ``WORK`` outcome columns, ``outputs.OUTCOMES``):
each becomes a column of ``snapshot_intervals`` named without the ``snapshot_`` prefix.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from replay.intervals import IntervalAggregator
from replay.mech.snapshots.space import SnapshotTimeline
from replay.outputs import Column
from schemas.trace import OP_WRITE

#: the per-run tables (``results/array_<table>/<run_id>.parquet``, the warehouse table of that name)
TABLES = ("snapshot_intervals",)

#: redirect-on-write's work per request (``replay.mech.snapshots.outputs.OUTCOMES``), summed per snapshot interval
WORK = ("snapshot_map_updates", "snapshot_map_ios", "snapshot_read_splits", "snapshot_delete_ios")

#: the summary fields it adds
SUMMARY = (
    Column("snapshot_peak_bytes", "B", "the most space the retained snapshots held at the end of an interval"),
    Column("snapshot_peak_end_ns", "ns", "the end of that interval"),
    Column("snapshot_retained_max", "snapshots", "snapshots retained at once in steady state"),
    Column("snapshot_bytes_end", "B", "the space they held at the end of the replay"),
)


class Results:
    """Per-snapshot-interval sums of writes and first-written chunks, as a replay streams."""

    def __init__(self, model, interval_ns: int):
        self.params = model.kernel_params.snapshots
        self.keep_ns = round(model.scenario.snapshots.keep_s * 1e9)
        self.sums = IntervalAggregator(self.params.every_ns, sums={
            "writes": (pl.col("op") == OP_WRITE).sum().cast(pl.Int64),
            "write_bytes": pl.when(pl.col("op") == OP_WRITE).then(pl.col("size_bytes")).otherwise(0).sum(),
            "blocks": pl.col("snapshot_first_writes").sum(),
            **{w.removeprefix("snapshot_"): pl.col(w).sum() for w in WORK}}, ratios={})

    def add(self, requests: Mapping[str, np.ndarray], logs: dict[str, pl.DataFrame]) -> None:
        """One segment's requests (``ts_ns`` = arrival, op, size_bytes and the outcome columns) and
        records, by compiled sums (the Polars expressions above say what each is)."""
        writes = (requests["op"] == OP_WRITE).astype(np.int64)
        self.sums.add_arrays(requests["ts_ns"], {"writes": writes, "write_bytes": writes * requests["size_bytes"],
                                                 "blocks": requests["snapshot_first_writes"],
                                                 **{w.removeprefix("snapshot_"): requests[w] for w in WORK}})

    def coarsen(self, interval_ns: int) -> None:
        """The run's interval grew: nothing to do (snapshot intervals are the schedule's)."""

    def timeline(self) -> SnapshotTimeline:
        every = self.params.every_ns
        df = self.sums.result()
        n = int(df["interval_start_ns"].max() // every) + 1 if df.height else 0
        full = pl.DataFrame({"interval_start_ns": np.arange(n, dtype=np.int64) * every}).join(
            df, on="interval_start_ns", how="left").fill_null(0)
        self.work = full.select(w.removeprefix("snapshot_") for w in WORK)
        return SnapshotTimeline(every, self.keep_ns, self.params.chunk_bytes, full["writes"].to_numpy(),
                                full["write_bytes"].to_numpy(), full["blocks"].to_numpy())

    def finish(self, model, state) -> tuple[dict, dict[str, pl.DataFrame]]:
        """The summary fields (``SUMMARY``) and tables (``TABLES``: the timeline's rows and the
        ``WORK`` sums per interval)."""
        t = self.timeline()
        peak = t.summary()["peak"]
        end = int(t.snapshot_blocks[-1]) * t.block_bytes if len(t.blocks) else 0
        summary = {"snapshot_peak_bytes": peak["snapshot_bytes"], "snapshot_peak_end_ns": peak["end_ns"],
                   "snapshot_retained_max": t.retained_max, "snapshot_bytes_end": end}
        return summary, {"snapshot_intervals": pl.concat([t.rows(), self.work], how="horizontal")}
