"""``[dram]``, ``[dram.flare]`` and ``[dram.mcx]`` as data: the DRAM write cache of the storage
processor (``replay.mech.dram_cache.kernel``), FLARE (VNX1/CLARiiON) or MCx (VNX2)."""

from __future__ import annotations

from replay.schema import Param, Section

MODES = ("flare", "mcx")
FLUSH_ORDERS = ("age", "address")
FORCED_FLUSH_UNTIL = ("low_watermark", "next_flush")

DRAM = Section("dram", (
    Param("mode", "str", "mcx", "", "flare: watermarks, idle / watermark / forced flushing; mcx: pre-cleaning age "
          "per RAID group and write throttling", "choice", choices=MODES),
    Param("cache_bytes", "size", 4 << 30, "B", "usable SP cache", "seed", "seed 000: ~4 GB usable SP cache on a "
          "VNX5400"),
    Param("page_bytes", "size", 8 << 10, "B", "cache page (a power of two)", "doc", "2/4/8/16 KB pages, default 8 KB",
          minimum=512),
    Param("flush_unit_bytes", "size", 64 << 10, "B", "flush unit / MCx logical block (a power of two, at most 64 "
          "pages)", "doc", "flushes in 64 KB units; MCx 64 KB logical blocks", minimum=512),
    Param("mirror_latency_us", "float", 100.0, "us", "a write is acknowledged after the CMI mirror hop", "doc",
          "the mirror hop (doc); its latency an estimate", minimum=0),
    Param("flush_queue_depth", "int", 4, "writes per drive", "flush writes kept in flight per drive of a RAID group",
          minimum=1),
    Param("flush_order", "str", "age", "", "age: oldest first (FLARE, doc); address: a sorted sweep (MCx, seed 002). "
          "A scenario file without it gets its mode's", "doc", choices=FLUSH_ORDERS),
), doc="The DRAM write cache: pages in flush units, dirty FIFOs per RAID group, flushers.", extra=("flare", "mcx"))

FLARE = Section("dram.flare", (
    Param("read_cache_bytes", "size", 512 << 20, "B", "FLARE splits SP memory into read and write cache; the write "
          "cache is the rest"),
    Param("high_watermark_pct", "float", 80.0, "%", "watermark flushing starts at this share of the write cache dirty",
          "doc", "default high watermark 80 %", minimum=0, maximum=100),
    Param("low_watermark_pct", "float", 60.0, "%", "... and stops at this one", "doc", "default low watermark 60 %",
          minimum=0, maximum=100),
    Param("forced_flush_until", "str", "low_watermark", "", "how long a forced flush (write cache 100 % dirty) "
          "suspends all host I/O. low_watermark: until dirty pages are back to the low watermark (seed 002, "
          "doc); next_flush: until the next flush write completes and frees its pages (EMC's CLARiiON best "
          "practices, as quoted by emcstorageinfo.com 2008: a forced flush takes milliseconds, and an array may "
          "still perform acceptably at ~50 forced flushes a second)", "doc",
          "seed 002: until below the low watermark", choices=FORCED_FLUSH_UNTIL),
    Param("idle_after_ms", "float", 1000.0, "ms", "a LUN with no host I/O for this long is idle (idle flushing)",
          minimum=0),
    Param("idle_flush_outstanding", "int", 4, "writes", "idle flushing is gentle: writes in flight array-wide",
          minimum=0),
    Param("write_aside_bytes", "size", 0, "B", "write-aside: a host write larger than this bypasses the write cache "
          "and is acknowledged when the drives have it (whole stripes written as full stripes); 0: every write is "
          "cached. FLARE sets it per LUN; its default is in none of the sources at hand, so it is off unless set",
          "choice", "a VNX pool LUN reports Write Aside Size 0 (navicli getlun output of a VNX5400 in "
          "sodafoundation/delfin's VNX test fixtures); seed 004 wrote to a pool LUN", minimum=0),
), doc="FLARE (VNX1/CLARiiON) write cache: watermarks, idle, watermark and forced flushing.")

MCX = Section("dram.mcx", (
    Param("initial_age_ms", "float", 2000.0, "ms", "pre-cleaning age at the start", "doc", "initial age 2 s",
          minimum=0, strict_min=True),
    Param("min_age_ms", "float", 10.0, "ms", "lower bound of the pre-cleaning age", "doc", "bounds 10 ms - 120 s",
          minimum=0, strict_min=True),
    Param("max_age_ms", "float", 120_000.0, "ms", "upper bound of the pre-cleaning age", "doc", "bounds 10 ms - 120 s",
          minimum=0, strict_min=True),
    Param("adapt_interval_ms", "float", 100.0, "ms", "how often the four signals are re-read (an adaptation tick)",
          minimum=0, strict_min=True),
    Param("rate_window_ms", "float", 1000.0, "ms", "time constant of the rate averages", minimum=0, strict_min=True),
    Param("dirty_target_pct", "float", 5.0, "%", "dirty share of the pool (over the active groups) when writes do not "
          "coalesce", "seed-fit", "seed 000 planning IOPS 1,130 (10 gives +17 %) [s000_planning]", minimum=0, maximum=100,
          strict_min=True),
    Param("dirty_max_pct", "float", 80.0, "%", "... growing to this share as all writes coalesce", minimum=0,
          maximum=100),
    Param("min_free_pct", "float", 10.0, "%", "below this share of free pages every age shrinks", minimum=0,
          maximum=100),
    Param("age_smoothing", "float", 0.5, "", "fraction of the way to the target age per adaptation", minimum=0,
          maximum=1, strict_min=True),
    Param("throttle_drain_ms", "float", 2000.0, "ms", "no throttling while a group's dirty pages drain in less",
          "doc", "no throttling while a group's drain time < 2 s", minimum=0),
    Param("throttle_ratio_min", "float", 0.5, "", "admitted:flushed page ratio of a group holding (1 + overshoot) "
          "times its room", "doc", "the ratio falls from 8x through 1x to 0.5x; a group is throttled only from its "
          "room on, at 1x", minimum=0, maximum=1, strict_min=True),
    Param("throttle_overshoot_pct", "float", 25.0, "%", "0.5x once a group holds this much over its room", minimum=0,
          strict_min=True),
    Param("throttle_saturation_pct", "float", 90.0, "%", "a group flushes \"at its maximum flush rate\" (seed 002: "
          "the condition for throttling) when its flush window was full this share of an adaptation tick",
          minimum=0, maximum=100, strict_min=True),
    Param("throttle_room_pct", "float", 30.0, "%", "a group is throttled only once its dirty pages fill this share of "
          "the pool over the active groups: MCx buffers bursts and \"levels off\", leaving \"ample room in the "
          "cache\" (seed 002); it also bounds the dirty pages that coalesce in seed 000 (50 puts the peak over "
          "the published range)", minimum=0, maximum=100, strict_min=True),
), doc="MCx (VNX2) cache: a pre-cleaning age per RAID group and write throttling.")
