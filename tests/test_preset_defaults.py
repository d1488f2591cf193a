"""The parameter dataclasses' defaults (replay/scenario.py) are the presets' values: a scenario
that leaves a key out gets what the presets were calibrated and checked with. Every difference
between a preset and the defaults is listed here with its reason; anything else fails (a fitted
value changed in one place only, a new preset key that drifts from the default)."""

from __future__ import annotations

import dataclasses

import pytest

from replay.scenario import load, preset_names

# (preset, field path) -> why the preset differs from the dataclass default on purpose
DELIBERATE = {
    # the array each preset models (seed 002: FLARE side; seed 003: a QSAN with NL-SAS)
    ("vnx1-flare", "dram.mode"): "FLARE array (seed 002)",
    ("xs5224d", "dram.mode"): "watermark cache: QSAN publishes no adaptive flushing",
    ("xs5224d", "controller.overhead_us"): "seed 003 reaches 216k-461k IOPS with SSD cache",
    ("xs5224d", "controller.bandwidth_mb_per_s"): "12 Gb SAS / 16 Gb FC controller",
    ("xs5224d", "dram.cache_bytes"): "share of the 16 GB controller memory (seed 003)",
    ("xs5224d", "dram.page_bytes"): "seed 003 tests use 4 KB I/O",
    ("xs5224d", "dram.mirror_latency_us"): "single controller",
    ("xs5224d", "dram.flare.read_cache_bytes"): "cache size per model",
    # drives: the default class is a generic 10k SAS HDD
    ("xs5224d", "drive_classes.nlsas7k.planning_iops"): "NL-SAS 90 (seed 000)",
    ("xs5224d", "drive_classes.nlsas7k.rpm"): "7.2k (seed 003)",
    ("vnx1-flare", "drive_classes.sas10k.track_to_track_ms"): "10k SAS data sheets 0.2-0.4 ms; default: any HDD",
    ("vnx2-mcx", "drive_classes.sas10k.track_to_track_ms"): "10k SAS data sheets 0.2-0.4 ms; default: any HDD",
    ("vnx5400", "drive_classes.sas10k.track_to_track_ms"): "10k SAS data sheets 0.2-0.4 ms; default: any HDD",
    ("vnx1-flare", "drive_classes.sas10k.capacity_bytes"): "informational: 300 GB (seed 002)",
    ("vnx2-mcx", "drive_classes.sas10k.capacity_bytes"): "informational: 300 GB (seed 002)",
    ("vnx5400", "drive_classes.sas10k.capacity_bytes"): "informational: 900 GB (seed 000)",
    ("xs5224d", "drive_classes.nlsas7k.capacity_bytes"): "informational: 500 GB (seed 003)",
    ("xs5224d", "pools.pool1.span_fraction"): "2 x 45 GB on 16 x 500 GB (seed 003)",
    # the seeds' fitted or estimated full stroke, not the footprint (the default) of the seed workloads
    ("vnx1-flare", "pools.rg0.span_fraction"): "fitted to seed 002's MCx / FLARE ratio",
    ("vnx2-mcx", "pools.rg0.span_fraction"): "fitted to seed 002's MCx / FLARE ratio",
    ("vnx5400", "pools.performance.span_fraction"): "planning-rate seeks (est): seed 000's fits assume them",
    ("vnx5400-fastcache", "pools.performance.span_fraction"): "as vnx5400",
    ("vnx5400-fastvp", "pools.pool0.span_fraction"): "as vnx5400",
    ("vnx5500-snapshots", "pools.pool0.span_fraction"): "as vnx5400 (est)",
    # the drives from their manuals (Savvio 10K.4, Constellation SAS) with SPTF reordering (issue 27)
    **{(p, f"drive_classes.{cls}.{k}"): "the drive's datasheet" for p, cls in (
        *((p, "sas10k") for p in ("vnx1-flare", "vnx2-mcx", "vnx5400", "vnx5500-snapshots")),
        ("xs5224d", "nlsas7k"))
       for k in ("avg_seek_ms", "full_stroke_ms", "write_seek_extra_ms", "command_overhead_ms", "transfer_mb_per_s",
                 "transfer_inner_mb_per_s", "reordering", "reorder_efficiency", "queue_depth_max")},
    # how the seeds drove them when closed loop (replayed with --outstanding or replay.mode = "closed";
    # every preset replays a trace in its own time by default)
    ("vnx5400", "replay.outstanding"): "4 workers x 3 (seed 000)",
    ("xs5224d", "replay.outstanding"): "QD 128 (seed 003)",
    # SSD caches (the dataclass defaults are a VNX1 FAST Cache)
    ("vnx5400", "ssd_cache.enabled"): "FAST Cache off in seed 000's tests 1 and 2",
    ("vnx5400", "ssd_cache.proactive_cleaning"): "VNX2 cleans dirty chunks when idle (doc)",
    ("vnx5400-fastcache", "ssd_cache.proactive_cleaning"): "VNX2 cleans dirty chunks when idle (doc)",
    ("xs5224d", "ssd_cache.enabled"): "the HDD-only baseline of seed 003",
    ("vnx5400-fastvp", "tiering.policy"): "seed 000's pool: Auto-Tier",
    ("vnx5400-fastvp", "ssd_cache.enabled"): "FAST Cache off: FAST VP alone (as vnx5400)",
    ("vnx5400-fastvp", "tiering.pool"): "seed 000's one pool over both tiers",
    ("vnx5500-snapshots", "tiering.pool"): "seed 004's one pool over both drive types",
    ("vnx5500-snapshots", "pools.pool0.slice_bytes"): "1 GB slices on VNX1 (doc)",
    **{(p, f"ssd_cache.{f}"): "QCache 2.0 as seed 003 set it up" for p in ("xs5224d", "xs5224d-qcache-read",
                                                                            "xs5224d-qcache-rw")
       for f in ("kind", "drives", "chunk_bytes", "sub_block_bytes", "populate_on_read", "fill_mib_per_s")},
    ("xs5224d", "ssd_cache.mode"): "read cache (seed 003's read test)",
    ("xs5224d-qcache-read", "ssd_cache.mode"): "read cache (seed 003's read test)",
    ("xs5224d-qcache-rw", "ssd_cache.populate_on_write"): "seed 003's write test",
    # the all-flash array (seed 001): four controllers, fio's group-1 write-cliff run
    ("violin6232", "controller.overhead_us"): "four controllers reaching ~300k IOPS (seed 001)",
    ("violin6232", "replay.outstanding"): "fio numjobs 64 x iodepth 64 (seed 001 group 1)",
    # cloud volumes: the [cloud] defaults are the aws-gp3 preset's volume (1,000 GiB, the type's default IOPS
    # and MiB/s); each other preset is another type, size or provider, with that type's latency figures
    ("aws-gp2", "cloud.volume_type"): "gp2", ("aws-gp2", "cloud.size_bytes"): "500 GiB: baseline below the burst",
    ("aws-gp3", "cloud.iops"): "written out: the included 3,000", ("aws-gp3", "cloud.mib_per_s"): "the included 125",
    ("aws-st1", "cloud.size_bytes"): "2,000 GiB log volume",
    **{(p, f"cloud.{f}"): "the type's own" for p in ("aws-io2", "aws-st1", "azure-premium-p30", "azure-premium-v2",
                                                     "gcp-hyperdisk-balanced", "gcp-pd-balanced")
       for f in ("volume_type", "read_latency_ms", "read_latency_p99_ms", "write_latency_ms", "write_latency_p99_ms")
       if (p, f) != ("gcp-hyperdisk-balanced", "read_latency_ms")},
    ("aws-io2", "cloud.iops"): "16,000 provisioned",
    **{(p, f"cloud.{f}"): "another cloud's volume" for p in ("azure-premium-p30", "azure-premium-v2",
                                                            "gcp-hyperdisk-balanced", "gcp-pd-balanced")
       for f in ("provider", "region", "size_bytes")},
    **{(p, f"cloud.{f}"): "provisioned to compare with P30 / pd-balanced" for p in ("azure-premium-v2",
                                                                                    "gcp-hyperdisk-balanced")
       for f in ("iops", "mib_per_s")},
}
#: Presets that are another preset with one mechanism switched on: they differ from the defaults
#: where their base does (plus their own entries above).
VARIANT_OF = {"vnx5400-fastcache": "vnx5400", "vnx5400-fastvp": "vnx5400", "vnx5500-snapshots": "vnx1-flare", "xs5224d-qcache-read": "xs5224d", "xs5224d-qcache-rw": "xs5224d"}



def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _differences(obj, path: str, dram_mode: str) -> dict[str, tuple]:
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            out.update(_differences(v, f"{path}.{f.name}", dram_mode))
            continue
        d = _default(f)
        if d is dataclasses.MISSING or f.name == "drive_class":  # names, levels, widths: no default to compare
            continue
        if path == "dram" and f.name == "flush_order":
            d = "address" if dram_mode == "mcx" else "age"  # the parser's default follows the mode
        if v != d:
            out[f"{path}.{f.name}"] = (v, d)
    return out


@pytest.mark.parametrize("name", preset_names())
def test_preset_values_equal_the_dataclass_defaults_except_the_listed_ones(name):
    sc = load(name)
    mode = sc.dram.mode
    diffs = {}
    diffs.update(_differences(sc.controller, "controller", mode))
    diffs.update(_differences(sc.dram, "dram", mode))
    for n, dc in sc.drive_classes.items():
        if dc.kind == "ssd":  # the defaults are a 10k SAS HDD: SSD classes carry their sources in the preset
            continue
        diffs.update(_differences(dc, f"drive_classes.{n}", mode))
    for key in ("ssd_cache", "flash", "cloud"):
        if key in sc.sections:
            diffs.update(_differences(sc.sections[key], key, mode))
    for rg in sc.raid_groups:
        diffs.update(_differences(rg, f"raid_groups.{rg.name}", mode))
    for p in sc.pools:
        diffs.update(_differences(p, f"pools.{p.name}", mode))
    diffs.update(_differences(sc.replay, "replay", mode))
    if "tiering" in sc.sections:
        diffs.update(_differences(sc.sections["tiering"], "tiering", mode))
    listed = {path for (preset, path) in DELIBERATE if preset in (name, VARIANT_OF.get(name))}
    if name in VARIANT_OF:  # the base preset's own SSD cache switch-off and mode do not apply
        listed -= {"ssd_cache.enabled", "ssd_cache.mode"} - {path for (p, path) in DELIBERATE if p == name}
        # nor its pools' values when the variant names its pools otherwise
        listed -= {path for path in listed if path.startswith("pools.")
                   and path.split(".")[1] not in {p.name for p in sc.pools}}
    unexpected = {k: v for k, v in diffs.items() if k not in listed}
    assert not unexpected, f"{name}: (preset value, default) differ and are not listed as deliberate: {unexpected}"
    stale = listed - set(diffs)
    assert not stale, f"{name}: listed as deliberate differences but equal to the default now: {stale}"

