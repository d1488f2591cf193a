"""Withdrawing a dataset from the data root together with everything computed from it, so nothing
of it is replayed, loaded or reported any more: a trace ingested from a partial copy of a file
that has landed whole since (``pipelines.orchestrate.ingest_landed``).

What belongs to a trace: its directory (parts, rejects, page streams), its replay runs (the run
directory and every per-run file ``results/array_*/<run_id>.parquet``), its sweeps, hit-ratio
curves, cache simulations and skew results, and the model-vs-measured comparisons of its runs.
A measured dataset: its directory and the comparisons that used it. Everything is moved, not
deleted, under ``into`` at the same relative paths (to inspect, or to move back by hand); the
next ``tiercast load`` removes their rows from the warehouse (a unit whose files are gone).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from pipelines.catalog import write_json_atomic

#: per-trace result folders: ``results/<name>/<trace_id>/``
TRACE_RESULT_DIRS = ("mrc", "simulate", "skew", "skew_curve", ".skew_parts")
RECORD = "withdrawn.json"


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _run_ids(root: Path, trace_id: str) -> list[str]:
    """The finished replay runs of ``trace_id`` (their summary names the trace)."""
    runs = root / "results" / "array_runs"
    if not runs.is_dir():
        return []
    return sorted(d.name for d in runs.iterdir() if _json(d / "summary.json").get("trace_id") == trace_id)


def _sweeps(root: Path, trace_id: str) -> list[Path]:
    """The sweep files of ``trace_id`` (each holds one trace's rows, its id in a column)."""
    top = root / "results" / "array_sweeps"
    if not top.is_dir():
        return []
    import pyarrow.parquet as pq

    found = []
    for f in sorted(top.glob("*.parquet")):
        ids = pq.read_table(f, columns=["trace_id"]).column("trace_id").unique().to_pylist()
        if trace_id in ids:
            found.append(f)
    return found


def derived_paths(root: Path, kind: str, dataset_id: str) -> list[Path]:
    """The dataset's directory and every result computed from it that exists under ``root``."""
    root = Path(root)
    paths = [root / ("traces" if kind == "trace" else "measured") / dataset_id]
    run_ids = _run_ids(root, dataset_id) if kind == "trace" else []
    results = root / "results"
    if kind == "trace":
        paths += [results / "array_runs" / rid for rid in run_ids]
        per_run = [d for d in results.glob("array_*") if d.is_dir() and d.name not in ("array_runs", "array_sweeps")]
        paths += [d / f"{rid}.parquet" for d in sorted(per_run) for rid in run_ids]
        paths += _sweeps(root, dataset_id)
        paths += [results / name / dataset_id for name in TRACE_RESULT_DIRS]
    comparisons = results / "model_vs_measured"
    if comparisons.is_dir():
        for d in sorted(comparisons.iterdir()):
            m = _json(d / "manifest.json")
            if dataset_id in (m.get("trace_id"), m.get("measured_dataset_id"), m.get("fio_dataset_id")) \
                    or m.get("run_id") in run_ids:
                paths.append(d)
    return [p for p in paths if p.exists()]


def withdraw(root: Path, kind: str, dataset_id: str, into: Path, why: dict, also: tuple[Path, ...] = ()) -> list[str]:
    """Move the dataset and everything computed from it under ``into`` (same relative paths),
    the dataset's directory first (out of the catalogue before its results go), then the files
    ``also`` names (e.g. its source), and write ``into/withdrawn.json`` (``why``, when, what
    moved). Returns the moved paths, relative to ``root``."""
    root, into = Path(root), Path(into)
    moved = []
    for p in [*derived_paths(root, kind, dataset_id), *(Path(a) for a in also if Path(a).exists())]:
        rel = p.relative_to(root)
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(p), into / rel)
        moved.append(rel.as_posix())
    write_json_atomic(into / RECORD, {**why, "kind": kind, "id": dataset_id, "moved": moved,
                                      "withdrawn_at": datetime.now(tz=UTC).isoformat()})
    return moved
