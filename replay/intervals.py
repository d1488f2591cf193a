"""Per-interval metrics from per-request outcomes, with Polars ``group_by_dynamic``.

Every model returns per-request numpy arrays; ``outcome_frame`` lines them up with the segment's
requests, and ``IntervalAggregator`` sums them per time interval (default 60 s, windows aligned
to multiples of the interval since trace start) and optional keys (e.g. volume). Only additive
columns (counts, sums) are aggregated per segment, so partial intervals that straddle a segment
boundary are merged exactly; ratios are computed once at the end from the merged sums. The
aggregations are parameters, so other models (write cache, SSD cache, tiering) reuse this with
their own columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from replay import groupby
from replay.jit import njit
from replay.kernels.base import add_totals
from replay.model import Segment
from schemas.trace import OP_READ, OP_WRITE
from schemas.units import parse_duration_ns

#: ``interval = "auto"``: the interval grows along this chain (each value divides the next, so
#: intervals already summed can be merged exactly) to the smallest value that cuts the run into at
#: most ``AUTO_MAX_INTERVALS``; the steps are at most 5x, so a run of more than 60 ms gets >= 60
_MS, _S = 10**6, 10**9
AUTO_INTERVALS_NS = (1 * _MS, 2 * _MS, 10 * _MS, 20 * _MS, 100 * _MS, 200 * _MS, 1 * _S, 2 * _S, 10 * _S,
                     20 * _S, 60 * _S, 120 * _S, 600 * _S, 1200 * _S, 3600 * _S, 7200 * _S, 21600 * _S,
                     86400 * _S)
AUTO_MAX_INTERVALS = 300


def auto_interval_ns(span_ns: int, at_least_ns: int = AUTO_INTERVALS_NS[0]) -> int:
    """The smallest chain value >= ``at_least_ns`` that covers ``[0, span_ns]`` in at most
    ``AUTO_MAX_INTERVALS`` intervals (the last chain value for longer spans)."""
    for v in AUTO_INTERVALS_NS:
        if v >= at_least_ns and span_ns // v + 1 <= AUTO_MAX_INTERVALS:
            return v
    return AUTO_INTERVALS_NS[-1]


# Additive per-interval columns of a cache replay (name -> aggregation of outcome_frame columns).
CACHE_SUMS: dict[str, pl.Expr] = {
    "requests": pl.len().cast(pl.Int64),
    "reads": (pl.col("op") == OP_READ).sum().cast(pl.Int64),
    "writes": (pl.col("op") == OP_WRITE).sum().cast(pl.Int64),
    "pages": pl.col("pages").cast(pl.Int64).sum(),
    "hits": pl.col("hit_pages").cast(pl.Int64).sum(),
    "hit_requests": pl.col("hit").cast(pl.Int64).sum(),
    "bytes": pl.col("size_bytes").cast(pl.Int64).sum(),
    "read_bytes": pl.when(pl.col("op") == OP_READ).then(pl.col("size_bytes")).otherwise(0).cast(pl.Int64).sum(),
    "write_bytes": pl.when(pl.col("op") == OP_WRITE).then(pl.col("size_bytes")).otherwise(0).cast(pl.Int64).sum(),
    "hit_bytes": pl.col("hit_bytes").cast(pl.Int64).sum(),
}
# Ratios computed from the merged sums: name -> (numerator, denominator); 0/0 gives null.
CACHE_RATIOS: dict[str, tuple[str, str]] = {
    "hit_ratio": ("hits", "pages"),
    "byte_hit_ratio": ("hit_bytes", "bytes"),
}


def outcome_frame(segment: Segment, outcomes: Mapping[str, np.ndarray]) -> pl.DataFrame:
    """One row per request of ``segment``: ts_ns, volume (dense id), op (uint8), size_bytes, and
    every outcome array of the model."""
    cols = {"ts_ns": segment.ts_ns, "volume": segment.volume, "op": segment.op, "size_bytes": segment.size_bytes}
    for name, arr in outcomes.items():
        if len(arr) != segment.n_requests:
            raise ValueError(f"outcome {name!r} has {len(arr)} values for {segment.n_requests} requests")
        cols[name] = arr
    return pl.DataFrame(cols)


class IntervalAggregator:
    """Accumulates per-interval sums segment by segment; ``result()`` merges them and adds ratios.

    ``interval`` is a duration ('60s', '5min', or ns as int); ``by`` optional key columns;
    ``sums`` additive aggregations (name -> Polars expression over the frames added); ``ratios``
    name -> (numerator column, denominator column); ``maxes`` / ``mins`` per-interval maxima /
    minima (name -> expression), merged across segments with max / min."""

    def __init__(self, interval: str | int = "60s", by: Sequence[str] = (),
                 sums: Mapping[str, pl.Expr] | None = None, ratios: Mapping[str, tuple[str, str]] | None = None,
                 maxes: Mapping[str, pl.Expr] | None = None, mins: Mapping[str, pl.Expr] | None = None):
        self.interval_ns = parse_duration_ns(interval) if isinstance(interval, str) else int(interval)
        if self.interval_ns <= 0:
            raise ValueError(f"interval must be positive, got {interval!r}")
        self.by = list(by)
        self.sums = dict(CACHE_SUMS if sums is None else sums)
        self.ratios = dict(CACHE_RATIOS if ratios is None else ratios)
        self.maxes = dict(maxes or {})  # per-interval maxima: merged with max instead of sum
        self.mins = dict(mins or {})
        for name, (num, den) in self.ratios.items():
            for c in (num, den):
                if c not in self.sums:
                    raise ValueError(f"ratio {name!r} uses {c!r}, which is not one of the sums")
        self._parts: list[pl.DataFrame] = []

    def add(self, frame: pl.DataFrame) -> None:
        """Aggregate one segment's rows into partial interval sums (ts_ns >= 0; any order)."""
        if frame.height:
            self.add_part(self.part(frame).collect())

    def part(self, frame: pl.DataFrame) -> pl.LazyFrame:
        """The partial sums of ``frame`` as a query (:func:`add_all` runs several at once)."""
        # the window of each row computed directly (same windows as group_by_dynamic with
        # closed="left", label="left" on multiples of the interval): a plain hash group_by is
        # ~15x faster than group_by_dynamic with group keys on a million rows
        n = self.interval_ns
        return (frame.lazy().with_columns(interval_start_ns=(pl.col("ts_ns").cast(pl.Int64) // n) * n)
                .group_by(["interval_start_ns", *self.by])
                .agg(**self.sums, **self.maxes, **self.mins))

    def compiled_part(self, key: np.ndarray, sums: Mapping[str, np.ndarray], maxes: Mapping[str, np.ndarray],
                      mins: Mapping[str, np.ndarray] | None = None, packed=None, dtypes: Sequence = ()) -> pl.DataFrame:
        """:meth:`part` by compiled group sums (``replay.groupby``) from int64 arrays, one value per
        row: ``key`` the interval number when ``packed`` is None; else group ids, with ``packed`` =
        (each group's packed key, its layout: the interval number then ``by``, cast to ``dtypes``).
        A sum not in ``sums`` is the row count (one at most). Columns and order as :meth:`part`'s."""
        mins = mins or {}
        self._check(sums, maxes, mins)
        ids = (key, packed[0]) if packed is not None else None
        # a minimum is the negated maximum of the negated values
        highs = (*maxes.values(), *(-np.asarray(v, dtype=np.int64) for v in mins.values()))
        gkeys, counts, s, m = groupby.group_reduce(key, tuple(sums.values()), highs, ids)
        fields = groupby.unpack_keys(gkeys, packed[1]) if packed is not None else [gkeys]
        return self._frame(fields, dtypes, counts, s, m[: len(maxes)], -m[len(maxes):], sums, maxes, mins)

    def _check(self, sums: Mapping, maxes: Mapping, mins: Mapping) -> None:
        count = [c for c in self.sums if c not in sums]
        if sorted(sums) != sorted(c for c in self.sums if c not in count) or sorted(maxes) != sorted(self.maxes) \
                or sorted(mins) != sorted(self.mins) or len(count) > 1:
            raise AssertionError("intervals: the compiled interval sums differ from the Polars ones")

    def _frame(self, fields: list[np.ndarray], dtypes: Sequence, counts: np.ndarray, s: np.ndarray, highs: np.ndarray,
               lows: np.ndarray, sums: Mapping, maxes: Mapping, mins: Mapping) -> pl.DataFrame:
        """A part from per-group results: ``fields`` the interval number then ``by``, the sums, maxima
        and minima in the order of ``sums``, ``maxes`` and ``mins``; a sum not in ``sums`` is the row
        count."""
        part = {"interval_start_ns": fields[0] * self.interval_ns}
        part.update((k, f.astype(t)) for k, f, t in zip(self.by, fields[1:], dtypes, strict=True))
        part.update((c, counts) for c in self.sums if c not in sums)
        part.update((c, s[i]) for i, c in enumerate(sums))
        part.update((c, highs[i]) for i, c in enumerate(maxes))
        part.update((c, lows[i]) for i, c in enumerate(mins))
        return pl.DataFrame({k: part[k] for k in ("interval_start_ns", *self.by, *self.sums, *self.maxes, *self.mins)})

    def add_arrays(self, ts_ns: np.ndarray, sums: Mapping[str, np.ndarray], maxes: Mapping[str, np.ndarray] = {},
                   mins: Mapping[str, np.ndarray] | None = None) -> None:
        """:meth:`add` from arrays (no key columns): per interval of ``ts_ns``, the sums, maxima and
        minima named as the aggregator's (a missing sum is the row count)."""
        if not len(ts_ns):
            return
        mins = mins or {}
        dense = groupby.window_reduce(ts_ns, self.interval_ns, tuple(sums.values()), tuple(maxes.values()),
                                      tuple(mins.values())) if not self.by else None
        if dense is None:
            self.add_part(self.compiled_part(np.asarray(ts_ns, dtype=np.int64) // self.interval_ns, sums, maxes, mins))
            return
        self._check(sums, maxes, mins)
        windows, counts, s, highs, lows = dense
        self.add_part(self._frame([windows], (), counts, s, highs, lows, sums, maxes, mins))

    def add_part(self, part: pl.DataFrame) -> None:
        self._parts.append(part)
        if len(self._parts) >= 64:  # keep the list short on long traces
            self._parts = [self._merge(self._parts)]

    def _merge(self, parts: list[pl.DataFrame]) -> pl.DataFrame:
        return group_sums(pl.concat(parts), ["interval_start_ns", *self.by], self.sums, self.maxes, self.mins)

    def coarsen(self, interval_ns: int) -> None:
        """Re-cut what was summed so far into ``interval_ns`` windows (a multiple of the current
        interval: each old window falls in exactly one new one)."""
        if interval_ns == self.interval_ns:
            return
        if interval_ns % self.interval_ns:
            raise ValueError(f"cannot coarsen {self.interval_ns} ns intervals to {interval_ns} ns")
        self.interval_ns = interval_ns
        if self._parts:
            merged = pl.concat(self._parts).with_columns(
                interval_start_ns=pl.col("interval_start_ns") // interval_ns * interval_ns)
            self._parts = [self._merge([merged])]

    def result(self) -> pl.DataFrame:
        """One row per (interval, keys): interval_start_ns, keys, the sums, the ratios."""
        if not self._parts:
            schema = {"interval_start_ns": pl.Int64, **{k: pl.Int64 for k in self.by},
                      **{c: pl.Int64 for c in self.sums}, **{c: pl.Int64 for c in (*self.maxes, *self.mins)},
                      **{r: pl.Float64 for r in self.ratios}}
            return pl.DataFrame(schema=schema)
        merged = self._merge(self._parts)
        return merged.with_columns(
            pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(None).alias(name)
            for name, (num, den) in self.ratios.items()
        )


def group_sums(rows: pl.DataFrame, keys: Sequence[str], sums: Sequence[str], maxes: Sequence[str] = (),
               mins: Sequence[str] = ()) -> pl.DataFrame:
    """Per distinct ``keys``, sorted by them: the sum of each ``sums`` column, the maximum of each
    ``maxes`` one, the minimum of each ``mins`` one; the table and types of Polars' group-by.

    Integer columns without nulls whose keys pack into one integer (``groupby.pack_keys``; each key
    as steps of its values' greatest common step from the lowest, so interval starts in ns take
    the bits of their count, not of their span) are summed by
    compiled group sums on the packed keys, then the groups sorted; anything else by Polars. A 10
    M-request replay merges 1-2 M histogram rows: Polars' group-by and sort of them took 0.2 CPU-s."""
    keys = list(keys)
    query = (rows.lazy().group_by(keys)
             .agg(*(pl.col(c).sum() for c in sums), *(pl.col(c).max() for c in maxes),
                  *(pl.col(c).min() for c in mins)).sort(keys))
    schema = query.collect_schema()
    packed = None
    if rows.height and all(rows.schema[c].is_integer() for c in schema) \
            and not any(rows.select(schema.names()).null_count().row(0)):
        fields = [rows[k].to_numpy().astype(np.int64) for k in keys]
        low = [int(f.min()) for f in fields]
        step = [max(1, int(np.gcd.reduce(f - lo))) for f, lo in zip(fields, low, strict=True)]
        packed = groupby.pack_keys([(f - lo) // d for f, lo, d in zip(fields, low, step, strict=True)])
    if packed is None:
        return query.collect()
    key, layout = packed

    def matrix(cols: Sequence[str]) -> np.ndarray:
        m = np.empty((len(cols), rows.height), dtype=np.int64)
        for i, c in enumerate(cols):
            m[i] = rows[c].to_numpy()
        return m

    highs = np.concatenate([matrix(maxes), -matrix(mins)])  # a minimum is the negated maximum of the negated
    gkeys, s, high = groupby.group_reduce_rows(key, matrix(sums), highs)
    order = np.argsort(gkeys)  # packed keys sort as their fields do, field by field
    out = {k: f * d + lo for k, f, d, lo in zip(keys, groupby.unpack_keys(gkeys[order], layout), step, low,
                                               strict=True)}
    out.update((c, s[i][order]) for i, c in enumerate(sums))
    out.update((c, high[i][order]) for i, c in enumerate(maxes))
    out.update((c, -high[len(maxes) + i][order]) for i, c in enumerate(mins))
    return pl.DataFrame({c: out[c] for c in schema}).cast(dict(schema))


def add_all(work: Sequence[tuple[IntervalAggregator, pl.DataFrame]]) -> None:
    """``agg.add(frame)`` for each pair, their queries run together (``pl.collect_all``: in
    parallel on Polars' threads): one segment's interval tables in one call."""
    work = [(agg, frame) for agg, frame in work if frame.height]
    for (agg, _), part in zip(work, pl.collect_all([agg.part(frame) for agg, frame in work]), strict=True):
        agg.add_part(part)


#: one record per window: the CACHE_SUMS of the compiled path, by name
CACHE_SUM_DTYPE = np.dtype([(name, np.int64) for name in CACHE_SUMS])


@njit
def _cache_sums(ts_ns, op, size_bytes, pages, hit_pages, hit_bytes, interval_ns, w0, sums):
    """``CACHE_SUMS`` of each request added to its window's record ``sums[ts_ns // interval_ns - w0]``."""
    for r in range(ts_ns.shape[0]):
        s = sums[ts_ns[r] // interval_ns - w0]
        o = op[r]
        b = size_bytes[r]
        s.requests += 1
        if o == OP_READ:
            s.reads += 1
            s.read_bytes += b
        elif o == OP_WRITE:
            s.writes += 1
            s.write_bytes += b
        s.pages += pages[r]
        s.hits += hit_pages[r]
        if pages[r] > 0 and hit_pages[r] == pages[r]:
            s.hit_requests += 1
        s.bytes += b
        s.hit_bytes += hit_bytes[r]


@njit
def _tally_windows(ts_ns, op, size_bytes, page_req, page_bytes, hit, interval_ns, w0, sums, totals):
    """``replay.kernels.base._tally``'s totals and :func:`_cache_sums`' window sums in one pass
    from the page hit flags, when every request is one page (``page_req[r] == r``; returns False,
    changing nothing, otherwise). No per-request arrays: for 10 M requests, filling three of
    them and reading them back cost more than this pass. A window's sums stay in locals until
    the window changes (requests come in time order)."""
    n = ts_ns.shape[0]
    if page_req.shape[0] != n:
        return False
    for r in range(n):
        if page_req[r] != r:
            return False
    pages = hits = nbytes = hbytes = rpages = rhits = wpages = whits = skipped = 0
    cur = -1
    lo = hi = 0  # the current window's time span [lo, hi): no division while a request falls in it
    requests = reads = writes = read_bytes = write_bytes = w_pages = w_hits = w_bytes = w_hit_bytes = 0
    for r in range(n + 1):
        if r < n:
            t = ts_ns[r]
            w = cur if lo <= t < hi else t // interval_ns - w0
        else:
            w = -2
        if w != cur:
            if cur >= 0:
                s = sums[cur]
                s.requests += requests
                s.reads += reads
                s.writes += writes
                s.read_bytes += read_bytes
                s.write_bytes += write_bytes
                s.pages += w_pages
                s.hits += w_hits
                s.hit_requests += w_hits
                s.bytes += w_bytes
                s.hit_bytes += w_hit_bytes
                pages += w_pages
                hits += w_hits
                hbytes += w_hit_bytes
                rpages += reads
                wpages += writes
            if r == n:
                break
            requests = reads = writes = read_bytes = write_bytes = w_pages = w_hits = w_bytes = w_hit_bytes = 0
            cur = w
            lo = (w + w0) * interval_ns
            hi = lo + interval_ns
        o = op[r]
        sz = size_bytes[r]
        requests += 1
        w_bytes += sz
        rd = np.int64(o == OP_READ)
        wr = np.int64(o == OP_WRITE)
        if rd + wr == 0:
            skipped += 1
            continue
        # branch-free below: hits and reads come in random order, a branch on them mispredicts
        b = page_bytes[r]
        h = np.int64(hit[r] != 0)
        nbytes += b
        w_pages += 1
        w_hits += h
        w_hit_bytes += b * h
        reads += rd
        read_bytes += sz * rd
        writes += wr
        write_bytes += sz * wr
        rhits += h * rd
        whits += h * wr
    # the last sum, full-hit requests: a one-page request is a full hit exactly when its page hits
    add_totals(totals, n, skipped, pages, hits, nbytes, hbytes, rpages, rhits, wpages, whits, hits)
    return True


class CacheIntervals(IntervalAggregator):
    """``IntervalAggregator`` with the cache sums (no keys) computed by one compiled pass over a
    segment's outcomes instead of a Polars group-by on a frame of them (~10x less time, no
    per-request frame); the same rows."""

    #: windows the running sums may span before they go to a part (10 int64 sums each: 320 MiB)
    ACC_WINDOWS_MAX = 1 << 22

    def __init__(self, interval: str | int = "60s"):
        super().__init__(interval)
        # the window sums of the segments so far, from window _acc_w0, in one array (a Polars frame
        # per segment cost ~0.4 s per 100 M requests); _acc_n windows of it are in use
        self._acc: np.ndarray | None = None
        self._acc_w0 = 0
        self._acc_n = 0

    def add_outcomes(self, segment: Segment, outcomes: Mapping[str, np.ndarray]) -> None:
        ts = segment.ts_ns
        if ts.shape[0] == 0:
            return
        n = self.interval_ns
        w0, w1 = int(ts.min()) // n, int(ts.max()) // n
        if w1 - w0 > 4 * ts.shape[0] + 1024:  # windows far sparser than requests: group instead
            self.add(outcome_frame(segment, outcomes))
            return
        sums = np.zeros(w1 - w0 + 1, dtype=CACHE_SUM_DTYPE)
        _cache_sums(ts, segment.op, segment.size_bytes, outcomes["pages"], outcomes["hit_pages"], outcomes["hit_bytes"],
                    n, w0, sums)
        self._add_sums(sums, w0)

    def add_hits(self, segment: Segment, hit: np.ndarray, totals: np.ndarray) -> bool:
        """A cache model's ``totals`` and this segment's window sums straight from its page hit flags
        (``CacheModel.page_hits``) when every request is one page (:func:`_tally_windows`);
        returns False, changing nothing, otherwise: then ``replay`` and :meth:`add_outcomes`."""
        ts = segment.ts_ns
        if ts.shape[0] == 0 or segment.page_req.shape[0] != ts.shape[0]:
            return False
        n = self.interval_ns
        w0, w1 = int(ts.min()) // n, int(ts.max()) // n
        if w1 - w0 > 4 * ts.shape[0] + 1024:
            return False
        sums = np.zeros(w1 - w0 + 1, dtype=CACHE_SUM_DTYPE)
        if not _tally_windows(ts, segment.op, segment.size_bytes, segment.page_req, segment.page_bytes, hit, n, w0, sums,
                              totals):
            return False
        self._add_sums(sums, w0)
        return True

    def _add_sums(self, sums: np.ndarray, w0: int) -> None:
        """Add one segment's window sums (from window ``w0``) to the running ones."""
        acc = self._acc
        if acc is not None:
            lo = min(self._acc_w0, w0)
            hi = max(self._acc_w0 + self._acc_n, w0 + sums.shape[0])
            if hi - lo > self.ACC_WINDOWS_MAX:
                self._flush()
            else:
                if lo < self._acc_w0 or hi - lo > acc.shape[0]:  # grow (doubling: time runs forward)
                    grown = np.zeros(max(hi - lo, 2 * acc.shape[0]), dtype=CACHE_SUM_DTYPE)
                    off = self._acc_w0 - lo
                    grown[off: off + self._acc_n] = acc[: self._acc_n]
                    self._acc, self._acc_w0 = grown, lo
                self._acc_n = hi - lo
                view = self._acc[w0 - lo: w0 - lo + sums.shape[0]]
                for name in CACHE_SUMS:
                    view[name] += sums[name]
                return
        self._acc, self._acc_w0, self._acc_n = sums, w0, sums.shape[0]

    def _flush(self) -> None:
        """The running window sums as a part (``IntervalAggregator``'s rows: windows with requests)."""
        if self._acc is None:
            return
        sums, w0 = self._acc[: self._acc_n], self._acc_w0
        self._acc = None
        used = np.flatnonzero(sums["requests"])
        part = {"interval_start_ns": (used + w0) * self.interval_ns}
        part.update((name, sums[name][used]) for name in CACHE_SUMS)
        self.add_part(pl.DataFrame(part))

    def coarsen(self, interval_ns: int) -> None:
        self._flush()
        super().coarsen(interval_ns)

    def result(self) -> pl.DataFrame:
        self._flush()
        return super().result()
