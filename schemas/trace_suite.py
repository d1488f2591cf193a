"""The declared contract of an accepted trace, one list of rules run two ways.

:data:`RULES` says what every accepted trace satisfies. From it come both the Great
Expectations suite (:func:`expectations`, the declared contract other tools can read) and the
exact Polars counts of :func:`exact_check`: every row-wise rule counted on every row written
(in the ingest's own streaming query, or read back), the order rules (time steps within a
volume, unique ``src_line``) from the written parts. A rule added to :data:`RULES` is therefore
checked on every row before a dataset is published (``pipelines.ingest``), whether or not GX
runs then.

GX itself runs where its ~9 s import is paid once for many datasets (``tiercast validate``, the
ingest DAG's validate task) or in the ingest when asked (``--validate full|sample``). Up to
``FULL_ROWS`` rows (env ``TIERCAST_GX_FULL_ROWS``) GX sees every row; above it a seeded sample
of about ``SAMPLE_ROWS`` rows in file order (hashed on ``src_line``, so the same however the
rows were read or split), with the exact counts stored beside its result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import numpy as np
import polars as pl

from schemas.gx import run_suite, summarize
from schemas.trace import OPS

if TYPE_CHECKING:
    import numpy as np

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


#: derived columns that depend on row order within a volume: counted from the written parts
ORDERED_COLUMNS = ("ts_step_ns",)


def _derived(lf: pl.LazyFrame, capacities: dict[str, int]) -> pl.LazyFrame:
    """Columns the rules name that GX cannot compute itself: time step within the volume,
    capacity overflow, the size of requests that carry data."""
    return _row_derived(lf, capacities).with_columns(
        ts_step_ns=(pl.col("ts_ns") - pl.col("ts_ns").shift(1).over("volume")).fill_null(0),
    )


def _row_derived(lf: pl.LazyFrame, capacities: dict[str, int]) -> pl.LazyFrame:
    """The derived columns computed from each row alone (streamable)."""
    end = pl.col("offset") + pl.col("size").cast(pl.Int64)
    if capacities:
        cap = pl.col("volume").cast(pl.String).replace_strict(capacities, default=None, return_dtype=pl.Int64)
        beyond = (end > cap).fill_null(False)
    else:
        beyond = pl.lit(False)
    return lf.with_columns(
        beyond_capacity=beyond,
        data_size=pl.when(pl.col("op") != "flush").then(pl.col("size")),
    )


def _violations(r: Rule) -> pl.Expr:
    """Rows breaking a row-wise rule ``r``."""
    col = pl.col(r.column)
    if r.kind == "not_null":
        return col.null_count()
    if r.kind == "between":
        lo, hi = r.kwargs.get("min_value"), r.kwargs.get("max_value")
        bad = pl.lit(False)
        if lo is not None:
            bad = bad | (col < lo)
        if hi is not None:
            bad = bad | (col > hi)
    else:
        bad = ~col.is_in(pl.Series(r.kwargs["value_set"]).implode())
    return bad.fill_null(False).sum()


def _row_wise(rules: tuple[Rule, ...]) -> list[Rule]:
    return [r for r in rules if r.kind != "unique" and r.column not in ORDERED_COLUMNS]


def volume_stats(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Per volume: the statistics the manifest records (a streaming aggregate)."""
    ts, size = pl.col("ts_ns"), pl.col("size").cast(pl.Int64)
    return lf.group_by("volume").agg(
        requests=pl.len(),
        reads=(pl.col("op") == "read").sum(),
        writes=(pl.col("op") == "write").sum(),
        bytes=size.sum(),
        min_offset=pl.col("offset").min(),
        max_end=(pl.col("offset") + size).max(),
        first_ts_ns=ts.min(),
        last_ts_ns=ts.max(),
    ).with_columns(pl.col("volume").cast(pl.String))


def row_violations(lf: pl.LazyFrame, capacities: dict[str, int], rules: tuple[Rule, ...] | None = None) -> pl.LazyFrame:
    """One row: the violations of every row-wise rule over all rows (totals, not per volume:
    a plain streaming aggregate costs less than one more column of every group)."""
    return _row_derived(lf, capacities).select(**{r.key: _violations(r) for r in _row_wise(rules or RULES)})


def row_counts(lf: pl.LazyFrame, capacities: dict[str, int],
               rules: tuple[Rule, ...] | None = None) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """:func:`volume_stats` and :func:`row_violations` of the same rows: the ingest runs both
    on the rows it writes, in the query that writes them."""
    return volume_stats(lf), row_violations(lf, capacities, rules)


def volume_files(path: Path) -> dict[str, list[Path]]:
    """Part files of each volume directory under a dataset, in write order."""
    return {d.name: sorted(d.glob("part-*.parquet")) for d in sorted(Path(path).glob("volume=*"))}


def _duplicates(values: list[np.ndarray]) -> int:
    """Values that occur more than once, over all arrays (a bitmap when they are dense)."""
    import numpy as np

    values = [v for v in values if len(v)]
    if not values:
        return 0
    n = sum(len(v) for v in values)
    lo, hi = min(int(v.min()) for v in values), max(int(v.max()) for v in values)
    if lo < 0 or hi > 8 * n:
        return n - len(np.unique(np.concatenate(values)))
    seen = np.zeros(hi + 1, dtype=bool)
    for v in values:
        seen[v] = True
    return n - int(np.count_nonzero(seen))


class _Lines:
    """:func:`_duplicates` over arrays added one at a time: a bitmap of the values seen while they stay
    in [0, 8 x ``n_max``] (``n_max``: the rows expected), else the arrays are kept for ``np.unique``."""

    def __init__(self, n_max: int) -> None:
        self.limit = 8 * max(n_max, 1)
        self.seen = np.zeros(0, dtype=bool)
        self.n = 0
        self.kept: list[np.ndarray] | None = None

    def add(self, v: np.ndarray) -> None:
        if not len(v):
            return
        self.n += len(v)
        if self.kept is None and (int(v.min()) < 0 or int(v.max()) > self.limit):
            self.kept = [np.flatnonzero(self.seen)]  # the values so far, each once
            self.n_bitmap = int(len(self.kept[0]))
        if self.kept is not None:
            self.kept.append(v)
            return
        hi = int(v.max())
        if hi >= self.seen.size:
            grown = np.zeros(max(hi + 1, 2 * self.seen.size), dtype=bool)
            grown[: self.seen.size] = self.seen
            self.seen = grown
        self.seen[v] = True

    def duplicates(self) -> int:
        if self.kept is None:
            return self.n - int(np.count_nonzero(self.seen))
        return self.n - len(np.unique(np.concatenate(self.kept)))


def exact_check(path: Path, capacities: dict[str, int], rows: tuple[pl.DataFrame, pl.DataFrame] | None = None,
                rules: tuple[Rule, ...] | None = None) -> tuple[dict, dict[str, dict]]:
    """Every rule counted exactly on every row written under ``path``, and the per-volume
    statistics the manifest records (``out_of_order``: rows below an earlier timestamp of their
    volume). ``rows`` is :func:`row_counts` collected when the ingest computed it while writing;
    otherwise it is computed from the parts. The order rules (time steps within a volume,
    unique ``src_line``) read ``ts_ns`` and ``src_line`` back, one volume at a time.

    Returns (violation counts by rule key plus ``rows``, statistics by volume)."""
    rules = rules or RULES
    files = volume_files(path)
    if rows is None:
        every = [f for fs in files.values() for f in fs]
        rows = pl.collect_all(row_counts(pl.scan_parquet(every, hive_partitioning=False), capacities, rules))
    by_volume, violations = rows
    stats = {rec.pop("volume"): rec for rec in by_volume.iter_rows(named=True)}
    counts = dict.fromkeys(["rows", *(r.key for r in rules)], 0)
    counts.update({k: int(v or 0) for k, v in violations.row(0, named=True).items()})
    counts["rows"] = sum(s["requests"] for s in stats.values())
    lines = _Lines(counts["rows"])
    for name, fs in files.items():
        if not fs:
            continue
        backwards = out_of_order = 0
        last = top = None  # the volume's last timestamp and highest one so far, across its parts
        for f in fs:  # one part at a time, in write order: memory does not grow with the trace
            order = pl.read_parquet(f, columns=["ts_ns", "src_line"])
            ts = order["ts_ns"].to_numpy()
            if ts.size:
                d = np.diff(ts)
                backwards += int((d < 0).sum()) + int(last is not None and ts[0] < last)
                cm = np.maximum.accumulate(ts)  # below an earlier timestamp: of this part or of the parts before
                before = cm[:-1] if top is None else np.maximum(cm[:-1], top)
                out_of_order += int((ts[1:] < before).sum()) + int(top is not None and ts[0] < top)
                last, top = int(ts[-1]), int(cm[-1]) if top is None else max(top, int(cm[-1]))
            lines.add(order["src_line"].drop_nulls().to_numpy())
        stats[unquote(name.removeprefix("volume="))]["out_of_order"] = out_of_order if backwards else 0
        for r in rules:
            if r.column == "ts_step_ns":
                counts[r.key] += backwards
    for r in rules:
        if r.kind == "unique":
            counts[r.key] = lines.duplicates()
    return counts, stats


def gx_sample(path: Path, sample_rows: int, seed: int = 0) -> pl.DataFrame:
    """A bottom-k hash sample for GX: the ``sample_rows`` rows with the smallest seeded hashes
    of ``src_line``, in dataset order (so time steps within a volume stay meaningful)."""
    picked = []
    for ordinal, fs in enumerate(volume_files(path).values()):
        lf = pl.scan_parquet(fs, hive_partitioning=False).with_row_index("_pos")
        picked.append(lf.with_columns(_key=pl.col("src_line").hash(seed), _volume=pl.lit(ordinal))
                      .bottom_k(sample_rows, by="_key").collect())
    if not picked:
        return pl.DataFrame()
    return pl.concat(picked).bottom_k(sample_rows, by="_key").sort("_volume", "_pos").drop("_key", "_volume", "_pos")


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
        aggregates, _ = exact_check(path, caps, rules=rules)
        df = _derived(gx_sample(path, SAMPLE_ROWS).lazy(), caps).collect()
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
