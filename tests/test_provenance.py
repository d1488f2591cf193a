"""Provenance of every scenario value (``replay.provenance``, ``tiercast scenarios NAME --json``)
and the seed figures' kinds derived from it (``pipelines.seed_figures``: calibration when a preset
parameter is fitted to the figure, identity when it holds by construction, else validation)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.seed_figures import BY_KEY, FIGURES
from replay.physical import PhysicalRange, outside
from replay.provenance import fitted_figures, parameters, tag
from replay.scenario import PRESET_DIR, preset_names
from replay.schema import SOURCES


@pytest.mark.parametrize("line, expected", [
    ('rpm = 10000   # (seed 002) 10k drives', ("seed", "(seed 002) 10k drives")),
    ('x = 1  # (seed 000/002) 4 data + 1 parity', ("seed", "(seed 000/002) 4 data + 1 parity")),
    ('x = 1  # (est, seed 002: bursts) throttled past 30 %', ("estimate", "(est, seed 002: bursts) throttled past 30 %")),
    ('x = 1  # (fit: seed 000 peak [s000_peak96, s000_peak192]) gain', ("seed-fit", "(fit: seed 000 peak [s000_peak96, s000_peak192]) gain")),
    ('x = 1  # (doc) 8 KB pages', ("doc", "(doc) 8 KB pages")),
    ('x = 1  # no tag here', None),
    ('x = 1  # (see below) not a source', None),
])
def test_a_comment_tag_gives_the_source(line, expected):
    assert tag(line) == expected


@pytest.mark.parametrize("name", preset_names())
def test_every_value_a_preset_sets_states_its_source(name):
    rows = parameters(name)
    text = (PRESET_DIR / f"{name}.toml").read_text().splitlines()
    assert rows and all(r["source"] in (*SOURCES, "derived") for r in rows)
    unstated = [f"{r['table']}.{r['name']} (line {r['line']})" for r in rows if r["source"] == "unstated"]
    assert not unstated, f"{name}: values without a (source) tag: {unstated}"
    for r in rows:
        if r["set_by"] == "file":
            assert r["name"] in text[r["line"] - 1] or r["table"] == "ssd_cache", r  # QCache: block_bytes
        if r["source"] == "seed-fit":  # a fitted value names the figures it was fitted to, and they exist
            assert r["fitted_to"] and all(k in BY_KEY for k in r["fitted_to"]), r
    # ... and lies in the range the hardware allows (issue 27), declared with its source
    assert not outside(rows), f"{name}: fitted values without a physical range or outside it: {outside(rows)}"


def test_a_fitted_value_outside_its_physical_range_or_without_one_is_reported():
    rows = parameters("vnx5400-fastcache")
    oh = next(r for r in rows if (r["table"], r["name"]) == ("controller", "overhead_us"))
    assert oh["physical"]["source"] == "seed" and oh["physical"]["low"] == 2.0
    assert round(oh["physical"]["high"], 1) == 442.3  # 1e6 / 2,261 IOPS, seed 000's peak through one SP
    slow = [{**r, "value": 500.0} if r is oh else r for r in rows]  # slower than seed 000's own peak allows
    assert outside(slow) == [f"controller.overhead_us = 500.0: outside 2-442.282 ({oh['physical']['reference']})"]
    with pytest.raises(ValueError, match="source 'guess' is not one of datasheet, doc, seed"):
        PhysicalRange(0.0, 1.0, "guess", "")
    bare = [{**oh, "physical": None}]
    assert outside(bare) == ["controller.overhead_us = 30.0: no physical range declared"]
    assert outside([{**oh, "source": "set", "value": 500.0}]) == []  # --set values are the user's
    # a range per array where the hardware differs: FAST Cache's RAID 1 pair on SAS-2, QCache's 8 SAS-3 SSDs
    fill = {n: next(r["physical"]["high"] for r in parameters(n) if r["name"] == "fill_mib_per_s")
            for n in ("vnx5400-fastcache", "xs5224d-qcache-read")}
    assert (round(fill["vnx5400-fastcache"], 1), round(fill["xs5224d-qcache-read"], 1)) == (572.2, 9155.3)


def test_scenarios_name_json_lists_resolved_values_with_sources():
    res = CliRunner().invoke(app, ["scenarios", "vnx2-mcx", "--json", "--set", "pools[0].span_fraction=0.1"])
    assert res.exit_code == 0, res.output
    rows = {(r["table"], r["name"]): r for r in json.loads(res.stdout)}
    oh = rows[("controller", "overhead_us")]
    assert (oh["value"], oh["unit"], oh["source"], oh["set_by"], oh["line"], oh["fitted_to"]) == (
        30.0, "us", "seed-fit", "file", 9, ["s000_2gb"])
    span = rows[("pools[0]", "span_fraction")]
    assert (span["value"], span["source"], span["set_by"]) == (0.1, "set", "--set")
    cache = rows[("dram", "cache_bytes")]
    assert (cache["value"], cache["unit"], cache["source"]) == (4 << 30, "B", "seed")
    # a value the preset leaves to its declaration keeps the declaration's source and reference
    hwm = rows[("dram.flare", "high_watermark_pct")]
    assert (hwm["set_by"], hwm["source"], hwm["reference"], hwm["line"]) == ("default", "doc", "default high watermark 80 %", None)
    seek = rows[("drive_classes.sas10k", "avg_seek_ms")]  # from the drive's manual
    assert (seek["value"], seek["set_by"], seek["source"]) == (3.8, "file", "datasheet")
    assert "Savvio 10K.4" in rows[("drive_classes.sas10k", "track_to_track_ms")]["reference"]
    eff = rows[("drive_classes.sas10k", "reorder_efficiency")]
    assert (eff["value"], eff["source"], eff["fitted_to"]) == (0.35, "seed-fit", ["s000_peak96", "s000_peak192"])
    assert (eff["physical"]["low"], eff["physical"]["high"], eff["physical"]["source"]) == (0.0, 1.0, "definition")
    assert rows[("dram", "cache_bytes")]["physical"] is None  # declared for fitted parameters



def test_an_average_seek_left_out_is_derived_from_the_planning_iops(tmp_path):
    text = (PRESET_DIR / "vnx5400.toml").read_text()
    f = tmp_path / "planning.toml"
    f.write_text("\n".join(line for line in text.splitlines() if not line.startswith(("avg_seek_ms", "full_stroke_ms"))))
    seek = {(r["table"], r["name"]): r for r in parameters(f)}[("drive_classes.sas10k", "avg_seek_ms")]
    assert (seek["set_by"], seek["source"]) == ("default", "derived") and "planning_iops" in seek["reference"]


def test_scenarios_name_refuses_an_unknown_preset():
    res = CliRunner().invoke(app, ["scenarios", "vnx9", "--json"])
    assert res.exit_code != 0 and "no scenario preset 'vnx9'" in str(res.exception)


def test_figure_kinds_follow_the_fits():
    kinds = Counter(f.kind for f in FIGURES)
    assert kinds == {"calibration": 15, "validation": 15, "identity": 3}
    for f in FIGURES:
        assert (f.kind == "calibration") == bool(fitted_figures().get(f.key)), f.key
        assert (f.kind == "identity") == bool(f.identity), f.key
    # the figures that hold by construction (issue 27; seed 004's snapshot ratio left them when
    # redirect-on-write got a cost)
    assert {f.key for f in FIGURES if f.kind == "identity"} == {"s000_rt24", "s001_gc_32k", "s001_mixed_iops"}
    # fitting one more parameter to a validation figure would make it calibration
    assert "vnx2-mcx: pools[0].span_fraction" in BY_KEY["s002_ratio"].fitted
    assert BY_KEY["s002_mcx"].kind == "validation" and not BY_KEY["s002_mcx"].fitted


def test_a_fitted_parameter_moves_in_every_preset_that_sets_it_and_comes_back():
    from pipelines.seed_figures import _moved, fitted_parameters, perturbed, scenario_of

    places = fitted_parameters()[("span_fraction", ("s002_ratio",))]
    assert sorted(p for p, *_ in places) == ["vnx1-flare", "vnx2-mcx"]
    with perturbed(places, 0.9) as change:
        assert change == "1.0 -> 0.9"
        assert scenario_of("vnx2-mcx").pools[0].span_fraction == scenario_of("vnx1-flare").pools[0].span_fraction == 0.9
    assert scenario_of("vnx2-mcx").pools[0].span_fraction == 1.0
    assert _moved(1.0, 1.1, 0.0, 1.0) == 1.0  # at its declared maximum
    assert (_moved(1, 0.9, 1, 4096), _moved(1, 1.1, 1, 4096), _moved(5, 0.9, 1, 4096)) == (1, 2, 4)  # integer steps
    assert _moved(28_000.0, 1.1) == 30_800.0
