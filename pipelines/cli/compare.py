"""``tiercast compare-measured``: a replay run against what iostat (and fio) measured in a capture."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    WideOpt,
    app,
    data_dir_of,
    decision_table,
    out,
    print_json,
)
from pipelines.cli.examples import epilog

_LABEL = {"iops": "IOPS", "mb_per_s": "MB/s", "latency_mean_ms": "ms"}
#: the per-interval columns an 80-column terminal shows (the rest with --wide): IOPS and latency
_DECIDES = {"iops": True, "mb_per_s": False, "latency_mean_ms": True}


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
    wide: WideOpt = False,
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
    columns = [("interval end", True), ("device", False), ("cover", False),
               *[(f"{_LABEL[m]} {k}", _DECIDES[m]) for m in METRICS for k in ("model", "meas", "err %")]]
    rows = [[i["interval_end"][11:23] + ("" if i["scored"] else " *"), i["device"], f"{i['coverage']:.2f}",
             *[c for m in METRICS for c in (_f(i[f"model_{m}"], 4 if m == "latency_mean_ms" else 1),
                                            _f(i[f"measured_{m}"], 4 if m == "latency_mean_ms" else 1),
                                            _f(i[f"{m}_error_pct"]))]] for i in r["intervals"]]
    out.print(decision_table(columns, rows, wide))
    out.print("* not scored (the run covers less than --min-coverage of the interval)"
              + ("" if wide else "; --wide adds device, coverage and MB/s"))
    overall = [[dev, _LABEL[m], str(d[m]["scored_intervals"]), _f(d[m]["mape_pct"]), _f(d[m]["bias_pct"]),
                _f(d[m]["total_error_pct"]), _f(d[m]["model_mean"], 4), _f(d[m]["measured_mean"], 4)]
               for dev, d in r["devices"].items() for m in METRICS]
    out.print(decision_table([(h, True) for h in ("device", "metric", "scored", "MAPE %", "bias %", "total err %",
                                                  "model", "measured")], overall, wide))
    if r["fio"]:
        f = r["fio"]
        out.print("vs fio: " + "; ".join(f"{_LABEL[m]} model {_f(f[m]['model'], 4)} fio {_f(f[m]['fio'], 4)} "
                                        f"({_f(f[m]['error_pct'])} %)" for m in METRICS))
    for n in r["notes"]:
        out.print(f"note: {n}")
    out.print(f"comparison {r['comparison_id']} kept in {r['saved']} (tiercast load; tiercast report draws it)")
