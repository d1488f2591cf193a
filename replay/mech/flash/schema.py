"""``[flash]`` as data: an all-flash array (``replay.mech.flash.kernel``, seed 001 Violin 6232)."""

from __future__ import annotations

from replay.schema import Param, Section

_POS = {"minimum": 0, "strict_min": True}

FLASH = Section("flash", (
    Param("enabled", "bool", True, "", "false: the section is kept but the array has its DRAM cache and drives",
          "choice"),
    Param("user_capacity_bytes", "size", 17 << 40, "B", "user space", "estimate", "32 TB raw less 4 spare VIMMs of "
          "64, vRAID parity and spare", minimum=1),
    Param("spare_factor", "float", 0.3, "", "spare / user space (greedy-GC write amplification)", "estimate",
          "Violin does not publish it; the write-amplification example of docs/models/sources.md", maximum=100, **_POS),
    Param("valid_pct", "float", 100.0, "%", "share of the user space holding valid data at the start", "seed",
          "seed 001: LUNs cover the whole user capacity, written before the test", minimum=0, maximum=100),
    Param("gc_mib_per_s", "float", 818.5, "MiB/s", "garbage collection's copy rate", "seed-fit",
          "seed 001: ~600 MiB/s after the cliff: 600 x (WA(0.3) - 1) = 818.5 [s001_gc_4k]", **_POS),
    Param("gc_start_pct", "float", 100.0, "%", "GC reclaims while free space is below this share of the space not "
          "holding data", maximum=100, **_POS),
    Param("stripe_unit_bytes", "size", 1024, "B", "vRAID stripe unit", "seed", "seed 001: 1 KB", minimum=512),
    Param("lun_block_bytes", "size", 512, "B", "the LUNs' logical block: the smallest I/O the host can issue; "
          "a write covering part of a block (or of a stripe unit, when that is larger) reads it first", "seed",
          "seed 001: 512 B LUN blocks in test groups 1-2, 4 KiB in group 3", minimum=512),
    Param("stripe_data_units", "int", 4, "units", "data units per stripe", "seed", "seed 001: RAID 5 (4+P)",
          minimum=1, maximum=64),
    Param("stripe_parity_units", "int", 1, "units", "parity units per stripe", "seed", "seed 001", minimum=0,
          maximum=2),
    Param("read_iops", "float", 300_000.0, "IOPS", "4 KB random reads per second at depth", "seed-fit",
          "seed 001: 300,000 IOPS, QD 32 [s001_read_iops]", **_POS),
    Param("read_latency_us", "float", 210.0, "us", "a 4 KB read at queue depth 1", "seed-fit",
          "seed 001: minimum read latency 0.21 ms, jobs = 1 [s001_read_lat1]", **_POS),
    Param("write_iops", "float", 307_000.0, "IOPS", "4 KB random writes per second at depth", "seed-fit",
          "seed 001: 307,000 IOPS, QD 32 [s001_write_iops]", **_POS),
    Param("write_latency_us", "float", 146.0, "us", "a 4 KB write at queue depth 1", "seed-fit",
          "seed 001: minimum write latency 0.146 ms, jobs = 1 [s001_write_lat1]", **_POS),
    Param("media_mib_per_s", "float", 2750.0, "MiB/s", "media bandwidth", "seed-fit",
          "seed 001: read bandwidth 2,750 MB/s (fio MB = MiB) [s001_read_bw]", **_POS),
), doc="An all-flash array: no DRAM cache, full-stripe writes without RAID penalty, free space with greedy-GC "
       "write amplification from the spare factor, and a GC bandwidth limit. Defaults: the violin6232 preset's.")


class Flash(FLASH.base("Flash")):
    """An all-flash array (``replay.mech.flash.schema.FLASH``; ``replay.mech.flash.kernel``, seed 001 Violin
    6232). The defaults are the ``violin6232`` preset's."""


def parse(w, t: dict, sc) -> Flash:
    """``[flash]`` (``w``: the ``replay.scenario_file.ScenarioFile``; ``sc``: the scenario so far):
    an all-flash array has no SSD cache, FAST VP or snapshots."""
    sec = "flash"
    f = Flash(**w.read(sec, FLASH, t))
    for name in ("stripe_unit_bytes", "lun_block_bytes"):
        v = getattr(f, name)
        if v & (v - 1):
            raise w.error(sec, name, f"{v} is not a power of two")
    if f.enabled:
        # the all-flash path (replay.array.run_flash_requests) runs none of them
        for name, what in (("ssd_cache", "SSD cache"), ("tiering", "FAST VP tiers"),
                           ("snapshots", "snapshots (not modelled on it yet)")):
            other = sc.sections.get(name)
            if other is not None and other.enabled:
                raise w.error(sec, "enabled", f"an all-flash array runs no {what}: switch [{name}] off")
    return f


def feature(s: Flash) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return "all_flash"
