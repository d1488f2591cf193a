"""Scenario files: presets, validation errors that name file, line and problem, stable hashes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replay.scenario import PRESET_DIR, load, loads, preset_names

MINIMAL = """
name = "mini"
[dram]
mode = "flare"
cache_bytes = "64MiB"
[dram.flare]
read_cache_bytes = "16MiB"
[drive_classes.sas]
planning_iops = 150
rpm = 10000
[[raid_groups]]
name = "rg0"
level = 5
width = 5
drive_class = "sas"
[[pools]]
name = "p"
raid_groups = ["rg0"]
"""


def test_presets_load_and_describe_the_seed_systems():
    assert {"vnx5400", "vnx1-flare", "vnx2-mcx", "xs5224d"} <= set(preset_names())
    v = load("vnx5400")
    assert [(rg.level, rg.width, rg.drive_class) for rg in v.raid_groups] == [(5, 5, "sas10k")] * 3
    assert v.n_drives == 15 and v.dram.cache_bytes == 4 << 30 and v.dram.mode == "mcx"
    assert v.drive_classes["sas10k"].planning_iops == 150
    assert v.pools[0].slice_bytes == 256 << 20
    assert v.ignored_sections == [] and v.sections["ssd_cache"].kind == "fastcache" and v.ssd_cache is None  # FAST Cache off
    f, m = load("vnx1-flare"), load("vnx2-mcx")
    assert (f.dram.mode, m.dram.mode) == ("flare", "mcx")
    assert f.raid_groups == m.raid_groups and f.drive_classes == m.drive_classes
    assert f.dram.flare.high_watermark_pct == 80 and f.dram.flare.low_watermark_pct == 60
    assert f.dram.write_cache_bytes == (4 << 30) - (512 << 20)
    q = load("xs5224d")
    assert q.raid_groups[0].width == 16 and q.drive_classes["nlsas7k"].rpm == 7200


def test_drive_class_derives_the_seek_from_the_planning_rate():
    dc = loads(MINIMAL).drive_classes["sas"]  # no avg_seek_ms (the presets' come from their manuals)
    assert dc.half_rotation_ms == pytest.approx(3.0)
    # 1000/150 = 6.667 ms = seek + 3.0 ms + 8 KiB at 150 MB/s (0.0546 ms)
    assert dc.seek_ms == pytest.approx(1000 / 150 - 3.0 - 8192 / 150e3)


def test_every_preset_number_has_its_source():
    """Each numeric or size setting in a preset carries a (seed)/(doc)/(est)/(datasheet ...)/(measured ...)/(fit:
    ...) comment."""
    for path in PRESET_DIR.glob("*.toml"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"^\s*[a-z_]+\s*=\s*(\"?[0-9.]+\s*[KMGTiB]*\"?)\s*(#.*)?$", line):
                assert re.search(r"#\s*\((seed|doc|est|datasheet|measured|fit:)", line), f"{path.name}:{i}: no source: {line}"


def test_hash_is_stable_across_spelling_and_names_but_not_content():
    a = loads(MINIMAL, "a.toml")
    b = loads(MINIMAL.replace('cache_bytes = "64MiB"', "cache_bytes = 67108864")
              .replace('name = "mini"', 'name = "other"\ndescription = "same array"'), "b.toml")
    assert a.hash == b.hash
    c = loads(MINIMAL.replace("rpm = 10000", "rpm = 15000"), "c.toml")
    assert c.hash != a.hash
    assert a.with_replay(mode="closed", outstanding=32).hash != a.hash
    assert load("vnx2-mcx").hash == load(PRESET_DIR / "vnx2-mcx.toml").hash


@pytest.mark.parametrize("edit, message", [
    (("[dram]\n", "[dram]\nwatermark = 3\n"), r"m\.toml, line 4: \[dram\] watermark: unknown key 'watermark'"),
    (('cache_bytes = "64MiB"', 'cache_bytes = "-64MiB"'), r"line 5: \[dram\] cache_bytes: negative size"),
    (('read_cache_bytes = "16MiB"', 'read_cache_bytes = "16MiB"\nlow_watermark_pct = 85'),
     r"\[dram\.flare\] low_watermark_pct: low watermark 85.0 % must be below the high watermark 80.0 %"),
    (("level = 5", "level = 4"), r"line 13: \[\[raid_groups\]\] #1 level: 4 is not one of 0, 1, 5, 6, 10"),
    (("width = 5", "width = 2"), r"RAID group 'rg0': RAID 5 cannot have 2 drives"),
    (('drive_class = "sas"', 'drive_class = "ssd"'), r"unknown drive class 'ssd'; defined: sas"),
    (('raid_groups = ["rg0"]', 'raid_groups = ["rg9"]'), r"pool 'p': unknown RAID group 'rg9'"),
    (("rpm = 10000", 'rpm = "fast"'), r"\[drive_classes\.sas\] rpm: expected an integer, got 'fast'"),
    (("planning_iops = 150", "planning_iops = 400"), r"no room for a seek"),
    (('name = "mini"', 'name = "mini"\n[replay]\nmode = "sideways"'), r"\[replay\] mode: 'sideways' is not one of"),
])
def test_validation_errors_name_file_line_and_problem(edit, message):
    with pytest.raises(ValueError, match=message):
        loads(MINIMAL.replace(*edit), "m.toml")


def test_syntax_errors_and_unknown_presets():
    with pytest.raises(ValueError, match=r"x\.toml: not valid TOML"):
        loads("name = ", "x.toml")
    with pytest.raises(LookupError, match="no scenario preset 'vnx9'; presets: .*vnx2-mcx"):
        load("vnx9")
    with pytest.raises(FileNotFoundError):
        load(Path("/nonexistent/s.toml"))


def test_the_tiering_section_is_validated_and_hashed():
    with pytest.raises(ValueError, match=r"n\.toml.*\[tiering\] policy.*'auto'.*highest_available"):
        loads(MINIMAL + '\n[tiering]\npolicy = "auto"\n', "n.toml")
    with pytest.raises(ValueError, match=r"\[tiering\].*unknown key.*halflife"):
        loads(MINIMAL + '\n[tiering]\nhalflife = 3\n', "n.toml")
    with pytest.raises(ValueError, match=r"drive class 'sas' needs capacity_bytes"):
        loads(MINIMAL + '\n[tiering]\npolicy = "auto_tier"\n', "n.toml")
    s = load("vnx5400-fastvp")
    assert s.tiering.policy == "auto_tier" and s.tiering.pool == "pool0" and s.ignored_sections == []
    assert "fast_vp:auto_tier" in s.features()
    assert s.hash != load("vnx5400-fastvp", ["tiering.enabled=false"]).hash
    assert load("vnx5400-fastvp", ["tiering.enabled=false"]).tiering is None


def test_volume_mapping_by_pattern_then_default():
    text = MINIMAL.replace('[[pools]]\nname = "p"\nraid_groups = ["rg0"]', """
[[raid_groups]]
name = "rg1"
level = 10
width = 4
drive_class = "sas"
[[pools]]
name = "p"
raid_groups = ["rg0"]
[[pools]]
name = "fast"
raid_groups = ["rg1"]
[volumes]
default_pool = "p"
[[volumes.map]]
pattern = "db-*"
pool = "fast"
""")
    s = loads(text, "v.toml")
    assert s.pool_of_volume("db-7") == 1 and s.pool_of_volume("web") == 0


TWO_GROUPS = MINIMAL.replace('[[pools]]\nname = "p"\nraid_groups = ["rg0"]', """[[raid_groups]]
name = "rg1"
level = 6
width = 8
drive_class = "sas"
[[pools]]
name = "p"
raid_groups = ["rg0"]
[[pools]]
name = "q"
raid_groups = ["rg1"]
""")


@pytest.mark.parametrize("edit, message", [
    (("level = 6", "level = 7"), r"t\.toml, line 18: \[\[raid_groups\]\] #2 level: 7 is not one of"),
    (("width = 8", "width = 3"), r"t\.toml, line 19: \[\[raid_groups\]\] #2 width: RAID group 'rg1': RAID 6 cannot"),
    (('name = "rg1"', 'name = "rg0"'), r"t\.toml, line 17: \[\[raid_groups\]\] #2 name: RAID group 'rg0' defined twice"),
    (('name = "rg1"', 'name = "rg1"\ncolour = "red"'), r"t\.toml, line 18: \[\[raid_groups\]\] #2 colour: unknown key"),
    (('raid_groups = ["rg1"]', 'raid_groups = ["rg9"]'),
     r"t\.toml, line 26: \[\[pools\]\] #2 raid_groups: pool 'q': unknown RAID group 'rg9'"),
])
def test_errors_in_a_later_array_entry_point_at_that_entry(edit, message):
    text = TWO_GROUPS.replace(*edit)
    with pytest.raises(ValueError, match=message):
        loads(text, "t.toml")


def test_an_entry_lacking_a_key_points_at_its_own_header():
    text = TWO_GROUPS.replace('name = "rg1"\n', "")
    with pytest.raises(ValueError, match=r"t\.toml, line 16: \[\[raid_groups\]\] #2 lacks 'name'"):
        loads(text, "t.toml")


def test_a_scenario_that_is_not_utf8_is_named_with_the_offset(tmp_path):
    f = tmp_path / "latin1.toml"
    f.write_bytes(MINIMAL.replace('name = "mini"', 'name = "mini"\ndescription = "caché"').encode("latin-1"))
    offset = MINIMAL.index('name = "mini"') + len('name = "mini"\ndescription = "cach')
    with pytest.raises(ValueError) as e:
        load(f)
    assert str(e.value) == (f"{f}: not UTF-8 text: byte 0xe9 at offset {offset} (line 3); save the scenario "
                            "as UTF-8")
    f.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())  # a BOM is still UTF-8
    assert load(f).name == "mini"


@pytest.mark.parametrize("changes, message", [
    ({"outstanding": 0}, "outstanding must be an integer from 1 to 1048576, got 0"),
    ({"outstanding": -4}, "outstanding must be an integer from 1 to 1048576, got -4"),
    ({"outstanding": 2.5}, "outstanding must be an integer from 1 to 1048576, got 2.5"),
    ({"warmup_pct": 150.0}, "warmup_pct must be a number from 0 to 99, got 150.0"),
    ({"warmup_pct": -50.0}, "warmup_pct must be a number from 0 to 99, got -50.0"),
    ({"interval_ns": 10}, "interval_ns must be an integer >= 1000000, got 10"),
    ({"mode": "sideways"}, "replay mode must be 'open' or 'closed', got 'sideways'"),
])
def test_replay_options_changed_in_code_are_checked_like_the_file(changes, message):
    sc = loads(MINIMAL, "m.toml")
    with pytest.raises(ValueError) as e:
        sc.with_replay(**changes)
    assert str(e.value) == message
    assert sc.with_replay(mode="closed", outstanding=1 << 20, warmup_pct=99.0).replay.outstanding == 1 << 20
