"""How far an answer from one replay can be trusted (issue 30, item 3).

A replay's percentiles are of the whole trace. :func:`windows` cuts the run into windows (an hour
each for a trace of ten hours or more, else tenths of the run, whole intervals) and gives each
window's requests, IOPS, mean and p50 / p95 / p99 response time, exact from the per-interval
latency histogram the replay keeps (a replay writes them into its summary as ``windows``).
:func:`confidence` turns them into the spread of a target metric across windows (the worst window
and the window-to-window range) and says when a trace is too short for the answer to mean much.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import polars as pl

#: windows of a short trace: the run cut into this many
WINDOWS = 10
#: a trace at least this long is cut into hours (at least 10 of them)
HOUR_WINDOWS_FROM_NS = 10 * 3600 * 10**9
HOUR_NS = 3600 * 10**9
#: a percentile resting on fewer requests above it than this is noise (p99 of 10,000 requests: 100)
MIN_TAIL_REQUESTS = 100
#: the metrics a window reports, summary key -> the window's column
WINDOW_METRICS = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_mean_ms", "iops")


def window_ns(first_ns: int, end_ns: int, interval_ns: int) -> int:
    """The window length: an hour for a run of ten hours or more, else a tenth of the run rounded
    up to whole intervals."""
    span = max(end_ns - first_ns, interval_ns)
    if span >= HOUR_WINDOWS_FROM_NS:
        return HOUR_NS
    return max(1, math.ceil(span / WINDOWS / interval_ns)) * interval_ns


def windows(hist: pl.DataFrame, vol: pl.DataFrame, interval_ns: int,
            percentiles: Callable[[pl.DataFrame, list[str]], pl.DataFrame]) -> list[dict]:
    """Per window (in time order): ``window``, ``start_s``, ``end_s`` (from the first interval),
    ``requests``, ``iops``, ``latency_mean_ms``, ``latency_p50_ms`` / ``p95`` / ``p99``.
    ``hist``: (interval_start_ns, ..., lat_bucket, n) rows; ``vol``: the per-interval volume table
    (requests, latency_mean_ms); ``percentiles(hist, keys)``: p50/p95/p99 per key group."""
    if vol.is_empty() or hist.is_empty():
        return []
    first = int(vol["interval_start_ns"].min())
    end = int(vol["interval_start_ns"].max()) + interval_ns
    w_ns = window_ns(first, end, interval_ns)

    def w(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(window=((pl.col("interval_start_ns") - first) // w_ns).cast(pl.Int64))

    h = w(hist).group_by("window", "lat_bucket").agg(pl.col("n").sum())
    pct = percentiles(h, ["window"])
    sums = (w(vol).group_by("window")
            .agg(pl.col("requests").sum(), (pl.col("latency_mean_ms").fill_null(0) * pl.col("requests")).sum()
                 .alias("lat_sum"), pl.col("interval_start_ns").max().alias("last_ns")))
    df = sums.join(pct, on="window", how="left").sort("window")
    out = []
    for r in df.iter_rows(named=True):
        start = first + r["window"] * w_ns
        stop = min(start + w_ns, end)
        out.append({"window": r["window"], "start_s": (start - first) / 1e9, "end_s": (stop - first) / 1e9,
                    "requests": r["requests"], "iops": r["requests"] / ((stop - start) / 1e9),
                    "latency_mean_ms": r["lat_sum"] / r["requests"] if r["requests"] else None,
                    **{k: r.get(k) for k in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")}})
    return out


def _tail(metric: str) -> float | None:
    """The share of requests above a percentile metric (p99: 0.01), None for other metrics."""
    if metric.startswith("latency_p") and metric.endswith("_ms"):
        q = metric[len("latency_p"):-len("_ms")]
        if q.isdigit():
            return 1 - int(q) / 100
    return None


def confidence(run: Mapping, metrics: Sequence[str], higher_is_worse: Mapping[str, bool] | None = None) -> dict:
    """The spread of each of ``metrics`` across the run's windows, and why the answer may not mean
    much: ``{"windows", "window_s", "metrics": {metric: {"whole", "worst_window", "worst_window_s",
    "best_window", "range"}}, "warnings": [...]}``. ``run``: a run summary or comparison row with
    ``windows``, the whole-run values, ``measured_requests`` and ``warnings`` (the physics checks).
    A latency is worse higher, IOPS lower (``higher_is_worse`` overrides)."""
    ws = [x for x in run.get("windows") or [] if x.get("requests")]
    out: dict = {"windows": len(ws), "window_s": (ws[0]["end_s"] - ws[0]["start_s"]) if ws else None,
                 "metrics": {}, "warnings": []}
    for m in metrics:
        vals = [(x[m], x) for x in ws if x.get(m) is not None]
        if not vals:
            continue
        worse_high = (higher_is_worse or {}).get(m, m != "iops" and not m.endswith("hit_ratio"))
        worst = max(vals, key=lambda v: v[0]) if worse_high else min(vals, key=lambda v: v[0])
        best = min(vals, key=lambda v: v[0]) if worse_high else max(vals, key=lambda v: v[0])
        out["metrics"][m] = {"whole": run.get(m), "worst_window": worst[0],
                             "worst_window_s": [worst[1]["start_s"], worst[1]["end_s"]], "best_window": best[0],
                             "range": max(v for v, _ in vals) - min(v for v, _ in vals)}
    n = run.get("measured_requests") or run.get("requests") or 0
    for m in metrics:
        tail = _tail(m)
        if tail is not None and n * tail < MIN_TAIL_REQUESTS:
            out["warnings"].append(f"trace too short for {m.removeprefix('latency_').removesuffix('_ms')}: it rests "
                                   f"on {n * tail:,.0f} requests above it (fewer than {MIN_TAIL_REQUESTS}); a longer "
                                   "trace would move it")
    if ws and len(ws) < 3:
        out["warnings"].append(f"only {len(ws)} window(s) with requests: no spread to speak of")
    for f in run.get("warnings") or []:
        if f.get("check") == "fast_vp_window":
            out["warnings"].append("trace too short for FAST VP: the run is shorter than one relocation window, so "
                                   "no slice moved and the answer shows tiering before it acts")
    return out


def seconds_text(s: float) -> str:
    """A time for a reader: ``0.03 s``, ``45 s``, ``12 min``, ``3.5 h``."""
    if s >= 2 * 3600:
        return f"{s / 3600:,.3g} h"
    if s >= 120:
        return f"{s / 60:,.3g} min"
    return f"{s:,.3g} s"


def confidence_line(conf: Mapping) -> list[str]:
    """The terminal lines: the spread of each metric, then the warnings."""
    if not conf or not conf.get("windows"):
        return ["confidence: no per-window figures (a run from before they were kept: replay it again)"]
    unit = {"iops": " IOPS"}
    parts = []
    for m, s in conf["metrics"].items():
        name = m.removeprefix("latency_").removesuffix("_ms") if m.startswith("latency_") else m
        u = unit.get(m, " ms" if m.endswith("_ms") else "")
        a, b = s["worst_window_s"]
        parts.append(f"{name} {s['whole']:,.2f}{u} over the run, {s['worst_window']:,.2f}{u} in the worst window "
                     f"({seconds_text(a)} to {seconds_text(b)}), range {s['range']:,.2f}{u}")
    head = f"confidence ({conf['windows']} windows of {seconds_text(conf['window_s'])}): " + "; ".join(parts)
    return [head, *(f"caution: {w}" for w in conf["warnings"])]
