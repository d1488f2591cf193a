"""The DRAM cache's per-request outcomes, records and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("read_pages", "pages", "pages read"),
    Column("read_hit_pages", "pages", "... found in the cache"),
    Column("write_pages", "pages", "pages written"),
    Column("write_hit_pages", "pages", "... onto a page still dirty (coalesced)"),
    Column("stall_ns", "ns", "FLARE: time suspended by a forced flush"),
    Column("throttle_ns", "ns", "MCx: time its new dirty pages waited for admission (throttling, a full pool)"),
    Column("dirty_pages", "pages", "dirty pages of the whole cache after the request"),
    Column("rg_dirty_pages", "pages", "dirty pages of the request's RAID group after it"),
)

#: Records (``replay.events``: one log per kind, appended in time order by the kernel).
RECORDS = {
    "flush": (
        Column("ts_ns", "ns", "when the flush was issued"),
        Column("kind", "", "0 flush (a unit's dirty runs), 1 full stripe, 2 FLARE idle flush (FLUSH_KINDS)"),
        Column("rg", "", "RAID group"),
        Column("volume", "", "volume (dense id) of the unit"),
        Column("pages", "pages", "pages written"),
        Column("bytes", "B", "bytes written"),
        Column("ios", "I/Os", "back-end drive operations (reads of a read-modify-write included)"),
        Column("busy_ns", "ns", "drive time of those operations"),
        Column("rg_dirty_pages", "pages", "the group's dirty pages after it"),
        Column("age_ns", "ns", "MCx: the group's pre-cleaning age at the time"),
        Column("ssd_hits", "runs", "with an SSD cache: dirty runs written into it"),
        Column("ssd_misses", "runs", "... written past it to the drives"),
    ),
    "forced_flush": (
        Column("ts_ns", "ns", "FLARE: when a write found the write cache 100 % dirty"),
        Column("volume", "", "the volume of that write"),
        Column("dirty_pages", "pages", "dirty pages at that moment"),
        Column("stall_ns", "ns", "how long all host I/O was suspended"),
    ),
    "throttle": (
        Column("ts_ns", "ns", "MCx: the last throttled adaptation tick of a catch-up of background work"),
        Column("rg", "", "RAID group"),
        Column("ticks", "ticks", "throttled ticks summed in this row"),
        Column("past_age_min_ns", "ns", "their weakest trigger: the least time the oldest dirty page was past the "
                                        "pre-cleaning age"),
        Column("window_full_min_ns", "ns", "... the least time the flush window was full in a tick"),
        Column("drain_min_ns", "ns", "... the shortest drain time of the group's dirty pages at its maximum rate"),
        Column("admit_min_pages_per_s", "pages/s", "the lowest admitted rate of new dirty pages"),
        Column("rg_dirty_pages", "pages", "the group's dirty pages"),
    ),
    "cache_full_wait": (
        Column("ts_ns", "ns", "MCx: when a write found the pool 100 % dirty"),
        Column("rg", "", "its RAID group"),
        Column("volume", "", "its volume"),
        Column("dirty_pages", "pages", "dirty pages of the cache"),
        Column("wait_ns", "ns", "how long it waited for the next flush"),
    ),
}
#: the values of a flush record's ``kind``
FLUSH_KINDS = ("flush", "full_stripe", "idle_flush")

#: counters (``replay.array.ArrayModel.counters``): summary name -> field of the cache's record
#: (``replay.mech.dram_cache.kernel.CACHE``)
COUNTERS = {
    "read_pages": "read_pages", "read_hit_pages": "read_hits", "write_pages": "write_pages",
    "write_hit_pages": "write_hits", "write_through_pages": "through_pages", "trimmed_dirty_pages": "trimmed_dirty",
    "trimmed_pages": "trimmed_pages",
    "write_aside_pages": "aside_pages", "write_aside_superseded_pages": "aside_dirty",
    "write_aside_stripes": "aside_stripes", "forced_flush_count": "forced_n", "forced_flush_stall_ns": "forced_stall_ns",
    "cache_full_waits": "full_waits", "full_stripe_writes": "full_stripes", "flush_ops": "flush_ops",
    "idle_flush_ops": "idle_flush_ops", "flush_pages": "flush_pages", "flush_bytes": "flush_bytes",
    "dirty_pages": "dirty", "dirty_pages_max": "dirty_max", "dirty_units": "dirty_units",
}

#: What ``tiercast replay`` prints for the DRAM cache: hit ratios, flushing, FLARE's forced flushes and
#: MCx's throttling.
LINES = (
    Line("read_hit_ratio", "{read_hit_ratio:.4f}"),
    Line("write_hit_ratio (coalesced)", "{write_hit_ratio:.4f}"),
    Line("flush_mb_per_s", "{flush_mb_per_s:,.2f}"),
    Line("forced flushes / stall ms", "{forced_flush_count:,} / {forced_flush_stall_ms:,.0f}"),
    Line(
        "throttled requests / delay sum ms / mean ms",
        "{throttled_requests:,} / {throttle_delay_sum_ms:,.0f} / {throttle_delay_mean_ms:.2f}",
    ),
    Line("dirty pages max", "{dirty_pages_max:,} of {write_cache_pages:,}"),
)
