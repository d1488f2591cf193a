"""The decision block that opens ``compare``, ``size`` and ``report``: the question (trace, window,
targets, replay mode), the answer in one sentence, the runner-up, and the assumptions (drives,
RAID, cache sizes, mode). The same dict is printed in the terminal, kept in ``--json`` as
``summary`` and drawn at the top of the HTML report; ``confidence`` (``pipelines.confidence``) is
the answer's spread across windows of the trace and the reasons it may not mean much.

No money here: a configuration's cost per month comes with the price table (issue 28); until then
the answer names the configuration and the margin to the targets only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipelines.catalog import TraceRef
from pipelines.confidence import confidence, confidence_line
from pipelines.headroom import headroom_line
from replay.scenario import Scenario
from schemas.units import format_bytes

#: how the summary names a latency metric
_METRIC = {"latency_p95_ms": "p95", "latency_p99_ms": "p99", "latency_mean_ms": "mean", "latency_p50_ms": "p50",
           "latency_max_ms": "max", "iops": "IOPS", "mb_per_s": "MB/s"}


def trace_window(trace: TraceRef) -> str:
    """The stretch of time the trace covers: ``49.9 s`` (with its start when the trace has a wall clock)."""
    vols = trace.manifest.get("volumes") or {}
    firsts = [v["first_ts_ns"] for v in vols.values() if isinstance(v, Mapping) and v.get("first_ts_ns") is not None]
    lasts = [v["last_ts_ns"] for v in vols.values() if isinstance(v, Mapping) and v.get("last_ts_ns") is not None]
    if not firsts:
        return "untimed"
    span_s = (max(lasts) - min(firsts)) / 1e9
    span = f"{span_s / 3600:,.1f} h" if span_s >= 3 * 3600 else f"{span_s / 60:,.1f} min" if span_s >= 600 \
        else f"{span_s:,.1f} s"
    start = trace.manifest.get("start_time")
    return f"{span} from {start}" if start else span


def mode_words(mode: Mapping) -> str:
    """``open loop (the trace's own timing)`` or ``closed loop, 16 outstanding``."""
    if mode.get("mode") == "closed":
        return f"closed loop, {mode.get('outstanding')} outstanding"
    return "open loop (the trace's own timing)"


def assumption(sc: Scenario) -> str:
    """One scenario's hardware in a line: drives and RAID, DRAM cache, SSD cache, FAST VP."""
    d = sc.describe()
    groups: dict[str, int] = {}
    for g in d["raid_groups"]:  # "rg0: RAID 5 x5 sas10k" -> count the identical groups
        kind = g.split(": ", 1)[1]
        groups[kind] = groups.get(kind, 0) + 1
    raid = ", ".join(f"{n} x {k}" if n > 1 else k for k, n in groups.items())
    drives = ", ".join(f"{n} {cls}" for cls, n in d["drives"].items())
    parts = [f"{drives} drives ({raid})"]
    parts.append("no DRAM cache" if sc.flash else f"DRAM cache {format_bytes(d['cache_bytes'])} ({d['dram_mode']})")
    if d["ssd_cache_bytes"]:
        parts.append(f"SSD cache {format_bytes(d['ssd_cache_bytes'])} ({sc.ssd_cache.kind})")
    if getattr(sc, "tiering", None):
        parts.append("FAST VP tiering")
    return f"{sc.name}: " + ", ".join(parts)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f} ms"


def _figures(row: Mapping) -> str:
    money = (f", {row['cost_per_month']:,.2f} {row['currency']} per month"
             if row.get("cost_per_month") is not None else "")
    return (f"p95 {_ms(row.get('latency_p95_ms'))}, p99 {_ms(row.get('latency_p99_ms'))}, mean "
            f"{_ms(row.get('latency_mean_ms'))}, {row.get('iops') or 0:,.0f} IOPS{money}")


#: what ``compare``'s confidence reports the spread of (no targets: the decision metrics)
COMPARE_METRICS = ("latency_p95_ms", "latency_p99_ms", "latency_mean_ms")


def compare_summary(trace: TraceRef, scenarios: Sequence[Scenario], rows: Sequence[Mapping]) -> dict:
    """``compare``'s decision: without targets, the configuration with the lowest p95 response
    time, and the next lowest as the runner-up (ties: the first given)."""
    mode = mode_words(rows[0])
    ranked = sorted(range(len(rows)), key=lambda i: (rows[i]["latency_p95_ms"] is None, rows[i]["latency_p95_ms"], i))
    best = rows[ranked[0]]
    out = {
        "question": (f"Which of {len(rows)} configurations gives trace {trace.name} ({trace.trace_id[:12]}, "
                     f"{best['requests']:,} requests over {trace_window(trace)}) the lowest p95 response time, "
                     f"replayed {mode}?"),
        "recommendation": f"{best['scenario']} has the lowest p95 response time: {_figures(best)}.",
        "runner_up": None,
        "assumptions": [f"replay: {mode}, every configuration alike", *(assumption(sc) for sc in scenarios)],
        "confidence": confidence(best, COMPARE_METRICS),
        # money where the answer has a price table (cloud volumes, replay.prices); None for an array
        "cost_per_month": best.get("cost_per_month"), "currency": best.get("currency"),
    }
    if len(ranked) > 1:
        second = rows[ranked[1]]
        gap = second["latency_p95_ms"] - best["latency_p95_ms"] if second["latency_p95_ms"] is not None else None
        out["runner_up"] = (f"{second['scenario']}: {_figures(second)}"
                            + (f" (p95 {gap:+,.2f} ms against the answer)" if gap is not None else ""))
    return out


def _miss(target, metrics: Mapping) -> str:
    """How far a metric is from its target: ``p95 6.10 ms, 1.10 ms over p95_ms<=5``."""
    v = metrics.get(target.metric)
    if v is None:
        return f"{target.text}: no value"
    name = _METRIC.get(target.metric, target.metric)
    unit = " ms" if target.metric.endswith("_ms") else ""
    gap = abs(v - target.value)
    side = "over" if target.op in ("<=", "<") else "under"
    if target.met(metrics):
        return f"{name} {v:,.2f}{unit} meets {target.text} by {gap:,.2f}{unit}"
    return f"{name} {v:,.2f}{unit}, {gap:,.2f}{unit} {side} {target.text}"


def size_summary(trace: TraceRef, res, targets: Sequence) -> dict:
    """``size``'s decision: the cheapest variant meeting every target and its margin, the next
    cheaper variant that was replayed (it missed) and by how much, else the closest miss."""
    rows = [v for v in res.variants if v.row]
    mode = mode_words(res.mode)
    targets_text = " and ".join(res.targets)
    first = rows[0].row if rows else {}
    out = {
        "question": (f"Which is the cheapest of {len(res.variants)} variants of {res.variants[0].scenario.name.split()[0]}"
                     f" that meets {targets_text} on trace {trace.name} ({trace.trace_id[:12]}, "
                     f"{first.get('requests', 0):,} requests over {trace_window(trace)}), replayed {mode}?"),
        "recommendation": None, "runner_up": None, "confidence": None,
        "assumptions": [f"replay: {mode}, every variant alike",
                        "cost: the position of each --vary value in its list, cheapest first (no prices yet)",
                        assumption((res.chosen or res.variants[0]).scenario),
                        *(f"varied: {k} over {', '.join(dict.fromkeys(v.values[k] for v in res.variants))}"
                          for k in res.variants[0].values)],
    }
    judged = res.chosen or _closest(rows, targets)
    if judged is not None:  # the spread of the target metrics of the answer (or the closest miss)
        out["confidence"] = confidence(judged.row, list(dict.fromkeys(t.metric for t in targets)))
    if res.chosen is not None:
        c = res.chosen
        metrics = c.row
        out["recommendation"] = (f"{c.label} is the cheapest variant meeting {targets_text}: "
                                 + "; ".join(_miss(t, metrics) for t in targets) + ".")
        at = res.variants.index(c)
        cheaper = [v for v in res.variants[:at] if v.row and not v.meets]
        if cheaper:
            r = cheaper[-1]  # the most expensive of the cheaper ones: the next cheaper configuration
            out["runner_up"] = (f"the next cheaper replayed variant, {r.label}, misses: "
                                + "; ".join(_miss(t, r.row) for t in targets if not t.met(r.row)))
        out["headroom"] = res.headroom
    else:
        out["recommendation"] = f"No variant meets {targets_text}."
        if rows:
            best = _closest(rows, targets)
            out["runner_up"] = (f"closest: {best.label}: " + "; ".join(_miss(t, best.row) for t in targets))
    return out


def _closest(variants: Sequence, targets: Sequence):
    """The replayed variant nearest the first target (the closest miss when none meets)."""
    if not variants:
        return None
    key = targets[0]
    return min(variants, key=lambda v: 0 if key.met(v.row) else abs((v.row.get(key.metric) or 0) - key.value))


def summary_lines(summary: Mapping) -> list[str]:
    """The block as terminal lines: question, answer, runner-up, assumptions."""
    lines = [f"question: {summary['question']}", f"answer: {summary['recommendation']}"]
    if summary.get("runner_up"):
        lines.append(f"runner-up: {summary['runner_up']}")
    lines += [f"assumes: {a}" for a in summary["assumptions"]]
    if summary.get("headroom"):
        lines.append(headroom_line(summary["headroom"]))
    if "confidence" in summary:
        lines += confidence_line(summary["confidence"])
    return lines
