"""The declared contract of an accepted trace: a Great Expectations suite plus exact aggregates.

Row routing (what goes to rejects) happens in Polars while reading; this suite checks the
result. Up to ``FULL_ROWS`` rows (env ``TIERCAST_GX_FULL_ROWS``) GX sees every row; above it,
GX sees a seeded Bernoulli sample of about ``SAMPLE_ROWS`` rows in file order, drawn in the
same streaming pass that checks the same conditions exactly on every row with Polars
aggregates (stored beside the GX result).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from schemas.gx import run_suite, summarize
from schemas.trace import OP_DTYPE, OPS

FULL_ROWS = int(os.environ.get("TIERCAST_GX_FULL_ROWS", 2_000_000))
SAMPLE_ROWS = int(os.environ.get("TIERCAST_GX_SAMPLE_ROWS", 100_000))
SUITE_NAME = "canonical_trace"


def _derived(lf: pl.LazyFrame, capacities: dict[str, int]) -> pl.LazyFrame:
    """Columns GX cannot compute itself: time step within the volume, capacity overflow."""
    cap = pl.col("volume").cast(pl.String).replace_strict(capacities, default=None, return_dtype=pl.Int64)
    return lf.with_columns(
        ts_step_ns=(pl.col("ts_ns") - pl.col("ts_ns").shift(1).over("volume")).fill_null(0),
        beyond_capacity=((pl.col("offset") + pl.col("size").cast(pl.Int64)) > cap).fill_null(False),
        # flushes carry no data (size 0); every other request moves at least one byte
        data_size=pl.when(pl.col("op").cast(pl.String) != "flush").then(pl.col("size")),
    )


def expectations(gx) -> list:
    E = gx.expectations
    out = [E.ExpectColumnValuesToNotBeNull(column=c) for c in ("ts_ns", "volume", "op", "offset", "size", "src_line")]
    out += [
        E.ExpectColumnValuesToBeBetween(column="size", min_value=0, max_value=2**31 - 1),
        E.ExpectColumnValuesToBeBetween(column="data_size", min_value=1),
        E.ExpectColumnValuesToBeBetween(column="offset", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="ts_ns", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="latency_ns", min_value=0),
        E.ExpectColumnValuesToBeInSet(column="op", value_set=list(OPS)),
        E.ExpectColumnValuesToBeBetween(column="ts_step_ns", min_value=0),
        E.ExpectColumnValuesToBeInSet(column="beyond_capacity", value_set=[False]),
        E.ExpectColumnValuesToBeUnique(column="src_line"),
    ]
    return out


def exact_aggregates(
    path: Path, capacities: dict[str, int], sample_rate: float = 0.0, seed: int = 0
) -> tuple[dict, pl.DataFrame]:
    """The suite's conditions counted exactly on every row, one Parquet batch at a time, and
    (same pass) a seeded Bernoulli sample at ``sample_rate`` kept in file order, so the
    per-volume time steps GX checks on it stay meaningful."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    agg = dict.fromkeys(
        ("rows", "null_cells", "size_not_positive", "offset_negative", "ts_negative", "latency_negative",
         "ts_backwards", "beyond_capacity", "ops_outside_set"), 0)
    picked: list[pl.DataFrame] = []
    for vdir in sorted(Path(path).glob("volume=*")):
        last_ts = None
        for f in sorted(vdir.glob("part-*.parquet")):
            for batch in pq.ParquetFile(f).iter_batches(batch_size=1 << 20):
                df = pl.from_arrow(batch)
                cap = capacities.get(str(df["volume"][0]))
                ts = df["ts_ns"]
                prev = ts.shift(1)
                if last_ts is not None:
                    prev[0] = last_ts
                r = df.select(
                    null_cells=pl.sum_horizontal(
                        pl.col(c).null_count() for c in ("ts_ns", "volume", "op", "offset", "size", "src_line")
                    ),
                    size_not_positive=((pl.col("size") <= 0) & (pl.col("op").cast(pl.String) != "flush")).sum(),
                    offset_negative=(pl.col("offset") < 0).sum(),
                    ts_negative=(pl.col("ts_ns") < 0).sum(),
                    latency_negative=(pl.col("latency_ns") < 0).sum(),
                    ts_backwards=(ts < prev).sum(),
                    beyond_capacity=(
                        (pl.col("offset") + pl.col("size").cast(pl.Int64)) > cap if cap else pl.lit(False)
                    ).sum(),
                    ops_outside_set=(~pl.col("op").cast(pl.String).is_in(list(OPS))).sum(),
                ).row(0, named=True)
                agg["rows"] += df.height
                for k, v in r.items():
                    agg[k] += int(v or 0)
                last_ts = ts[-1]
                if sample_rate > 0:
                    picked.append(df.filter(pl.Series(rng.random(df.height) < sample_rate)))
    sample = pl.concat(picked) if picked else pl.DataFrame()
    return agg, sample


class StreamingContract:
    """The exact aggregates and the sample of :func:`exact_aggregates`, computed on accepted
    chunks while they are ingested (no second read of the written data).

    The sample is a bottom-k hash sample: every row gets a seeded pseudo-random key from its
    ``src_line`` and the ``sample_rows`` smallest keys are kept, which is a uniform sample of
    exactly that size (or all rows), the same whatever the chunking.
    """

    KEYS = ("rows", "null_cells", "size_not_positive", "offset_negative", "ts_negative", "latency_negative",
            "ts_backwards", "beyond_capacity", "ops_outside_set")

    def __init__(self, capacities: dict[str, int] | None = None, sample_rows: int | None = None, seed: int = 0):
        self.capacities = dict(capacities or {})
        self.sample_rows = SAMPLE_ROWS if sample_rows is None else sample_rows
        self.seed = seed
        self.agg = dict.fromkeys(self.KEYS, 0)
        self._last_ts: dict[str, int] = {}
        self._kept: pl.DataFrame | None = None

    def update(self, df: pl.DataFrame) -> None:
        if not df.height:
            return
        if df.schema["op"] != OP_DTYPE:
            df = df.with_columns(pl.col("op").cast(OP_DTYPE, strict=False))
        ts = pl.col("ts_ns")
        ends = df.group_by("volume").agg(first=ts.first(), last=ts.last())
        cap = (
            pl.col("volume").cast(pl.String).replace_strict(self.capacities, default=None, return_dtype=pl.Int64)
            if self.capacities else None
        )
        r = df.select(
            null_cells=pl.sum_horizontal(
                pl.col(c).null_count() for c in ("ts_ns", "volume", "op", "offset", "size", "src_line")
            ),
            size_not_positive=((pl.col("size") <= 0) & (pl.col("op") != "flush")).sum(),
            offset_negative=(pl.col("offset") < 0).sum(),
            ts_negative=(ts < 0).sum(),
            latency_negative=(pl.col("latency_ns") < 0).sum(),
            ts_dips=(ts.diff() < 0).sum(),
            beyond_capacity=(
                ((pl.col("offset") + pl.col("size").cast(pl.Int64)) > cap).fill_null(False) if cap is not None
                else pl.lit(False)
            ).sum(),
        ).row(0, named=True)
        # a chunk whose timestamps never dip is in order within every volume: only its first
        # request per volume can go back (against the previous chunk); else count per volume
        if r.pop("ts_dips"):
            prev = pl.coalesce(
                ts.shift(1).over("volume"),
                pl.col("volume").cast(pl.String).replace_strict(self._last_ts, default=None, return_dtype=pl.Int64),
            )
            r["ts_backwards"] = df.select((ts < prev).sum()).item()
        else:
            r["ts_backwards"] = sum(
                1 for v, f in zip(ends["volume"].to_list(), ends["first"].to_list(), strict=True)
                if v in self._last_ts and f < self._last_ts[v]
            )
        r["ops_outside_set"] = 0  # the op column is an enum of OPS: other values became nulls above
        self.agg["rows"] += df.height
        for k, v in r.items():
            self.agg[k] += int(v or 0)
        self._last_ts.update(dict(zip(ends["volume"].to_list(), ends["last"].to_list(), strict=True)))
        keyed = df.with_columns(_key=pl.col("src_line").hash(self.seed))
        if self._kept is not None and self._kept.height >= self.sample_rows:
            # only keys below the current k-th smallest can enter the sample
            keyed = keyed.filter(pl.col("_key") < self._kept["_key"].max())
        pool = keyed if self._kept is None else pl.concat([self._kept, keyed], how="vertical_relaxed")
        self._kept = pool.bottom_k(self.sample_rows, by="_key") if pool.height > self.sample_rows else pool

    def result(self) -> tuple[dict, pl.DataFrame]:
        sample = pl.DataFrame() if self._kept is None else self._kept.sort(["volume", "src_line"]).drop("_key")
        return dict(self.agg), sample


def validate_trace_dir(
    path: Path, manifest: dict, mode: str = "auto", streamed: StreamingContract | None = None
) -> dict:
    """Run the contract on the accepted rows written under ``path``; in sample mode the exact
    aggregates and the sample come from ``streamed`` when the ingest computed them on the way."""
    files = sorted(Path(path).glob("volume=*/part-*.parquet"))
    caps = {v: s["capacity_bytes"] for v, s in manifest["volumes"].items() if s.get("capacity_bytes")}
    n = manifest["rows_accepted"]
    full = mode == "full" or (mode == "auto" and n <= FULL_ROWS)
    if full:
        df = _derived(pl.scan_parquet(files, hive_partitioning=False), caps).collect()
        aggregates = None
    else:
        if streamed is not None:
            aggregates, sample = streamed.result()
        else:
            aggregates, sample = exact_aggregates(path, caps, sample_rate=min(1.0, SAMPLE_ROWS / max(n, 1)))
        df = _derived(sample.lazy(), caps).collect()
    result = run_suite(SUITE_NAME, expectations, df)
    success, rows, summary = summarize(result)
    if aggregates is not None:
        bad = {k: v for k, v in aggregates.items() if k not in ("rows",) and v}
        if bad:
            success = False
            summary += f"; exact aggregates: {bad}"
    return {
        "suite": SUITE_NAME,
        "mode": "full" if full else "sample",
        "rows_validated": df.height,
        "success": success,
        "summary": summary,
        "expectations": rows,
        "exact_aggregates": aggregates,
        "gx_statistics": result.get("statistics"),
    }
