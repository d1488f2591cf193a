"""``[drive_classes.NAME]``, ``[[raid_groups]]`` and ``[[pools]]`` as data: the back end
(``replay.mech.backend.kernel``: placement, RAID groups, drive service times; queues in ``replay.mech.backend.queueing``)."""

from __future__ import annotations

from replay.schema import Param, Section

RAID_LEVELS = (0, 1, 5, 6, 10)
#: FAST VP tiers, highest first (doc)
TIER_NAMES = ("extreme_performance", "performance", "capacity")

def seek_range(t2t_ms: float, full_ms: float) -> tuple[float, float]:
    """The average seeks a curve from ``t2t`` to ``full`` (``replay.mech.backend.drive``) can have:
    linear throughout .. square root throughout."""
    return t2t_ms + (full_ms - t2t_ms) / 3.0, t2t_ms + (full_ms - t2t_ms) * 8.0 / 15.0


DRIVE_CLASS = Section("drive_classes.NAME", (
    Param("kind", "str", "hdd", "", "hdd: seek + half a rotation + transfer, with command reordering; ssd: a latency "
          "+ transfer with internal parallelism", "choice", choices=("hdd", "ssd")),
    Param("planning_iops", "float", 150.0, "IOPS", "planning IOPS per drive (sets the average seek when avg_seek_ms is "
          "not given)", "seed", "seed 000: SAS 10k 150, 15k 180, NL-SAS 90, SSD eMLC 3500, SLC 5000", minimum=0,
          strict_min=True),
    Param("rpm", "int", 10_000, "rpm", "spindle speed: half a rotation is 2.0 / 3.0 / 4.17 ms at 15k / 10k / 7.2k",
          "seed", "seed 000: SAS 10K", minimum=1000),
    Param("avg_seek_ms", "float", None, "ms", "average full-stroke seek (default: 1000 / planning_iops - half a "
          "rotation - an 8 KiB transfer)", minimum=0, optional=True),
    Param("track_to_track_ms", "float", 0.5, "ms", "single-track seek (the seek curve's floor)", "estimate",
          "data sheets 0.2-0.8 ms; SAS 10k presets 0.3", minimum=0),
    Param("full_stroke_ms", "float", None, "ms", "full-stroke seek: with it the seek curve is a square root for "
          "short seeks and linear for long ones (replay.mech.backend.drive); without, a square root throughout",
          minimum=0, optional=True),
    Param("write_seek_extra_ms", "float", 0.0, "ms", "a write's longer settle: the datasheet's average write seek "
          "less its average read seek", minimum=0),
    Param("command_overhead_ms", "float", 0.0, "ms", "the drive's controller overhead per command (datasheets: "
          "access time with and without it)", minimum=0),
    Param("transfer_mb_per_s", "float", 150.0, "MB/s", "media rate (HDD: at the outer diameter, LBA 0)", "estimate",
          "a 10k SAS drive", minimum=0, strict_min=True),
    Param("transfer_inner_mb_per_s", "float", None, "MB/s", "HDD media rate at the inner diameter (zoned recording; "
          "default: transfer_mb_per_s throughout)", minimum=0, strict_min=True, optional=True),
    Param("reordering", "str", "power", "", "how a queue shortens positioning: power (min(q, queue_depth_max) ** "
          "queue_gain_exponent) or sptf (shortest positioning time first, simulated from the seek curve, the rotation "
          "and the occupied stroke: replay.mech.backend.drive)", "choice", choices=("power", "sptf")),
    Param("reorder_efficiency", "float", 1.0, "", "reordering = sptf: the share of the ideal SPTF gain the drive "
          "realises, 1 + this x (ideal - 1) (firmware schedules with margins and a limited look-ahead; 1: ideal)",
          minimum=0, maximum=1),
    Param("queue_gain_exponent", "float", 0.12, "", "reordering = power: positioning min(q, queue_depth_max) ** this "
          "times faster with q queued (1.28x at 8, 1.52x at 32)", "estimate", "once fitted to seed 000's peak (1.5-2x "
          "the planning IOPS), when the HDD presets reordered by this law; they reorder by sptf now "
          "(reorder_efficiency), and no published figure moves with it; calibrate fits it from deep-queue captures",
          minimum=0, maximum=1),
    Param("queue_depth_max", "int", 256, "I/Os", "the reordering gain stops growing there (power: 1.95x; sptf: the "
          "tagged commands the drive takes)", "estimate", "vendor guidance: deep queues give up to 2-2.5x (docs/models/sources.md)", minimum=1,
          maximum=1024),
    Param("capacity_bytes", "size", 0, "B", "drive capacity (FAST VP tiers fill by it; 0: unknown)"),
    Param("write_cache_bytes", "size", 0, "B", "HDD: the drive's own write cache, enabled: a flush write is "
          "acknowledged once what is ahead of it on the platters fits in the cache, so the array keeps more writes "
          "queued and the drive reorders them (up to queue_depth_max). 0: disabled, as arrays with a mirrored "
          "controller cache run their drives: a drive's cache is lost with its power", "choice", minimum=0),
    Param("read_iops", "float", 0.0, "IOPS", "SSD: 4 KiB random reads per second at depth (0: planning_iops and the "
          "HDD queue law)", minimum=0),
    Param("write_iops", "float", 0.0, "IOPS", "SSD: 4 KiB random writes per second at depth (0: as reads)",
          minimum=0),
    Param("read_latency_us", "float", 100.0, "us", "SSD: a read at queue depth 1", "estimate", "SAS SSD data sheets "
          "50-150 us", minimum=0, strict_min=True),
    Param("tier", "str", "", "", "FAST VP tier (default: flash extreme_performance, 10k/15k SAS performance, slower "
          "capacity)", "doc", choices=TIER_NAMES),
), doc="A drive type.")

RAID_GROUP = Section("raid_groups", (
    Param("name", "str", "", "", "the group's name (pools list it)", "choice", required=True),
    Param("level", "int", 5, "", "RAID level", "choice", choices=RAID_LEVELS, required=True),
    Param("width", "int", 5, "drives", "drives in the group (RAID 1: 2, RAID 10: even)", "choice", minimum=1,
          required=True),
    Param("drive_class", "str", "", "", "a class of [drive_classes]", "choice", required=True),
    Param("stripe_element_bytes", "size", 64 << 10, "B", "stripe element (a power of two, a multiple of the flush "
          "unit)", "doc", "VNX stripe element 64 KB (128 blocks)", minimum=512),
), doc="A RAID group of drives of one class.")

POOL = Section("pools", (
    Param("slice_bytes", "size", 256 << 20, "B", "volumes spread over the pool's groups in slices of this size",
          "doc", "FAST VP slice 256 MB on VNX2 (1 GB on VNX1)", minimum=0),
    Param("span_fraction", "float", None, "", "share of each drive's LBAs the data occupies (default: the "
          "workload's footprint, its volumes' highest addresses over the pool's data capacity; 1 when either is "
          "unknown)", minimum=0, maximum=1, strict_min=True, optional=True),
    Param("controller", "int", 0, "", "the storage processor that owns the pool and serves its volumes' I/O (0 .. "
          "controller.count - 1)", "choice", minimum=0),
), doc="A pool of RAID groups; its volumes are spread over them in slices.", extra=("name", "raid_groups"))
