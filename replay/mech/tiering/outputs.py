"""FAST VP's outputs: no per-request outcome (its relocations are records, its shares per-interval
tables), and its summary lines."""

from replay.outputs import Column, Line

OUTCOMES = ()

RECORDS = {
    "relocation": (
        Column("ts_ns", "ns", "when the slice's copy started"),
        Column("volume", "", "the slice's volume"),
        Column("slice", "", "the slice number in the volume"),
        Column("source_rg", "", "the RAID group it left"),
        Column("target_rg", "", "the RAID group it moved to"),
        Column("bytes", "B", "the slice"),
        Column("ios", "I/Os", "drive operations of the copy"),
        Column("busy_ns", "ns", "drive time of the copy"),
        Column("copy_ns", "ns", "the copy's duration"),
    ),
}

#: What ``tiercast replay`` prints for FAST VP: a line per tier, the relocations and the skew point
#: (when the run's slices saw I/O).
LINES = (
    Line(
        "tier {tier}",
        "{request_share:%:.1f} % of I/O, {latency_mean_ms:.2f ms}, "
        "{used_bytes:GiB:,.0f} of {capacity_bytes:GiB:,.0f} GiB",
        each="tiers",
    ),
    Line(
        "relocations up / down / rebalance", "{tier_promotions:,} / {tier_demotions:,} / {tier_rebalances:,}"
    ),
    Line("relocated GiB / windows", "{tier_moved_bytes:GiB:,.1f} / {tier_windows:,}"),
    Line("slices off target / dropped", "{tier_deferred:,} / {tier_dropped:,}"),
    Line(
        "skew (I/O on capacity)",
        "{tier_skew_io_share:%:.0f} % on {tier_skew_capacity_share:%:.0f} %",
        optional=True,
    ),
)
