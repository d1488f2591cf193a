"""Pool space held by redirect-on-write snapshots (seed 004; docs/models/sources.md#snapshots-vnx-pool-snapshots).

Snapshot i is taken at ``i * every`` from the trace start (snapshot 0 at the start) and deleted
when it is ``keep`` old; interval i is ``[i * every, (i + 1) * every)``. With redirect-on-write a
write never copies: it goes to a new block, and the block it replaces stays with the snapshots
that still see it. ROW accounting: a block written in interval i for the first time since
snapshot i was taken keeps its old version for snapshot i (the latest snapshot that sees it;
older ones share it, and are deleted before it), so

* snapshot i's space = the distinct blocks (``block`` bytes each) written during interval i;
* the snapshot space at the end of interval i = the sum over the snapshots retained then:
  snapshots i-K+1 .. i, with K = ceil(keep / every) (a snapshot is deleted when the next one
  that makes it ``keep`` old is taken). Its peak over the trace is the figure to provision.

A write covering several blocks counts each (offset // block to (offset + size - 1) // block).
Only writes count: reads, trims and flushes hold no snapshot space. Every block is assumed
allocated before the trace (a first write to a never-written block is counted too).

:class:`SnapshotSpace` takes a trace frame by frame (columns ``ts_ns, volume, op, offset,
size``); each volume's rows must come in time order (as ingest stores them: a volume's parts in
time order), frames of different volumes may interleave. It keeps, per volume, the (interval,
block) pairs of the interval still open, deduplicated per frame, and counts the distinct blocks
of an interval once a later row of that volume closes it, so memory holds one interval's
distinct written blocks, not the trace; any chunking gives the same result.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

from schemas.trace import OPS

_WRITE = pl.col("op").cast(pl.String) == OPS[1]
_PAIRS = {"volume": pl.String, "interval": pl.Int64, "block": pl.Int64}


@dataclass(frozen=True)
class SnapshotTimeline:
    every_ns: int
    keep_ns: int
    block_bytes: int
    writes: np.ndarray  # write requests per interval
    write_bytes: np.ndarray
    blocks: np.ndarray  # distinct blocks written per interval = space of the snapshot taken at its start

    @property
    def retained_max(self) -> int:
        """K: snapshots kept at once in steady state."""
        return -(-self.keep_ns // self.every_ns)

    @property
    def retained(self) -> np.ndarray:
        """Snapshots alive during each interval (the one taken at its start included)."""
        return np.minimum(np.arange(1, len(self.blocks) + 1), self.retained_max)

    @property
    def snapshot_blocks(self) -> np.ndarray:
        """Blocks held by the retained snapshots at the end of each interval (a K-wide rolling sum)."""
        c = np.concatenate([[0], np.cumsum(self.blocks, dtype=np.int64)])
        i = np.arange(1, len(c))
        return c[i] - c[np.maximum(i - self.retained_max, 0)]

    def rows(self) -> pl.DataFrame:
        n = len(self.blocks)
        return pl.DataFrame({
            "interval": np.arange(n, dtype=np.int64),
            "start_ns": np.arange(n, dtype=np.int64) * self.every_ns,
            "writes": self.writes,
            "write_bytes": self.write_bytes,
            "blocks_overwritten": self.blocks,
            "new_snapshot_bytes": self.blocks * self.block_bytes,
            "retained_snapshots": self.retained,
            "snapshot_bytes": self.snapshot_blocks * self.block_bytes,
        })

    def summary(self) -> dict:
        """The ``tiercast snapshots --json`` document."""
        total = self.snapshot_blocks * self.block_bytes
        peak = int(np.argmax(total)) if len(total) else 0
        return {
            "every_ns": self.every_ns,
            "keep_ns": self.keep_ns,
            "block_bytes": self.block_bytes,
            "retained_max": self.retained_max,
            "intervals": self.rows().to_dicts(),
            "peak": {"snapshot_bytes": int(total[peak]) if len(total) else 0, "interval": peak,
                     "start_ns": peak * self.every_ns, "end_ns": (peak + 1) * self.every_ns},
        }


class SnapshotSpace:
    """Distinct written blocks per snapshot interval, fed frame by frame."""

    def __init__(self, every_ns: int, keep_ns: int, block_bytes: int):
        for name, v in (("every", every_ns), ("keep", keep_ns), ("block", block_bytes)):
            if v <= 0:
                raise ValueError(f"{name} must be > 0, got {v}")
        self.every_ns, self.keep_ns, self.block_bytes = int(every_ns), int(keep_ns), int(block_bytes)
        self._open: list[pl.DataFrame] = []  # per frame: distinct (volume, interval, block) not yet counted
        self._closed: list[pl.DataFrame] = []  # (volume, interval, blocks) of closed intervals
        self._writes: list[pl.DataFrame] = []  # (interval, writes, write_bytes) per frame
        self._last: dict[str, int] = {}  # volume -> highest interval seen
        self._intervals = 0

    def add(self, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        every, block = self.every_ns, self.block_bytes
        df = df.select(pl.col("volume").cast(pl.String), interval=pl.col("ts_ns") // every,
                       write=_WRITE, offset="offset", size=pl.col("size").cast(pl.Int64))
        span = df.group_by("volume").agg(first=pl.col("interval").min(), last=pl.col("interval").max())
        for volume, first, _ in span.iter_rows():
            if first < self._last.get(volume, first):
                raise ValueError(f"volume {volume!r}: rows out of time order (interval {first} after "
                                 f"{self._last[volume]}); feed each volume's rows in time order")
        self._intervals = max(self._intervals, int(span["last"].max()) + 1)
        w = df.filter("write")
        self._writes.append(w.group_by("interval").agg(writes=pl.len().cast(pl.Int64),
                                                       write_bytes=pl.col("size").sum()))
        pairs = (w.select("volume", "interval",
                          block=pl.int_ranges(pl.col("offset") // block,
                                              (pl.col("offset") + pl.col("size") - 1) // block + 1))
                 .explode("block").unique())
        self._open.append(pairs.cast(_PAIRS))
        advanced = False
        for volume, _first, last in span.iter_rows():
            if last > self._last.get(volume, -1):
                self._last[volume] = last
                advanced = True
        if advanced:
            self._close()

    def _close(self, everything: bool = False) -> None:
        """Count the distinct blocks of every interval a later row of its volume has closed."""
        if not self._open:
            return
        pairs = pl.concat(self._open)
        if everything:
            done, self._open = pairs, []
        else:
            last = pl.DataFrame({"volume": list(self._last), "last": list(self._last.values())},
                                schema={"volume": pl.String, "last": pl.Int64})
            pairs = pairs.join(last, on="volume", how="left")
            done = pairs.filter(pl.col("interval") < pl.col("last")).drop("last")
            still = pairs.filter(pl.col("interval") >= pl.col("last")).drop("last")
            self._open = [still] if still.height else []
        if done.height:
            self._closed.append(done.group_by("volume", "interval").agg(blocks=pl.col("block").n_unique()
                                                                        .cast(pl.Int64)))

    def result(self) -> SnapshotTimeline:
        self._close(everything=True)
        n = self._intervals
        per = np.zeros((3, n), dtype=np.int64)
        if self._closed:
            b = pl.concat(self._closed).group_by("interval").agg(pl.col("blocks").sum())
            per[2, b["interval"].to_numpy()] = b["blocks"].to_numpy()
        if self._writes:
            w = pl.concat(self._writes).group_by("interval").agg(pl.col("writes").sum(), pl.col("write_bytes").sum())
            idx = w["interval"].to_numpy()
            per[0, idx], per[1, idx] = w["writes"].to_numpy(), w["write_bytes"].to_numpy()
        return SnapshotTimeline(self.every_ns, self.keep_ns, self.block_bytes, per[0], per[1], per[2])


def snapshot_space(frames: Iterable[pl.DataFrame], every_ns: int, keep_ns: int, block_bytes: int) -> SnapshotTimeline:
    acc = SnapshotSpace(every_ns, keep_ns, block_bytes)
    for df in frames:
        acc.add(df)
    return acc.result()
