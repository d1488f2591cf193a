"""Report step: one self-contained HTML page (charts inlined as PNG) of what the data directory
holds — traces, hit-ratio curves, array runs side by side over time, closed-loop sweeps — with
every table it shows also written as CSV beside it.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines.catalog import list_traces
from pipelines.files import atomic_output, check_output, check_output_dir, write_text
from pipelines.load import result_datasets


def _read(data_dir: Path, table: str) -> pl.DataFrame:
    files = result_datasets(data_dir).get(table)
    if not files:
        return pl.DataFrame()
    # runs of different modes leave different columns all-null: relax types when stacking
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files], how="diagonal_relaxed")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return '<img alt="chart" src="data:image/png;base64,' + base64.b64encode(buf.getvalue()).decode() + '">'


def _table(df: pl.DataFrame, name: str, out_dir: Path, floats: int = 3) -> str:
    """HTML of ``df`` and a CSV copy ``<out_dir>/<name>.csv`` (linked)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_output(out_dir / f"{name}.csv", "report table") as tmp:
        df.write_csv(tmp)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for r in df.iter_rows():
        cells = []
        for v in r:
            if isinstance(v, float):
                v = f"{v:,.{floats}f}"
            elif isinstance(v, int):
                v = f"{v:,}"
            cells.append(f"<td>{html.escape(str(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    link = f'<p class="csv"><a href="{out_dir.name}/{name}.csv">{name}.csv</a></p>'
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{link}"


def _traces_section(data_dir: Path, out_dir: Path) -> str:
    rows = []
    for t in list_traces(data_dir):
        m = t.manifest
        rows.append({
            "trace_id": t.trace_id, "format": m["format"], "source": Path(m["source_path"]).name,
            "requests": m["rows_accepted"], "rejected": m["rows_rejected"], "volumes": len(m["volumes"]),
            "span_s": max(v["last_ts_ns"] for v in m["volumes"].values()) / 1e9,
            "read_pct": 100 * sum(v["reads"] for v in m["volumes"].values()) / max(1, m["rows_accepted"]),
        })
    if not rows:
        return "<p>No trace ingested.</p>"
    return _table(pl.DataFrame(rows), "traces", out_dir, floats=1)


def _names(data_dir: Path) -> dict[str, str]:
    """trace_id -> a short label (its source file name)."""
    return {t.trace_id: Path(t.manifest["source_path"]).stem for t in list_traces(data_dir)}


def _mrc_section(data_dir: Path, out_dir: Path) -> str:
    df = _read(data_dir, "mrc")
    if df.is_empty():
        return "<p>No hit-ratio curve computed (<code>tiercast mrc TRACE</code>).</p>"
    import matplotlib.pyplot as plt

    names = _names(data_dir)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for (tid, method, page), g in df.sort("cache_bytes").group_by(
        ["trace_id", "method", "page_size"], maintain_order=True
    ):
        ax.plot(g["cache_bytes"] / 2**30, g["hit_ratio"], marker=".", label=f"{names.get(tid, tid)} ({method}, {page // 1024} KiB)")
    ax.set_xscale("log")
    ax.set_xlabel("LRU cache size (GiB)")
    ax.set_ylabel("hit ratio")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    table = df.select("trace_id", "method", "page_size", "cache_bytes", "hit_ratio", "byte_hit_ratio").sort(
        "trace_id", "method", "cache_bytes"
    )
    return _png(fig) + _table(table, "mrc", out_dir)


def _runs_section(data_dir: Path, out_dir: Path) -> str:
    runs = _read(data_dir, "array_runs")
    if runs.is_empty():
        return "<p>No array replay (<code>tiercast replay TRACE --scenario S</code>).</p>"
    import matplotlib.pyplot as plt

    names = _names(data_dir)
    cols = [c for c in ("trace_id", "scenario", "dram_mode", "requests", "iops", "mb_per_s", "latency_mean_ms",
                        "latency_p99_ms", "read_hit_ratio", "write_hit_ratio", "flush_mb_per_s",
                        "forced_flush_count", "forced_flush_stall_ms", "throttle_delay_sum_ms", "run_id") if c in runs.columns]
    parts = [_table(runs.select(cols).sort("trace_id", "scenario"), "array_runs", out_dir)]
    vol = _read(data_dir, "array_volume_intervals")
    rg = _read(data_dir, "array_rg_intervals")
    for tid, g in runs.group_by("trace_id", maintain_order=True):
        run_ids = g["run_id"].to_list()
        v = vol.filter(pl.col("run_id").is_in(run_ids)) if not vol.is_empty() else vol
        r = rg.filter(pl.col("run_id").is_in(run_ids)) if not rg.is_empty() else rg
        if v.is_empty():
            continue
        per = v.group_by("scenario", "interval_start_ns").agg(
            pl.col("iops").sum(), (pl.col("latency_mean_ms") * pl.col("requests")).sum() / pl.col("requests").sum()
        ).sort("interval_start_ns")
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        scenarios = sorted(per["scenario"].unique().to_list())
        style = {sc: {"color": f"C{i}", "marker": "o", "markersize": 3} for i, sc in enumerate(scenarios)}
        for sc, s in per.group_by("scenario", maintain_order=True):
            t = s["interval_start_ns"] / 1e9
            axes[0].plot(t, s["iops"], label=sc[0], **style[sc[0]])
            axes[1].plot(t, s["latency_mean_ms"], label=sc[0], **style[sc[0]])
        if not r.is_empty() and "dirty_pct_max" in r.columns:
            dirty = r.group_by("scenario", "interval_start_ns").agg(pl.col("dirty_pct_max").max()).sort("interval_start_ns")
            for sc, s in dirty.group_by("scenario", maintain_order=True):
                axes[2].plot(s["interval_start_ns"] / 1e9, s["dirty_pct_max"], label=sc[0], **style.get(sc[0], {}))
        for ax, title in zip(axes, ("host IOPS", "mean response time (ms)", "write cache dirty % (max)"), strict=True):
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("time (s)")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        parts.append(f"<h3>{html.escape(names.get(tid[0], tid[0]))} <small>{tid[0]}</small></h3>" + _png(fig))
    return "".join(parts)


def _sweep_section(data_dir: Path, out_dir: Path) -> str:
    sw = _read(data_dir, "array_sweeps")
    if sw.is_empty():
        return "<p>No closed-loop sweep (<code>tiercast sweep TRACE --scenario S --outstanding 12,24,48</code>).</p>"
    import matplotlib.pyplot as plt

    names = _names(data_dir)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for (tid, sc, _sid), g in sw.sort("outstanding").group_by(["trace_id", "scenario", "sweep_id"], maintain_order=True):
        label = f"{names.get(tid, tid)} on {sc}"
        axes[0].plot(g["outstanding"], g["iops"], marker="o", label=label)
        axes[1].plot(g["outstanding"], g["latency_mean_ms"], marker="o", label=label)
    for ax, title in zip(axes, ("host IOPS", "mean response time (ms)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("outstanding I/Os")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    cols = [c for c in ("trace_id", "scenario", "outstanding", "iops", "mb_per_s", "latency_mean_ms", "latency_p95_ms")
            if c in sw.columns]
    return _png(fig) + _table(sw.select(cols).sort("trace_id", "scenario", "outstanding"), "array_sweeps", out_dir)


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f0f0f0}h2{border-bottom:2px solid #446;padding-bottom:3px;margin-top:1.6em}
.csv{font-size:12px;margin:0}img{max-width:100%}small{color:#888;font-weight:normal}"""


def write_report(data_dir: Path, out: Path, title: str = "tiercast report") -> Path:
    """Write ``out`` (HTML) and ``<out stem>_tables/*.csv``; returns the HTML path."""
    import matplotlib

    matplotlib.use("Agg")
    data_dir, out = Path(data_dir), Path(out)
    # refuse before any work: a directory, a device (/dev/full), a FIFO is never replaced
    check_output(out, "report")
    tables = check_output_dir(out.parent / f"{out.stem}_tables", "report tables directory")
    if data_dir.exists() and not data_dir.is_dir():
        raise NotADirectoryError(20, "Not a directory (data directory)", str(data_dir))
    body = [
        f"<h1>{html.escape(title)}</h1><p>Data directory <code>{html.escape(str(data_dir.resolve()))}</code>, "
        f"written {datetime.now(tz=UTC):%Y-%m-%d %H:%M} UTC.</p>",
        "<h2>Traces</h2>", _traces_section(data_dir, tables),
        "<h2>Hit-ratio curves (exact LRU stack distances / SHARDS)</h2>", _mrc_section(data_dir, tables),
        "<h2>Array replays</h2>", _runs_section(data_dir, tables),
        "<h2>Closed-loop sweeps: IOPS and response time vs outstanding I/Os</h2>", _sweep_section(data_dir, tables),
    ]
    write_text(out, f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                    f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>", "report")
    return out
