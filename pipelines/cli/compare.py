"""``tiercast compare-measured``: a replay run against what iostat (and fio) measured in a capture."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.cli.common import DataDirOpt, JsonOpt, app, data_dir_of, out, print_json, table
from pipelines.cli.examples import epilog

_LABEL = {"iops": "IOPS", "mb_per_s": "MB/s", "latency_mean_ms": "mean ms"}


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


@app.command("compare-measured", epilog=epilog("compare-measured"))
def compare_measured(
    run_id: Annotated[str, typer.Argument(help="Replay run id (tiercast replay), or unambiguous prefix.")],
    capture_id: Annotated[str, typer.Argument(help="Capture id (tiercast captures), or unambiguous prefix.")],
    device: Annotated[list[str] | None, typer.Option(help="DEV (all volumes) or VOLUME=DEV (fnmatch "
                                                          "pattern); repeatable. Default: the capture's "
                                                          "device.")] = None,
    min_coverage: Annotated[float, typer.Option(help="Score a measured interval when the run covers at "
                                                     "least this share of it.")] = 1.0,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Per-interval and overall error (IOPS, MB/s, mean latency) of a replay against the device
    rows iostat recorded during a capture, and against fio's own totals; kept in the data
    directory (results/model_vs_measured/<comparison id>/) for the warehouse and the report."""
    from pipelines.compare import METRICS, compare_and_save

    r = compare_and_save(data_dir_of(data_dir), run_id, capture_id, device, min_coverage=min_coverage)
    if as_json:
        print_json(r)
        return
    a = r["alignment"]
    out.print(f"run {r['run_id']} ({r['scenario']}, {r['mode']}"
              f"{' ' + str(r['outstanding']) + ' outstanding' if r['outstanding'] else ''}) vs capture "
              f"{r['capture_id']}")
    out.print(f"trace starts {a['trace_start']} ({a['anchor']}), iostat reports at "
              f"whole seconds + {a['iostat_phase_ns'] / 1e9:.3f} s, interval {a['iostat_interval_s']:g} s")
    t = table("device", "interval end", "cover", *[f"{_LABEL[m]} {s}" for m in METRICS for s in ("model", "meas", "err %")])
    for i in r["intervals"]:
        cells = [c for m in METRICS for c in (_f(i[f"model_{m}"], 4 if m == "latency_mean_ms" else 1),
                                              _f(i[f"measured_{m}"], 4 if m == "latency_mean_ms" else 1),
                                              _f(i[f"{m}_error_pct"]))]
        t.add_row(i["device"], i["interval_end"][11:23] + ("" if i["scored"] else " *"), f"{i['coverage']:.2f}",
                  *cells)
    out.print(t)
    out.print("* not scored (the run covers less than --min-coverage of the interval)")
    o = table("device", "metric", "scored", "MAPE %", "bias %", "total err %", "model", "measured")
    for dev, d in r["devices"].items():
        for m in METRICS:
            s = d[m]
            o.add_row(dev, _LABEL[m], str(s["scored_intervals"]), _f(s["mape_pct"]), _f(s["bias_pct"]),
                      _f(s["total_error_pct"]), _f(s["model_mean"], 4), _f(s["measured_mean"], 4))
    out.print(o)
    if r["fio"]:
        f = r["fio"]
        out.print("vs fio: " + "; ".join(f"{_LABEL[m]} model {_f(f[m]['model'], 4)} fio {_f(f[m]['fio'], 4)} "
                                        f"({_f(f[m]['error_pct'])} %)" for m in METRICS))
    for n in r["notes"]:
        out.print(f"note: {n}")
    out.print(f"comparison {r['comparison_id']} kept in {r['saved']} (tiercast load; tiercast report draws it)")
