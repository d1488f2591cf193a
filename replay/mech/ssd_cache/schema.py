"""``[ssd_cache]`` as data: an SSD cache below the DRAM cache (``replay.mech.ssd_cache.kernel``): EMC FAST
Cache (``kind = "fastcache"``) or QSAN QCache 2.0 (``kind = "qcache"``)."""

from __future__ import annotations

from replay.schema import Param, Section

KINDS = ("fastcache", "qcache")
#: QCache 2.0 I/O types (doc, QSAN 1.x manual): block bytes, sub-block bytes, populate-on-read,
#: populate-on-write. "custom" takes the four values from the scenario.
QCACHE_IO_TYPES = {
    "database": (1 << 20, 8 << 10, 2, 0),
    "file_system": (2 << 20, 16 << 10, 2, 2),
    "web_service": (4 << 20, 64 << 10, 2, 0),
}
#: the keys of one kind only
OWN_KEYS = {"fastcache": ("chunk_bytes", "promote_after_hits", "promote_window_ms", "proactive_cleaning",
                          "idle_after_ms", "clean_outstanding"),
            "qcache": ("block_bytes", "mode", "io_type", "sub_block_bytes", "populate_on_read", "populate_on_write")}

SSD_CACHE = Section("ssd_cache", (
    Param("kind", "str", "fastcache", "", "fastcache: 64 KB chunks promoted after N accesses, write-back, LRU; "
          "qcache: blocks of sub-blocks populated on read / write thresholds", "choice", choices=KINDS),
    Param("enabled", "bool", True, "", "false: the section is kept but there is no SSD cache", "choice"),
    Param("drive_class", "str", "", "", "an SSD class of [drive_classes] (needed)", "choice"),
    Param("drives", "int", 2, "drives", "SSDs of the cache (mirrored: in pairs)", "seed", "seed 000: two 100 GB SSDs "
          "in RAID 1; seed 003: 8 SSDs", minimum=1, maximum=1024),
    Param("capacity_bytes", "size", 0, "B", "usable capacity (0: what the drives hold, halved when mirrored)",
          "choice"),
    Param("mode", "str", "read_write", "", "qcache: read (NRAID+: no redundancy, writes go to the drives) or "
          "read_write (NRAID 1+: mirrored pairs, write-back); FAST Cache is always read_write", "doc",
          choices=("read", "read_write")),
    Param("chunk_bytes", "size", 64 << 10, "B", "FAST Cache chunk (qcache: the block, given as block_bytes)", "doc",
          "FAST Cache tracks 64 KB chunks", minimum=512),
    Param("sub_block_bytes", "size", 0, "B", "qcache sub-block (0: the block)", "doc"),
    Param("promote_after_hits", "int", 3, "accesses", "FAST Cache promotes a chunk on this access (reads or writes)",
          "doc", "FAST Cache promotes after 3 accesses", minimum=1, maximum=1 << 20),
    Param("promote_window_ms", "float", 0.0, "ms", "... within this window (0: none)", "doc", "\"in a short period\", "
          "not published", minimum=0),
    Param("io_type", "str", "custom", "", "qcache presets of block, sub-block and thresholds (doc, QSAN 1.x manual); "
          "custom: from this section", "doc", choices=(*QCACHE_IO_TYPES, "custom")),
    Param("populate_on_read", "int", 0, "reads", "qcache: populate a block on this read of it (0 disables)", "doc",
          minimum=0, maximum=1 << 20),
    Param("populate_on_write", "int", 0, "writes", "qcache: ... on this write (0 disables)", "doc", minimum=0,
          maximum=1 << 20),
    Param("fills_in_flight", "int", 1, "copies", "promotions / populations copying at once", "seed-fit",
          "seed 000: 150 GB hot set ~20 % full after 75 min", minimum=1, maximum=4096),
    Param("proactive_cleaning", "bool", False, "", "VNX2 cleans dirty FAST Cache chunks while the array is idle",
          "doc"),
    Param("idle_after_ms", "float", 1000.0, "ms", "no host I/O for this long makes the array idle", minimum=0),
    Param("clean_outstanding", "int", 4, "copies", "proactive cleaning copies in flight", minimum=1, maximum=4096),
), doc="An SSD cache below the DRAM cache: EMC FAST Cache or QSAN QCache 2.0.", extra=("block_bytes",))
