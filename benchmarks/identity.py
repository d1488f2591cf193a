"""Are a refactor's results identical? A hash of every table of a replay of every preset on two
traces, open and closed loop, saved at one revision and checked at another.

The traces: the real CloudPhysics sample (``../shared/data/traces/vscsi``; bursty, writes and reads,
one volume) and seed 000's database pattern (8 KiB, 67 % read, random, 300,000 requests over 15 GiB
on two volumes, written by ``traces.synth``). Each preset replays each trace in the trace's own
timing and closed loop at 64 outstanding (MCx throttling, FLARE forced flushes, SSD cache fills,
GC all run). Hashed per run: the summary (JSON text fields parsed, the keys that name the code
(``run_id``, ``model_version``, ``tiercast_version``) left out), the per-volume and per-RAID-group
interval tables and every extra table (tiering, snapshots, latency histogram), each with its
columns in name order and its rows sorted, as CSV.

    .venv/bin/python benchmarks/identity.py --save /tmp/before.json      # at the old revision
    .venv/bin/python benchmarks/identity.py --check /tmp/before.json     # at the new one

``--check`` prints every (preset, trace, loop, table) whose hash differs and exits 1 if any does.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import warnings  # noqa: E402

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

import polars as pl  # noqa: E402

from pipelines.replay import replay_frames  # noqa: E402
from replay.scenario import load, preset_names  # noqa: E402
from traces import synth  # noqa: E402

SHARED = Path(os.environ.get("TIERCAST_SHARED_DATA", ROOT.parent / "shared" / "data"))
CODE_KEYS = {"run_id", "model_version", "tiercast_version", "scenario_hash"}
#: summary fields whose JSON text a later revision may keep as objects
JSON_FIELDS = ("raid_groups", "tiers")
#: summary fields a later revision added that describe the run, not its results (a baseline saved
#: before them still checks)
DESCRIPTIVE_KEYS = {"mechanisms"}
#: counters a later revision added, left out while 0 (a baseline saved before them still checks; any
#: other value is a change)
ADDED_COUNTERS = {"write_aside_pages", "write_aside_superseded_pages", "write_aside_stripes", "flash_rmw_writes",
                  "flash_rmw_reads"}


def traces() -> dict[str, pl.DataFrame]:
    """The two traces as canonical request frames (CloudPhysics through ``tiercast ingest``)."""
    import tempfile

    from pipelines.catalog import find_trace
    from pipelines.ingest import ingest_file
    from pipelines.simulate import read_frames

    with tempfile.TemporaryDirectory() as d:
        ref = find_trace(Path(d), ingest_file(SHARED / "traces" / "vscsi" / "cloudPhysicsIO.vscsi", d,
                                              validate="off").trace_id)
        cloud = pl.concat(list(read_frames(ref, 1 << 20)))
    db = synth.generate(synth.pattern("database", requests=300_000, region_bytes=15 << 30, seed=11))
    db = db.with_columns(volume=pl.when(pl.col("offset") % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b")))
    return {"cloudphysics": cloud, "database": db}


def _canon(v):
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in sorted(v.items()) if k not in CODE_KEYS}
    if isinstance(v, list | tuple):
        return [_canon(x) for x in v]
    if isinstance(v, float):
        return repr(v)
    return v


def summary_hash(s: dict) -> str:
    s = {k: (json.loads(v) if k in JSON_FIELDS and isinstance(v, str) else v) for k, v in s.items()
         if k not in DESCRIPTIVE_KEYS and not (k in ADDED_COUNTERS and v == 0)}
    return hashlib.sha256(json.dumps(_canon(s), sort_keys=True).encode()).hexdigest()[:16]


def table_hash(df: pl.DataFrame) -> str:
    df = df.drop([c for c in df.columns if c in CODE_KEYS])
    df = df.select(sorted(df.columns))
    df = df.sort(df.columns, nulls_last=True) if df.height else df
    flat = df.select(pl.col(c).cast(pl.String) if df.schema[c].is_nested() is False else
                     pl.col(c).map_elements(repr, return_dtype=pl.String) for c in df.columns)
    return hashlib.sha256(flat.write_csv().encode()).hexdigest()[:16]


def hashes() -> dict[str, str]:
    out = {}
    for tname, df in traces().items():
        for preset in preset_names():
            for loop in ("open", "closed"):
                sc = load(preset)
                sc = sc.with_replay(mode="closed", outstanding=64) if loop == "closed" else sc.with_replay(mode="open")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = replay_frames([df], sc, tname, total=df.height)
                key = f"{preset}/{tname}/{loop}"
                out[f"{key}/summary"] = summary_hash(res.summary)
                out[f"{key}/volume_intervals"] = table_hash(res.volume_intervals)
                out[f"{key}/rg_intervals"] = table_hash(res.rg_intervals)
                for name, t in res.tables.items():
                    out[f"{key}/{name}"] = table_hash(t)
                print(f"{key}: {res.summary['requests']:,} requests, mean {res.summary['latency_mean_ms']:.3f} ms",
                      file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=Path, help="write the hashes to this JSON file")
    g.add_argument("--check", type=Path, help="compare with the hashes in this JSON file")
    a = ap.parse_args()
    now = hashes()
    if a.save:
        a.save.write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"{len(now)} hashes -> {a.save}")
        return 0
    before = json.loads(a.check.read_text())
    diff = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in diff:
        print(f"differs: {k} ({before.get(k)} -> {now.get(k)})")
    print(f"{len(now)} hashes, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
