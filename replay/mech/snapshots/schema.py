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
    Param("mode", "str", "row", "", "row: redirect-on-write (the write path unchanged, only the space counted); "
          "cofw: copy-on-first-write (the old chunk copied before the write)", "seed",
          "seed 004: VNX Snapshots redirect on write (SnapView: cofw)", choices=MODES),
), doc="Snapshots on a schedule: one every ``every_s`` from time zero, each kept ``keep_s``.")


class Snapshots(SNAPSHOTS.base("Snapshots")):
    """Snapshots on a schedule (``replay.mech.snapshots.schema.SNAPSHOTS``; ``replay.mech.snapshots.kernel``)."""


def parse(w, t: dict, sc) -> Snapshots:
    """``[snapshots]`` (``w``: the ``replay.scenario_file.ScenarioFile``; ``sc``: the scenario so far)."""
    return Snapshots(**w.read("snapshots", SNAPSHOTS, t))


def feature(s: Snapshots) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"snapshots:{s.mode}"
