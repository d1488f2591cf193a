"""Model vs measured: a replay's per-interval metrics against the device rows iostat measured
during a live capture (and against fio's own totals), interval by interval.

**Time alignment.** Three clocks meet here.

- *Replay*: ``interval_start_ns`` of ``results/array_volume_intervals/<run_id>.parquet`` counts
  from the trace's first request (open loop: the trace's own times; closed loop: model time,
  whose 0 is the first issue, i.e. again the trace's start). A model interval covers
  ``[start, end)`` and holds the requests *issued* in it.
- *fio*: the capture's trace is fio's per-I/O latency log, whose times count from the job's
  epoch. The trace manifest's ``ts_origin_raw_ns`` is the fio time of trace time 0. The epoch
  in wall-clock time is fio's ``job_start`` (ms since the Unix epoch, fio >= 3.36, the same
  instant as the log's origin) or else ``timestamp_ms - job_runtime`` of the job (fio's report
  time minus the ms from the job's epoch to its end; late by the job's teardown, a few ms).
  So ``trace_start = job_start + ts_origin_raw_ns``. A run of a trace with an absolute clock
  (manifest ``start_time``) uses that instead.
- *iostat*: ``S_TIME_FORMAT=ISO`` prints each report's time truncated to the second. iostat
  samples every interval from when it started (``capture.json`` ``started_at``), so each
  report was taken at ``ts + frac(started_at)``; a report covers the interval before it:
  ``[ts + frac - I, ts + frac)``. (Residual error: iostat's start-up delay, milliseconds; when
  that delay carried its first sample past a whole second, the first report is stamped a
  second later than ``started_at + I`` predicts and ``frac - 1 s`` is used instead.)

**Apportioning.** Model and iostat intervals need not line up (the calibrated device scenario
uses a tenth of iostat's interval to make this fine). Each model interval, clipped to the
run's active span (first issue to last completion), is spread uniformly over its length; a
measured interval receives the share of its requests, bytes and latency sum that overlaps it
(a DuckDB range join over the Parquet files in place). Exact when the intervals coincide.

**Metrics.** Measured: IOPS = ``r/s + w/s`` (discards and flushes are not replayed), MB/s =
``(rkB/s + wkB/s) x 1024 / 10^6``, mean latency = device time per I/O (``calibrate``'s rule:
I/O-weighted ``r_await``/``w_await``, or ``aqu-sz`` by Little's law above 1,000 IO/s). Model:
requests / interval, bytes / interval / 10^6, latency sum / requests (response time from issue
to completion). Per interval and metric: ``error_pct = 100 x (model - measured) / measured``.

**Which intervals count.** An interval is *scored* when the run's active span covers at least
``min_coverage`` of it (default 1: whole intervals only; an edge interval also holds I/O from
outside the replayed trace, e.g. fio's file layout, and only part of the trace). Within scored
intervals a metric is scored only where the measured value is > 0 (a percentage of 0 is
undefined): an interval with no measured I/O is listed with the model's value and counted in
``model_only_intervals`` if the model had I/O there; latency is scored only where both sides
had I/O. Overall per metric: ``mape_pct`` (mean |error|), ``bias_pct`` (mean signed error),
and ``total_error_pct`` (sums: I/O-weighted for latency) over the scored intervals.

**Kept.** :func:`save_comparison` stores a result under
``results/model_vs_measured/<comparison_id>/`` (the id hashes the run, the capture and its
datasets, the devices, the coverage rule and this code's version), published whole by a rename,
for the warehouse's ``measured_comparisons``, ``model_vs_measured`` and
``model_vs_measured_summary`` and the report's chart. A capture *matches* a trace when it
recorded that trace itself (:func:`matching_captures`); ``tiercast compare`` compares every run
with those.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from pipelines.calibrate import device_ms_per_s, fio_job_start_ns, fio_view, interval_ios, iostat_phase_ns
from pipelines.capture import captures_root, find_capture, list_captures
from pipelines.catalog import find_by_prefix, find_trace
from pipelines.dataset import Staging, key_of, remove_stale_staging
from pipelines.ingest_logs import find_measured
from pipelines.replay import run_paths
from replay.version import COMPARE_MODEL, model_version

METRICS = ("iops", "mb_per_s", "latency_mean_ms")


@dataclass
class Alignment:
    """How the three clocks were tied together (all ns since the Unix epoch)."""

    trace_start_ns: int
    anchor: str
    fio_job_start_ns: int | None
    ts_origin_raw_ns: int | None
    iostat_phase_ns: int
    iostat_interval_ns: int


def _iso(ns: int | None) -> str | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------
def find_run(data_dir: str | Path, ref: str) -> dict:
    """The summary of an array replay run by id or unambiguous prefix."""
    root = Path(data_dir) / "results" / "array_runs"
    runs = sorted(p.name for p in root.iterdir() if (p / "summary.json").is_file()) if root.is_dir() else []
    run = find_by_prefix({r: r for r in runs}, ref, "replay run", root,
                         "run `tiercast replay TRACE --scenario S` first")
    return json.loads((root / run / "summary.json").read_text())


def _job_number(capture: dict, trace_id: str) -> int | None:
    """1-based fio job (thread) number of the capture's trace ``trace_id`` (fio_lat.<N>.log)."""
    for log, tid in capture.get("traces", {}).items():
        if tid == trace_id:
            m = re.search(r"\.(\d+)\.log$", log)
            return int(m.group(1)) if m else None
    return None


def align(data_dir: str | Path, capture: dict, trace_id: str, first_ts_ns: int | None = None) -> Alignment:
    """Tie trace time 0 and iostat's report times to wall-clock time; see the module doc."""
    trace = find_trace(Path(data_dir), trace_id)
    origin = trace.manifest.get("ts_origin_raw_ns")
    job = _job_number(capture, trace_id)
    fio_start = None
    if job is not None:
        fio_start, anchor = fio_job_start_ns(captures_root(data_dir) / capture["capture_id"] / "raw" / "fio.json", job)
        start = fio_start + int(origin or 0)
    elif trace.manifest.get("start_time"):
        start = int(datetime.fromisoformat(trace.manifest["start_time"]).timestamp() * 1e9)
        anchor = "trace start_time"
    else:
        raise ValueError(f"trace {trace_id} is not one of capture {capture['capture_id']}'s traces "
                         f"({', '.join(capture.get('traces', {}).values()) or 'none'}) and has no absolute start "
                         "time: nothing ties its clock to iostat's")
    interval_ns = int(float(capture.get("iostat_interval_s") or 1) * 1e9)
    return Alignment(start, anchor, fio_start, origin, iostat_phase_ns(capture, first_ts_ns), interval_ns)


def device_map(specs: list[str] | None, volumes: list[str], present: list[str], default: list[str]) -> dict[str, str]:
    """volume -> device from ``--device`` values: ``DEV`` (every volume) or ``VOLUME=DEV``
    (fnmatch pattern on the run's volume names; first match wins)."""
    if not specs:
        cands = [d for d in default if d in present]
        if len(cands) != 1:
            raise ValueError(f"name the device with --device (the capture's devices "
                             f"{', '.join(default) or 'none'}; in iostat: {', '.join(present)})")
        specs = [cands[0]]
    out: dict[str, str] = {}
    for spec in specs:
        pat, _, dev = spec.rpartition("=")
        pat = pat or "*"
        if dev not in present:
            raise LookupError(f"device {dev!r} is not in the capture's iostat rows; devices present: {', '.join(present)}")
        hit = [v for v in volumes if fnmatch.fnmatchcase(v, pat)]
        if not hit:
            raise LookupError(f"--device {spec!r}: no volume of the run matches {pat!r}; volumes: {', '.join(volumes)}")
        for v in hit:
            out.setdefault(v, dev)
    return out


# --------------------------------------------------------------------------------------------
# the comparison
# --------------------------------------------------------------------------------------------
_SQL = """
WITH vol AS (
    SELECT v.interval_start_ns AS s0, v.interval_end_ns AS e0, m.device,
           v.requests::DOUBLE AS req, v.bytes::DOUBLE AS byt,
           coalesce(v.latency_mean_ms, 0) * v.requests AS lat_ms_sum
    FROM read_parquet($vol_file) v JOIN vmap m ON v.volume = m.volume
),
model AS (  -- per device and model interval, clipped to the active span, on the wall clock
    SELECT device, sum(req) AS req, sum(byt) AS byt, sum(lat_ms_sum) AS lat_ms_sum,
           $t0 + greatest(s0, $first) AS s,
           $t0 + greatest(least(e0, $last), greatest(s0, $first) + 1) AS e
    FROM vol GROUP BY device, s0, e0
),
meas AS (
    SELECT *, epoch_us(ts) * 1000 + $phase - $iv AS s, epoch_us(ts) * 1000 + $phase AS e
    FROM read_parquet($iostat_files) WHERE device IN (SELECT device FROM vmap) AND NOT coalesce(is_group, false)
)
SELECT meas.*, coalesce(sum(model.req * (least(model.e, meas.e) - greatest(model.s, meas.s)) / (model.e - model.s)), 0)
           AS model_requests,
       coalesce(sum(model.byt * (least(model.e, meas.e) - greatest(model.s, meas.s)) / (model.e - model.s)), 0)
           AS model_bytes,
       coalesce(sum(model.lat_ms_sum * (least(model.e, meas.e) - greatest(model.s, meas.s)) / (model.e - model.s)), 0)
           AS model_lat_ms_sum,
       greatest(0, least(meas.e, $t0 + $last) - greatest(meas.s, $t0 + $first)) / $iv AS coverage
FROM meas LEFT JOIN model ON model.device = meas.device AND model.s < meas.e AND model.e > meas.s
GROUP BY ALL
ORDER BY meas.device, meas.e
"""


def _overall(df: pl.DataFrame, metric: str) -> dict:
    m, x = f"model_{metric}", f"measured_{metric}"
    err = f"{metric}_error_pct"
    sc = df.filter(pl.col("scored") & pl.col(err).is_not_null())
    out = {"scored_intervals": sc.height, "mape_pct": None, "bias_pct": None, "total_error_pct": None,
           "model_mean": None, "measured_mean": None}
    if not sc.height:
        return out
    out["mape_pct"] = float(sc[err].abs().mean())
    out["bias_pct"] = float(sc[err].mean())
    if metric == "latency_mean_ms":  # I/O-weighted over the scored intervals
        mod = float((sc[m] * sc["model_iops"]).sum() / sc["model_iops"].sum())
        mea = float((sc[x] * sc["measured_iops"]).sum() / sc["measured_iops"].sum())
    else:
        mod, mea = float(sc[m].mean()), float(sc[x].mean())
    out.update(model_mean=mod, measured_mean=mea, total_error_pct=100.0 * (mod - mea) / mea)
    return out


def _pct(model: float | None, measured: float | None) -> float | None:
    return None if model is None or not measured else 100.0 * (model - measured) / measured


def compare_measured(data_dir: str | Path, run_ref: str, capture_ref: str, devices: list[str] | None = None,
                     min_coverage: float = 1.0) -> dict:
    """Errors of replay ``run_ref`` against capture ``capture_ref``'s iostat rows per interval
    and overall, and against fio's totals; see the module doc for every rule."""
    if not 0 < min_coverage <= 1:
        raise ValueError(f"--min-coverage must be in (0, 1], got {min_coverage}")
    run = find_run(data_dir, run_ref)
    rid = run["run_id"]
    vol_file = run_paths(data_dir, rid)["volume_intervals"]
    if not vol_file.is_file():
        raise FileNotFoundError(f"run {rid} has no per-interval metrics at {vol_file}")
    cap = find_capture(data_dir, capture_ref)
    if "iostat" not in cap.get("datasets", {}):
        raise LookupError(f"capture {cap['capture_id']} links no iostat dataset")
    iostat = find_measured(data_dir, cap["datasets"]["iostat"])
    first_ts = iostat.scan("iostat_device").select(pl.col("ts").min()).collect().item()
    al = align(data_dir, cap, run["trace_id"], int(first_ts.timestamp() * 1e9) if first_ts is not None else None)

    con = duckdb.connect()
    try:
        volumes = [r[0] for r in con.sql("SELECT DISTINCT volume FROM read_parquet(?) ORDER BY 1",
                                         params=[str(vol_file)]).fetchall()]
        files = [str(f) for f in iostat.table_files("iostat_device")]
        present = [r[0] for r in con.sql("SELECT DISTINCT device FROM read_parquet(?) ORDER BY 1",
                                         params=[files]).fetchall()]
        vmap = device_map(devices, volumes, present, cap.get("devices", []))
        vmap_df = pl.DataFrame({"volume": list(vmap), "device": list(vmap.values())})
        con.register("vmap", vmap_df)
        first = int(run.get("first_arrival_ns") or 0)
        last = int(run.get("last_done_ns") or 0)
        rows = con.sql(_SQL, params={"vol_file": str(vol_file), "iostat_files": files, "t0": al.trace_start_ns,
                                     "first": first, "last": last, "phase": al.iostat_phase_ns,
                                     "iv": al.iostat_interval_ns}).pl()
    finally:
        con.close()

    sec = al.iostat_interval_ns / 1e9
    n = interval_ios("all")
    df = rows.with_columns(
        measured_iops=n,
        measured_mb_per_s=(pl.col("rkb_per_s").fill_null(0) + pl.col("wkb_per_s").fill_null(0)) * 1024 / 1e6,
        measured_latency_mean_ms=pl.when(n > 0).then(device_ms_per_s("all") / n),
        model_iops=pl.col("model_requests") / sec,
        model_mb_per_s=pl.col("model_bytes") / sec / 1e6,
        model_latency_mean_ms=pl.when(pl.col("model_requests") > 0)
        .then(pl.col("model_lat_ms_sum") / pl.col("model_requests")),
        scored=pl.col("coverage") >= min_coverage - 1e-9,
    )
    err = {}
    for m in METRICS:
        mod, mea = pl.col(f"model_{m}"), pl.col(f"measured_{m}")
        valid = (mea > 0) & mod.is_not_null()
        err[f"{m}_error_pct"] = pl.when(valid).then(100.0 * (mod - mea) / mea)
    df = df.with_columns(**err)

    out_devices = {}
    for dev in sorted(set(vmap.values())):
        d = df.filter(pl.col("device") == dev)
        sc = d.filter(pl.col("scored"))
        out_devices[dev] = {
            "volumes": sorted(v for v, x in vmap.items() if x == dev),
            "intervals": d.height,
            "scored_intervals": sc.height,
            "model_only_intervals": sc.filter((pl.col("measured_iops") == 0) & (pl.col("model_requests") > 0)).height,
            "idle_intervals": sc.filter((pl.col("measured_iops") == 0) & (pl.col("model_requests") <= 0)).height,
            "measured_ios_unscored": float(d.filter(~pl.col("scored"))["measured_iops"].sum() * sec),
            "model_requests_unscored": float(d.filter(~pl.col("scored"))["model_requests"].sum()),
            **{m: _overall(d, m) for m in METRICS},
        }

    intervals = df.select(
        "device", pl.col("e").map_elements(_iso, return_dtype=pl.String).alias("interval_end"),
        (pl.col("s") - al.trace_start_ns).alias("start_since_trace_ns"), "coverage", "scored",
        *[c for m in METRICS for c in (f"model_{m}", f"measured_{m}", f"{m}_error_pct")],
        (pl.col("util_pct") if "util_pct" in df.columns else pl.lit(None, pl.Float64)).alias("measured_util_pct"),
    ).to_dicts()

    fio = {}
    if "fio" in cap.get("datasets", {}):
        fv = fio_view(find_measured(data_dir, cap["datasets"]["fio"]))
        if fv:
            fio_mb = fv["mb_per_s"]
            fio = {
                "iops": {"model": run["iops"], "fio": fv["iops"], "error_pct": _pct(run["iops"], fv["iops"])},
                "mb_per_s": {"model": run["mb_per_s"], "fio": fio_mb, "error_pct": _pct(run["mb_per_s"], fio_mb)},
                "latency_mean_ms": {"model": run["latency_mean_ms"], "fio": fv["lat_mean_ms"],
                                    "error_pct": _pct(run["latency_mean_ms"], fv["lat_mean_ms"])},
                "jobs": fv["jobs"],
            }
    notes = []
    if run.get("mode") == "open":
        notes.append("open loop: the model issues at the trace's times, so its IOPS follow the measured I/O by "
                     "construction (the IOPS comparison checks the alignment, latency checks the model)")
    fio_id = cap.get("datasets", {}).get("fio")
    return {
        "comparison_id": comparison_id(rid, cap["capture_id"], iostat.dataset_id, fio_id, vmap, min_coverage),
        "run_id": rid, "capture_id": cap["capture_id"], "measured_dataset_id": iostat.dataset_id,
        "fio_dataset_id": fio_id, "trace_id": run["trace_id"], "scenario": run.get("scenario"),
        "model_version": run.get("model_version"), "compare_version": model_version(COMPARE_MODEL),
        "mode": run.get("mode"), "outstanding": run.get("outstanding"), "min_coverage": min_coverage,
        "device_map": vmap,
        "alignment": {**asdict(al), "trace_start": _iso(al.trace_start_ns), "fio_job_start": _iso(al.fio_job_start_ns),
                      "iostat_interval_s": sec, "model_span_s": (int(run.get("last_done_ns") or 0)
                                                                 - int(run.get("first_arrival_ns") or 0)) / 1e9},
        "devices": out_devices,
        "fio": fio,
        "intervals": intervals,
        "notes": notes,
    }


# --------------------------------------------------------------------------------------------
# the result, kept
# --------------------------------------------------------------------------------------------
def comparison_id(run_id: str, capture_id: str, iostat_id: str, fio_id: str | None, device_map: dict[str, str],
                  min_coverage: float) -> str:
    """16 hex digits naming a comparison: the run (itself keyed on trace, data version, scenario
    and model version), the capture and its measured datasets, the devices, the coverage rule
    and the comparison code's version (``replay.version.COMPARE_MODEL``)."""
    what = [run_id, capture_id, iostat_id, fio_id, sorted(device_map.items()), float(min_coverage),
            model_version(COMPARE_MODEL)]
    return key_of(what)


def comparisons_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "results" / "model_vs_measured"


def comparison_frames(r: dict) -> dict[str, pl.DataFrame]:
    """A :func:`compare_measured` result as the warehouse holds it, by file name: the comparison
    (``measured_comparisons``), its rows per interval (``model_vs_measured``) and per device and
    metric (``model_vs_measured_summary``)."""
    cid = {"comparison_id": r["comparison_id"]}
    head = {**cid, **{k: r[k] for k in ("run_id", "capture_id", "measured_dataset_id", "fio_dataset_id", "trace_id",
                                        "scenario", "mode", "model_version", "compare_version")},
            "min_coverage": float(r["min_coverage"]), "interval_s": float(r["alignment"]["iostat_interval_s"]),
            "trace_start": datetime.fromisoformat(r["alignment"]["trace_start"]), "compared_at": datetime.now(tz=UTC)}
    floats = [*(c for m in METRICS for c in (f"model_{m}", f"measured_{m}", f"{m}_error_pct")), "measured_util_pct"]
    schema = {"comparison_id": pl.String, "device": pl.String, "interval_end": pl.Datetime("us", "UTC"),
              "start_since_trace_ns": pl.Int64, "coverage": pl.Float64, "scored": pl.Boolean,
              **dict.fromkeys(floats, pl.Float64)}
    intervals = pl.DataFrame([{**cid, **i, "interval_end": datetime.fromisoformat(i["interval_end"])}
                              for i in r["intervals"]], schema=schema)
    stats = ("mape_pct", "bias_pct", "total_error_pct", "model_mean", "measured_mean")
    summary = [{**cid, "source": "iostat", "device": dev, "metric": m, "scored_intervals": d[m]["scored_intervals"],
                **{k: d[m][k] for k in stats}} for dev, d in r["devices"].items() for m in METRICS]
    summary += [{**cid, "source": "fio", "device": None, "metric": m, "scored_intervals": None, "mape_pct": None,
                 "bias_pct": None, "total_error_pct": f["error_pct"], "model_mean": f["model"], "measured_mean": f["fio"]}
                for m, f in r["fio"].items() if m in METRICS]
    sschema = {"comparison_id": pl.String, "source": pl.String, "device": pl.String, "metric": pl.String,
               "scored_intervals": pl.Int64, **dict.fromkeys(stats, pl.Float64)}
    return {"comparison.parquet": pl.DataFrame([head]), "intervals.parquet": intervals,
            "summary.parquet": pl.DataFrame(summary, schema=sschema)}


def save_comparison(data_dir: str | Path, r: dict) -> Path:
    """Keep a :func:`compare_measured` result under ``results/model_vs_measured/<comparison_id>/``
    (:func:`comparison_frames`' files and ``manifest.json``, the whole document), written in a
    staging directory and renamed into place, so a partial result is never seen; the same
    comparison again replaces it."""
    remove_stale_staging(comparisons_root(data_dir))  # left by a compare killed outright
    with Staging(comparisons_root(data_dir)) as st:
        for name, df in comparison_frames(r).items():
            df.write_parquet(st.path / name)
        (st.path / "manifest.json").write_text(json.dumps(r, indent=1, default=str))
        st.publish(r["comparison_id"], replace=True)
    return comparisons_root(data_dir) / r["comparison_id"]


def matching_captures(data_dir: str | Path, trace_id: str) -> list[dict]:
    """The captures whose measured logs match ``trace_id``: those in which ``tiercast capture``
    recorded this trace itself (its fio latency log) together with iostat."""
    return [c for c in list_captures(data_dir)
            if trace_id in c.get("traces", {}).values() and "iostat" in c.get("datasets", {})]


def compare_and_save(data_dir: str | Path, run_id: str, capture_ref: str, devices: list[str] | None = None,
                     min_coverage: float = 1.0) -> dict:
    """:func:`compare_measured`, kept (:func:`save_comparison`); the result with ``saved``."""
    r = compare_measured(data_dir, run_id, capture_ref, devices, min_coverage=min_coverage)
    r["saved"] = str(save_comparison(data_dir, r))
    return r


def error_summary(r: dict) -> dict:
    """The headline of a comparison: per device, MAPE and bias of each metric."""
    return {"capture_id": r["capture_id"], "comparison_id": r["comparison_id"],
            "devices": {dev: {f"{m}_{k}": d[m][k] for m in METRICS for k in ("mape_pct", "bias_pct")}
                        for dev, d in r["devices"].items()}}
