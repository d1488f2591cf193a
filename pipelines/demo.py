"""The demo job: synthetic workloads from the seed articles, ingested into the data directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipelines.ingest import IngestResult, ingest_file
from traces import synth

#: (name, pattern, overrides): seed 000's database pattern on a 2 GB and a 15 GB test file,
#: seed 002's 8 KB random writes, seed 003's 4 KB random reads.
DEMO_WORKLOADS = (
    ("database-2g", "database", {"region_bytes": 2 << 30, "volume": "lun-db2g"}),
    ("database-15g", "database", {"region_bytes": 15 << 30, "volume": "lun-db15g"}),
    ("randwrite-8k", "randwrite-8k", {"region_bytes": 50 << 30, "volume": "lun-rw"}),
    ("randread-4k", "randread-4k", {"region_bytes": 100 << 30, "volume": "lun-rr", "distribution": "zipf:0.9"}),
)


def run_demo(data_dir: Path, requests: int = 200_000, log: Callable[[str], None] = print) -> dict[str, IngestResult]:
    data_dir = Path(data_dir)
    src = data_dir / "synth"
    src.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, pat, over in DEMO_WORKLOADS:
        path = src / f"{name}.parquet"
        if not path.exists():
            synth.write(synth.pattern(pat, requests=requests, **over), path)
            log(f"generated {name}: {requests:,} requests -> {path}")
        results[name] = ingest_file(path, data_dir)
    return results
