"""Workload skew for FAST VP-style tiering (seed 000; docs/models/sources.md#fast-vp-tiering).

Each volume's address range is cut into slices of ``slice_bytes`` (256 MiB on VNX2, 1 GiB on
VNX1). A request counts for the slice of its **first byte** (``offset // slice_bytes``), once,
whatever its size. Reads and writes count; trims and flushes are not data I/O and do not.

The slices of a volume cover its capacity when the trace knows it (the manifest's
``capacity_bytes``: Alibaba ``device_size.csv``, a generic mapping's ``[capacities]``), else
its address range up to the highest byte any counted request reached. Every slice counts in
capacity, touched or not: an untouched slice has 0 I/Os and sorts last. Capacity is counted in
whole slices (a slice is what tiering relocates), so a volume of 1.5 slices holds 2.

Slices are sorted by I/O count, descending; the skew curve is, after the k hottest slices of N,
``(capacity_share, io_share) = (k / N, ios(k) / ios)``. The *skew point* is the first k where
``io_share + capacity_share >= 1`` (e.g. 80 / 20: 80 % of the I/O on 20 % of the capacity); a
skew point near 50 / 50 means the load is uniform and tiering cannot help. ``capacity_for(p)``
is the flash capacity (k x slice bytes) that holds at least the share p of the I/O.

:class:`SkewCounter` takes the trace in frames of any size and order (it only counts), keeping
one row per touched slice; untouched slices are never materialized.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow.types as pa_types

from schemas.trace import OPS

#: the shares reported by ``capacity_for_io_share`` (as percentages: compared exactly in integers)
IO_SHARES_PCT = (80, 90, 95)
#: at most this many curve points; beyond it the curve is sampled evenly (first, last and skew point kept)
MAX_CURVE_POINTS = 10_000
#: skew points with io_share at or below this are "no skew", tiering cannot help (a 50 %
#: skew: docs/models/sources.md#fast-vp-tiering); 0.55, not 0.5: counting noise alone lifts a uniform trace's skew point a few points above 50 %
NO_SKEW_IO_SHARE = 0.55
_COUNTED = pl.col("op").cast(pl.String).is_in([OPS[0], OPS[1]])  # read, write (any op dtype)
#: reads and writes are the first two codes of the op Enum: a comparison on the physical codes
_N_COUNTED = 2
assert OPS[:_N_COUNTED] == ("read", "write")
_MERGE_ROWS = 1 << 22  # merge partial counts when they hold more rows than this
_COUNT_THREADS = 4  # threads counting one part file's row groups (at most the cores)
#: a row group's slices are counted in a dense array when its highest slice is below this, else sorted
_DENSE_SLICES = 1 << 22


def _values(column) -> np.ndarray:
    """A numeric Arrow column as a numpy array, zero-copy when it has no nulls.

    ``pyarrow.Array.to_numpy`` imports pandas on its first call (0.2 s of a 2 s 100 M-request
    ``tiercast skew``), so null-free columns are viewed through their data buffer instead."""
    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if arr.null_count or not pa_types.is_integer(arr.type):
        return arr.to_numpy(zero_copy_only=False)
    dtype = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _counted_rows(op) -> np.ndarray | None:
    """Mask of the reads and writes in an ``op`` column; None when every row is one (the usual
    case, so that the other columns need no copy)."""
    if not hasattr(op, "dictionary"):  # plain text
        import pyarrow as pa
        import pyarrow.compute as pc

        counted = pc.is_in(op, value_set=pa.array(OPS[:_N_COUNTED])).to_numpy(zero_copy_only=False)
        return None if counted.all() else counted
    # Parquet keeps the Enum as a dictionary: test its few values (to_pylist: see _values)
    keep = np.array([v in OPS[:_N_COUNTED] for v in op.dictionary.to_pylist()], dtype=bool)
    codes = _values(op.indices)
    if codes.size and keep[int(codes.min()):int(codes.max()) + 1].all():
        return None
    return keep[codes]


def _count_row_group(table, slice_bytes: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(touched slices, their I/O counts, highest byte reached, rows counted) of one row group
    (columns op, offset, size); reads and writes only. Few and small temporaries: each fresh
    array of a row group's length costs page faults, which were half the time of a 100 M-request
    count."""
    names = table.column_names
    counted = _counted_rows(table.column("op").combine_chunks()) if "op" in names else None
    offset = _values(table.column("offset"))
    size = _values(table.column("size")) if "size" in names else None
    if counted is not None:
        offset, size = offset[counted], size[counted]
    if offset.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), -1, 0
    end = -1
    if size is not None:
        # only requests starting within the largest size of the highest offset can reach furthest
        near = offset >= int(offset.max()) - int(size.max())
        end = int((offset[near] + size[near].astype(np.int64)).max())
    shift = slice_bytes.bit_length() - 1
    slices = offset >> shift if slice_bytes == 1 << shift else offset // slice_bytes
    if int(slices.max()) < _DENSE_SLICES:
        ios = np.bincount(slices)
        touched = np.flatnonzero(ios)
        return touched, ios[touched], end, int(offset.size)
    touched, ios = np.unique(slices, return_counts=True)
    return touched, ios.astype(np.int64), end, int(offset.size)


@dataclass(frozen=True)
class Skew:
    slice_bytes: int
    slices: int  # every slice, touched or not
    ios: int
    counts: np.ndarray  # I/O counts of the touched slices, descending (untouched ones: the other slices)

    @property
    def cumulative(self) -> np.ndarray:
        return np.cumsum(self.counts, dtype=np.int64)

    def skew_index(self) -> int:
        """k (1-based) of the skew point: the first k with ios(k)/ios + k/N >= 1, compared exactly
        as ``ios(k) * N + k * ios >= ios * N`` (Python integers; the sum grows with k, so a binary
        search). Always among the touched slices (at the last one ios(k) = ios)."""
        cum, n, total = self.cumulative, self.slices, self.ios
        lo, hi = 1, len(cum)
        while lo < hi:
            k = (lo + hi) // 2
            if int(cum[k - 1]) * n + k * total >= total * n:
                hi = k
            else:
                lo = k + 1
        return lo

    def point(self, k: int) -> dict:
        io = int(self.cumulative[k - 1]) if k <= len(self.counts) else self.ios
        return {"capacity_share": k / self.slices, "io_share": io / self.ios}

    def at_capacity(self, share: float) -> dict:
        """The curve point of the fewest slices covering at least ``share`` of the capacity."""
        return self.point(max(1, min(self.slices, -(-round(share * self.slices * 1e6) // 1_000_000))))

    def capacity_for(self, pct: int) -> int:
        """Bytes of the fewest hottest slices holding at least ``pct`` % of the I/O."""
        k = int(np.searchsorted(self.cumulative * 100, pct * self.ios, side="left")) + 1
        return k * self.slice_bytes

    def curve_points(self, max_points: int = MAX_CURVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
        """(k, I/Os of the k hottest slices) at one point per slice (k = 1..N), or at
        ``max_points`` evenly spaced k plus the skew point's."""
        n = self.slices
        if n <= max_points:
            ks = np.arange(1, n + 1, dtype=np.int64)
        else:
            ks = np.unique(np.concatenate([np.linspace(1, n, max_points).round().astype(np.int64),
                                           [self.skew_index()]]))
        cum = self.cumulative
        return ks, np.where(ks <= len(cum), cum[np.minimum(ks, len(cum)) - 1], self.ios)

    def curve(self, max_points: int = MAX_CURVE_POINTS) -> list[dict]:
        """The curve as (capacity_share, io_share) points (:meth:`curve_points`)."""
        ks, ios = self.curve_points(max_points)
        return [{"capacity_share": c, "io_share": i}
                for c, i in zip((ks / self.slices).tolist(), (ios / self.ios).tolist(), strict=True)]

    def summary(self, max_points: int = MAX_CURVE_POINTS) -> dict:
        """The ``tiercast skew --json`` document."""
        return {
            "slice_bytes": self.slice_bytes,
            "slices": self.slices,
            "skew_point": self.point(self.skew_index()),
            "capacity_for_io_share": {f"{p / 100:g}": self.capacity_for(p) for p in IO_SHARES_PCT},
            "curve": self.curve(max_points),
        }


class SkewCounter:
    """I/O counts per (volume, slice), fed frame by frame (columns ``volume, op, offset, size``)."""

    def __init__(self, slice_bytes: int):
        if slice_bytes <= 0:
            raise ValueError(f"slice size must be > 0 bytes, got {slice_bytes}")
        self.slice_bytes = int(slice_bytes)
        self._parts: list[pl.DataFrame] = []
        self._rows = 0

    def add(self, df: pl.DataFrame) -> None:
        part = (df.lazy().filter(_COUNTED)
                .group_by(volume=pl.col("volume").cast(pl.String),
                          slice=pl.col("offset") // self.slice_bytes)
                .agg(ios=pl.len().cast(pl.Int64),
                     end=(pl.col("offset") + pl.col("size").cast(pl.Int64)).max())
                .collect())
        self._parts.append(part)
        self._rows += part.height
        if self._rows > _MERGE_ROWS and len(self._parts) > 1:
            self._parts = [self._merged()]
            self._rows = self._parts[0].height

    def add_parquet(self, path, stats: Mapping | None = None) -> int:
        """Count one Parquet file of a single volume (an ingested trace's part file): counts per
        slice and the highest byte reached (per slice only the volume's maximum matters). Returns
        the rows counted.

        ``stats``: the ingest manifest's statistics of the file's volume. When they say every
        request is a read or a write and give the highest byte (``max_end``), only the offsets
        are read: 100 M requests, 1.9 -> 1.2 CPU-seconds.

        Its row groups are read by pyarrow (op, offset and size only) and counted with numpy, on
        up to ``_COUNT_THREADS`` threads that each open the file themselves (one ParquetFile read
        from two threads hung here once); both release the GIL, and one row group at a time per
        thread keeps memory bounded. Measured on 20 M requests in one file, quiet 2-core machine:
        0.26 s, against 0.41 s for a streaming Polars group-by (0.39 s without the highest byte),
        whose hash aggregation costs more than decoding the columns (0.17 s)."""
        import pyarrow.parquet as pq

        groups = pq.ParquetFile(path).metadata.num_row_groups
        threads = max(1, min(_COUNT_THREADS, os.cpu_count() or 1, groups))
        stats = stats or {}
        known_end = stats.get("max_end")
        only_counted = stats.get("requests") is not None and \
            stats.get("reads", 0) + stats.get("writes", 0) == stats["requests"]
        columns = ["offset"] if only_counted and known_end is not None else ["op", "offset", "size"]

        def count(first: int):
            pf = pq.ParquetFile(path)
            return [_count_row_group(pf.read_row_group(i, columns=columns, use_threads=False), self.slice_bytes)
                    for i in range(first, groups, threads)]

        if threads == 1:
            parts = count(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                parts = [p for ps in pool.map(count, range(threads)) for p in ps]
        rows = sum(p[3] for p in parts)
        if rows:
            volume = pq.ParquetFile(path).read_row_group(0, columns=["volume"]).column(0)[0].as_py()
            counts = (pl.DataFrame({"slice": np.concatenate([p[0] for p in parts]),
                                    "ios": np.concatenate([p[1] for p in parts])})
                      .group_by("slice").agg(pl.col("ios").sum()))
            self._parts.append(counts.select(pl.lit(volume, pl.String).alias("volume"), "slice", "ios",
                                             pl.lit(known_end if len(columns) == 1 else max(p[2] for p in parts),
                                                    pl.Int64).alias("end")))
            self._rows += counts.height
        return rows

    def partial(self) -> pl.DataFrame:
        """The counts so far (volume, slice, ios, end): what a worker that counted some volumes
        hands on; :meth:`add_partial` of every volume's gives the same result as one counter."""
        return self._merged()

    def add_partial(self, counts: pl.DataFrame) -> None:
        self._parts.append(counts.select("volume", "slice", "ios", "end"))
        self._rows += counts.height

    def _merged(self) -> pl.DataFrame:
        if not self._parts:
            return pl.DataFrame(schema={"volume": pl.String, "slice": pl.Int64, "ios": pl.Int64, "end": pl.Int64})
        return (pl.concat(self._parts).group_by("volume", "slice")
                .agg(pl.col("ios").sum(), pl.col("end").max()))

    def result(self, capacities: Mapping[str, int | None] | None = None) -> Skew:
        """The skew; ``capacities``: volume -> bytes where known (others: up to the highest byte
        reached). Raises ValueError when the trace has no read or write."""
        touched = self._merged()
        if touched.height == 0:
            raise ValueError("the trace has no reads or writes: no skew to compute")
        sb = self.slice_bytes
        per_volume = touched.group_by("volume").agg(pl.col("end").max())
        spans = {v: int((capacities or {}).get(v) or 0) for v in (capacities or {})}
        for volume, end in per_volume.iter_rows():
            spans[volume] = max(int(end), spans.get(volume, 0))
        slices = sum(-(-span // sb) for span in spans.values())  # whole slices, the last one partly used
        counts = np.sort(touched["ios"].to_numpy())[::-1].copy()
        return Skew(sb, slices, int(counts.sum()), counts)


def skew(frames: Iterable[pl.DataFrame], slice_bytes: int,
         capacities: Mapping[str, int | None] | None = None) -> Skew:
    counter = SkewCounter(slice_bytes)
    for df in frames:
        counter.add(df)
    return counter.result(capacities)
