"""Report step: one self-contained, offline HTML page of interactive what-if charts (plotly, its
JavaScript inlined once; no CDN, fonts, MathJax or map data fetched), printable, built from the
DuckDB warehouse (loaded first when stale), with every chart's numbers also written as CSV beside
it (``<out stem>_tables/<chart>.csv``).

Each chart appears only when its data exists, for the selected runs side by side, with a caption
stating what it shows in words computed from the same rows. The page embeds each figure as JSON
(``<script type="application/json" class="figure" data-chart=NAME>``), so what is drawn can be
read back and checked against the warehouse.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.files import atomic_output, atomic_output_dir, check_output, check_output_dir

#: the comfort lines of the sweep chart (seed 000: 10 ms for HDD arrays; seed 001: 1 ms for flash)
COMFORT_MS = (10.0, 1.0)
#: a run has warmed up when its hit ratio first reaches this share of its level over the last
#: 10 % of the intervals
WARM_SHARE = 0.9
TAIL_SHARE = 0.1
#: the MRC marks each scenario's cache sizes on this curve: the exact one first, then the page
#: size nearest this
MRC_PAGE = 8192


@dataclass
class Chart:
    """One section: a plotly figure (a dict), its caption, its numbers (shown and as CSV), and
    optionally longer numbers (CSV only, ``<name>_points.csv``)."""

    name: str
    title: str
    caption: str | list[str]  # a list: one statement per line (per run, per trace ...)
    figure: dict | None
    table: pl.DataFrame
    points: pl.DataFrame | None = None


@dataclass
class Selection:
    """What the page covers: runs (one row each, with its label), sweeps, traces."""

    runs: pl.DataFrame
    trace_ids: list[str]
    sweep_ids: list[str] | None
    labels: dict[str, str] = field(default_factory=dict)  # run_id -> label
    trace_names: dict[str, str] = field(default_factory=dict)  # trace_id -> its source file's name

    def trace_name(self, trace_id: str) -> str:
        """What the page calls a trace: its source file's name (the id's first 12 characters without one)."""
        return self.trace_names.get(trace_id, trace_id[:12])

    def only(self, keep: pl.Expr) -> Selection:
        """The runs for which ``keep`` holds (a chart of one mechanism)."""
        return Selection(self.runs.filter(keep), self.trace_ids, self.sweep_ids, self.labels, self.trace_names)


# --------------------------------------------------------------------------------------------
# the warehouse
# --------------------------------------------------------------------------------------------
class Warehouse:
    """A read-only connection to the warehouse and what it holds."""

    def __init__(self, data_dir: Path):
        import duckdb  # noqa: F401  (con.sql: relations come with DuckDB's Python layer, see pipelines/duckdb_engine.py)

        from pipelines.warehouse import db_path, reader

        self.con = reader(db_path(data_dir), data_dir)
        self.columns: dict[str, set[str]] = {}
        for t, c in self.con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                     "WHERE table_schema = 'main'").fetchall():
            self.columns.setdefault(t, set()).add(c)

    def has(self, table: str, *cols: str) -> bool:
        return table in self.columns and all(c in self.columns[table] for c in cols)

    def sql(self, q: str, params: dict | None = None) -> pl.DataFrame:
        return self.con.sql(q, params=params or {}).pl()

    def close(self) -> None:
        self.con.close()


def _fresh(data_dir: Path) -> None:
    """Load the warehouse when it is missing or older than the data directory."""
    import duckdb

    from pipelines.load import load
    from pipelines.warehouse import connect, db_path, staleness

    db = db_path(data_dir)
    if db.exists():
        con = connect(db, read_only=True)
        try:
            stale = staleness(con, data_dir) is not None
        except duckdb.Error:  # an older schema without load_state: the load migrates it
            stale = True
        finally:
            con.close()
        if not stale:
            return
    load(data_dir)


def _select(wh: Warehouse, trace_id: str | None, run_ids: list[str] | None,
            sweep_ids: list[str] | None) -> Selection:
    """The runs: ``run_ids`` in that order, else the newest run of every (trace, scenario)."""
    names = wh.sql("SELECT trace_id, source_path FROM traces")
    short = {t: Path(p).stem if p else t[:12] for t, p in names.iter_rows()}
    if run_ids:
        runs = wh.sql("SELECT r.*, s.* EXCLUDE (run_id) FROM runs r JOIN run_summary s USING (run_id) "
                      "WHERE run_id IN (SELECT unnest($ids))", {"ids": run_ids})
        missing = [r for r in run_ids if r not in set(runs["run_id"])]
        if missing:
            raise LookupError(f"report: run(s) {', '.join(missing)} not in the warehouse")
        runs = runs.join(pl.DataFrame({"run_id": run_ids, "_order": range(len(run_ids))}), on="run_id").sort(
            "_order").drop("_order")
    else:
        runs = wh.sql("SELECT * FROM latest_runs ORDER BY trace_id, scenario") if wh.has("runs") else pl.DataFrame()
    if trace_id is not None and runs.height:
        runs = runs.filter(pl.col("trace_id") == trace_id)
    # the traces whose curves, skew and sweeps are shown: the one asked for, those of the runs
    # asked for, else every trace
    traces = ([trace_id] if trace_id else list(dict.fromkeys(runs["trace_id"].to_list())) if run_ids
              else sorted(short))
    sel = Selection(runs, traces, sweep_ids, trace_names=short)
    if runs.height:
        several = runs["trace_id"].n_unique() > 1
        seen: dict[str, int] = {}
        for rid, tid, sc in runs.select("run_id", "trace_id", "scenario").iter_rows():
            label = f"{sc} on {short.get(tid, tid[:12])}" if several else sc
            seen[label] = seen.get(label, 0) + 1
            sel.labels[rid] = label if seen[label] == 1 else f"{label} ({rid[:8]})"
    return sel


def _ids(sel: Selection) -> dict:
    return {"ids": sel.runs["run_id"].to_list() if sel.runs.height else []}


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------
def _time_axis(t_s: float) -> tuple[float, str]:
    """(divisor, unit) for a time axis spanning ``t_s`` seconds."""
    return (3600.0, "h") if t_s > 3 * 3600 else (60.0, "min") if t_s > 20 * 60 else (1.0, "s")


def _dur(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "never"
    div, unit = _time_axis(seconds)
    return f"{seconds / div:,.3g} {unit}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f} %"


#: IEC units of byte axes and captions, smallest first
IEC_UNITS = (("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("PiB", 1 << 50))
#: a byte axis has at most this many ticks
MAX_TICKS = 8


def iec(n_bytes: float) -> str:
    """``n_bytes`` in the largest IEC unit it reaches: "1 GiB", "1.5 MiB", "512 KiB", "0 B"."""
    name, k = next(((u, k) for u, k in reversed(IEC_UNITS) if abs(n_bytes) >= k), IEC_UNITS[0])
    v = n_bytes / k
    return f"{v:,.0f} {name}" if float(v).is_integer() else f"{v:,.3g} {name}"


def byte_ticks(lo_bytes: float, hi_bytes: float, log: bool = False) -> dict:
    """Plotly axis settings (``tickvals``, ``ticktext``) that label a byte axis in IEC units ("1 GiB",
    not plotly's SI "1.07G" or "1B" for a billion). A log axis is ticked at powers of two (every
    1, 2, 4 ... powers, so at most MAX_TICKS); a linear one at round steps of one unit from 0."""
    lo_bytes, hi_bytes = float(lo_bytes or 0), float(hi_bytes or 0)
    if log:
        lo_p = math.floor(math.log2(max(lo_bytes, 1)))
        hi_p = math.ceil(math.log2(max(hi_bytes, lo_bytes, 2)))
        step = next(k for k in (1, 2, 5, 10, 20) if (hi_p - lo_p) // k + 2 <= MAX_TICKS)
        start = lo_p - lo_p % step  # on the grid: with steps of 10 powers, 1 KiB, 1 MiB, 1 GiB ...
        vals = [float(2 ** p) for p in range(start, hi_p + step, step)]
    else:
        hi = max(hi_bytes, 1.0)
        name, k = next(((u, k) for u, k in reversed(IEC_UNITS) if hi >= k), IEC_UNITS[0])
        raw = hi / k / (MAX_TICKS - 2)
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw) * k
        vals = [i * step for i in range(0, int(hi // step) + 2)]
    return {"tickvals": vals, "ticktext": [iec(v) for v in vals], "tickmode": "array"}


def _change(x: float, base: float) -> str:
    return f"{100 * (x / base - 1):+.0f} %" if base else "n/a"


def _list(v) -> list:
    """Plain JSON numbers (plotly would encode numpy arrays as base64)."""
    return [None if (isinstance(x, float) and math.isnan(x)) else x for x in (v.to_list() if hasattr(v, "to_list")
                                                                            else list(v))]


#: every chart's legend: outside the plot area, right of it (never over a trace or an axis title)
LEGEND = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top", "font": {"size": 11}}


def _layout(title: str, **kw) -> dict:
    base = {"title": {"text": title, "font": {"size": 14}}, "template": "plotly_white", "height": 380,
            "margin": {"l": 70, "r": 20, "t": 50, "b": 50}, "hovermode": "x unified", "legend": LEGEND}
    base.update(kw)
    return base


def _subplots(rows: int, titles: list[str], height: int):
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.07)
    fig.update_layout(template="plotly_white", height=height, hovermode="x unified",
                      margin={"l": 70, "r": 20, "t": 40, "b": 40}, legend=LEGEND)
    return fig


def _color(i: int) -> str:
    return ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
            "#7f7f7f", "#bcbd22")[i % 10]


def _per_run_intervals(wh: Warehouse, sel: Selection, table: str, exprs: dict[str, str],
                       where: str = "") -> pl.DataFrame:
    """Per (run, interval) aggregates of ``table`` (``exprs``: column -> SQL aggregate), time in s."""
    cols = ", ".join(f"{e} AS {c}" for c, e in exprs.items())
    return wh.sql(f"SELECT run_id, interval_start_ns / 1e9 AS t_s, {cols} FROM {table} "
                  f"WHERE run_id IN (SELECT unnest($ids)) {where} GROUP BY ALL ORDER BY run_id, t_s", _ids(sel))


def _labelled(df: pl.DataFrame, sel: Selection) -> pl.DataFrame:
    """``df`` (rows per run) with the run's label first, runs in the selection's order."""
    order = {rid: i for i, rid in enumerate(sel.runs["run_id"])}
    return (df.with_columns(pl.col("run_id").replace_strict(sel.labels).alias("scenario"),
                            pl.col("run_id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
            .sort("_order", maintain_order=True).drop("_order").select("scenario", pl.exclude("scenario")))


def _warm_up_s(t: np.ndarray, y: np.ndarray) -> float | None:
    """When ``y`` first reaches WARM_SHARE of its mean over the last TAIL_SHARE of the intervals."""
    ok = ~np.isnan(y)
    t, y = t[ok], y[ok]
    if not len(y):
        return None
    tail = y[-max(1, int(round(len(y) * TAIL_SHARE))):].mean()
    if tail <= 0:
        return None
    return float(t[np.argmax(y >= WARM_SHARE * tail)])


def _lines(fig, df: pl.DataFrame, sel: Selection, y: str, row: int | None = None, name: str = "",
           dash: str | None = None, x: str = "t_s", div: float = 1.0, legend: bool | set = True) -> None:
    """One line per run (colour = run) of column ``y`` against time. ``legend``: a set (one per
    figure of panels) gives each run one legend entry, at the first panel where it has a line."""
    import plotly.graph_objects as go

    for i, rid in enumerate(sel.runs["run_id"]):
        g = df.filter(pl.col("run_id") == rid)
        if g.is_empty() or g[y].is_null().all():
            continue
        show = legend if isinstance(legend, bool) else rid not in legend
        if isinstance(legend, set):
            legend.add(rid)
        tr = go.Scatter(x=_list(g[x] / div), y=_list(g[y]), mode="lines+markers", marker={"size": 3},
                        name=f"{sel.labels[rid]}{' ' + name if name else ''}", legendgroup=sel.labels[rid],
                        showlegend=show, line={"color": _color(i), "dash": dash}, meta=[rid, y])
        if row is None:
            fig.add_trace(tr)
        else:
            fig.add_trace(tr, row=row, col=1)


# --------------------------------------------------------------------------------------------
# the charts
# --------------------------------------------------------------------------------------------
def _hit_ratio(wh: Warehouse, sel: Selection) -> Chart | None:
    """DRAM read / write and SSD cache hit ratios per interval (page-weighted over volumes)."""
    if not sel.runs.height or not wh.has("interval_metrics", "read_hit_pages"):
        return None
    exprs = {"dram_read_hit_ratio": "sum(read_hit_pages) / nullif(sum(read_pages), 0)",
             "dram_write_hit_ratio": "sum(write_hit_pages) / nullif(sum(write_pages), 0)"}
    ssd = wh.has("interval_metrics", "ssd_read_hits", "ssd_write_hits")
    if ssd:
        hits = "sum(ssd_read_hits) + sum(ssd_write_hits)"
        exprs["ssd_hit_ratio"] = (f"({hits}) / nullif({hits} + sum(ssd_read_misses) + sum(ssd_write_misses), 0)")
    sel = sel.only(pl.col("dram_mode") != "none")  # all-flash: no cache
    if not sel.runs.height:
        return None
    df = _per_run_intervals(wh, sel, "interval_metrics", exprs)
    if df.is_empty():
        return None
    div, unit = _time_axis(float(df["t_s"].max()))
    tiers = [("dram_read_hit_ratio", "DRAM read hit ratio"), ("dram_write_hit_ratio", "DRAM write hit ratio"),
             *((("ssd_hit_ratio", "SSD cache hit ratio"),) if ssd else ())]
    tiers = [t for t in tiers if not df[t[0]].is_null().all()] or tiers[:1]  # no empty panel (a read-only trace)
    # one panel per cache tier, one line per run in each (at most MAX_SERIES runs per chart)
    fig = _subplots(len(tiers), [t for _, t in tiers], 250 * len(tiers) + 80)
    shown: set[str] = set()  # one legend entry per run
    for row, (col, _) in enumerate(tiers, 1):
        _lines(fig, df, sel, col, row=row, div=div, legend=shown)
        fig.update_yaxes(range=[0, 1.02], row=row, col=1)
    fig.update_xaxes(title_text=f"time ({unit})", row=len(tiers), col=1)
    said = []
    for rid in sel.runs["run_id"]:
        g = df.filter(pl.col("run_id") == rid)
        col = "ssd_hit_ratio" if ssd and not g["ssd_hit_ratio"].is_null().all() else "dram_read_hit_ratio"
        y = g[col].cast(pl.Float64).fill_null(float("nan")).to_numpy()
        warm = _warm_up_s(g["t_s"].to_numpy(), y)
        tail = y[~np.isnan(y)][-max(1, int(round(np.count_nonzero(~np.isnan(y)) * TAIL_SHARE))):]
        tier = "SSD cache" if col == "ssd_hit_ratio" else "DRAM read"
        said.append(f"{sel.labels[rid]}: {tier} hit ratio {_pct(float(tail.mean()) if len(tail) else None)} at the "
                    f"end, warm-up {_dur(warm)}")
    return Chart("hit_ratio", "Hit ratio over time per cache tier", said, fig.to_dict(),
                 _labelled(df, sel))


def _mrc(wh: Warehouse, sel: Selection) -> Chart | None:
    """The traces' LRU hit-ratio curves, each scenario's DRAM and SSD cache sizes marked on them."""
    if not wh.has("mrc") or not sel.trace_ids:
        return None
    curves = wh.sql("SELECT trace_id, method, page_size, cache_bytes, hit_ratio FROM mrc "
                    "WHERE trace_id IN (SELECT unnest($t)) ORDER BY trace_id, method, page_size, cache_bytes",
                    {"t": sel.trace_ids})
    if curves.is_empty():
        return None
    import plotly.graph_objects as go

    fig = go.Figure(layout=_layout("LRU hit-ratio curve (exact stack distances or SHARDS)",
                                   xaxis={"title": "cache size", "type": "log",
                                          **byte_ticks(curves["cache_bytes"].min(), curves["cache_bytes"].max(),
                                                       log=True)},
                                   yaxis={"title": "hit ratio", "range": [0, 1.02]}, hovermode="closest"))
    marks, said = [], []
    for (tid, method, page), g in curves.group_by(["trace_id", "method", "page_size"], maintain_order=True):
        fig.add_trace(go.Scatter(x=_list(g["cache_bytes"]), y=_list(g["hit_ratio"]), mode="lines+markers",
                                 name=f"{sel.trace_name(tid)} {method} {page // 1024} KiB pages", line={"color": "#444"},
                                 marker={"size": 4}, meta=[tid, method, page]))
    for (tid,), g in curves.group_by(["trace_id"], maintain_order=True):
        best = g.sort([pl.col("method") != "exact", (pl.col("page_size") - MRC_PAGE).abs()]).head(1)
        method, page = best["method"][0], best["page_size"][0]
        c = g.filter((pl.col("method") == method) & (pl.col("page_size") == page))
        x, y = np.log(c["cache_bytes"].to_numpy().astype(float)), c["hit_ratio"].to_numpy()
        if not sel.runs.height:
            continue
        for row in sel.runs.filter(pl.col("trace_id") == tid).iter_rows(named=True):
            for kind, col in (("DRAM", "dram_cache_bytes"), ("SSD", "ssd_cache_bytes")):
                size = row.get(col) or 0
                if size > 0:
                    hr = float(np.interp(math.log(size), x, y))
                    marks.append({"trace_id": tid, "scenario": sel.labels[row["run_id"]], "run_id": row["run_id"], "cache": kind,
                                  "cache_bytes": int(size), "lru_hit_ratio": hr, "method": method, "page_size": page})
                    said.append(f"{sel.labels[row['run_id']]} {kind} {iec(size)}: {_pct(hr)}")
    mk = pl.DataFrame(marks) if marks else None
    if mk is not None:  # one series per cache kind (not per run: at most a few series), a point per run
        colour = {rid: _color(i) for i, rid in enumerate(sel.runs["run_id"])}  # a run's colour in every chart
        for (kind,), g in mk.group_by(["cache"], maintain_order=True):
            fig.add_trace(go.Scatter(x=_list(g["cache_bytes"]), y=_list(g["lru_hit_ratio"]), mode="markers",
                                     name=f"{kind} cache size of each run", meta=["marks", kind],
                                     customdata=[[lab, iec(b)] for lab, b in g.select("scenario", "cache_bytes")
                                                 .iter_rows()],
                                     hovertemplate="%{customdata[0]}: " + kind + " %{customdata[1]}, LRU hit "
                                                   "ratio %{y:.1%}<extra></extra>",
                                     marker={"size": 12, "color": [colour[r] for r in g["run_id"]],
                                             "symbol": "circle" if kind == "DRAM" else "diamond",
                                             "line": {"width": 1, "color": "#333"}}))
    caption = (["LRU hit ratio the trace would get at each scenario's cache size:", *said]
               if said else "LRU hit-ratio curve of the trace (no replay of it selected to mark).")
    return Chart("mrc", "LRU hit-ratio curve and the scenarios' cache sizes", caption, fig.to_dict(),
                 mk if mk is not None else curves, curves)


def _write_cache(wh: Warehouse, sel: Selection) -> Chart | None:
    """Seed 002's picture: dirty %, flush rate, forced flushes and throttling per interval."""
    if not sel.runs.height or not wh.has("interval_metrics", "dirty_pct_max", "throttle_delay_sum_ms"):
        return None
    sub = sel.only(pl.col("dram_mode").is_in(["flare", "mcx"]))
    runs = sub.runs
    if not runs.height:
        return None
    df = _per_run_intervals(wh, sub, "interval_metrics", {
        "dirty_pct_max": "max(dirty_pct_max)", "flush_mb_per_s": "sum(flush_mb_per_s)",
        "forced_flushes": "max(forced_flushes)", "forced_flush_stall_ms": "max(forced_flush_stall_ms)",
        "throttle_delay_sum_ms": "sum(throttle_delay_sum_ms)"})
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(4, ["write cache dirty % (max in interval)", "flush rate (MB/s)", "forced flushes",
                        "throttle delay (ms, summed over requests)"], 860)
    shown: set[str] = set()  # one legend entry per run
    for row, col in enumerate(("dirty_pct_max", "flush_mb_per_s", "forced_flushes", "throttle_delay_sum_ms"), 1):
        _lines(fig, df, sub, col, row=row, div=div, legend=shown)
    said = []
    marks: dict[tuple[str, float], list[str]] = {}  # (high/low, %) -> the runs with that watermark
    for r in runs.iter_rows(named=True):
        for w in ("high", "low"):
            pct = r.get(f"dram_{w}_watermark_pct")
            if pct is not None:
                marks.setdefault((w, float(pct)), []).append(sel.labels[r["run_id"]])
    for (w, pct), who in marks.items():  # one line and one label per level: labels never print over each other
        fig.add_hline(y=pct, row=1, col=1, line={"dash": "dot", "color": "#888"},
                      annotation={"text": f"{w} watermark {pct:g} %" + (f" ({', '.join(who)})" if len(runs) > len(who)
                                                                         else ""),
                                  "yanchor": "bottom" if w == "high" else "top", "font": {"size": 10}},
                      annotation_position="top left" if w == "high" else "bottom left")
    for r in runs.iter_rows(named=True):
        g = df.filter(pl.col("run_id") == r["run_id"])
        said.append(f"{sel.labels[r['run_id']]} ({r['dram_mode'].upper()}): dirty up to "
                    f"{g['dirty_pct_max'].max() or 0:.0f} %, {int(g['forced_flushes'].sum())} forced flushes "
                    f"(stall {_dur(float(g['forced_flush_stall_ms'].sum()) / 1e3)}), throttled "
                    f"{_dur(float(g['throttle_delay_sum_ms'].sum()) / 1e3)} in all, flushing "
                    f"{r['flush_mb_per_s']:.1f} MB/s")
    fig.update_xaxes(title_text=f"time ({unit})", row=4, col=1)
    return Chart("write_cache", "DRAM write cache: dirty pages, flushing, forced flushes, throttling",
                 said, fig.to_dict(),
                 _labelled(df, sel))


SSD_RATES = ("ssd_read_hits_per_s", "ssd_read_misses_per_s", "ssd_write_hits_per_s", "ssd_write_misses_per_s")


def _ssd_cache(wh: Warehouse, sel: Selection) -> Chart | None:
    """Seed 000's Unisphere charts: SSD cache read/write hits and misses per s, and fill %."""
    if not sel.runs.height or not wh.has("interval_metrics", *SSD_RATES, "ssd_fill_pct"):
        return None
    if "ssd_cache_bytes" not in sel.runs.columns:  # runs from before replays recorded it
        return None
    sub = sel.only(pl.col("ssd_cache_bytes").fill_null(0) > 0)
    runs = sub.runs
    if not runs.height:
        return None
    df = _per_run_intervals(wh, sub, "interval_metrics",
                            {**{c: f"sum({c})" for c in SSD_RATES}, "ssd_fill_pct": "max(ssd_fill_pct)"})
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(5, ["read hits/s", "read misses/s", "write hits/s", "write misses/s", "SSD cache used (%)"],
                    1000)
    shown: set[str] = set()  # one legend entry per run
    for row, col in enumerate((*SSD_RATES, "ssd_fill_pct"), 1):
        _lines(fig, df, sub, col, row=row, div=div, legend=shown)
    fig.update_xaxes(title_text=f"time ({unit})", row=5, col=1)
    said = []
    for r in runs.iter_rows(named=True):
        g = df.filter(pl.col("run_id") == r["run_id"])
        last = g.tail(1)
        said.append(f"{sel.labels[r['run_id']]} ({iec(r['ssd_cache_bytes'])}): {last['ssd_fill_pct'][0]:.1f} % "
                    f"used at the end, half full after {_dur(r.get('ssd_time_to_50pct_fill_s'))}; last interval "
                    f"{last['ssd_read_hits_per_s'][0]:,.0f} read hits/s vs {last['ssd_read_misses_per_s'][0]:,.0f} "
                    "misses/s")
    return Chart("ssd_cache", "SSD cache: hits and misses per second, fill", said, fig.to_dict(),
                 _labelled(df, sel))


def _sweeps(wh: Warehouse, sel: Selection) -> list[Chart] | None:
    """IOPS and mean response time against outstanding I/Os, with the comfort lines: a chart per
    SWEEPS_PER_CHART sweeps (with the two comfort lines, at most MAX_SERIES series a panel)."""
    if not wh.has("sweeps"):
        return None
    if sel.sweep_ids is not None:
        df = wh.sql("SELECT * FROM sweeps WHERE sweep_id IN (SELECT unnest($s)) ORDER BY trace_id, scenario, "
                    "sweep_id, outstanding", {"s": sel.sweep_ids})
    else:
        df = wh.sql("SELECT * FROM sweeps WHERE trace_id IN (SELECT unnest($t)) QUALIFY row_number() OVER ("
                    "PARTITION BY trace_id, scenario, outstanding ORDER BY finished_at DESC NULLS LAST, sweep_id) = 1 "
                    "ORDER BY trace_id, scenario, outstanding", {"t": sel.trace_ids})
    if df.is_empty():
        return None
    groups = list(df.group_by(["trace_id", "scenario", "sweep_id"], maintain_order=True))
    several = df["trace_id"].n_unique() > 1
    parts = [groups[k:k + SWEEPS_PER_CHART] for k in range(0, len(groups), SWEEPS_PER_CHART)]
    charts = []
    for n, part in enumerate(parts, 1):
        c = _sweep_chart(part, sel, several)
        if len(parts) > 1:
            c.name = c.name if n == 1 else f"{c.name}_{n}"
            first = SWEEPS_PER_CHART * (n - 1) + 1
            c.title += f" (sweeps {first}-{first + len(part) - 1} of {len(groups)})"
        charts.append(c)
    return charts


#: sweeps drawn in one chart: with the two comfort lines, MAX_SERIES series in its response-time panel
SWEEPS_PER_CHART = 4


def _sweep_chart(groups: list, sel: Selection, several: bool) -> Chart:
    """One sweeps chart of ``groups`` ((trace, scenario, sweep id), rows), in colours of their order."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["host IOPS", "mean response time (ms)"])
    fig.update_layout(template="plotly_white", height=420, hovermode="closest", legend=LEGEND,
                      title={"text": "Closed loop: IOPS and response time vs outstanding I/Os", "font": {"size": 14}})
    said = []
    for i, ((tid, sc, sid), g) in enumerate(groups):
        label = f"{sc} on {sel.trace_name(tid)}" if several else sc
        for col, (y, show) in enumerate((("iops", True), ("latency_mean_ms", False)), 1):
            fig.add_trace(go.Scatter(x=_list(g["outstanding"]), y=_list(g[y]), mode="lines+markers", name=label,
                                     legendgroup=label, showlegend=show, line={"color": _color(i)},
                                     meta=[sid, y]), row=1, col=col)
        peak = g.sort("iops", descending=True).head(1)
        ok = g.filter(pl.col("latency_mean_ms") <= COMFORT_MS[0]).sort("outstanding")
        said.append(f"{label}: peak {peak['iops'][0]:,.0f} IOPS at {peak['outstanding'][0]} outstanding "
                    f"({peak['latency_mean_ms'][0]:.1f} ms); "
                    + (f"under {COMFORT_MS[0]:g} ms up to {ok['outstanding'][-1]} outstanding "
                       f"({ok['iops'][-1]:,.0f} IOPS)" if ok.height else f"never under {COMFORT_MS[0]:g} ms"))
    df = pl.concat([g for _, g in groups])
    span = [int(df["outstanding"].min()), int(df["outstanding"].max())]
    for ms in COMFORT_MS:  # as lines of data: shapes on a log axis take log10 coordinates
        fig.add_trace(go.Scatter(x=span, y=[ms, ms], mode="lines", name=f"{ms:g} ms comfort line",
                                 line={"dash": "dash", "color": "#c33" if ms >= 10 else "#3a3"},
                                 meta=["comfort", ms]), row=1, col=2)
    fig.update_xaxes(type="log", title_text="outstanding I/Os", dtick=math.log10(2))
    fig.update_yaxes(type="log", row=1, col=2)
    table = df.select("trace_id", "scenario", "sweep_id", "outstanding", "iops", "mb_per_s", "latency_mean_ms",
                      "latency_p95_ms", "latency_p99_ms")
    return Chart("sweeps", "IOPS and response time vs outstanding I/Os", said, fig.to_dict(), table)


def _latency(wh: Warehouse, sel: Selection) -> Chart | None:
    """Response-time CDF of each run's measured requests, and its p50 / p95 / p99."""
    if not sel.runs.height or not wh.has("latency_hist"):
        return None
    pts = wh.sql("SELECT run_id, latency_hi_ms, requests, sum(requests) OVER w / sum(requests) OVER (PARTITION BY "
                 "run_id) AS cdf FROM latency_hist WHERE run_id IN (SELECT unnest($ids)) WINDOW w AS (PARTITION BY "
                 "run_id ORDER BY lat_bucket) ORDER BY run_id, lat_bucket", _ids(sel))
    if pts.is_empty():
        return None
    import plotly.graph_objects as go

    fig = go.Figure(layout=_layout("Response time distribution (CDF of the measured requests)",
                                   xaxis={"title": "response time (ms)", "type": "log"},
                                   yaxis={"title": "share of requests", "range": [0, 1.02]}, hovermode="closest"))
    _lines(fig, pts, sel, "cdf", x="latency_hi_ms")
    runs = sel.runs.filter(pl.col("run_id").is_in(pts["run_id"].unique().to_list()))
    for q, where in ((0.5, "top right"), (0.95, "bottom right"), (0.99, "top right")):  # p95 below its line,
        fig.add_hline(y=q, line={"dash": "dot", "color": "#aaa"}, annotation_text=f"p{int(q * 100)}",  # p99 above
                      annotation_position=where)
    table = runs.select(pl.col("run_id").replace_strict(sel.labels).alias("scenario"), "run_id", "measured_requests",
                        "latency_mean_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms")
    said, bases = [], {}
    for r, tid in zip(table.iter_rows(named=True), runs["trace_id"], strict=True):
        base = bases.setdefault(tid, r)  # each run against the first selected run of its trace
        if r is base:
            said.append(f"{r['scenario']}: p50 {r['latency_p50_ms']:.2f} ms, p95 {r['latency_p95_ms']:.2f} ms, "
                        f"p99 {r['latency_p99_ms']:.2f} ms")
        else:
            said.append(f"{r['scenario']}: p95 {r['latency_p95_ms']:.2f} ms ({_change(r['latency_p95_ms'], base['latency_p95_ms'])} "
                        f"vs {base['scenario']}), p99 {_change(r['latency_p99_ms'], base['latency_p99_ms'])}")
    return Chart("latency", "Response time distribution and percentiles", said, fig.to_dict(),
                 table, _labelled(pts, sel))


def _rg_balance(wh: Warehouse, sel: Selection) -> Chart | None:
    """Per RAID group: I/Os served and mean drive utilization over the run."""
    if not sel.runs.height or not wh.has("rg_intervals", "utilization"):
        return None
    df = wh.sql("SELECT run_id, rg, sum(requests) AS requests, sum(backend_ios) AS backend_ios, "
                "avg(utilization) AS utilization_mean, max(utilization) AS utilization_max FROM rg_intervals "
                "WHERE run_id IN (SELECT unnest($ids)) GROUP BY ALL ORDER BY run_id, rg", _ids(sel))
    if df.is_empty():
        return None
    import plotly.graph_objects as go

    fig = go.Figure(layout=_layout("Load balance across RAID groups", barmode="group", hovermode="closest",
                                   yaxis={"title": "mean drive utilization", "tickformat": ".0%"},
                                   xaxis={"title": "RAID group"}))
    said = []
    for i, rid in enumerate(sel.runs["run_id"]):
        g = df.filter(pl.col("run_id") == rid)
        if g.is_empty():
            continue
        fig.add_trace(go.Bar(x=_list(g["rg"]), y=_list(g["utilization_mean"]), name=sel.labels[rid],
                             marker={"color": _color(i)}, meta=[rid, "utilization_mean"],
                             customdata=_list(g["backend_ios"]),
                             hovertemplate="%{x}: %{y:.1%} busy, %{customdata:,} back-end I/Os"))
        busy = g.filter(pl.col("backend_ios") > 0).sort("utilization_mean")
        if busy.height:
            hi, lo = busy.row(-1, named=True), busy.row(0, named=True)
            said.append(f"{sel.labels[rid]}: busiest {hi['rg']} {_pct(hi['utilization_mean'])}, least busy "
                        f"{lo['rg']} {_pct(lo['utilization_mean'])}"
                        + (f" ({hi['utilization_mean'] / lo['utilization_mean']:.2f}x)" if lo['utilization_mean'] else ""))
    return Chart("rg_balance", "Per-RAID-group load balance", said, fig.to_dict(),
                 _labelled(df, sel))


def _trace_skew(wh: Warehouse, sel: Selection) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(skew points, their curves) of the selected traces (``tiercast skew``): per trace and slice
    size the newest result."""
    if not wh.has("skew", "skew_key") or not sel.trace_ids:
        return pl.DataFrame(), pl.DataFrame()
    points = wh.sql("SELECT skew_key, trace_id, slice_bytes, slices, ios, skew_capacity_share, skew_io_share, "
                    "flash_bytes_80pct, flash_bytes_90pct, flash_bytes_95pct, model_version, computed_at FROM skew "
                    "WHERE trace_id IN (SELECT unnest($t)) QUALIFY row_number() OVER (PARTITION BY trace_id, "
                    "slice_bytes ORDER BY computed_at DESC NULLS LAST, source_file DESC) = 1 "
                    "ORDER BY trace_id, slice_bytes", {"t": sel.trace_ids})
    curves = wh.sql("SELECT skew_key, trace_id, slice_bytes, hottest_slices, capacity_share, io_share, ios "
                    "FROM skew_curve WHERE skew_key IN (SELECT unnest($k)) ORDER BY trace_id, slice_bytes, "
                    "hottest_slices", {"k": points["skew_key"].drop_nulls().to_list()}) if points.height else points
    return points, curves


def _skew(wh: Warehouse, sel: Selection) -> Chart | None:
    """The skew curves (slices by I/O count: cumulative capacity vs I/O share) of the traces
    (``tiercast skew``: its ``skew_curve`` rows and skew points) and of FAST VP runs' slices."""
    curve = pl.DataFrame()
    if sel.runs.height and wh.has("tier_slices", "ios"):
        curve = wh.sql("SELECT run_id, row_number() OVER w / count(*) OVER (PARTITION BY run_id) AS capacity_share, "
                       "sum(ios) OVER w / sum(ios) OVER (PARTITION BY run_id) AS io_share FROM tier_slices "
                       "WHERE run_id IN (SELECT unnest($ids)) WINDOW w AS (PARTITION BY run_id ORDER BY ios DESC, "
                       "volume, slice ROWS UNBOUNDED PRECEDING) ORDER BY run_id, capacity_share", _ids(sel))
    points, trace_curves = _trace_skew(wh, sel)
    if curve.is_empty() and points.is_empty():
        return None
    import plotly.graph_objects as go

    fig = go.Figure(layout=_layout("I/O skew: slices sorted by I/O count", hovermode="closest",
                                   xaxis={"title": "capacity share", "tickformat": ".0%", "range": [0, 1]},
                                   yaxis={"title": "I/O share", "tickformat": ".0%", "range": [0, 1.02]}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[1, 0], mode="lines", name="capacity + I/O share = 1",
                             line={"dash": "dot", "color": "#aaa"}, meta=["diagonal"]))
    said = []
    groups = trace_curves.group_by(["trace_id", "slice_bytes"], maintain_order=True) if trace_curves.height else []
    for i, ((tid, slice_bytes), g) in enumerate(groups):
        fig.add_trace(go.Scatter(x=_list(g["capacity_share"]), y=_list(g["io_share"]), mode="lines",
                                 name=f"trace {sel.trace_name(tid)}, {iec(slice_bytes)} slices (tiercast skew)",
                                 line={"color": ("#444", "#888", "#222")[i % 3], "width": 3},
                                 meta=["trace_curve", tid, slice_bytes]))
    if not curve.is_empty():
        _lines(fig, curve, sel, "io_share", x="capacity_share")
        for rid in curve["run_id"].unique(maintain_order=True):
            g = curve.filter(pl.col("run_id") == rid)
            k = int(((g["capacity_share"] + g["io_share"]) >= 1).arg_max())
            said.append(f"{sel.labels[rid]} (FAST VP slices): {_pct(g['capacity_share'][k])} of the slices serve "
                        f"{_pct(g['io_share'][k])} of the I/O")
    for r in points.iter_rows(named=True):
        fig.add_trace(go.Scatter(x=[r["skew_capacity_share"]], y=[r["skew_io_share"]], mode="markers",
                                 marker={"size": 12, "symbol": "x"}, meta=["skew", r["trace_id"], r["slice_bytes"]],
                                 name=f"skew point {sel.trace_name(r['trace_id'])}, {iec(r['slice_bytes'])} slices"))
        said.append(f"trace {sel.trace_name(r['trace_id'])} ({iec(r['slice_bytes'])} slices): {_pct(r['skew_capacity_share'])} "
                    f"of the capacity serves {_pct(r['skew_io_share'])} of the I/O; 80 % of the I/O fits in "
                    f"{iec(r['flash_bytes_80pct'])} of flash")
    table = points if not points.is_empty() else curve.group_by("run_id", maintain_order=True).agg(
        pl.len().alias("slices"))
    curves = [c for c in (
        _labelled(curve, sel).select(pl.lit("FAST VP run").alias("source"), "scenario", "run_id",
                                     "capacity_share", "io_share") if not curve.is_empty() else None,
        trace_curves.select(pl.lit("tiercast skew").alias("source"), "trace_id", "slice_bytes", "hottest_slices",
                            "capacity_share", "io_share") if not trace_curves.is_empty() else None) if c is not None]
    return Chart("skew", "Tier skew", said, fig.to_dict(), table,
                 pl.concat(curves, how="diagonal_relaxed") if curves else None)


def _snapshots(wh: Warehouse, sel: Selection) -> Chart | None:
    """Space held by the replay's snapshots over time."""
    if not sel.runs.height or not wh.has("snapshot_intervals", "snapshot_bytes"):
        return None
    df = wh.sql("SELECT run_id, start_ns / 1e9 AS t_s, writes, write_bytes, new_snapshot_bytes, retained_snapshots, "
                "snapshot_bytes FROM snapshot_intervals WHERE run_id IN (SELECT unnest($ids)) ORDER BY run_id, t_s",
                _ids(sel))
    if df.is_empty():
        return None
    sub = sel.only(pl.col("run_id").is_in(df["run_id"].unique().to_list()))
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(2, ["space held by snapshots", "host writes per snapshot interval"], 600)
    _lines(fig, df, sub, "snapshot_bytes", row=1, div=div)
    _lines(fig, df, sub, "write_bytes", row=2, div=div, legend=False)
    for row, col in ((1, "snapshot_bytes"), (2, "write_bytes")):
        fig.update_yaxes(**byte_ticks(0, df[col].max()), row=row, col=1)
    fig.update_xaxes(title_text=f"time ({unit})", row=2, col=1)
    said = []
    for rid in sub.runs["run_id"]:
        g = df.filter(pl.col("run_id") == rid)
        k = int(g["snapshot_bytes"].arg_max())
        said.append(f"{sel.labels[rid]}: peak {iec(g['snapshot_bytes'][k])} held at {_dur(g['t_s'][k])} by "
                    f"{g['retained_snapshots'][k]} snapshots; {iec(g['snapshot_bytes'][-1])} at the end")
    return Chart("snapshots", "Snapshot space over time", said, fig.to_dict(),
                 _labelled(df, sel))


def _write_cliff(wh: Warehouse, sel: Selection) -> Chart | None:
    """All-flash: free space, host write and GC rates per interval, and the cliff."""
    cols = ("flash_free_pct", "flash_host_write_mib_per_s", "flash_gc_mib_per_s")
    if not sel.runs.height or not wh.has("interval_metrics", *cols):
        return None
    df = _per_run_intervals(wh, sel, "interval_metrics", {c: f"max({c})" for c in cols},
                            "AND flash_free_pct IS NOT NULL")
    if df.is_empty():
        return None
    sub = sel.only(pl.col("run_id").is_in(df["run_id"].unique().to_list()))
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(3, ["free flash (% of the space GC can free)", "host writes (MiB/s)", "GC copies (MiB/s)"], 760)
    shown: set[str] = set()  # one legend entry per run
    for row, col in enumerate(cols, 1):
        _lines(fig, df, sub, col, row=row, div=div, legend=shown)
    fig.update_xaxes(title_text=f"time ({unit})", row=3, col=1)
    said = []
    for r in sub.runs.iter_rows(named=True):
        cliff = r.get("flash_time_to_cliff_s")
        if cliff is not None:
            for row in (1, 2, 3):
                fig.add_vline(x=cliff / div, row=row, col=1, line={"dash": "dash", "color": "#c33"})
            said.append(f"{sel.labels[r['run_id']]}: write cliff at {_dur(cliff)}, host writes "
                        f"{r.get('flash_pre_cliff_write_mib_per_s') or 0:,.0f} -> "
                        f"{r.get('flash_post_cliff_write_mib_per_s') or 0:,.0f} MiB/s")
        else:
            said.append(f"{sel.labels[r['run_id']]}: no write cliff (free space never ran out)")
    return Chart("write_cliff", "All-flash write cliff", said, fig.to_dict(),
                 _labelled(df, sel))


def _cloud_volume(wh: Warehouse, sel: Selection) -> Chart | None:
    """Cloud volumes: the I/O credit balance, delivered IOPS and token waits per interval, and
    when the burst credits ran out; the monthly price in the text."""
    cols = ("credit_ios_min", "delivered_iops", "throttle_wait_sum_ms")
    if not sel.runs.height or not wh.has("cloud_intervals", *cols):
        return None
    df = wh.sql("SELECT run_id, interval_start_ns / 1e9 AS t_s, credit_ios_min, credit_bytes_min, delivered_iops, "
                "delivered_mib_per_s, throttled_requests, throttle_wait_sum_ms FROM cloud_intervals "
                "WHERE run_id IN (SELECT unnest($ids)) ORDER BY run_id, t_s", _ids(sel))
    if df.is_empty():
        return None
    sub = sel.only(pl.col("run_id").is_in(df["run_id"].unique().to_list()))
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(3, ["I/O credit balance (lowest in the interval)", "delivered IOPS (requests that had their "
                        "tokens)", "waits for tokens (s, summed over requests)"], 760)
    df = df.with_columns(throttle_wait_s=pl.col("throttle_wait_sum_ms") / 1e3)
    for row, col in enumerate(("credit_ios_min", "delivered_iops", "throttle_wait_s"), 1):
        _lines(fig, df, sub, col, row=row, div=div, legend=row == 1)
    fig.update_xaxes(title_text=f"time ({unit})", row=3, col=1)
    said = []
    for r in sub.runs.iter_rows(named=True):
        name = sel.labels[r["run_id"]]
        cost = r.get("cost_per_month")
        price = f" at {cost:,.2f} {r.get('currency')}/month" if cost is not None else ""
        ex = r.get("burst_exhausted_s")
        if ex is not None:
            for row in (1, 2, 3):
                fig.add_vline(x=ex / div, row=row, col=1, line={"dash": "dash", "color": "#c33"})
            said.append(f"{name}{price}: burst credits ran out at {_dur(ex)}")
        else:
            said.append(f"{name}{price}: burst credits never ran out")
    return Chart("cloud_volume", "Cloud volume: credits, delivered IOPS, token waits", "; ".join(said) + ".",
                 fig.to_dict(), _labelled(df, sel))


#: model vs measured: (column stem, panel title)
MEASURED_PANELS = (("iops", "IOPS"), ("mb_per_s", "MB/s"), ("latency_mean_ms", "mean response time (ms)"))
_METRIC_WORDS = {"iops": "IOPS", "mb_per_s": "MB/s", "latency_mean_ms": "mean latency"}


def _num(v: float | None, unit: str = " %") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.1f}{unit}"


def _model_vs_measured(wh: Warehouse, sel: Selection) -> Chart | None:
    """Per measured interval, the model's IOPS, MB/s and mean response time against iostat's
    (``tiercast compare-measured``; per run and capture the newest comparison), with MAPE and
    bias in the caption."""
    if not sel.runs.height or not wh.has("measured_comparisons"):
        return None
    newest = ("WITH c AS (SELECT * FROM measured_comparisons WHERE run_id IN (SELECT unnest($ids)) QUALIFY "
              "row_number() OVER (PARTITION BY run_id, capture_id ORDER BY compared_at DESC, comparison_id) = 1) ")
    summary = wh.sql(newest + "SELECT c.run_id, c.capture_id, c.interval_s, s.* FROM c JOIN model_vs_measured_summary "
                     "s USING (comparison_id) ORDER BY run_id, capture_id, source DESC, device, metric", _ids(sel))
    if summary.is_empty():
        return None
    df = wh.sql(newest + "SELECT comparison_id, c.run_id, c.capture_id, device, start_since_trace_ns / 1e9 AS t_s, "
                "c.interval_s, scored, " + ", ".join(f"model_{m}, measured_{m}, {m}_error_pct" for m, _ in MEASURED_PANELS)
                + ", measured_util_pct FROM c JOIN model_vs_measured USING (comparison_id) "
                "ORDER BY comparison_id, device, t_s", _ids(sel))
    if df.is_empty():
        return None
    util = not df["measured_util_pct"].is_null().all()
    panels = [*MEASURED_PANELS, *((("util_pct", "device utilisation, iostat %util"),) if util else ())]
    div, unit = _time_axis(float(df["t_s"].max()))
    fig = _subplots(len(panels), [t for _, t in panels], 230 * len(panels) + 120)
    order = {rid: i for i, rid in enumerate(sel.runs["run_id"])}
    groups = sorted(df.group_by(["comparison_id", "device"], maintain_order=True), key=lambda kg: order[kg[1]["run_id"][0]])
    said, several = [], len(groups) > 1
    import plotly.graph_objects as go

    for i, ((cid, dev), g) in enumerate(groups):
        rid, cap = g["run_id"][0], g["capture_id"][0]
        name = f"{sel.labels[rid]} vs {cap}" + (f" {dev}" if several else "")
        for row, (m, _) in enumerate(panels, 1):
            sides = (("measured", "dash"),) if m == "util_pct" else (("model", "solid"), ("measured", "dash"))
            for side, dash in sides:
                col = f"{side}_{m}"
                fig.add_trace(go.Scatter(x=_list(g["t_s"] / div), y=_list(g[col]), mode="lines+markers",
                                         marker={"size": 4}, name=f"{side}: {name}", legendgroup=f"{cid}{dev}{side}",
                                         showlegend=row == 1, line={"color": _color(i), "dash": dash},
                                         meta=[cid, dev, col]), row=row, col=1)
        s = summary.filter((pl.col("comparison_id") == cid) & (pl.col("source") == "iostat") & (pl.col("device") == dev))
        errs = [f"{_METRIC_WORDS[r['metric']]} MAPE {abs(r['mape_pct']):.1f} % bias {_num(r['bias_pct'])}"
                if r["mape_pct"] is not None else f"{_METRIC_WORDS[r['metric']]} not scored"
                for r in s.sort("metric").iter_rows(named=True)]
        fio = summary.filter((pl.col("comparison_id") == cid) & (pl.col("source") == "fio"))
        vs_fio = ", ".join(f"{_METRIC_WORDS[r['metric']]} {_num(r['total_error_pct'])}"
                           for r in fio.sort("metric").iter_rows(named=True))
        scored = int(s["scored_intervals"].max() or 0) if s.height else 0
        said.append(f"{sel.labels[rid]} vs iostat of capture {cap} on {dev} ({scored} scored intervals of "
                    f"{g['interval_s'][0]:g} s): " + "; ".join(errs) + (f"; against fio's totals {vs_fio}" if vs_fio else ""))
    fig.update_xaxes(title_text=f"time since the trace start ({unit})", row=len(panels), col=1)
    table = summary.select("comparison_id", pl.col("run_id").replace_strict(sel.labels, default=None).alias("scenario"),
                           "run_id", "capture_id", "source", "device", "metric", "scored_intervals", "mape_pct",
                           "bias_pct", "total_error_pct", "model_mean", "measured_mean")
    return Chart("model_vs_measured", "Model vs measured",
                 [*said, "model solid, measured dashed; error % = 100 x (model - measured) / measured over the "
                  "scored intervals (MAPE: mean of its absolute value, bias: its mean)"], fig.to_dict(), table, _labelled(df, sel))


#: the charts, in page order
CHARTS: tuple[Callable[[Warehouse, Selection], Chart | list[Chart] | None], ...] = (
    _hit_ratio, _mrc, _write_cache, _ssd_cache, _sweeps, _latency, _rg_balance, _skew, _snapshots, _write_cliff,
    _cloud_volume, _model_vs_measured)

#: the charts drawing one line (or bar) per run: with more runs than MAX_SERIES, one chart per group of runs
PER_RUN = (_hit_ratio, _write_cache, _ssd_cache, _latency, _rg_balance, _snapshots, _write_cliff)
#: at most this many runs (series of one panel) per chart
MAX_SERIES = 6


def _made(make: Callable[[Warehouse, Selection], Chart | list[Chart] | None], wh: Warehouse,
          sel: Selection) -> list[Chart]:
    """The chart(s) ``make`` draws: a per-run chart of more than MAX_SERIES runs is split into charts
    of MAX_SERIES runs each, in the selection's order (``hit_ratio``, ``hit_ratio_2``, ...; the
    title says which runs), so no panel has more lines than a reader can tell apart."""
    if make not in PER_RUN or sel.runs.height <= MAX_SERIES:
        c = make(wh, sel)
        return c if isinstance(c, list) else [c] if c is not None else []  # a list: charts it split itself
    ids = sel.runs["run_id"].to_list()
    groups = [ids[i:i + MAX_SERIES] for i in range(0, len(ids), MAX_SERIES)]
    out = []
    for k, group in enumerate(groups, 1):
        c = make(wh, sel.only(pl.col("run_id").is_in(group)))
        if c is None:
            continue
        if k > 1:
            c.name = f"{c.name}_{k}"
        c.title += f" (runs {MAX_SERIES * (k - 1) + 1}-{MAX_SERIES * (k - 1) + len(group)} of {len(ids)})"
        out.append(c)
    return out


#: the run table at the top: columns shown when present
RUN_COLUMNS = ("scenario", "meets_target", "cost_per_month", "currency", "latency_p95_ms", "latency_p99_ms",
               "latency_mean_ms", "iops", "mb_per_s", "holdout_iops_error_pct", "holdout_latency_error_pct",
               "read_hit_ratio", "write_hit_ratio", "ssd_hit_ratio_last10pct",
               "flush_mb_per_s", "forced_flush_count", "throttle_delay_sum_ms", "burst_exhausted_s", "dram_cache_bytes",
               "ssd_cache_bytes", "mode", "outstanding", "measured_requests", "trace_id", "run_id", "model_version")
#: the decision columns: the runs table shows these, the rest folded under it
DECISION_COLUMNS = ("scenario", "meets_target", "cost_per_month", "currency", "latency_p95_ms", "latency_p99_ms",
                    "latency_mean_ms", "iops", "mb_per_s", "holdout_iops_error_pct", "holdout_latency_error_pct")


# --------------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------------
def _cell(v, floats: int) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:,.{floats}f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return "" if v is None else str(v)


def _csv(df: pl.DataFrame, name: str, out_dir: Path) -> str:
    """Write ``<out_dir>/<name>.csv`` (atomically); returns the link to it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_output(out_dir / f"{name}.csv", "report table") as tmp:
        df.write_csv(tmp)
    return f'<a href="{html.escape(out_dir.name)}/{html.escape(name)}.csv">{html.escape(name)}.csv</a>'


#: a table longer than this is not printed (per-interval rows): the page says how many rows its CSV holds
PRINT_ROWS = 25


#: how a table's header names a column on the page (the CSV keeps the column names)
HEADERS = {"meets_target": "meets target", "latency_p95_ms": "p95 ms", "latency_p99_ms": "p99 ms",
           "latency_mean_ms": "mean ms", "latency_p50_ms": "p50 ms", "latency_max_ms": "max ms", "iops": "IOPS",
           "mb_per_s": "MB/s"}


def _rows_html(df: pl.DataFrame, floats: int, bad: str | None, max_rows: int) -> str:
    head = "".join(f"<th>{html.escape(HEADERS.get(c, c))}</th>" for c in df.columns)
    rows = []
    for r in df.head(max_rows).iter_rows(named=True):
        cls = ' class="miss"' if bad is not None and r.get(bad) is False else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(_cell(v, floats))}</td>" for v in r.values()) + "</tr>")
    return f"<tr>{head}</tr>{''.join(rows)}"


def _table(df: pl.DataFrame, name: str, out_dir: Path, floats: int = 3, bad: str | None = None,
           max_rows: int = 200, show: list[str] | None = None) -> str:
    """HTML of ``df`` (rows where boolean column ``bad`` is false marked) and ``<name>.csv`` (all of
    ``df``). ``show``: the columns in the table, the others (ids and details) in a folded table below
    keyed by the first column. A table of more than PRINT_ROWS rows is summarized, not printed."""
    link = _csv(df, name, out_dir)
    shown = df.select(show) if show else df
    long = df.height > PRINT_ROWS
    out = [f'<div class="tablewrap{" long" if long else ""}"><table data-table="{html.escape(name)}">'
           f"{_rows_html(shown, floats, bad, max_rows)}</table></div>"]
    if show and len(show) < df.width:
        rest = df.select(show[0], *[c for c in df.columns if c not in show])
        out.append(f'<details class="more"><summary>{rest.width - 1} more columns (ids, details)</summary>'
                   f'<div class="tablewrap"><table data-table="{html.escape(name)}_details">'
                   f"{_rows_html(rest, floats, bad, max_rows)}</table></div></details>")
    if df.height > max_rows:
        out.append(f"<p class='csv'>{df.height - max_rows:,} more rows in the CSV</p>")
    if long:
        out.append(f'<p class="printonly">{df.height:,} rows, not printed: they are in {html.escape(name)}.csv '
                   "(the caption above sums them up).</p>")
    out.append(f'<p class="csv">{link}</p>')
    return "".join(out)


def _figure_html(chart: Chart) -> str:
    spec = json.dumps(chart.figure, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (f'<div class="chart" id="chart-{chart.name}"></div>'
            f'<script type="application/json" class="figure" data-chart="{chart.name}">{spec}</script>')


def _caption(caption: str | list[str]) -> str:
    """A caption: one line per statement (a list: per run, per trace), not a paragraph-long chain."""
    if isinstance(caption, str):
        return f'<p class="caption">{html.escape(caption)}</p>'
    return '<ul class="caption">' + "".join(f"<li>{html.escape(p)}</li>" for p in caption) + "</ul>"


def _section(chart: Chart, out_dir: Path) -> str:
    parts = [f'<section class="chartsec" id="{chart.name}"><h2>{html.escape(chart.title)}</h2>', _caption(chart.caption)]
    if chart.figure is not None:
        parts.append(_figure_html(chart))
    parts.append(_table(chart.table, chart.name, out_dir))
    if chart.points is not None:
        parts.append(f'<p class="csv">all points: {_csv(chart.points, chart.name + "_points", out_dir)}</p>')
    return "".join(parts) + "</section>"


def _clean(obj):
    """NaN -> None, numpy scalars and DuckDB decimals (its sums) -> Python numbers (JSON without NaN)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    if isinstance(obj, Decimal):
        obj = float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


CSS = """h1{font-size:24px}body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1200px;color:#222;
padding:0 1em}table{border-collapse:collapse;font-size:12px;margin:.5em 0}td,th{border:1px solid #ccc;
padding:2px 6px;text-align:right;white-space:nowrap}th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
tr.miss td{background:#fde2e2;color:#900}.tablewrap{max-height:320px;overflow:auto}h2{border-bottom:2px solid #446;
padding-bottom:3px;margin-top:1.8em}.caption{font-size:14px;background:#f6f8fb;border-left:4px solid #446;
padding:.4em .8em .4em 1.6em;margin:.5em 0}p.caption{padding-left:.8em}.csv{font-size:12px;margin:0}
.chart{width:100%;min-height:300px}small{color:#888;font-weight:normal}nav a{margin-right:1em}
.summary{border:2px solid #446;border-radius:4px;padding:.6em 1em;margin:1em 0;background:#fbfcfe}
.summary p{margin:.3em 0}.summary .caution{color:#8a4b00}.summary .answer{font-size:17px;font-weight:600}.summary ul{margin:.2em 0;font-size:13px}
details.more summary{cursor:pointer;font-size:12px;color:#446}.printonly{display:none}
@media print{@page{size:auto;margin:12mm}body{margin:0;max-width:none;font-size:9pt}
nav,.modebar-container,.csv,details.more,.tablewrap.long{display:none}.printonly{display:block;font-size:8pt;
color:#555}.tablewrap{max-height:none;overflow:visible}table{font-size:7pt;width:100%}
td,th{padding:1px 3px}th{white-space:normal;word-break:break-word}section{break-inside:avoid-page}
.chart{break-inside:avoid}h2{break-after:avoid}.summary{break-inside:avoid}}"""

#: draws every embedded figure; charts follow the page width (also when printing)
LOADER = """(function(){var charts=[];
document.querySelectorAll('script.figure').forEach(function(s){var f=JSON.parse(s.textContent);
var d=document.getElementById('chart-'+s.dataset.chart);
Plotly.newPlot(d,f.data,f.layout,{responsive:true,displaylogo:false,showLink:false,showSendToCloud:false,
showEditInChartStudio:false,toImageButtonOptions:{filename:s.dataset.chart}});charts.push(d);});
function fit(){charts.forEach(function(d){Plotly.Plots.resize(d);});}
window.addEventListener('beforeprint',fit);window.addEventListener('afterprint',fit);})();"""


def _sensitivity_section(sens: pl.DataFrame | None, out_dir: Path) -> str:
    """The seed figures' sensitivity to their fitted parameters (``tiercast experiments --sensitivity``)."""
    if sens is None:
        return ""
    fragile = sens.filter(~pl.col("robust")).height
    return ('<section id="sensitivity"><h2>Sensitivity to the fitted parameters</h2><p class="caption">'
            f'Each fitted parameter moved by -/+ 10 % (an integer by one step) in every preset that sets it, the '
            f'figures of the seeds those presets serve measured again: {sens.height} figure x parameter pairs, '
            f'{fragile} fragile (a move over 30 %, highlighted).</p>'
            + _table(sens, "seed_sensitivity", out_dir, floats=1, bad="robust") + "</section>")


def _leave_one_out_section(loo: pl.DataFrame | None, out_dir: Path) -> str:
    """Each fitted figure predicted without it (``tiercast experiments --leave-one-out``)."""
    if loo is None:
        return ""
    tested = loo.filter(pl.col("within").is_not_null())
    return ('<section id="leave-one-out"><h2>Leave-one-out: the fits predicted without their figures</h2>'
            '<p class="caption">Each fitted parameter refitted without one of the figures it was fitted to (on its '
            'other fit figures, else on the validation figures that move with it), then that figure predicted: '
            f'{tested.height} of {loo.height} figures could be predicted, {tested.filter(pl.col("within")).height} '
            'within their tolerance (misses highlighted); the rest rest on their fit alone. '
            f'{tested.filter(pl.col("refit_physical")).height} of the {tested.height} refitted values stay inside '
            'the physical range of their parameter (<code>refit_physical</code>; the ranges: '
            '<code>tiercast scenarios NAME --json</code>, <code>physical</code>).</p>'
            + _table(loo, "seed_leave_one_out", out_dir, floats=1, bad="within") + "</section>")


def _intro_tables(figures: pl.DataFrame | None, findings: pl.DataFrame | None, out_dir: Path) -> str:
    parts = []
    if figures is not None:
        n_bad = figures.filter(pl.col("ok") == False).height  # noqa: E712
        parts.append(f'<section id="figures"><h2>Seed figures: published vs model</h2><p class="caption">'
                     f'{figures.height} figures, {figures.height - n_bad} within tolerance, {n_bad} outside '
                     '(highlighted).</p>' + _table(figures, "seed_figures", out_dir, floats=2, bad="ok") + "</section>")
    if findings is not None:
        n_bad = findings.filter(pl.col("ok") == False).height  # noqa: E712
        parts.append(f'<section id="findings"><h2>Qualitative findings</h2><p class="caption">{findings.height} '
                     f'findings, {n_bad} not reproduced (highlighted).</p>'
                     + _table(findings, "findings", out_dir, bad="ok") + "</section>")
    return "".join(parts)


def _runs_section(wh: Warehouse, sel: Selection, out_dir: Path, meets: dict[str, bool] | None = None) -> str:
    """The runs side by side: the decision columns (``meets``: run id -> whether it met the
    targets, for ``size``), then the rest and the ids folded under them; all of it in runs.csv."""
    if not sel.runs.height:
        return "<p>No array replay in the warehouse (<code>tiercast replay TRACE --scenario S</code>).</p>"
    runs = sel.runs.with_columns(pl.col("run_id").replace_strict(sel.labels).alias("scenario"))
    if meets is not None:
        runs = runs.with_columns(pl.col("run_id").replace_strict(meets, default=None, return_dtype=pl.Boolean)
                                 .alias("meets_target"))
    cols = [c for c in RUN_COLUMNS if c in runs.columns]
    df = runs.select(cols)
    return ('<section id="runs"><h2>Scenarios side by side</h2>'
            + _table(df, "runs", out_dir, bad="meets_target" if meets else None,
                     show=[c for c in DECISION_COLUMNS if c in cols]) + "</section>")


def _checks_section(sel: Selection, out_dir: Path) -> str:
    """Every run's physics-check findings (``pipelines.physics``): model errors first."""
    if not sel.runs.height or "warnings" not in sel.runs.columns:
        return ""
    df = (sel.runs.select(pl.col("run_id").replace_strict(sel.labels).alias("scenario"), "run_id", "warnings")
          .explode("warnings").drop_nulls("warnings").unnest("warnings")
          .sort(pl.col("severity") != "model_error", "scenario"))
    if df.is_empty():
        return ('<section id="checks"><h2>Physics checks</h2><p class="caption">Every run passed every check '
                "(utilisation vs latency, throttle and stall triggers, Little's law, mass balance) with no caveat."
                "</p></section>")
    errors = df.filter(pl.col("severity") == "model_error").height
    return ('<section id="checks"><h2>Physics checks</h2><p class="caption">'
            f"{errors} model error(s), {df.height - errors} caveat(s) on the runs above.</p>"
            + _table(df, "checks", out_dir, bad=None) + "</section>")


def _traces_section(wh: Warehouse, sel: Selection, out_dir: Path) -> str:
    if not wh.has("traces"):
        return ""
    df = wh.sql("SELECT trace_id, format, source_path, rows_accepted AS requests, rows_rejected AS rejected, volumes, "
                "span_ns / 1e9 AS span_s FROM traces WHERE trace_id IN (SELECT unnest($t)) ORDER BY trace_id",
                {"t": sel.trace_ids})
    if df.is_empty():
        return "<p>No trace ingested.</p>"
    return '<section id="traces"><h2>Traces</h2>' + _table(df, "traces", out_dir, floats=1) + "</section>"


def _n(v: float | None, fmt: str = ",.2f") -> str:
    return "-" if v is None else format(v, fmt)


def runs_summary(sel: Selection) -> dict | None:
    """The decision block of a report of chosen runs (``tiercast report``): per trace, the run with
    the lowest p95 response time and the next one; the assumptions from the runs' own columns."""
    if not sel.runs.height or "latency_p95_ms" not in sel.runs.columns:
        return None
    runs = sel.runs.with_columns(pl.col("run_id").replace_strict(sel.labels).alias("label"))
    answers, seconds, assumptions = [], [], []
    modes = {(r.get("mode"), r.get("outstanding") if r.get("mode") == "closed" else None)
             for r in runs.iter_rows(named=True)}
    for (tid,), g in runs.group_by(["trace_id"], maintain_order=True):
        ranked = g.sort("latency_p95_ms", nulls_last=True, maintain_order=True).iter_rows(named=True)
        best = next(ranked)
        answers.append(f"on {sel.trace_name(tid)}, {best['label']} has the lowest p95 ({_n(best['latency_p95_ms'])} ms,"
                       f" p99 {_n(best['latency_p99_ms'])} ms, {_n(best['iops'], ',.0f')} IOPS)")
        second = next(ranked, None)
        if second is not None:
            seconds.append(f"{second['label']} ({_n(second['latency_p95_ms'])} ms p95)")
    for r in runs.iter_rows(named=True):
        caches = [f"DRAM cache {iec(r['dram_cache_bytes'])}" if r.get("dram_cache_bytes") else "no DRAM cache"]
        if r.get("ssd_cache_bytes"):
            caches.append(f"SSD cache {iec(r['ssd_cache_bytes'])}")
        assumptions.append(f"{r['label']}: {', '.join(caches)}, {r.get('dram_mode') or '-'} write cache")
    from pipelines.summary import mode_words

    mode_text = "; ".join(mode_words({"mode": m, "outstanding": o}) for m, o in sorted(modes, key=str))
    traces = ", ".join(sel.trace_name(t) for t in dict.fromkeys(runs["trace_id"].to_list()))
    out = {"question": f"Which of these {runs.height} runs of {traces} has the lowest p95 response time?",
           "recommendation": "; ".join(answers)[:1].upper() + "; ".join(answers)[1:] + ".",
           "runner_up": "; ".join(seconds) or None,
           "assumptions": [f"replay: {mode_text}", *assumptions]}
    if "windows" in runs.columns and runs["trace_id"].n_unique() == 1:  # the answer's spread over the trace
        from pipelines.confidence import confidence
        from pipelines.summary import COMPARE_METRICS

        best = runs.sort("latency_p95_ms", nulls_last=True, maintain_order=True).row(0, named=True)
        out["confidence"] = confidence(best, COMPARE_METRICS)
    return out


def _summary_section(summary: dict | None) -> str:
    """The block that opens the page: question, answer, runner-up, assumptions."""
    if not summary:
        return ""
    parts = ['<section id="summary" class="summary">',
             f'<p><b>Question.</b> {html.escape(summary["question"])}</p>',
             f'<p class="answer">{html.escape(summary["recommendation"] or "")}</p>']
    if summary.get("runner_up"):
        parts.append(f'<p><b>Runner-up.</b> {html.escape(summary["runner_up"])}</p>')
    parts.append("<p><b>Assumptions.</b></p><ul>" + "".join(f"<li>{html.escape(a)}</li>"
                                                            for a in summary["assumptions"]) + "</ul>")
    if summary.get("headroom"):
        from pipelines.headroom import headroom_line

        parts.append(f'<p class="headroom"><b>Headroom.</b> {html.escape(headroom_line(summary["headroom"]).split(": ", 1)[-1])}</p>')
    if summary.get("confidence"):
        from pipelines.confidence import confidence_line

        head, *cautions = confidence_line(summary["confidence"])
        parts.append(f'<p class="confidence"><b>Confidence.</b> {html.escape(head.split(": ", 1)[-1])}</p>')
        parts.extend(f'<p class="caution">{html.escape(c)}</p>' for c in cautions)
    return "".join(parts) + "</section>"


def build_charts(data_dir: Path, trace_id: str | None = None, run_ids: list[str] | None = None,
                 sweep_ids: list[str] | None = None) -> tuple[Selection, list[Chart], Warehouse]:
    """The selection and every chart that has data (the caller closes the warehouse)."""
    _fresh(data_dir)
    wh = Warehouse(data_dir)
    try:
        sel = _select(wh, trace_id, run_ids, sweep_ids)
        charts = [c for make in CHARTS for c in _made(make, wh, sel)]
    except BaseException:
        wh.close()
        raise
    for c in charts:
        c.figure = _clean(c.figure)
    return sel, charts, wh


def write_report(data_dir: Path, out: Path, title: str = "tiercast report", *, trace_id: str | None = None,
                 run_ids: list[str] | None = None, sweep_ids: list[str] | None = None,
                 figures: pl.DataFrame | None = None, findings: pl.DataFrame | None = None,
                 intro: str | None = None, summary: dict | None = None, meets: dict[str, bool] | None = None,
                 sensitivity: pl.DataFrame | None = None, leave_one_out: pl.DataFrame | None = None) -> Path:
    """Write ``out`` (HTML) and ``<out stem>_tables/*.csv``; returns the HTML path. Without
    ``run_ids``: the newest run of every trace and scenario in the warehouse (of ``trace_id``
    only when given); ``figures`` (seed, figure, published, model, error_pct, tolerance_pct,
    kind, ok) and ``findings`` (seed, finding, ok) open the page, misses highlighted. ``summary``
    (``pipelines.summary``: question, recommendation, runner_up, assumptions) opens it above all
    (default: :func:`runs_summary` of the selected runs); ``meets``: run id -> met the targets
    (a column of the runs table); ``sensitivity`` (``pipelines.experiments.SENSITIVITY_SCHEMA``):
    the figures' moves at -/+ 10 % of each fitted parameter, fragile ones highlighted; ``leave_one_out``
    (``pipelines.experiments.LOO_SCHEMA``): each fitted figure predicted by a refit without it."""
    from plotly.offline import get_plotlyjs

    data_dir, out = Path(data_dir), Path(out)
    # refuse before any work: a directory, a device (/dev/full), a FIFO is never replaced
    check_output(out, "report")
    check_output_dir(out.parent / f"{out.stem}_tables", "report tables directory")
    if not data_dir.is_dir():
        raise NotADirectoryError(20, "Not a directory (data directory)", str(data_dir))
    sel, charts, wh = build_charts(data_dir, trace_id, run_ids, sweep_ids)
    # the page and its CSVs change together: both are written aside and renamed into place at the end
    with atomic_output(out, "report") as page, \
            atomic_output_dir(out.parent / f"{out.stem}_tables", "*.csv", "report tables directory") as tables:
        try:
            if summary is None and figures is None:
                summary = runs_summary(sel)
            sections = [_summary_section(summary), _intro_tables(figures, findings, tables), _sensitivity_section(sensitivity, tables),
                        _leave_one_out_section(leave_one_out, tables),
                        _runs_section(wh, sel, tables, meets),
                        _checks_section(sel, tables), _traces_section(wh, sel, tables),
                        *(_section(c, tables) for c in charts)]
        finally:
            wh.close()
        csv_note = (f"; every table is also a CSV in <code>{html.escape(tables.name)}/</code>"
                    if any(tables.glob("*.csv")) else "")
        head = [f"<h1>{html.escape(title)}</h1><p>Data directory <code>{html.escape(str(data_dir.resolve()))}"
                f"</code>, written {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC; charts are interactive (hover for "
                f"values, drag to zoom, double-click to reset){csv_note}.</p>"]
        if intro:
            head.append(f'<p class="intro">{html.escape(intro)}</p>')
        nav = "".join(f'<a href="#{c.name}">{html.escape(c.title)}</a>' for c in charts)
        body = [*head, sections[0], f"<nav>{nav}</nav>" if charts else "", *sections[1:]]  # the summary first
        if not charts:
            body.append("<p>Nothing to chart yet: replay a trace (<code>tiercast replay</code>), compute its "
                        "hit-ratio curve (<code>tiercast mrc</code>) or sweep it (<code>tiercast sweep</code>).</p>")
        js = get_plotlyjs().replace("</script", "<\\/script") if charts else ""
        with open(page, "x", encoding="utf-8") as f:
            f.write("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                    "<meta name='viewport' content='width=device-width, initial-scale=1'>"
                    f"<title>{html.escape(title)}</title><style>{CSS}</style>"
                    + (f"<script>{js}</script>" if js else "") + "</head><body>" + "".join(body)
                    + (f"<script>{LOADER}</script>" if charts else "") + "</body></html>")
    return out
