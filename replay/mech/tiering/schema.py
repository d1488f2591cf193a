"""``[tiering]`` as data: FAST VP auto-tiering of one pool (``replay.mech.tiering.kernel``)."""

from __future__ import annotations

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
