"""Where the seed figures' runs happen, and at which scale.

In memory (the tests: nothing written), or, for ``tiercast experiments``, as synthetic traces
written to ``<data dir>/synth/seeds/``, ingested and replayed or swept there as normal results
(``replay_trace`` / ``sweep_trace``), so the warehouse and the report see every run. Full scale is
each seed's test program as published; quick scale shortens the runs (``pipelines/experiments.py``
documents how). The measurement code (``pipelines/seed_figures.py``) asks :func:`current` for both,
and its cached results are dropped whenever :func:`using` switches.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.replay import (
    ReplayResult,
    max_end_bytes,
    replay_frames,
    replay_trace,
    run_paths,
    sweep_frames,
    sweep_trace,
)
from replay.scenario import Scenario

_CACHES: list[Callable] = []
#: one ingest at a time (the experiments measure seeds in threads; the source index is read-modify-write)
_INGEST = threading.Lock()


def cached(maxsize: int):
    """``functools.lru_cache`` whose entries :func:`using` drops (a run at another scale or into
    another data directory is another run)."""
    def wrap(fn):
        c = functools.lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(c)
        return c
    return wrap


def clear_caches() -> None:
    """Drop every memoised measurement (:func:`cached`)."""
    for c in _CACHES:
        c.cache_clear()


@contextmanager
def quiet() -> Iterator[None]:
    """Presets carry sections the model ignores (``not yet modelled`` warnings): not news here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@dataclass(frozen=True)
class Ran:
    """One run or sweep made: for the report (which runs to show) and the quick-mode check (every
    time series keeps enough intervals)."""

    name: str
    scenario: str
    run_id: str | None = None
    sweep_id: str | None = None
    intervals: int = 0


@dataclass(frozen=True)
class Runs:
    data_dir: Path | None = None
    quick: bool = False
    ran: list[Ran] = field(default_factory=list, compare=False)

    def size(self, full: int, quick: int) -> int:
        """A run length (requests) or size at this scale."""
        return quick if self.quick else full

    def replay(self, name: str, df: pl.DataFrame, sc: Scenario) -> ReplayResult:
        """``df`` replayed through ``sc`` (warm-up counted from its request count); in a data
        directory the run's outputs are written and its intervals read back from them."""
        with quiet():
            if self.data_dir is None:
                res = replay_frames([df], sc.with_footprint(max_end_bytes(df)), name, total=df.height)
            else:
                summary = replay_trace(self._trace(name, df), self.data_dir, sc)
                paths = run_paths(self.data_dir, summary["run_id"])
                res = ReplayResult(summary, pl.read_parquet(paths["volume_intervals"]),
                                   pl.read_parquet(paths["rg_intervals"]))
        self.ran.append(Ran(name, sc.name, run_id=res.summary["run_id"],
                            intervals=res.volume_intervals["interval_start_ns"].n_unique()))
        return res

    def sweep(self, name: str, df: pl.DataFrame, sc: Scenario, outstanding: list[int], warmup_pct: float) -> list[dict]:
        with quiet():
            if self.data_dir is None:
                rows = sweep_frames(lambda: [df], sc.with_footprint(max_end_bytes(df)), outstanding, name,
                                    total=df.height, warmup_pct=warmup_pct)
            else:
                rows = sweep_trace(self._trace(name, df), self.data_dir, sc, outstanding, warmup_pct=warmup_pct)
        self.ran.append(Ran(name, sc.name, sweep_id=rows[0].get("sweep_id")))
        return rows

    def _trace(self, name: str, df: pl.DataFrame):
        """``df`` as an ingested trace, written once as canonical Parquet (``name`` must say
        everything the content depends on: a re-run finds the file, and ingest says it has it)."""
        from pipelines.catalog import find_trace

        path = self.data_dir / "synth" / "seeds" / f"{name}.parquet"
        with _INGEST:
            return find_trace(self.data_dir, self._ingest(path, df).trace_id)

    def _ingest(self, path: Path, df: pl.DataFrame):
        import pyarrow.parquet as pq

        from pipelines.files import atomic_output
        from pipelines.ingest import ingest_file
        from schemas.trace import ARROW_SCHEMA, POLARS_SCHEMA

        if not path.exists():
            missing = [c for c in POLARS_SCHEMA if c not in df.columns]
            full = df.with_columns(*(pl.int_range(1, df.height + 1, dtype=pl.Int64).alias(c) if c == "src_line"
                                     else pl.lit(None, dtype=POLARS_SCHEMA[c]).alias(c) for c in missing))
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(path, "synthetic workload") as tmp:
                pq.write_table(full.select(list(POLARS_SCHEMA)).cast(POLARS_SCHEMA).to_arrow().cast(ARROW_SCHEMA), tmp,
                               compression="zstd")
        return ingest_file(path, self.data_dir)


_current = Runs()


def current() -> Runs:
    return _current


@contextmanager
def using(runs: Runs) -> Iterator[Runs]:
    """Measure with ``runs`` inside the block; cached measurements are dropped on the way in and out."""
    global _current
    prev, _current = _current, runs
    clear_caches()
    try:
        yield runs
    finally:
        _current = prev
        clear_caches()
