"""Keep a device calibration (``calibrate --measured A --measured B ...``) for the warehouse and the
report: ``results/device_calibrations/<calibration_id>/`` with ``calibration.parquet`` (one row: the
captures, every fitted parameter, what fell back to a default, the holdout means), ``holdout.parquet``
(per capture: model and measured IOPS and mean latency, in-sample and left out) and ``manifest.json``
(the whole result). Written in a staging directory and renamed into place; the same captures again
replace it. ``tiercast load`` puts them in ``device_calibrations`` and ``device_calibration_holdout``."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines.dataset import Staging, remove_stale_staging

TABLES = {"calibration.parquet": "device_calibrations", "holdout.parquet": "device_calibration_holdout"}


def calibrations_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "results" / "device_calibrations"


def calibration_id(captures: list[str]) -> str:
    """The id of a calibration: a hash of its captures, in order."""
    return "cal-" + hashlib.sha256("\n".join(captures).encode()).hexdigest()[:12]


def frames(fit, cid: str) -> dict[str, pl.DataFrame]:
    """The calibration's rows as the warehouse holds them, by file name."""
    p = {k: v for k, v in fit.params.items() if not k.startswith("_")}
    h = fit.holdout or {}
    head = {"calibration_id": cid, "calibrated_at": datetime.now(tz=UTC),
            "captures": ",".join(w["capture_id"] for w in fit.workloads), "n_captures": len(fit.workloads),
            **{k: (float(v) if v is not None else None) for k, v in p.items()},
            "not_identified": ",".join(m["parameter"] for m in fit.not_identified),
            "holdout_mean_abs_iops_error_pct": h.get("mean_abs_iops_error_pct"),
            "holdout_mean_abs_lat_error_pct": h.get("mean_abs_lat_error_pct"),
            "holdout_covered_mean_abs_iops_error_pct": h.get("covered_mean_abs_iops_error_pct"),
            "holdout_covered_mean_abs_lat_error_pct": h.get("covered_mean_abs_lat_error_pct")}
    rows = []
    left = {r["capture_id"]: r for r in h.get("captures", [])}
    for r in fit.fitted:
        o = left.get(r["capture_id"], {})
        rows.append({"calibration_id": cid, "capture_id": r["capture_id"], "workload": r["workload"],
                     "iops_measured": r["iops_measured"], "iops_fitted": r["iops_model"],
                     "iops_fitted_error_pct": r["iops_error_pct"], "iops_holdout": o.get("iops_model"),
                     "iops_holdout_error_pct": o.get("iops_error_pct"),
                     "lat_mean_ms_measured": r["lat_mean_ms_measured"], "lat_mean_ms_fitted": r["lat_mean_ms_model"],
                     "lat_fitted_error_pct": r["lat_error_pct"], "lat_mean_ms_holdout": o.get("lat_mean_ms_model"),
                     "lat_holdout_error_pct": o.get("lat_error_pct"), "holdout_lost": ",".join(o.get("lost", []))})
    schema = {"calibration_id": pl.String, "capture_id": pl.String, "workload": pl.String, "holdout_lost": pl.String}
    hold = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    return {"calibration.parquet": pl.DataFrame([head], infer_schema_length=None), "holdout.parquet": hold}


def store_calibration(data_dir: str | Path, fit) -> Path:
    """Write ``fit`` under ``results/device_calibrations/<calibration_id>/``; returns the folder."""
    cid = calibration_id([w["capture_id"] for w in fit.workloads])
    fit.calibration_id = cid
    root = calibrations_root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(root)
    with Staging(root) as st:
        for name, df in frames(fit, cid).items():
            df.write_parquet(st.path / name)
        (st.path / "manifest.json").write_text(json.dumps(fit.summary(), indent=1, default=str))
        st.publish(cid, replace=True)
    return root / cid


def list_calibrations(data_dir: str | Path) -> list[dict]:
    """Every kept calibration's manifest, oldest first."""
    root = calibrations_root(data_dir)
    if not root.is_dir():
        return []
    out = []
    for d in sorted(root.iterdir(), key=lambda d: d.stat().st_mtime):
        m = d / "manifest.json"
        if not d.name.startswith(".") and m.is_file():
            out.append(json.loads(m.read_text()) | {"calibration_id": d.name})
    return out
