"""The FAST VP tables of an array replay (``replay.mech.tiering.kernel``): where slices went and what each tier
served.

* ``tier_intervals``: per (interval, tier) requests (by the tier of each request's first page at
  the time), IOPS, MB/s, response time mean / p50 / p95 / p99, back-end I/Os, and the slices
  moved into and out of the tier;
* ``tier_moves``: one row per relocation: start and end, volume, slice, source and target RAID
  group and tier, kind (promotion / demotion / rebalance), I/Os and drive time of the copy;
  with ``tier_slices`` this is the slice map over time;
* ``tier_slices``: one row per allocated slice: volume, slice number, when and where it was
  allocated, where it is at the end, moves, I/Os, final temperature;
* ``tier_windows``: per relocation window: moves by kind, bytes, first start and last end.

The summary gets ``tier_*`` counters, per-tier shares (``tiers``, JSON) and the skew point of
the slices' I/O counts (``replay.skew``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from replay.array import ArrayModel, ArrayState
from replay.events import LOG_COLUMNS
from replay.mech.backend.schema import TIER_NAMES
from replay.mech.tiering.kernel import MOVE_KINDS
from replay.skew import Skew

TIER_TABLES = ("tier_intervals", "tier_moves", "tier_slices", "tier_windows")


class TierRecords:
    """The relocation records of a replay, collected chunk by chunk (one row per moved slice)."""

    def __init__(self) -> None:
        self._parts: list[pl.DataFrame] = []

    def add(self, moves: pl.DataFrame) -> None:
        """A segment's relocation log (``replay.mech.tiering.outputs.RECORDS``)."""
        if moves.height:
            self._parts.append(moves)

    def result(self) -> pl.DataFrame:
        if not self._parts:
            return pl.DataFrame(schema={c.name: pl.Int64 for c in LOG_COLUMNS["relocation"]})
        return pl.concat(self._parts).sort("ts_ns")


def _names(model: ArrayModel) -> tuple[dict[int, str], dict[int, str]]:
    """RAID group index -> name, and -> tier name (groups outside the FAST VP pool: no tier)."""
    sc = model.scenario
    rg_tier = model.tiering.params.rg_tier
    names = {i: rg.name for i, rg in enumerate(sc.raid_groups)}
    tiers = {i: TIER_NAMES[int(rg_tier[i])] for i in names if rg_tier[i] >= 0}
    return names, tiers


def tier_of_group(model: ArrayModel) -> dict[str, str]:
    """RAID group name -> its FAST VP tier (groups of the tiered pool only)."""
    names, tiers = _names(model)
    return {names[i]: t for i, t in tiers.items()}


def moves_table(model: ArrayModel, rec: pl.DataFrame, volume_names: list[str]) -> pl.DataFrame:
    names, tiers = _names(model)
    vols = dict(enumerate(volume_names))
    tier_rank = {t: k for k, t in enumerate(TIER_NAMES)}
    df = rec.select(
        start_ns=pl.col("ts_ns"), end_ns=pl.col("ts_ns") + pl.col("copy_ns"),
        volume=pl.col("volume").replace_strict(vols, default=None, return_dtype=pl.String),
        slice=pl.col("slice"),
        from_rg=pl.col("source_rg").replace_strict(names, return_dtype=pl.String),
        to_rg=pl.col("target_rg").replace_strict(names, return_dtype=pl.String),
        from_tier=pl.col("source_rg").replace_strict(tiers, default=None, return_dtype=pl.String),
        to_tier=pl.col("target_rg").replace_strict(tiers, default=None, return_dtype=pl.String),
        bytes=pl.col("bytes"), ios=pl.col("ios"), busy_ns=pl.col("busy_ns"))
    up = pl.col("to_tier").replace_strict(tier_rank, return_dtype=pl.Int32)
    down = pl.col("from_tier").replace_strict(tier_rank, return_dtype=pl.Int32)
    kind = pl.when(up < down).then(pl.lit(MOVE_KINDS[0])).when(up > down).then(pl.lit(MOVE_KINDS[1])).otherwise(
        pl.lit(MOVE_KINDS[2]))
    return df.with_columns(kind=kind)


def windows_table(model: ArrayModel, moves: pl.DataFrame) -> pl.DataFrame:
    cfg = model.scenario.tiering
    every = round(cfg.window_every_h * 3600e9)
    first = round(cfg.window_start_h * 3600e9)
    return (moves.with_columns(window=((pl.col("start_ns") - first) // every).cast(pl.Int64))
            .group_by("window").agg(
                window_start_ns=pl.lit(first) + pl.col("window").first() * every,
                moves=pl.len().cast(pl.Int64),
                **{f"{k}s": (pl.col("kind") == k).sum().cast(pl.Int64) for k in MOVE_KINDS},
                moved_bytes=pl.col("bytes").sum(), first_start_ns=pl.col("start_ns").min(),
                last_end_ns=pl.col("end_ns").max())
            .sort("window"))


def slices_table(model: ArrayModel, state: ArrayState, volume_names: list[str]) -> pl.DataFrame:
    names, tiers = _names(model)
    rg = state.backend.slice_rg
    live = np.flatnonzero(rg >= 0)
    sl = state.tiering.slices[live]
    vols = dict(enumerate(volume_names))
    return pl.DataFrame({
        "volume": sl["vol"].astype(np.int64), "slice": sl["no"], "alloc_ns": sl["alloc_ns"],
        "first_rg": sl["first_rg"].astype(np.int64), "rg": rg[live].astype(np.int64),
        "moves": sl["moves"].astype(np.int64), "ios": sl["total_ios"], "temperature": sl["temp"],
    }).with_columns(
        pl.col("volume").replace_strict(vols, default=None, return_dtype=pl.String),
        first_tier=pl.col("first_rg").replace_strict(tiers, return_dtype=pl.String),
        tier=pl.col("rg").replace_strict(tiers, return_dtype=pl.String),
        first_rg=pl.col("first_rg").replace_strict(names, return_dtype=pl.String),
        rg=pl.col("rg").replace_strict(names, return_dtype=pl.String),
    ).sort("volume", "slice")


def intervals_table(model: ArrayModel, rg_intervals: pl.DataFrame, hist: pl.DataFrame, moves: pl.DataFrame,
                    interval_ns: int, percentiles) -> pl.DataFrame:
    """Per (interval, tier) from the per-group intervals (named groups) and the latency histogram
    (group indexes); ``percentiles``: the replay's histogram -> p50/p95/p99 function."""
    _, tiers = _names(model)
    by_name = tier_of_group(model)
    sec = interval_ns / 1e9
    keys = ["interval_start_ns", "tier"]
    sums = ["requests", "reads", "writes", "bytes", "latency_sum_ms", "backend_read_ios", "backend_write_ios"]
    df = (rg_intervals.with_columns(tier=pl.col("rg").replace_strict(by_name, default=None, return_dtype=pl.String),
                                    latency_sum_ms=pl.col("latency_mean_ms").fill_null(0) * pl.col("requests"))
          .filter(pl.col("tier").is_not_null()).group_by(keys).agg(*(pl.col(c).sum() for c in sums)))
    h = (hist.filter(pl.col("rg") >= 0)
         .with_columns(tier=pl.col("rg").replace_strict(tiers, default=None, return_dtype=pl.String))
         .filter(pl.col("tier").is_not_null()).group_by([*keys, "lat_bucket"]).agg(pl.col("n").sum()))
    moved = []
    for col, side in (("to_tier", "slices_in"), ("from_tier", "slices_out")):
        moved.append(moves.filter(pl.col("kind") != MOVE_KINDS[2]).group_by(
            interval_start_ns=pl.col("end_ns") // interval_ns * interval_ns, tier=pl.col(col))
            .agg(pl.len().cast(pl.Int64).alias(side)))
    df = df.join(percentiles(h, keys), on=keys, how="left")
    for m in moved:
        df = df.join(m, on=keys, how="full", coalesce=True)
    num = [c for c, t in df.schema.items() if t.is_integer() and c not in keys]
    return df.with_columns(pl.col(num).fill_null(0)).with_columns(
        iops=pl.col("requests") / sec, mb_per_s=pl.col("bytes") / sec / 1e6,
        latency_mean_ms=pl.when(pl.col("requests") > 0).then(pl.col("latency_sum_ms") / pl.col("requests")),
        backend_ios=pl.col("backend_read_ios") + pl.col("backend_write_ios"),
    ).drop("latency_sum_ms").sort(keys)


def summary(model: ArrayModel, state: ArrayState, tier_intervals: pl.DataFrame, slices: pl.DataFrame) -> dict:
    """Per-tier shares (``tiers``, one object per tier) and the slices' skew point (the ``tier_*`` counters
    come with the model's counters)."""
    out = {}
    tp = model.tiering.params
    total = max(1, int(tier_intervals["requests"].sum())) if tier_intervals.height else 1
    rows = []
    for k, name in enumerate(TIER_NAMES):
        groups = tp.tier_rgs[k, : tp.tier_nrg[k]]
        if not groups.size:
            continue
        t = tier_intervals.filter(pl.col("tier") == name)
        n = int(t["requests"].sum()) if t.height else 0
        lat = float((t["latency_mean_ms"].fill_null(0) * t["requests"]).sum()) if t.height else 0.0
        rows.append({"tier": name, "raid_groups": [model.scenario.raid_groups[int(r)].name for r in groups],
                     "capacity_bytes": int(tp.rg_cap[groups].sum()) * tp.slice_bytes,
                     "used_bytes": int(state.tiering.rg_used[groups].sum()) * tp.slice_bytes,
                     "requests": n, "request_share": n / total, "latency_mean_ms": lat / n if n else None})
    out["tiers"] = rows
    if slices.height and int(slices["ios"].sum()):
        counts = np.sort(slices["ios"].to_numpy())[::-1].copy()
        sk = Skew(tp.slice_bytes, slices.height, int(counts.sum()), counts)
        p = sk.point(sk.skew_index())
        out["tier_skew_io_share"] = p["io_share"]
        out["tier_skew_capacity_share"] = p["capacity_share"]
    return out
