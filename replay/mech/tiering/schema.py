"""``[tiering]`` as data: FAST VP auto-tiering of one pool (``replay.mech.tiering.kernel``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from replay.schema import Param, Section

#: FAST VP tiering policies (doc); the VNX2 default is start_high_then_auto_tier
POLICIES = ("highest_available", "auto_tier", "start_high_then_auto_tier", "lowest_available")

TIERING = Section("tiering", (
    Param("enabled", "bool", True, "", "false: the section is kept but slices never move", "choice"),
    Param("pool", "str", "", "", "the tiered pool (\"\": the default pool)", "choice"),
    Param("policy", "str", "start_high_then_auto_tier", "", "where new slices go and whether they move", "doc",
          "the VNX2 default policy", choices=POLICIES),
    Param("half_life_h", "float", 24.0, "h", "a slice's temperature: its I/O count decayed with this half-life",
          "doc", "temperature weights \"about halved after ~24 h\"", minimum=0, strict_min=True),
    Param("rank_interval_s", "float", 3600.0, "s", "temperatures updated and slices ranked this often", "doc",
          "slices ranked hourly", minimum=1),
    Param("window_start_h", "float", 23.0, "h", "the first relocation window opens this long after the trace's time "
          "zero", "doc", "default relocation schedule 23:00", minimum=0),
    Param("window_hours", "float", 8.0, "h", "a relocation window lasts this long", "doc", "the default 8 hours",
          minimum=0, strict_min=True),
    Param("window_every_h", "float", 24.0, "h", "a window opens this often", "doc", "once a day", minimum=0,
          strict_min=True),
    Param("relocation_mb_per_s", "float", 100.0, "MB/s", "relocation copy rate", "estimate", "the Low/Medium/High "
          "rates are not published in MB/s", minimum=0, strict_min=True),
    Param("free_pct", "float", 10.0, "%", "FAST VP keeps this share of every tier free", "seed", "seed 000",
          minimum=0, maximum=90),
    Param("promote_margin_pct", "float", 10.0, "%", "a promotion that displaces a slice must be this much hotter",
          minimum=0),
    Param("rebalance", "bool", True, "", "hot slices spread over the RAID groups of a tier", "seed",
          "seed 000 (and doc)"),
    Param("rebalance_tolerance_pct", "float", 10.0, "%", "a group this much hotter than its tier's mean is "
          "rebalanced", minimum=0),
), doc="FAST VP on one pool: slices of the pool's slice_bytes live on one RAID group of one tier each and move "
       "between tiers by temperature in scheduled windows.", extra=("policies",))


@dataclass(frozen=True)
class PolicyMap:
    pattern: str  # fnmatch pattern on the trace's volume name
    policy: str


class Tiering(TIERING.base("Tiering", after=(("policies", tuple, field(default=())),))):
    """FAST VP on ``pool`` (``replay.mech.tiering.schema.TIERING``; ``replay.mech.tiering.kernel``). Slices of
    the pool's ``slice_bytes`` live on one RAID group of one tier each. New slices are placed by
    the volume's policy (``policies``: per-volume, first match wins); each slice's temperature is
    its I/O count decayed with ``half_life_h``, updated every ``rank_interval_s``; in each
    relocation window slices move to the tier their rank earns, at ``relocation_mb_per_s``,
    keeping ``free_pct`` of every tier free, and hot slices are spread over the RAID groups of a
    tier until no group carries more than ``rebalance_tolerance_pct`` above the tier's mean."""

    def policy_of(self, volume: str) -> str:
        for m in self.policies:
            if fnmatchcase(volume, m.pattern):
                return m.policy
        return self.policy


def parse(w, t: dict, sc) -> Tiering:
    """``[tiering]`` (``w``: the ``replay.scenario_file.ScenarioFile``; ``sc``: the scenario so far):
    its pool must exist, have slices, and its RAID groups' drives a capacity that holds one."""
    sec = "tiering"
    pools, rgs, classes = sc.pools, sc.raid_groups, sc.drive_classes
    values = w.read(sec, TIERING, t)
    maps = []
    raw = t.get("policies", [])
    if not isinstance(raw, list):
        raise w.error(sec, "policies", "an array of {pattern, policy} tables")
    for i, mt in enumerate(raw):
        ms = f"tiering.policies[{i}]"
        mt = w.table(ms, mt)
        w.check_keys(ms, mt, {"pattern", "policy"})
        if "pattern" not in mt or "policy" not in mt:
            raise w.error(ms, None, "needs 'pattern' and 'policy'")
        maps.append(PolicyMap(w.get(ms, mt, "pattern", "str"), w.get(ms, mt, "policy", "str", choices=POLICIES)))
    tg = Tiering(**{**values, "pool": values["pool"] or sc.default_pool}, policies=tuple(maps))
    names = [p.name for p in pools]
    if tg.pool not in names:
        raise w.error(sec, "pool", f"unknown pool {tg.pool!r}; defined: {', '.join(names)}")
    pool = pools[names.index(tg.pool)]
    if not pool.slice_bytes:
        raise w.error(sec, "pool", f"pool {tg.pool!r} has no slice_bytes: FAST VP moves slices")
    if tg.window_hours > tg.window_every_h:
        raise w.error(sec, "window_hours", f"{tg.window_hours} h window is longer than its period "
                      f"{tg.window_every_h} h")
    by_name = {rg.name: rg for rg in rgs}
    for m in pool.raid_groups:
        rg = by_name[m]
        cap = classes[rg.drive_class].capacity_bytes
        if tg.enabled and cap <= 0:
            raise w.error(sec, "pool", f"RAID group {m!r} of pool {tg.pool!r}: drive class {rg.drive_class!r} "
                          "needs capacity_bytes (tiers fill by capacity)")
        if tg.enabled and cap * (rg.data_drives) < pool.slice_bytes:
            raise w.error(sec, "pool", f"RAID group {m!r} holds no {pool.slice_bytes} B slice")
    return tg


def feature(s: Tiering) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"fast_vp:{s.policy}"
