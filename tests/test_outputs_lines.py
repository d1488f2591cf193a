"""The lines ``tiercast replay`` prints, declared by each mechanism (``replay/mech/<name>/outputs.py:LINES``)
and rendered by ``replay.outputs.render``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.replay import replay_frames
from replay.mech import BY_NAME, MECHANISMS
from replay.outputs import Line, render
from replay.scenario import load
from traces import synth

#: presets that, between them, run every mechanism (a measured device is no preset: a calibrated scenario file)
PRESETS = ("vnx5400", "vnx5400-fastcache", "vnx5400-fastvp", "vnx5500-snapshots", "violin6232", "aws-gp2",
           str(Path(__file__).with_name("fixtures") / "device_vda.toml"))


def test_render_formats_converts_and_renders_none():
    s = {"n": 12345, "ns": 2_500_000_000, "bytes": 3 << 30, "share": 0.256, "t": None, "u": 7.0}
    lines = (
        Line("count", "{n:,}"),
        Line("wait s / GiB", "{ns:s:,.1f} / {bytes:GiB:,.1f}"),
        Line("share", "{share:%:.0f} %"),
        Line("times", "{t:,.0f s} / {u:,.1f s}", none="never"),
        Line("ratio", "({t:.4f})"),
    )
    assert render(lines, s) == [
        ("count", "12,345"),
        ("wait s / GiB", "2.5 / 3.0"),
        ("share", "26 %"),
        ("times", "never / 7.0 s"),
        ("ratio", "(-)"),
    ]


def test_render_repeats_each_and_skips_optional_lines():
    s = {"tiers": [{"tier": "a", "ms": None}, {"tier": "b", "ms": 1.5}], "total": 3}
    lines = (
        Line("tier {tier}", "{ms:.2f ms} of {total}", each="tiers"),
        Line("skew", "{skew:%:.0f} %", optional=True),
        Line("total", "{total:,}"),
    )
    assert render(lines, s) == [("tier a", "- of 3"), ("tier b", "1.50 ms of 3"), ("total", "3")]
    assert render(lines, {**s, "skew": 0.8}) == [
        ("tier a", "- of 3"),
        ("tier b", "1.50 ms of 3"),
        ("skew", "80 %"),
        ("total", "3"),
    ]
    with pytest.raises(KeyError):  # a key a line that is not optional reads must be there
        render((Line("skew", "{skew}"),), s)
    with pytest.raises(ValueError, match="unknown unit"):
        render((Line("x", "{total:KiB:.1f}"),), s)


@pytest.fixture(scope="module")
def summaries() -> dict[str, dict]:
    """A short replay's summary for each of ``PRESETS``."""
    p = synth.pattern("database", requests=3_000, region_bytes=1 << 30, volume="lun", seed=1, iops=2000)
    df = synth.generate(p).sort("ts_ns")
    return {name: replay_frames([df], load(name), "lines", total=df.height).summary for name in PRESETS}


def test_every_mechanism_declares_lines_its_summaries_fill(summaries):
    ran = {m for s in summaries.values() for m in s["mechanisms"]}
    assert ran == {m.name for m in MECHANISMS}  # the presets cover every mechanism
    for name, s in summaries.items():
        for m in s["mechanisms"]:
            lines = BY_NAME[m].module("outputs").LINES
            assert all(isinstance(line, Line) for line in lines), m
            for line in lines:
                items = s[line.each] if line.each else [{}]
                assert items, (name, m, line.label)
                for item in items:
                    missing = line.keys() - item.keys() - s.keys()
                    assert not missing, (name, m, line.label, missing)
            rows = render(lines, s)
            assert all(label and value for label, value in rows), (name, m)
