"""The SSD cache's per-request outcomes (flushes into it and promotions are records, with their own times)."""

from replay.outputs import Column

OUTCOMES = (
    Column("ssd_read_hits", "I/Os", "DRAM read misses that found their data in the SSD cache"),
    Column("ssd_read_misses", "I/Os", "... that went past it to the drives"),
    Column("ssd_through_hits", "I/Os", "page writes the DRAM cache wrote through, into the SSD cache"),
    Column("ssd_through_misses", "I/Os", "... past it"),
    Column("ssd_dirty_slots", "slots", "dirty SSD slots after the request"),
)

RECORDS = {
    "ssd_promotion": (
        Column("ts_ns", "ns", "when the copy started"),
        Column("volume", "", "the chunk's volume"),
        Column("bytes", "B", "bytes copied (the chunk / block)"),
        Column("ios", "I/Os", "HDD reads and SSD writes of the copy"),
        Column("slots_used", "slots", "SSD slots in use after it"),
        Column("copy_ns", "ns", "the copy's duration"),
    ),
}
