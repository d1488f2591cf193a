"""The DRAM cache's per-request outcomes."""

from replay.outputs import Column

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
