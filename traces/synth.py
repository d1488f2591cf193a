"""IOMeter / fio style synthetic workloads as canonical request tables.

Parameters follow the tools users know: block size, read %, random % (IOMeter's "percent
random": the rest continue sequentially from the previous request of the same worker), the
region (the test file), an access distribution like fio's ``random_distribution``
(``uniform``, ``zipf:THETA``, ``zoned:PCT/PCT_RANGE:...``), outstanding I/Os (recorded for
closed-loop replay) and either a request count or a duration at a target IOPS.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.trace import ARROW_SCHEMA, OPS, POLARS_SCHEMA

META_KEY = b"tiercast.synth"
#: peak memory of :func:`write` per request: the table is built whole (draws, columns, their Arrow
#: copy); measured 93-98 B at 4 and 8 M requests
PEAK_BYTES_PER_REQUEST = 100


@dataclass(frozen=True)
class Workload:
    block_size_bytes: int = 8192
    read_pct: float = 67.0
    random_pct: float = 100.0
    region_bytes: int = 15 << 30
    region_offset_bytes: int = 0
    distribution: str = "uniform"
    outstanding: int = 16
    workers: int = 1
    requests: int = 1_000_000
    iops: float = 2000.0
    volume: str = "synth0"
    align_bytes: int = 0  # 0 = aligned to the block size
    seed: int = 0

    def describe(self) -> dict:
        return asdict(self)


#: Named patterns from the seed articles; any field can be overridden.
PATTERNS: dict[str, Workload] = {
    # seed 000 / 003: Intel/StorageReview "database" pattern, 8 KB 67 % read 100 % random
    "database": Workload(block_size_bytes=8192, read_pct=67, random_pct=100),
    # seed 003: 4 KB random read / random write at QD 128
    "randread-4k": Workload(block_size_bytes=4096, read_pct=100, random_pct=100, outstanding=128),
    "randwrite-4k": Workload(block_size_bytes=4096, read_pct=0, random_pct=100, outstanding=128),
    # seed 002: IOMeter 1 worker, 16 outstanding, 100 % random 8 KB writes
    "randwrite-8k": Workload(block_size_bytes=8192, read_pct=0, random_pct=100, outstanding=16),
    # seed 001: fio randrw 70/30
    "randrw-70-30": Workload(block_size_bytes=4096, read_pct=70, random_pct=100, outstanding=32),
    "seqread-1m": Workload(block_size_bytes=1 << 20, read_pct=100, random_pct=0, outstanding=8),
    "seqwrite-1m": Workload(block_size_bytes=1 << 20, read_pct=0, random_pct=0, outstanding=8),
}


def pattern(name: str, **overrides) -> Workload:
    try:
        base = PATTERNS[name]
    except KeyError:
        raise ValueError(f"unknown pattern {name!r}; known: {', '.join(PATTERNS)}") from None
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


def parse_distribution(text: str) -> tuple[str, tuple]:
    """``uniform``, ``zipf:THETA`` (THETA > 0, default 1.0) or ``zoned:ACCESS/RANGE:...`` (fio's
    syntax: percentages from 0 to 100, each column adding up to 100) as (kind, parameters);
    ValueError naming what is wrong, so a bad value is refused before anything is generated."""
    kind, sep, arg = text.partition(":")
    if kind == "uniform" and not sep:
        return kind, ()
    if kind == "zipf":
        try:
            theta = float(arg) if arg else 1.0
        except ValueError:
            theta = math.nan
        if not (math.isfinite(theta) and theta > 0):
            raise ValueError(f"zipf's THETA must be a finite number > 0 (uniform for none), got {arg!r}")
        return kind, (theta,)
    if kind == "zoned":
        zones = []
        for z in arg.split(":"):
            try:
                access, rng = (float(v) for v in z.split("/"))
            except ValueError:
                raise ValueError(f"zoned expects ACCESS/RANGE pairs such as 60/10:40/90, got {z!r}") from None
            if not all(math.isfinite(v) and 0 <= v <= 100 for v in (access, rng)):
                raise ValueError(f"zoned percentages must be from 0 to 100, got {z!r}")
            if access > 0 and rng == 0:
                raise ValueError(f"a zone with accesses needs a range > 0, got {z!r}")
            zones.append((access, rng))
        if any(abs(sum(col) - 100) > 1e-6 for col in zip(*zones, strict=True)):
            raise ValueError(f"zoned distribution must sum to 100/100, got {text}")
        return kind, tuple(zones)
    raise ValueError(f"unknown distribution {text!r} (uniform, zipf:THETA, zoned:A/R:...)")


def _ranks(rng: np.random.Generator, n: int, n_blocks: int, distribution: str) -> np.ndarray:
    """Block ranks in [0, n_blocks) drawn from the distribution (rank 0 is the hottest)."""
    kind, params = parse_distribution(distribution)
    if kind == "uniform":
        return rng.integers(0, n_blocks, n, dtype=np.int64)
    u = rng.random(n)
    if kind == "zipf":
        (theta,) = params
        # Inverse CDF of the continuous Zipf density on [1, N+1); exact enough for cache studies
        # and O(1) per draw where a tabulated CDF would need N floats.
        big = n_blocks + 1.0
        if abs(theta - 1.0) < 1e-9:
            x = np.power(big, u)
        else:
            a = 1.0 - theta
            x = np.power(1.0 + u * (big**a - 1.0), 1.0 / a)
        return np.minimum(x.astype(np.int64) - 1, n_blocks - 1)
    # zoned, fio syntax: access%/range% pairs, e.g. 60/10:30/20:10/70
    acc = np.array([z[0] for z in params])
    rng_pct = np.array([z[1] for z in params])
    bounds = np.concatenate([[0], np.cumsum(rng_pct) / 100 * n_blocks]).astype(np.int64)
    z = np.searchsorted(np.cumsum(acc) / 100, u, side="right").clip(0, len(params) - 1)
    lo, hi = bounds[z], np.maximum(bounds[z + 1], bounds[z] + 1)
    return lo + (rng.random(n) * (hi - lo)).astype(np.int64)


def _sequential_runs(rng: np.random.Generator, offsets: np.ndarray, w: Workload, span: int) -> np.ndarray:
    """Make (100 - random %) of each worker's requests continue its previous request; runs
    wrap at the end of the region like IOMeter restarting at the start of its test file."""
    n = len(offsets)
    workers = max(1, w.workers)
    seq = rng.random(n) >= w.random_pct / 100.0
    out = offsets.copy()
    for k in range(workers):
        sel = np.arange(k, n, workers)
        s = seq[sel]
        s[0] = False
        j = np.arange(len(sel))
        run_start = np.maximum.accumulate(np.where(s, 0, j))
        o = offsets[sel][run_start] + (j - run_start) * w.block_size_bytes
        out[sel] = w.region_offset_bytes + (o - w.region_offset_bytes) % span
    return out


def generate(w: Workload) -> pl.DataFrame:
    """The canonical request table of a workload (``src_line`` = request number)."""
    if w.block_size_bytes <= 0 or w.region_bytes < w.block_size_bytes or w.requests <= 0:
        raise ValueError("block size must be > 0, region >= block size and requests > 0")
    rng = np.random.default_rng(w.seed)
    n = int(w.requests)
    align = w.align_bytes or w.block_size_bytes
    n_blocks = (w.region_bytes - w.block_size_bytes) // align + 1
    ranks = _ranks(rng, n, n_blocks, w.distribution)
    # hot ranks are scattered over the region, not packed at its start
    perm = rng.permutation(n_blocks) if n_blocks <= 50_000_000 else None
    blocks = perm[ranks] if perm is not None else (ranks * 2654435761) % n_blocks
    offsets = w.region_offset_bytes + blocks * align
    if w.random_pct < 100:
        offsets = _sequential_runs(rng, offsets, w, n_blocks * align)
    reads = rng.random(n) < w.read_pct / 100.0
    gaps = rng.exponential(1e9 / w.iops, n) if w.iops > 0 else np.zeros(n)
    arrivals_ns = np.cumsum(gaps)
    if n and arrivals_ns[-1] >= 2**63:
        raise ValueError(f"{n:,} requests at {w.iops:g} IO/s overflow the int64 nanosecond clock: raise the IOPS")
    ts = arrivals_ns.astype(np.int64)
    ts -= ts[0]
    return pl.DataFrame(
        {
            "ts_ns": ts,
            "volume": pl.repeat(w.volume, n, eager=True).cast(pl.Categorical),
            "op": pl.Series(np.where(reads, OPS[0], OPS[1])).cast(POLARS_SCHEMA["op"]),
            "offset": offsets.astype(np.int64),
            "size": np.full(n, w.block_size_bytes, dtype=np.int32),
            "latency_ns": pl.repeat(None, n, dtype=pl.Int64, eager=True),
            "src_line": np.arange(1, n + 1, dtype=np.int64),
        },
        schema=POLARS_SCHEMA,
    )


def write(w: Workload, path) -> int:
    """Write the workload as canonical Parquet (ingestable); the workload goes in the file metadata."""
    df = generate(w)
    table = df.to_arrow().cast(ARROW_SCHEMA)
    meta = dict(table.schema.metadata or {})
    meta[META_KEY] = json.dumps(w.describe()).encode()
    pq.write_table(table.replace_schema_metadata(meta), path, compression="zstd")
    return df.height


def read_meta(schema: pa.Schema) -> dict | None:
    raw = (schema.metadata or {}).get(META_KEY)
    return json.loads(raw) if raw else None
