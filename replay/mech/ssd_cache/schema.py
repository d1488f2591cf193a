"""``[ssd_cache]`` as data: an SSD cache below the DRAM cache (``replay.mech.ssd_cache.kernel``): EMC FAST
Cache (``kind = "fastcache"``) or QSAN QCache 2.0 (``kind = "qcache"``)."""

from __future__ import annotations

from replay.scenario_file import TableRead
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
    Param("fill_mib_per_s", "float", 6.0, "MiB/s", "promotion / population copy bandwidth: copies start at most at "
          "this rate (at most what the SSDs can write: scenario check)", "seed-fit",
          "seed 000: 150 GB hot set ~20 % full after 75 min [s000_fc150_fill]", minimum=0, strict_min=True),
    Param("proactive_cleaning", "bool", False, "", "VNX2 cleans dirty FAST Cache chunks while the array is idle",
          "doc"),
    Param("idle_after_ms", "float", 1000.0, "ms", "no host I/O for this long makes the array idle", minimum=0),
    Param("clean_outstanding", "int", 4, "copies", "proactive cleaning copies in flight", minimum=1, maximum=4096),
), doc="An SSD cache below the DRAM cache: EMC FAST Cache or QSAN QCache 2.0.", extra=("block_bytes",))


class SsdCache(SSD_CACHE.base("SsdCache")):
    """An SSD cache below the DRAM cache (``replay.mech.ssd_cache.schema.SSD_CACHE``;
    ``replay.mech.ssd_cache.kernel``). A promotion or population reads the whole chunk / block from the HDD
    pool and writes it to the SSDs; copies start at most at ``fill_mib_per_s`` (a miss that finds
    that budget spent is not promoted and counts again next time). Capacity: ``capacity_bytes``, or
    what the drives hold (halved when mirrored)."""

    @property
    def mirrored(self) -> bool:
        return self.mode == "read_write"

    @property
    def raid_level(self) -> int:
        if not self.mirrored:
            return 0
        return 1 if self.drives == 2 else 10

    def usable_bytes(self, classes: dict) -> int:
        if self.capacity_bytes:
            return self.capacity_bytes
        raw = self.drives * classes[self.drive_class].capacity_bytes
        return raw // 2 if self.mirrored else raw

    @property
    def sub_bytes(self) -> int:
        return self.sub_block_bytes or self.chunk_bytes


def parse(w, t: dict, sc) -> SsdCache:
    """``[ssd_cache]`` (``w``: the ``replay.scenario_file.ScenarioFile``; ``sc``: the scenario so
    far): the kind's own keys only, sizes powers of two within the DRAM page and flush unit, SSDs
    of an SSD class, in pairs when mirrored."""
    classes, dram = sc.drive_classes, sc.dram
    sec = "ssd_cache"
    kind = w.get(sec, t, "kind", "str", None, choices=KINDS)
    if kind is None:
        raise w.error(sec, None, f"lacks 'kind' ({' or '.join(map(repr, KINDS))})")
    size_key = "chunk_bytes" if kind == "fastcache" else "block_bytes"
    for other, keys in OWN_KEYS.items():
        if other != kind:
            for k in sorted(set(keys) & set(t)):
                raise w.error(sec, k, f"only for kind = {other!r}")
    io_type = w.get(sec, t, "io_type", "str", SSD_CACHE["io_type"].default, choices=SSD_CACHE["io_type"].choices)
    if io_type != "custom":
        for k in ("block_bytes", "sub_block_bytes", "populate_on_read", "populate_on_write"):
            if k in t:
                raise w.error(sec, k, f"set by io_type = {io_type!r}; use io_type = \"custom\" to choose it")
    # a QCache block is its chunk (``block_bytes`` in the file, the vendor's word)
    table = {("chunk_bytes" if k == "block_bytes" else k): v for k, v in t.items()}
    values = SSD_CACHE.read(table, lambda key, msg: w.error(sec, size_key if key == "chunk_bytes" else key, msg))
    if io_type != "custom":
        chunk, sub, por, pow_ = QCACHE_IO_TYPES[io_type]
        values |= {"chunk_bytes": chunk, "sub_block_bytes": sub, "populate_on_read": por, "populate_on_write": pow_}
    w.reads.append(TableRead(sec, SSD_CACHE, frozenset(table), values, {"chunk_bytes": size_key}))
    s = SsdCache(**values)
    mode = s.mode
    if kind == "fastcache" and mode != "read_write":
        raise w.error(sec, "mode", "FAST Cache is always a read-write cache")
    if not s.drive_class:
        raise w.error(sec, None, "lacks 'drive_class' (an SSD class of [drive_classes])")
    if s.drive_class not in classes:
        raise w.error(sec, "drive_class", f"unknown drive class {s.drive_class!r}; defined: {', '.join(classes)}")
    if classes[s.drive_class].kind != "ssd":
        raise w.error(sec, "drive_class", f"{s.drive_class!r} is not an SSD class (kind = \"ssd\")")
    if s.mirrored and s.drives % 2:
        raise w.error(sec, "drives", f"a mirrored ({mode}) SSD cache takes SSDs in pairs, got {s.drives}")
    for k, v in ((size_key, s.chunk_bytes), ("sub_block_bytes", s.sub_bytes)):
        if v & (v - 1):
            raise w.error(sec, k, f"{v} is not a power of two")
    if s.chunk_bytes < dram.flush_unit_bytes:
        raise w.error(sec, size_key, f"{s.chunk_bytes} B is smaller than the DRAM flush unit "
                      f"{dram.flush_unit_bytes} B")
    if not dram.page_bytes <= s.sub_bytes <= s.chunk_bytes:
        raise w.error(sec, "sub_block_bytes", f"{s.sub_bytes} B must lie within the page size {dram.page_bytes} B "
                      f"and the block size {s.chunk_bytes} B")
    if s.chunk_bytes // s.sub_bytes > 4096:
        raise w.error(sec, "sub_block_bytes", "at most 4096 sub-blocks per block")
    if s.enabled and s.usable_bytes(classes) < s.chunk_bytes:
        raise w.error(sec, "capacity_bytes", f"{s.usable_bytes(classes)} B holds no {s.chunk_bytes} B chunk "
                      "(give capacity_bytes, or capacity_bytes on the drive class)")
    write_mib_per_s = s.drives * classes[s.drive_class].transfer_mb_per_s * 1e6 / (1 << 20) / (2 if s.mirrored else 1)
    if s.fill_mib_per_s > write_mib_per_s:
        raise w.error(sec, "fill_mib_per_s", f"{s.fill_mib_per_s} MiB/s is more than the {s.drives} SSDs can write: "
                      f"{write_mib_per_s:.1f} MiB/s (drives x transfer_mb_per_s{', halved when mirrored' if s.mirrored else ''})")
    if kind == "qcache" and s.populate_on_read == 0 and s.populate_on_write == 0 and s.enabled:
        raise w.error(sec, "populate_on_read", "populate_on_read and populate_on_write are both 0: nothing "
                      "would ever be cached")
    return s


def feature(s: SsdCache) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"ssd_cache:{s.kind}" + (f":{s.mode}" if s.kind == "qcache" else "")
