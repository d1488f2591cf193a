"""The declared contract of an accepted trace, one list of rules run two ways.

:data:`RULES` says what every accepted trace satisfies. From it come both the Great
Expectations suite (:func:`expectations`, the declared contract other tools can read) and the
exact Polars counts of :func:`exact_check`, which read every row of the written dataset back and
count each rule's violations. A rule added to :data:`RULES` is therefore always checked on every
row before a dataset is published (``pipelines.ingest``), whether or not GX runs then.

GX itself runs where its ~9 s import is paid once for many datasets (``tiercast validate``, the
ingest DAG's validate task) or in the ingest when asked (``--validate full|sample``). Up to
``FULL_ROWS`` rows (env ``TIERCAST_GX_FULL_ROWS``) GX sees every row; above it a seeded sample
of about ``SAMPLE_ROWS`` rows in file order (hashed on ``src_line``, so the same whatever the
chunking), with the exact counts stored beside its result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from schemas.gx import run_suite, summarize
from schemas.trace import OPS

FULL_ROWS = int(os.environ.get("TIERCAST_GX_FULL_ROWS", 2_000_000))
SAMPLE_ROWS = int(os.environ.get("TIERCAST_GX_SAMPLE_ROWS", 100_000))
SUITE_NAME = "canonical_trace"


@dataclass(frozen=True)
class Rule:
    """One expectation: ``kind`` is ``not_null``, ``between`` (``min_value``/``max_value``),
    ``in_set`` (``value_set``) or ``unique``; ``key`` names its exact violation count."""

    key: str
    kind: str
    column: str
    kwargs: dict = field(default_factory=dict)


RULES: tuple[Rule, ...] = (
    *(Rule(f"{c}_null", "not_null", c) for c in ("ts_ns", "volume", "op", "offset", "size", "src_line")),
    Rule("size_out_of_range", "between", "size", {"min_value": 0, "max_value": 2**31 - 1}),
    # flushes carry no data (size 0); every other request moves at least one byte
    Rule("size_not_positive", "between", "data_size", {"min_value": 1}),
    Rule("offset_negative", "between", "offset", {"min_value": 0}),
    Rule("ts_negative", "between", "ts_ns", {"min_value": 0}),
    Rule("latency_negative", "between", "latency_ns", {"min_value": 0}),
    Rule("ops_outside_set", "in_set", "op", {"value_set": list(OPS)}),
    Rule("ts_backwards", "between", "ts_step_ns", {"min_value": 0}),
    Rule("beyond_capacity", "in_set", "beyond_capacity", {"value_set": [False]}),
    Rule("src_line_duplicates", "unique", "src_line"),
)

_GX_CLASS = {"not_null": "ExpectColumnValuesToNotBeNull", "between": "ExpectColumnValuesToBeBetween",
             "in_set": "ExpectColumnValuesToBeInSet", "unique": "ExpectColumnValuesToBeUnique"}


def expectations(gx, rules: tuple[Rule, ...] | None = None) -> list:
    """The GX suite: one expectation per rule."""
    return [getattr(gx.expectations, _GX_CLASS[r.kind])(column=r.column, **r.kwargs) for r in rules or RULES]


def _derived(lf: pl.LazyFrame, capacities: dict[str, int]) -> pl.LazyFrame:
    """Columns the rules name that GX cannot compute itself: time step within the volume,
    capacity overflow, the size of requests that carry data."""
    cap = pl.col("volume").cast(pl.String).replace_strict(capacities, default=None, return_dtype=pl.Int64)
    return lf.with_columns(
        ts_step_ns=(pl.col("ts_ns") - pl.col("ts_ns").shift(1).over("volume")).fill_null(0),
        beyond_capacity=((pl.col("offset") + pl.col("size").cast(pl.Int64)) > cap).fill_null(False),
        data_size=pl.when(pl.col("op").cast(pl.String) != "flush").then(pl.col("size")),
    )


def _violations(r: Rule) -> pl.Expr:
    """Rows breaking ``r`` (a ``unique`` rule is counted across volumes by :func:`exact_check`)."""
    col = pl.col(r.column)
    if r.kind == "not_null":
        bad = col.is_null()
    elif r.kind == "between":
        lo, hi = r.kwargs.get("min_value"), r.kwargs.get("max_value")
        bad = pl.lit(False)
        if lo is not None:
            bad = bad | (col < lo)
        if hi is not None:
            bad = bad | (col > hi)
    elif r.kind == "in_set":
        values = r.kwargs["value_set"]
        bad = ~(col.cast(pl.String) if isinstance(values[0], str) else col).is_in(values)
    else:
        return pl.lit(0, pl.UInt32)
    return bad.fill_null(False).sum()


def volume_files(path: Path) -> dict[str, list[Path]]:
    """Part files of each volume directory under a dataset, in write order."""
    return {d.name: sorted(d.glob("part-*.parquet")) for d in sorted(Path(path).glob("volume=*"))}


def exact_check(path: Path, capacities: dict[str, int], sample_rows: int = 0, seed: int = 0,
                rules: tuple[Rule, ...] | None = None) -> tuple[dict, dict[str, dict], pl.DataFrame]:
    """Every rule counted exactly on every row written under ``path`` (one pass per volume over
    its parts in order), with the per-volume statistics the manifest records (``out_of_order``:
    rows below an earlier timestamp of their volume) and, with ``sample_rows``, a bottom-k hash
    sample for GX: the rows with the smallest seeded hashes of ``src_line``, in dataset order.

    Returns (violation counts by rule key plus ``rows``, statistics by volume, sample)."""
    import numpy as np

    rules = rules or RULES
    counts = dict.fromkeys(["rows", *(r.key for r in rules)], 0)
    stats: dict[str, dict] = {}
    picked: list[pl.DataFrame] = []
    lines: list[np.ndarray] = []
    ts, size = pl.col("ts_ns"), pl.col("size").cast(pl.Int64)
    for ordinal, files in enumerate(volume_files(path).values()):
        if not files:
            continue
        lf = _derived(pl.scan_parquet(files, hive_partitioning=False), capacities)
        agg = lf.select(
            volume=pl.col("volume").cast(pl.String).first(),
            requests=pl.len(),
            reads=(pl.col("op") == "read").sum(),
            writes=(pl.col("op") == "write").sum(),
            bytes=size.sum(),
            min_offset=pl.col("offset").min(),
            max_end=(pl.col("offset") + size).max(),
            first_ts_ns=ts.min(),
            last_ts_ns=ts.max(),
            out_of_order=(ts < ts.cum_max().shift(1)).fill_null(False).sum(),
            **{r.key: _violations(r) for r in rules},
        )
        frames = [agg, lf.select("src_line")]
        if sample_rows:
            keyed = lf.drop("ts_step_ns", "beyond_capacity", "data_size").with_row_index("_pos").with_columns(
                _key=pl.col("src_line").hash(seed), _volume=pl.lit(ordinal))
            frames.append(keyed.bottom_k(sample_rows, by="_key"))
        got = pl.collect_all(frames)
        row = got[0].row(0, named=True)
        for r in rules:
            counts[r.key] += int(row.pop(r.key) or 0)
        counts["rows"] += row["requests"]
        volume = row.pop("volume")
        stats[volume] = {k: (int(v) if v is not None else None) for k, v in row.items()}
        lines.append(got[1]["src_line"].drop_nulls().to_numpy())
        if sample_rows:
            picked.append(got[2])
    for r in rules:
        if r.kind == "unique":
            values = np.concatenate(lines) if lines else np.empty(0, np.int64)
            counts[r.key] = int(len(values) - len(np.unique(values)))
    sample = pl.DataFrame()
    if picked:
        sample = pl.concat(picked).bottom_k(sample_rows, by="_key").sort("_volume", "_pos").drop("_key", "_volume", "_pos")
    return counts, stats, sample


def exact_report(counts: dict, rules: tuple[Rule, ...] | None = None) -> dict:
    """The validation record of the exact checks alone (GX not run yet)."""
    bad = {k: v for k, v in counts.items() if k != "rows" and v}
    return {
        "suite": SUITE_NAME,
        "mode": "exact",
        "rows_validated": counts["rows"],
        "success": not bad,
        "summary": f"exact checks: {bad}" if bad else "all rules met on every row",
        "rules": [r.key for r in rules or RULES],
        "exact_aggregates": counts,
        "gx": "pending",
    }


def validate_trace_dir(path: Path, manifest: dict, mode: str = "auto", rules: tuple[Rule, ...] | None = None) -> dict:
    """Run the GX suite on the accepted rows written under ``path``: every row up to
    ``FULL_ROWS`` (or ``mode="full"``), else a sample, with the exact counts of every rule."""
    files = [f for fs in volume_files(path).values() for f in fs]
    caps = {v: s["capacity_bytes"] for v, s in manifest["volumes"].items() if s.get("capacity_bytes")}
    n = manifest["rows_accepted"]
    full = mode == "full" or (mode == "auto" and n <= FULL_ROWS)
    aggregates = None
    if full:
        df = _derived(pl.scan_parquet(files, hive_partitioning=False), caps).collect()
    else:
        aggregates, _, sample = exact_check(path, caps, sample_rows=SAMPLE_ROWS, rules=rules)
        df = _derived(sample.lazy(), caps).collect()
    result = run_suite(SUITE_NAME, lambda gx: expectations(gx, rules), df)
    success, rows, summary = summarize(result)
    if aggregates is not None:
        bad = {k: v for k, v in aggregates.items() if k != "rows" and v}
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
