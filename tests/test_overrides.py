"""``--set key=value`` scenario overrides (replay/overrides.py): applied to the TOML document
before validation, so checked exactly like the file, named in errors and in the scenario's
source, and part of the hash."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from test_scenario import MINIMAL
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import ingest_file
from replay.overrides import apply, parse_override, parse_value
from replay.scenario import load, loads, preset_names
from traces import synth


def test_an_override_changes_the_value_the_hash_and_the_source():
    base = load("vnx2-mcx")
    s = load("vnx2-mcx", ["dram.cache_bytes=1GiB"])
    assert (base.dram.cache_bytes, s.dram.cache_bytes) == (4 << 30, 1 << 30)
    assert s.hash != base.hash and s.name == base.name == "vnx2-mcx"
    assert s.source == f"{base.source} --set dram.cache_bytes=1GiB" and s.describe()["source"] == s.source
    assert s.raid_groups == base.raid_groups and s.dram.mcx == base.dram.mcx


def test_one_value_written_two_ways_gives_one_hash():
    hashes = {load("vnx5400", [f"dram.cache_bytes={v}"]).hash for v in ("8GiB", "8589934592", '"8GiB"', "8 GiB")}
    file = loads(MINIMAL.replace('cache_bytes = "64MiB"', 'cache_bytes = "8GiB"'), "m.toml")
    assert len(hashes) == 1
    assert loads(MINIMAL, "m.toml", ["dram.cache_bytes=8589934592"]).hash == file.hash
    assert load("vnx5400", ["dram.cache_bytes=8GiB"]).hash != load("vnx5400").hash


@pytest.mark.parametrize("text, value", [
    ("200GB", "200GB"), ('"200GB"', "200GB"), ("3", 3), ("0.5", 0.5), ("true", True), ("[1, 2]", [1, 2]),
    ("{a = 1}", {"a": 1}), ("", ""), ("sas 10k", "sas 10k"), ("1\nb = 2", "1\nb = 2"),
])
def test_a_value_is_toml_or_else_text(text, value):
    assert parse_value(text) == value


@pytest.mark.parametrize("override, edit", [
    ("dram.watermark=3", ("[dram]\n", "[dram]\nwatermark = 3\n")),
    ("dram.cache_bytes=-64MiB", ('cache_bytes = "64MiB"', 'cache_bytes = "-64MiB"')),
    ("dram.cache_bytes=true", ('cache_bytes = "64MiB"', "cache_bytes = true")),
    ("dram.flare.low_watermark_pct=85", ('read_cache_bytes = "16MiB"', 'read_cache_bytes = "16MiB"\nlow_watermark_pct = 85')),
    ("raid_groups[0].level=4", ("level = 5", "level = 4")),
    ("raid_groups.0.width=2", ("width = 5", "width = 2")),
    ("drive_classes.sas.rpm=fast", ("rpm = 10000", 'rpm = "fast"')),
    ("replay.mode=sideways", ('name = "mini"', 'name = "mini"\n[replay]\nmode = "sideways"')),
    ("replay.outstanding=0", ('name = "mini"', 'name = "mini"\n[replay]\noutstanding = 0')),
])
def test_an_override_is_validated_exactly_like_the_file(override, edit):
    """The same error as the same value written in the file, naming the override instead of a line."""
    with pytest.raises(ValueError) as in_file:
        loads(MINIMAL.replace(*edit), "m.toml")
    with pytest.raises(ValueError) as by_set:
        loads(MINIMAL, "m.toml", [override])
    problem = re.sub(r"^m\.toml(, line \d+)?: ", "", str(in_file.value))
    assert str(by_set.value) == f"m.toml --set {shlex.quote(override)}: {problem}"


def test_an_entry_of_an_array_of_tables_by_index_either_way():
    base = load("vnx5400")
    a = load("vnx5400", ["raid_groups.2.width=6"])
    b = load("vnx5400", ["raid_groups[2].width=6"])
    assert a.hash == b.hash != base.hash
    assert [rg.width for rg in a.raid_groups] == [5, 5, 6] and a.raid_groups[:2] == base.raid_groups[:2]
    assert load("vnx5400", ["pools[0].raid_groups[2]=rg2"]).hash == base.hash  # an element of a plain array
    with pytest.raises(ValueError, match=r"vnx5400\.toml --set raid_groups\.3\.width=6: raid_groups has 3 "
                                         r"entries: '3' is not one of its indexes \(0 to 2\)$"):
        load("vnx5400", ["raid_groups.3.width=6"])
    with pytest.raises(ValueError, match=r"--set raid_groups\.rg0\.width=6: raid_groups has 3 entries: 'rg0'"):
        load("vnx5400", ["raid_groups.rg0.width=6"])


def test_a_missing_table_is_created_a_value_is_not_a_table():
    s = load("vnx5400", ["tiering.policy=lowest_available"])
    assert s.tiering.policy == "lowest_available" and s.tiering.pool == "performance"
    with pytest.raises(ValueError, match=r"vnx2-mcx\.toml --set ssd_cache\.enabled=true: \[ssd_cache\] lacks 'kind'"):
        load("vnx2-mcx", ["ssd_cache.enabled=true"])  # created, then validated like a file's [ssd_cache]
    with pytest.raises(ValueError, match=r"vnx2-mcx\.toml --set dram\.cache_bytes\.x=1: dram\.cache_bytes is not "
                                         r"a table \(it is '4GiB'\)$"):
        load("vnx2-mcx", ["dram.cache_bytes.x=1"])
    with pytest.raises(ValueError, match=r"--set pools\.0\.raid_groups\.0\.x=1: pools\[0\]\.raid_groups\[0\] is not "
                                         r"a table \(it is 'rg0'\)$"):
        load("vnx2-mcx", ["pools.0.raid_groups.0.x=1"])


def test_the_ssd_cache_of_a_preset():
    base = load("vnx5400-fastcache")
    s = load("vnx5400-fastcache", ["ssd_cache.capacity_bytes=200GB"])
    assert (base.sections["ssd_cache"].capacity_bytes, s.sections["ssd_cache"].capacity_bytes) == (0, 200 << 30) and s.hash != base.hash
    assert load("vnx5400-fastcache", ['ssd_cache.capacity_bytes="200GB"']).hash == s.hash
    assert load("vnx5400-fastcache", ["ssd_cache.enabled=false"]).ssd_cache is None and base.ssd_cache is not None
    assert load("vnx5400").ssd_cache is None and load("vnx5400", ["ssd_cache.enabled=true"]).ssd_cache is not None


@pytest.mark.parametrize("text, message", [
    ("dram.cache_bytes", r"--set dram\.cache_bytes: expected KEY=VALUE, such as dram\.cache_bytes=8GiB$"),
    ("=3", r"--set =3: expected KEY=VALUE"),
    ("a b=1", r"--set 'a b=1': 'a b' is not a key such as dram\.cache_bytes or raid_groups\[0\]\.width$"),
    ("dram..cache_bytes=1", r"--set dram\.\.cache_bytes=1: 'dram\.\.cache_bytes' is not a key"),
])
def test_a_malformed_override_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_override(text)
    with pytest.raises(ValueError, match=r"^m\.toml " + message):
        loads(MINIMAL, "m.toml", [text])


def test_quoted_keys_order_and_the_document_left_alone():
    o = parse_override('drive_classes."sas 10k".rpm = 15000')
    assert (o.path, o.value) == (("drive_classes", "sas 10k", "rpm"), 15000)
    doc = {"dram": {"cache_bytes": 1}}
    new, source = apply(doc, ["dram.cache_bytes=2", "dram.cache_bytes=3"], "x.toml")
    assert new == {"dram": {"cache_bytes": 3}} and doc == {"dram": {"cache_bytes": 1}}
    assert source == "x.toml --set dram.cache_bytes=2 --set dram.cache_bytes=3"
    assert load("vnx2-mcx", ["name=mine", "description=a b"]).name == "mine"
    assert loads(MINIMAL.replace('name = "mini"\n', ""), "dir/file.toml", ["dram.cache_bytes=1GiB"]).name == "file"


# --- the CLI ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("overrides")
    synth.write(synth.pattern("randwrite-8k", requests=2000, region_bytes=256 << 20, seed=5), d / "w.parquet")
    return d, ingest_file(d / "w.parquet", d, validate="off").trace_id


def run(*args):
    """``tiercast ARGS`` through the same error handling as the installed script."""
    return CliRunner().invoke(app, [str(a) for a in args], handle_errors=True)


def test_replay_and_sweep_take_set(trace):
    d, tid = trace
    r = run("replay", tid, "-s", "vnx2-mcx", "--set", "dram.cache_bytes=1GiB", "--set", "raid_groups[0].width=6",
            "--data-dir", d, "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    sc = load("vnx2-mcx", ["dram.cache_bytes=1GiB", "raid_groups[0].width=6"])
    assert s["scenario_hash"] == sc.hash != load("vnx2-mcx").hash
    assert s["scenario_source"].endswith("vnx2-mcx.toml --set dram.cache_bytes=1GiB --set 'raid_groups[0].width=6'")
    text = run("replay", tid, "-s", "vnx2-mcx", "--set", "dram.cache_bytes=1GiB", "--set", "raid_groups[0].width=6",
               "--data-dir", d).stdout
    assert "[already done]" in text and f"scenario {sc.source}\n" in text
    r = run("sweep", tid, "-s", "vnx2-mcx", "--set", "dram.cache_bytes=1GiB", "--outstanding", "4", "--requests", 500,
            "--data-dir", d, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["scenario_source"].endswith("--set dram.cache_bytes=1GiB")


@pytest.mark.parametrize("override, problem", [
    ("dram.cache_bytes=-1", "[dram] cache_bytes: negative size -1"),
    ("dram.cache_byte=1", "[dram] cache_byte: unknown key 'cache_byte'; allowed: cache_bytes, flare, "),
    ("replay.outstanding=many", "[replay] outstanding: expected an integer, got 'many'"),
    ("dram.cache_bytes", "expected KEY=VALUE, such as dram.cache_bytes=8GiB"),
])
@pytest.mark.parametrize("cmd", ["replay", "sweep"])
def test_a_bad_override_is_one_line_and_exit_2(trace, cmd, override, problem):
    d, tid = trace
    r = run(cmd, tid, "-s", "vnx2-mcx", "--set", override, "--data-dir", d)
    assert r.exit_code == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"error: {load('vnx2-mcx').source} --set {override}: {problem}")
    r = run(cmd, tid, "-s", "vnx2-mcx", "--set", override, "--data-dir", d, "--json")
    assert r.exit_code == 2 and json.loads(r.stdout)["error"] == line.removeprefix("error: ")


def test_scenarios_json_is_describe_of_each_preset_and_the_table_shows_features():
    r = run("scenarios", "--json")
    described = [load(n).describe() for n in preset_names()]
    assert r.exit_code == 0 and json.loads(r.stdout) == json.loads(json.dumps(described))
    text = run("scenarios", "--wide").stdout  # the features column is one --wide adds
    assert "features" in text and all(f in text for d in described for f in d["features"])
    assert "features" not in run("scenarios").stdout
