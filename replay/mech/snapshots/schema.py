"""``[snapshots]`` as data: snapshots on a schedule (``replay.mech.snapshots.kernel``)."""

from __future__ import annotations

from replay.schema import Param, Section

MODES = ("row", "cofw")

SNAPSHOTS = Section("snapshots", (
    Param("enabled", "bool", True, "", "false: the section is kept but no snapshot is taken", "choice"),
    Param("every_s", "float", 3600.0, "s", "a snapshot every this long from time zero", "seed", "seed 004: hourly "
          "snapshots", minimum=0.001),
    Param("keep_s", "float", 86400.0, "s", "each snapshot is kept this long", "seed", "seed 004: -keepFor 1d",
          minimum=0, strict_min=True),
    Param("mode", "str", "row", "", "row: redirect-on-write (nothing copied; the map updates, split reads and "
          "deletion below cost back-end I/O); cofw: copy-on-first-write (the old chunk copied before the write)",
          "seed", "seed 004: VNX Snapshots redirect on write (SnapView: cofw)", choices=MODES),
    Param("map_block_bytes", "size", 8 << 10, "B", "row: the unit a redirect moves (a mapping entry per block); "
          "divides the chunk (the DRAM flush unit)", "doc", "EMC VNX Snapshots white paper (h10858): 8 KB "
          "granularity, the pool's block", minimum=512),
    Param("map_entries_per_page", "int", 1024, "entries", "row: mapping entries per metadata page, so a page "
          "maps this many blocks of the LUN (1024 x 8 KB = 8 MiB)", "estimate", "est: a pool LUN's map is a tree "
          "of 8 KB pages of 8-byte block pointers; EMC publishes no entry size", minimum=1),
    Param("map_page_bytes", "size", 8 << 10, "B", "row: a metadata page, the size of its read and write on the "
          "drives", "estimate", "est: the pool's 8 KB block (map_block_bytes)", minimum=512),
    Param("map_cache_bytes", "size", 256 << 20, "B", "row: SP memory holding metadata pages (direct-mapped, "
          "map_page_bytes each); a page not in it is read from the drives before its update", "estimate",
          "est: a share of the VNX5500's 12 GB per SP; EMC does not publish the split", minimum=0),
), doc="Snapshots on a schedule: one every ``every_s`` from time zero, each kept ``keep_s``.")


class Snapshots(SNAPSHOTS.base("Snapshots")):
    """Snapshots on a schedule (``replay.mech.snapshots.schema.SNAPSHOTS``; ``replay.mech.snapshots.kernel``)."""


def parse(w, t: dict, sc) -> Snapshots:
    """``[snapshots]`` (``w``: the ``replay.scenario_file.ScenarioFile``; ``sc``: the scenario so far)."""
    return Snapshots(**w.read("snapshots", SNAPSHOTS, t))


def feature(s: Snapshots) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"snapshots:{s.mode}"
