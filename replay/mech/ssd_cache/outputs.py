"""The SSD cache's per-request outcomes (flushes into it and promotions are records, with their own times)."""

from replay.outputs import Column, Line

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

#: What ``tiercast replay`` prints for an SSD cache (FAST Cache, QCache): fill, hits, promotions, warm-up.
LINES = (
    Line("ssd fill % / dirty %", "{ssd_fill_pct:.1f} / {ssd_dirty_pct:.1f}"),
    Line("ssd hit ratio (last 10 %)", "{ssd_hit_ratio:.4f} ({ssd_hit_ratio_last10pct:.4f})"),
    Line("ssd read hits / misses", "{ssd_read_hits:,} / {ssd_read_misses:,}"),
    Line("ssd write hits / misses", "{ssd_write_hits:,} / {ssd_write_misses:,}"),
    Line("ssd promotions / deferred", "{ssd_promotions:,} / {ssd_deferred:,}"),
    Line(
        "ssd time to 50 % / 90 % full",
        "{ssd_time_to_50pct_fill_s:,.0f s} / {ssd_time_to_90pct_fill_s:,.0f s}",
        none="never",
    ),
)
