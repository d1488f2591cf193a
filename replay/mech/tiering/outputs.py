"""FAST VP adds no per-request outcome (its relocations are records, its shares per-interval tables)."""

from replay.outputs import Column

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
