"""``tiercast replay`` (a trace through an array scenario), ``tiercast sweep`` (closed-loop IOPS and
response time against outstanding I/Os) and ``tiercast scenarios`` (the presets)."""

from __future__ import annotations

import warnings
from typing import Annotated

import typer

from pipelines.catalog import find_trace
from pipelines.choices import MAX_OUTSTANDING, MAX_WARMUP_PCT
from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    bounded,
    console,
    data_dir_of,
    mode_text,
    out,
    print_findings,
    print_json,
    progress_bar,
    table,
)
from schemas.units import format_bytes

ScenarioOpt = Annotated[str, typer.Option("--scenario", "-s", help="Preset name (see `tiercast scenarios`) "
                                                                   "or path to a scenario .toml file.")]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", help="Change a value of the scenario before it is validated, e.g. "
    "dram.cache_bytes=8GiB or raid_groups[0].width=6 (repeatable; the value is TOML, else text). Checked like "
    "the file and part of the scenario hash.")]


def _outstanding_list(text: str) -> list[int]:
    """``--outstanding 12,24,48`` of ``sweep`` as a list of counts, each from 1 to MAX_OUTSTANDING."""
    expect = f"integers from 1 to {MAX_OUTSTANDING} such as 12,24,48"
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expects {expect}, got {text!r}") from None
    if not counts or not all(1 <= n <= MAX_OUTSTANDING for n in counts):
        raise typer.BadParameter(f"expects {expect}, got {text!r}")
    return counts


def _check_outstanding(text: str) -> str:
    _outstanding_list(text)
    return text


def _scenario(ref: str, overrides: list[str] | None):
    from replay.scenario import load

    return load(ref, overrides or ())


def _warn_to_console(scenario) -> None:
    if scenario.ignored_sections:
        console.print(f"[yellow]note:[/] {scenario.name}: {', '.join(scenario.ignored_sections)} not yet "
                      "modelled, ignored", markup=True, highlight=False)


@app.command()
def replay(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id (or unambiguous prefix).")],
    scenario: ScenarioOpt,
    overrides: SetOpt = None,
    outstanding: Annotated[int | None, typer.Option(
        help=f"Closed loop with this many I/Os in flight, 1 to {MAX_OUTSTANDING} (default: the trace's own "
             "timing, open loop; a trace without timestamps goes closed loop at the scenario's outstanding).",
        callback=bounded(1, MAX_OUTSTANDING, integer=True))] = None,
    force: Annotated[bool, typer.Option(help="Replay again even if this run exists.")] = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through an array scenario (DRAM cache, RAID back end, queueing); write the run
    summary and per-interval metrics per volume and RAID group."""
    from pipelines import replay as rp

    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    sc = _scenario(scenario, overrides)
    if outstanding is not None:
        sc = sc.with_replay(mode="closed", outstanding=outstanding)
    _warn_to_console(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with progress_bar(f"replay {sc.name}", "requests") as cb:
            s = rp.replay_trace(trace, d, sc, progress=cb, force=force)
    s = {**s, "scenario_source": sc.source}
    if as_json:
        print_json(s)
        return
    out.print(f"run {s['run_id']}  trace {s['trace_id']}  scenario {s['scenario']} ({s['dram_mode']})"
              f"  mode {mode_text(s)}  model {s['model_version']}{'  [already done]' if s.get('already_done') else ''}")
    print_findings(s.get("warnings"))
    if overrides:
        out.print(f"scenario {sc.source}")
    rows = [
        ("requests", f"{s['requests']:,}"),
        ("iops", f"{s['iops']:,.0f}"),
        ("mb_per_s", f"{s['mb_per_s']:,.1f}"),
        ("latency mean/p95/p99/max ms",
         f"{s['latency_mean_ms']:.2f} / {s['latency_p95_ms']:.2f} / {s['latency_p99_ms']:.2f} / {s['latency_max_ms']:.1f}"),
        ("read_hit_ratio", f"{s['read_hit_ratio']:.4f}"),
        ("write_hit_ratio (coalesced)", f"{s['write_hit_ratio']:.4f}"),
        ("flush_mb_per_s", f"{s['flush_mb_per_s']:,.2f}"),
        ("forced flushes / stall ms", f"{s['forced_flush_count']:,} / {s['forced_flush_stall_ms']:,.0f}"),
        ("throttled requests / delay sum ms / mean ms",
         f"{s['throttled_requests']:,} / {s['throttle_delay_sum_ms']:,.0f} / {s['throttle_delay_mean_ms']:.2f}"),
        ("dirty pages max", f"{s['dirty_pages_max']:,} of {s['write_cache_pages']:,}"),
    ]
    if "ssd_slots" in s:  # an SSD cache (FAST Cache, QCache)
        def _t(x):
            return "never" if x is None else f"{x:,.0f} s"

        def _r(x):
            return "-" if x is None else f"{x:.4f}"

        rows += [
            ("ssd fill % / dirty %", f"{s['ssd_fill_pct']:.1f} / {s['ssd_dirty_pct']:.1f}"),
            ("ssd hit ratio (last 10 %)", f"{s['ssd_hit_ratio']:.4f} ({_r(s['ssd_hit_ratio_last10pct'])})"),
            ("ssd read hits / misses", f"{s['ssd_read_hits']:,} / {s['ssd_read_misses']:,}"),
            ("ssd write hits / misses", f"{s['ssd_write_hits']:,} / {s['ssd_write_misses']:,}"),
            ("ssd promotions / deferred", f"{s['ssd_promotions']:,} / {s['ssd_deferred']:,}"),
            ("ssd time to 50 % / 90 % full", f"{_t(s['ssd_time_to_50pct_fill_s'])} / {_t(s['ssd_time_to_90pct_fill_s'])}"),
        ]
    if "flash_servers" in s:  # an all-flash array (replay.mech.flash.kernel): no cache lines
        rows = rows[:4] + _flash_rows(s)
    if "tier_moves" in s:  # FAST VP
        rows += _tier_rows(s)
    if "snapshot_first_writes" in s:
        rows += [("snapshot chunks first written", f"{s['snapshot_first_writes']:,}"),
                 ("snapshot space peak / end GiB", f"{s['snapshot_peak_bytes'] / 2**30:,.1f} / "
                                                   f"{s['snapshot_bytes_end'] / 2**30:,.1f}"),
                 ("COFW copies / wait s", f"{s['snapshot_cofw_copies']:,} / {s['snapshot_cofw_wait_ns'] / 1e9:,.1f}")]
    for k, v in rows:
        out.print(f"{k:<30} {v:>20}")
    if s.get("results_dir"):
        out.print(f"results {s['results_dir']}")


def _tier_rows(s: dict) -> list[tuple[str, str]]:

    rows = []
    for t in s["tiers"]:
        lat = "-" if t["latency_mean_ms"] is None else f"{t['latency_mean_ms']:.2f} ms"
        rows.append((f"tier {t['tier']}", f"{t['request_share'] * 100:.1f} % of I/O, {lat}, "
                                          f"{t['used_bytes'] / 2**30:,.0f} of {t['capacity_bytes'] / 2**30:,.0f} GiB"))
    rows += [
        ("relocations up / down / rebalance",
         f"{s['tier_promotions']:,} / {s['tier_demotions']:,} / {s['tier_rebalances']:,}"),
        ("relocated GiB / windows", f"{s['tier_moved_bytes'] / 2**30:,.1f} / {s['tier_windows']:,}"),
        ("slices off target / dropped", f"{s['tier_deferred']:,} / {s['tier_dropped']:,}"),
    ]
    if "tier_skew_io_share" in s:
        rows.append(("skew (I/O on capacity)", f"{s['tier_skew_io_share'] * 100:.0f} % on "
                                               f"{s['tier_skew_capacity_share'] * 100:.0f} %"))
    return rows


def _flash_rows(s: dict) -> list[tuple[str, str]]:
    """All-flash summary lines: free space, GC, write amplification, the write cliff."""
    def _v(x, fmt):
        return "-" if x is None else fmt.format(x)

    gib = 1 << 30
    return [
        ("writes that waited for GC", f"{s['flash_gc_waits']:,} (wait sum {s['flash_gc_wait_ns'] / 1e6:,.0f} ms)"),
        ("flash free GiB / %", f"{s['flash_free_bytes'] / gib:,.1f} / {s['flash_free_pct']:.1f}"),
        ("flash GC GiB copied / WA", f"{s['flash_gc_bytes'] / gib:,.1f} / {s['flash_write_amplification']:.3f}"),
        ("flash GC-bound write MiB/s", f"{s['flash_steady_write_mib_per_s']:,.0f} (WA {s['flash_gc_write_amplification']:.2f})"),
        ("flash time to cliff", _v(s["flash_time_to_cliff_s"], "{:,.1f} s") if s["flash_time_to_cliff_s"] is not None
         else "no cliff"),
        ("write IOPS pre / post cliff", f"{_v(s['flash_pre_cliff_write_iops'], '{:,.0f}')} / "
                                        f"{_v(s['flash_post_cliff_write_iops'], '{:,.0f}')}"),
        ("write MiB/s pre / post cliff", f"{_v(s['flash_pre_cliff_write_mib_per_s'], '{:,.0f}')} / "
                                         f"{_v(s['flash_post_cliff_write_mib_per_s'], '{:,.0f}')}"),
    ]


@app.command()
def sweep(
    trace_id: Annotated[str, typer.Argument(help="Ingested trace id: supplies the address/op sequence.")],
    scenario: ScenarioOpt,
    overrides: SetOpt = None,
    outstanding: Annotated[str, typer.Option(help="Outstanding I/O counts, e.g. 12,24,48,96,192.",
                                             callback=_check_outstanding)] = "12,24,48,96,192",
    requests: Annotated[int | None, typer.Option(help="Replay at most this many requests per point (>= 1).",
                                                 callback=bounded(1, integer=True))] = None,
    warmup: Annotated[float, typer.Option(help=f"Percent of the requests to skip before measuring, 0 to "
                                               f"{MAX_WARMUP_PCT:g}.", callback=bounded(0, MAX_WARMUP_PCT))] = 20.0,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Closed-loop curve: IOPS and response time at each number of outstanding I/Os (IOMeter
    workers x outstanding, fio numjobs x iodepth). The trace gives addresses and ops, the model
    the timing."""
    from pipelines import replay as rp

    d = data_dir_of(data_dir)
    trace = find_trace(d, trace_id)
    sc = _scenario(scenario, overrides)
    _warn_to_console(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with progress_bar(f"sweep {sc.name}", "requests") as cb:
            rows = rp.sweep_trace(trace, d, sc, _outstanding_list(outstanding), max_requests=requests,
                                  warmup_pct=warmup, progress=cb)
    path = rp.sweep_path(d, rows[0]["sweep_id"])
    if as_json:
        print_json({"sweep_id": rows[0]["sweep_id"], "results_path": str(path),
                    "model_version": rows[0]["model_version"], "scenario_source": sc.source,
                    "rows": [{k: r[k] for k in ("outstanding", "iops", "mb_per_s", "latency_mean_ms", "latency_p95_ms",
                                                "latency_p99_ms", "read_hit_ratio", "write_hit_ratio", "warnings")}
                             for r in rows]})
        return
    for r in rows:
        print_findings(r["warnings"], f"at {r['outstanding']} outstanding")
    t = table(title=f"{sc.name} on {trace.trace_id} (closed loop)")
    for c in ("outstanding", "IOPS", "MB/s", "mean ms", "p95 ms", "p99 ms", "read hit", "write hit"):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(str(r["outstanding"]), f"{r['iops']:,.0f}", f"{r['mb_per_s']:,.1f}", f"{r['latency_mean_ms']:.2f}",
                  f"{r['latency_p95_ms']:.2f}", f"{r['latency_p99_ms']:.2f}", f"{r['read_hit_ratio']:.3f}",
                  f"{r['write_hit_ratio']:.3f}")
    out.print(t)
    if overrides:
        out.print(f"scenario {sc.source}")
    out.print(f"results {path}")


@app.command()
def scenarios(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:  # --data-dir: accepted, unused
    """List the array scenario presets (replay/scenarios/*.toml); --json: all that
    Scenario.describe() gives for each."""
    from replay.scenario import load, preset_names

    rows = [load(n).describe() for n in preset_names()]
    if as_json:
        print_json(rows)
        return
    features = any("features" in r for r in rows)
    t = table(title="array scenario presets")
    for c in ("name", "cache", "mode", "RAID groups", *(["features"] if features else []), "replay", "hash",
              "description"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["name"], format_bytes(r["cache_bytes"]), r["dram_mode"], "\n".join(r["raid_groups"]),
                  *([", ".join(map(str, r.get("features") or [])) or "-"] if features else []),
                  f"{r['mode']} {r['outstanding'] if r['mode'] == 'closed' else ''}".strip(),
                  r["hash"], r["description"] + (f" (not yet modelled: {', '.join(r['not_yet_modelled'])})"
                                                 if r["not_yet_modelled"] else ""))
    out.print(t)
