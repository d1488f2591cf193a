"""Scenarios: a TOML description of an array (controller, DRAM cache, drives, RAID groups, pools,
volume placement) plus replay options, validated on load, with a stable hash.

A scenario file is read with :func:`load` (a preset name from ``replay/scenarios/`` or a path).
Every key is checked: an unknown key, a wrong type, a negative size or a watermark low >= high is
a ``ValueError`` naming the file, the line (when it can be found) and the problem. Defaults are
the published numbers of ``shared/reference/MODELS.md`` (source in a comment next to each) or,
marked *est*, our estimates; every one of them is a parameter.

``[ssd_cache]`` is an SSD cache below the DRAM cache: EMC FAST Cache (``kind = "fastcache"``)
or QSAN QCache 2.0 (``kind = "qcache"``), see :class:`SsdCache` and ``replay.ssd_cache``.
``[tiering]`` is FAST VP auto-tiering of one pool (:class:`Tiering`, ``replay.tiering``): the
pool's RAID groups form tiers by drive class (flash: extreme performance; 10k/15k SAS:
performance; NL-SAS: capacity), slices move between them by temperature. Nothing is ignored
(``NOT_YET_MODELLED`` is empty; a future section listed there would be accepted, hashed and
reported as not yet modelled).

The hash (:attr:`Scenario.hash`) is the SHA-256 of the canonical JSON of the normalized model
(sizes as integers, defaults filled in), without ``name``/``description``: the same array written
two ways has one hash, and renaming a file does not change results' run ids.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from replay.overrides import apply as apply_overrides
from schemas.units import parse_duration_ns, parse_size

PRESET_DIR = Path(__file__).resolve().parent / "scenarios"

RAID_LEVELS = (0, 1, 5, 6, 10)
PARITY_DRIVES = {0: 0, 1: 0, 10: 0, 5: 1, 6: 2}
NOT_YET_MODELLED: tuple[str, ...] = ()
MAX_OUTSTANDING = 1 << 20  # closed-loop I/Os in flight
MAX_WARMUP_PCT = 99.0  # at least 1 % of the requests is measured
MIN_INTERVAL_NS = 1_000_000  # per-interval outputs: 1 ms
_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")


# --------------------------------------------------------------------------------------------
# errors with file and line
# --------------------------------------------------------------------------------------------
def _split(section: str) -> tuple[str, int | None]:
    """``"raid_groups[1]"`` -> (``"raid_groups"``, 1): the second ``[[raid_groups]]`` entry."""
    m = _INDEXED.match(section)
    return (m.group(1), int(m.group(2))) if m else (section, None)


class _Where:
    """Finds the line of a key in the TOML text, so errors can point at it. A section is a table
    name (``dram.flare``) or an entry of an array of tables (``raid_groups[1]``, 0-based)."""

    def __init__(self, source: str, text: str | None):
        self.source = source
        self.lines = text.splitlines() if text else []

    def line_of(self, section: str, key: str | None) -> int | None:
        """1-based line of ``key`` inside ``section`` (of its header when ``key`` is None)."""
        head, index = _split(section)
        start = 0
        if head:
            headers = [i for i, line in enumerate(self.lines)
                       if (m := _HEADER.match(line)) and m.group(1) == head]
            if len(headers) <= (index or 0):
                return None
            start = headers[index or 0]
            if key is None:
                return start + 1
            start += 1
        elif key is None:
            return None
        kp = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start, len(self.lines)):
            if _HEADER.match(self.lines[i]):  # the table ends at the next header
                return None
            if kp.match(self.lines[i]):
                return i + 1
        return None

    def error(self, section: str, key: str | None, msg: str) -> ValueError:
        line = self.line_of(section, key)
        where = f"{self.source}" + (f", line {line}" if line else "")
        head, index = _split(section)
        sec = f"[[{head}]] #{index + 1} " if index is not None else f"[{section}] " if section else ""
        k = f"{key}: " if key else ""
        return ValueError(f"{where}: {sec}{k}{msg}")


def _check_keys(w: _Where, section: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise w.error(section, unknown[0], f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}")


def _get(w: _Where, section: str, table: dict, key: str, kind: str, default: Any = None, *,
         minimum: float | None = None, maximum: float | None = None, strict_min: bool = False,
         choices: tuple | None = None) -> Any:
    """Read and check one value. kind: size, duration, int, float, str, bool."""
    if key not in table:
        return default
    v = table[key]
    try:
        if kind == "size":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError(f"expected a size such as 8192 or \"8KiB\", got {v!r}")
            if isinstance(v, int) and v < 0:
                raise ValueError(f"negative size {v}")
            if isinstance(v, str) and v.strip().startswith("-"):
                raise ValueError(f"negative size {v!r}")
            v = parse_size(v)
        elif kind == "duration":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError(f"expected a duration such as \"60s\", got {v!r}")
            if isinstance(v, str) and v.strip().startswith("-"):
                raise ValueError(f"negative duration {v!r}")
            v = parse_duration_ns(v)
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"expected an integer, got {v!r}")
        elif kind == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"expected a number, got {v!r}")
            v = float(v)
            if not math.isfinite(v):
                raise ValueError(f"expected a finite number, got {v!r}")
        elif kind == "str":
            if not isinstance(v, str):
                raise ValueError(f"expected a string, got {v!r}")
        elif kind == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"expected true or false, got {v!r}")
    except ValueError as e:
        raise w.error(section, key, str(e)) from None
    if choices is not None and v not in choices:
        raise w.error(section, key, f"{v!r} is not one of {', '.join(map(repr, choices))}")
    if minimum is not None and (v < minimum or (strict_min and v == minimum)):
        op = ">" if strict_min else ">="
        raise w.error(section, key, f"must be {op} {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise w.error(section, key, f"must be <= {maximum}, got {v}")
    return v


def _check_range(name: str, v: Any, lo: float, hi: float | None, integer: bool = False) -> None:
    """ValueError unless ``lo <= v <= hi`` (an int when ``integer``)."""
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type or not (lo <= v and (hi is None or v <= hi)):
        rng = f"from {lo:.12g} to {hi:.12g}" if hi is not None else f">= {lo:.12g}"
        raise ValueError(f"{name} must be {kind} {rng}, got {v!r}")


def _table(w: _Where, section: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise w.error(section, None, f"expected a table, got {type(v).__name__}")
    return v


# --------------------------------------------------------------------------------------------
# the model of a scenario
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriveClass:
    """A drive type. HDD service time = seek + half a rotation + transfer, where the seek depends
    on the distance (``span_fraction`` of the pool, address-sorted flushing) and a queue of q
    requests shortens positioning by ``min(q, queue_depth_max) ** queue_gain_exponent`` (command
    reordering). SSD: a latency + transfer, with the same queue law as parallelism: given
    ``read_iops`` (4 KiB random reads per second at depth) and ``read_latency_us`` (at queue
    depth 1), the drive has P = ``read_iops x read_latency`` internal servers, rounded (gain
    exponent 1 up to P queued requests), a latency that makes P servers give exactly ``read_iops``
    (so the depth-1 latency is about ``read_latency_us``), and a write costs ``read_iops /
    write_iops`` times a read; without ``read_iops`` an SSD is the planning latency
    ``1 / planning_iops`` with the HDD queue law."""

    name: str
    kind: str = "hdd"  # hdd | ssd
    planning_iops: float = 150.0  # seed 000: SAS 10k 150, 15k 180, NL-SAS 90, SSD eMLC 3500, SLC 5000
    rpm: int = 10_000
    avg_seek_ms: float | None = None  # None: 1000/planning_iops - half rotation - 8 KiB transfer
    track_to_track_ms: float = 0.5  # est: short-seek floor of any HDD (data sheets 0.2-0.8 ms; SAS 10k presets 0.3)
    transfer_mb_per_s: float = 150.0  # est: media rate of a 10k SAS drive
    queue_gain_exponent: float = 0.12  # (fit: seed 000 peak 1.5-2x) q^0.12: 1.28x at q=8, 1.52x at 32
    queue_depth_max: int = 256  # est: gain stops growing there (1.95x; MODELS: deep queues up to 2-2.5x)
    capacity_bytes: int = 0  # informational (reports); 0 = unknown
    read_iops: float = 0.0  # SSD: random reads/s at depth (0: planning_iops and the HDD queue law)
    write_iops: float = 0.0  # SSD: random writes/s at depth (0: as reads)
    read_latency_us: float = 100.0  # SSD: a read at queue depth 1 (est: SAS SSD data sheets 50-150 us)
    tier: str = ""  # FAST VP tier ("": from the kind and rpm, see fast_vp_tier)

    @property
    def fast_vp_tier(self) -> str:
        """The FAST VP tier of this class (doc): flash is Extreme Performance, 10k/15k rpm SAS
        Performance, slower drives (NL-SAS, SATA) Capacity; ``tier`` overrides."""
        if self.tier:
            return self.tier
        if self.kind == "ssd":
            return "extreme_performance"
        return "performance" if self.rpm >= 10_000 else "capacity"

    @property
    def parallelism(self) -> int:
        """SSD: requests served at once (``read_iops x read_latency``); 0 for the HDD queue law."""
        if self.kind != "ssd" or not self.read_iops:
            return 0
        return max(1, round(self.read_iops * self.read_latency_us / 1e6))

    @property
    def write_cost(self) -> float:
        """Service of a write relative to a read (1 for HDDs and SSDs without write_iops)."""
        if self.kind != "ssd" or not self.read_iops or not self.write_iops:
            return 1.0
        return self.read_iops / self.write_iops

    @property
    def half_rotation_ms(self) -> float:
        """2.0 / 3.0 / 4.17 ms at 15k / 10k / 7.2k rpm (MODELS.md)."""
        return 30_000.0 / self.rpm if self.kind == "hdd" else 0.0

    @property
    def seek_ms(self) -> float:
        """Average full-stroke seek: given, or what makes the planning IOPS come out at 8 KiB."""
        if self.kind != "hdd":
            return 0.0
        if self.avg_seek_ms is not None:
            return self.avg_seek_ms
        return 1000.0 / self.planning_iops - self.half_rotation_ms - 8192 / (self.transfer_mb_per_s * 1e3)

    @property
    def latency_ms(self) -> float:
        """SSD positioning-equivalent latency at queue depth 1, without the transfer (with
        ``read_iops``: what makes ``parallelism`` servers give exactly ``read_iops`` 4 KiB reads
        per second at depth, transfer included)."""
        if self.parallelism:
            return self.parallelism * (1000.0 / self.read_iops - 4096 / (self.transfer_mb_per_s * 1e3))
        return 1000.0 / self.planning_iops - 8192 / (self.transfer_mb_per_s * 1e3)


@dataclass(frozen=True)
class RaidGroup:
    name: str
    level: int
    width: int
    drive_class: str
    stripe_element_bytes: int = 64 << 10  # doc: VNX stripe element 64 KB (128 blocks)

    @property
    def parity_drives(self) -> int:
        return PARITY_DRIVES[self.level]

    @property
    def data_drives(self) -> int:
        return self.width // 2 if self.level in (1, 10) else self.width - self.parity_drives


@dataclass(frozen=True)
class Pool:
    name: str
    raid_groups: tuple[str, ...]
    slice_bytes: int = 256 << 20  # doc: FAST VP slice 256 MB on VNX2 (1 GB on VNX1)
    span_fraction: float = 1.0  # est: share of each drive's stroke the data occupies (1 = planning case)


@dataclass(frozen=True)
class VolumeMap:
    pattern: str  # fnmatch pattern on the trace's volume name
    pool: str


@dataclass(frozen=True)
class Flare:
    """FLARE (VNX1/CLARiiON) write cache: watermarks, idle, watermark and forced flushing."""

    read_cache_bytes: int = 512 << 20  # est: FLARE splits SP memory into read and write cache
    high_watermark_pct: float = 80.0  # doc: default high watermark 80 %
    low_watermark_pct: float = 60.0  # doc: default low watermark 60 %
    idle_after_ms: float = 1000.0  # est: a LUN with no host I/O for this long is idle
    idle_flush_outstanding: int = 4  # est: idle flushing is gentle: writes in flight array-wide


@dataclass(frozen=True)
class Mcx:
    """MCx (VNX2) cache: pre-cleaning age per RAID group and write throttling (see dram_cache)."""

    initial_age_ms: float = 2000.0  # doc: initial pre-cleaning age 2 s
    min_age_ms: float = 10.0  # doc: bounds 10 ms - 120 s
    max_age_ms: float = 120_000.0  # doc
    adapt_interval_ms: float = 100.0  # est: how often the four signals are re-read
    rate_window_ms: float = 1000.0  # est: time constant of the rate averages
    # (fit: seed 000 planning IOPS 1,130; 10 gives +17 %, outside the 15 % bar) dirty share of the
    # pool (over active groups) when writes do not coalesce
    dirty_target_pct: float = 5.0
    dirty_max_pct: float = 80.0  # est: ... growing to this share as all writes coalesce
    min_free_pct: float = 10.0  # est: below this many free pages every age shrinks
    age_smoothing: float = 0.5  # est: fraction of the way to the target age per adaptation
    throttle_drain_ms: float = 2000.0  # doc: no throttling while a group's drain time < 2 s
    # doc: the incoming:flushed ratio falls "from 8x ... through 1x down to 0.5x"; a group is throttled
    # only once it fills its room, where the ratio is 1x, so the 8x end is never reached
    throttle_ratio_min: float = 0.5
    throttle_overshoot_pct: float = 25.0  # est: 0.5x once a group holds 125 % of its dirty share
    # est: a group flushes "at its maximum flush rate" (seed 002: the condition for throttling) when its
    # flush window (flush_queue_depth x width writes in flight) was full this share of an adaptation interval
    throttle_saturation_pct: float = 90.0
    # est: a group is throttled only once its dirty pages fill its room, this share of the pool over the
    # active groups: MCx buffers bursts and "levels off", leaving "ample room in the cache" (seed 002)
    throttle_room_pct: float = 30.0


@dataclass(frozen=True)
class Dram:
    mode: str = "mcx"  # flare | mcx
    cache_bytes: int = 4 << 30  # seed 000: ~4 GB usable SP cache on a VNX5400
    page_bytes: int = 8 << 10  # doc: 2/4/8/16 KB pages, default 8 KB
    flush_unit_bytes: int = 64 << 10  # doc: flushes in 64 KB units / MCx 64 KB logical blocks
    mirror_latency_us: float = 100.0  # doc: write ack waits for the CMI mirror hop; value est
    flush_queue_depth: int = 4  # est: flush writes kept in flight per drive of a RAID group
    # age (oldest first, FLARE, doc) | address (sorted sweep, MCx, seed 002); a scenario file that omits
    # it gets the one of its mode (parse), this field's value only when the dataclass is built directly
    flush_order: str = "age"
    flare: Flare = field(default_factory=Flare)
    mcx: Mcx = field(default_factory=Mcx)

    @property
    def pages_per_unit(self) -> int:
        return self.flush_unit_bytes // self.page_bytes

    @property
    def write_cache_bytes(self) -> int:
        return self.cache_bytes - self.flare.read_cache_bytes if self.mode == "flare" else self.cache_bytes


@dataclass(frozen=True)
class Controller:
    """The storage processor as one FCFS server: per-I/O CPU cost plus a bandwidth limit."""

    # (fit: seed 000 2 GB file, ~29k IOPS at 192 outstanding) SP time per host I/O: caps cache-hit IOPS
    overhead_us: float = 30.0
    bandwidth_mb_per_s: float = 3200.0  # est: SP/front-end data rate


#: FAST VP tiers, highest first (doc)
TIER_NAMES = ("extreme_performance", "performance", "capacity")
#: FAST VP tiering policies (doc); the VNX2 default is start_high_then_auto_tier
TIER_POLICIES = ("highest_available", "auto_tier", "start_high_then_auto_tier", "lowest_available")


@dataclass(frozen=True)
class PolicyMap:
    pattern: str  # fnmatch pattern on the trace's volume name
    policy: str


@dataclass(frozen=True)
class Tiering:
    """FAST VP on ``pool`` (``replay.tiering``). Slices of the pool's ``slice_bytes`` live on one
    RAID group of one tier each. New slices are placed by the volume's policy; each slice's
    temperature is its I/O count decayed with ``half_life_h``, updated every ``rank_interval_s``;
    in each relocation window (``window_start_h`` after the trace's time zero, then every
    ``window_every_h``, lasting ``window_hours``) slices move to the tier their rank earns, at
    ``relocation_mb_per_s``, keeping ``free_pct`` of every tier free, and hot slices are spread
    over the RAID groups of a tier until no group carries more than ``rebalance_tolerance_pct``
    above the tier's mean temperature."""

    enabled: bool = True
    pool: str = ""  # the tiered pool ("": the default pool)
    policy: str = "start_high_then_auto_tier"  # doc: the VNX2 default policy
    policies: tuple[PolicyMap, ...] = ()  # per-volume policies, first match wins
    half_life_h: float = 24.0  # doc: temperature weights "about halved after ~24 h"
    rank_interval_s: float = 3600.0  # doc: slices ranked hourly
    window_start_h: float = 23.0  # doc: default relocation schedule 23:00 (from the trace's time zero)
    window_hours: float = 8.0  # doc: ... for 8 hours
    window_every_h: float = 24.0  # doc: once a day
    relocation_mb_per_s: float = 100.0  # est: the Low/Medium/High rates are not published in MB/s
    free_pct: float = 10.0  # seed 000: FAST VP keeps 10 % free in every tier
    promote_margin_pct: float = 10.0  # est: a promotion that displaces a slice must be this much hotter
    rebalance: bool = True  # seed 000/doc: hot slices spread over the RAID groups of a tier
    rebalance_tolerance_pct: float = 10.0  # est: a group this much hotter than its tier's mean is rebalanced

    def policy_of(self, volume: str) -> str:
        for m in self.policies:
            if fnmatchcase(volume, m.pattern):
                return m.policy
        return self.policy


@dataclass(frozen=True)
class Snapshots:
    """Snapshots on a schedule (``replay.snapshot_writes``): one every ``every_s`` from time zero,
    each kept ``keep_s``; ``mode`` row (redirect-on-write: the write path unchanged, only the
    space counted) or cofw (copy-on-first-write: the old chunk is copied before the write)."""

    enabled: bool = True
    every_s: float = 3600.0  # seed 004: hourly snapshots
    keep_s: float = 86400.0  # seed 004: -keepFor 1d
    mode: str = "row"  # seed 004: VNX Snapshots redirect on write (SnapView: cofw)


SSD_KINDS = ("fastcache", "qcache")
#: QCache 2.0 I/O types (doc, QSAN 1.x manual): block bytes, sub-block bytes, populate-on-read,
#: populate-on-write. "custom" takes the four values from the scenario.
QCACHE_IO_TYPES = {
    "database": (1 << 20, 8 << 10, 2, 0),
    "file_system": (2 << 20, 16 << 10, 2, 2),
    "web_service": (4 << 20, 64 << 10, 2, 0),
}


@dataclass(frozen=True)
class SsdCache:
    """An SSD cache below the DRAM cache (``replay.ssd_cache``). ``kind``:

    * ``fastcache`` (EMC FAST Cache, seed 000): 64 KB chunks on RAID 1 SSD pairs, promoted after
      ``promote_after_hits`` accesses (reads or writes; within ``promote_window_ms`` when not 0),
      write-back (dirty chunks cleaned back, never forced flushing), LRU; VNX2's proactive
      cleaner (``proactive_cleaning``) cleans dirty chunks while the array is idle;
    * ``qcache`` (QSAN QCache 2.0, seed 003): blocks of ``block_bytes`` in sub-blocks of
      ``sub_block_bytes``, populated when a block's read (write) count reaches
      ``populate_on_read`` (``populate_on_write``; 0 disables); ``mode = "read"`` (NRAID+: no
      redundancy, writes go to the drives and update a cached copy) or ``"read_write"`` (NRAID 1+:
      SSDs mirrored in pairs, write-back); ``io_type`` sets block, sub-block and thresholds
      (Database, File System, Web Service) unless ``custom``.

    A promotion or population reads the whole chunk / block from the HDD pool (one large
    background I/O per drive it spans) and writes it to the SSDs; at most ``fills_in_flight`` are
    in progress (a miss that finds them all busy is not promoted and counts again next time).
    Capacity: ``capacity_bytes``, or what the drives hold (halved when mirrored)."""

    kind: str = "fastcache"
    enabled: bool = True
    drive_class: str = ""  # an SSD class of [drive_classes]
    drives: int = 2  # seed 000: two 100 GB SSDs in RAID 1; seed 003: 8 SSDs
    capacity_bytes: int = 0  # 0: from the drives
    mode: str = "read_write"  # read (qcache NRAID+) | read_write
    chunk_bytes: int = 64 << 10  # doc: FAST Cache tracks 64 KB chunks; qcache: the block size
    sub_block_bytes: int = 0  # qcache sub-block (0: the chunk)
    promote_after_hits: int = 3  # doc: FAST Cache promotes after 3 accesses
    promote_window_ms: float = 0.0  # doc: "in a short period", not published (0: no window)
    io_type: str = "custom"  # qcache: database | file_system | web_service | custom
    populate_on_read: int = 0  # qcache thresholds (0 disables)
    populate_on_write: int = 0
    fills_in_flight: int = 1  # (fit: seed 000 150 GB ~20 % full after 75 min) promotions copying at once
    proactive_cleaning: bool = False  # doc: VNX2 cleans dirty FAST Cache chunks when idle
    idle_after_ms: float = 1000.0  # est: no host I/O for this long makes the array idle
    clean_outstanding: int = 4  # est: proactive cleaning copies in flight

    @property
    def mirrored(self) -> bool:
        return self.mode == "read_write"

    @property
    def raid_level(self) -> int:
        if not self.mirrored:
            return 0
        return 1 if self.drives == 2 else 10

    def usable_bytes(self, classes: dict[str, DriveClass]) -> int:
        if self.capacity_bytes:
            return self.capacity_bytes
        raw = self.drives * classes[self.drive_class].capacity_bytes
        return raw // 2 if self.mirrored else raw

    @property
    def sub_bytes(self) -> int:
        return self.sub_block_bytes or self.chunk_bytes


@dataclass(frozen=True)
class Flash:
    """An all-flash array (``replay.flash``, seed 001 Violin 6232): no DRAM cache, full-stripe
    writes without RAID penalty, free-space accounting with greedy-GC write amplification from
    the spare factor, and a GC bandwidth limit. The defaults are the ``violin6232`` preset's."""

    enabled: bool = True
    user_capacity_bytes: int = 17 << 40  # est: 32 TB raw less 4 spare VIMMs of 64, vRAID parity and spare
    spare_factor: float = 0.3  # est: spare / user space (Violin does not publish it; MODELS.md's example)
    valid_pct: float = 100.0  # seed 001: LUNs cover the whole user capacity, written before the test
    gc_mib_per_s: float = 818.5  # (fit: seed 001 ~600 MiB/s after the cliff: 600 x (WA(0.3) - 1) = 818.5)
    gc_start_pct: float = 100.0  # est: GC reclaims while free space < this % of the space not holding data
    stripe_unit_bytes: int = 1024  # seed 001: vRAID stripe unit 1 KB
    stripe_data_units: int = 4  # seed 001: vRAID RAID 5 (4+P): 4 KB full stripes
    stripe_parity_units: int = 1  # seed 001
    read_iops: float = 300_000.0  # (fit: seed 001 4 KB random read 300,000 IOPS, QD 32)
    read_latency_us: float = 210.0  # (fit: seed 001 minimum read latency 0.21 ms, 4 KB, jobs = 1)
    write_iops: float = 307_000.0  # (fit: seed 001 4 KB random write 307,000 IOPS, QD 32)
    write_latency_us: float = 146.0  # (fit: seed 001 minimum write latency 0.146 ms, 4 KB, jobs = 1)
    media_mib_per_s: float = 2750.0  # (fit: seed 001 read bandwidth 2,750 MB/s, fio MB = MiB)


@dataclass(frozen=True)
class ReplayOptions:
    mode: str = "open"  # open: trace timestamps; closed: `outstanding` I/Os in flight
    outstanding: int = 16  # IOMeter workers x outstanding, fio numjobs x iodepth
    interval_ns: int = 0  # per-interval outputs; 0: "auto", chosen from the run's length (replay.intervals)
    warmup_pct: float = 0.0  # summary metrics skip this share of the requests (cache warm-up)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    controller: Controller
    dram: Dram
    drive_classes: dict[str, DriveClass]
    raid_groups: tuple[RaidGroup, ...]
    pools: tuple[Pool, ...]
    volume_maps: tuple[VolumeMap, ...]
    default_pool: str
    replay: ReplayOptions
    extra_sections: dict[str, dict] = field(default_factory=dict)  # sections in NOT_YET_MODELLED (none today)
    ssd_cache: SsdCache | None = None  # None or enabled = false: no SSD cache
    tiering_section: Tiering | None = None  # None or enabled = false: no FAST VP
    snapshots_section: Snapshots | None = None  # None or enabled = false: no snapshots
    source: str = ""
    flash_array: Flash | None = None  # None or enabled = false: not an all-flash array

    # -- derived ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source")
        if d["flash_array"] is None:  # scenarios without [flash] keep the hash they had before it existed
            d.pop("flash_array")
        return d

    def model_dict(self) -> dict:
        """The normalized model (what the hash covers): no name, description or source."""
        d = self.to_dict()
        d.pop("name")
        d.pop("description")
        return d

    @property
    def hash(self) -> str:
        blob = json.dumps(self.model_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def ignored_sections(self) -> list[str]:
        return sorted(self.extra_sections)

    def rg_index(self, name: str) -> int:
        for i, rg in enumerate(self.raid_groups):
            if rg.name == name:
                return i
        raise LookupError(f"no RAID group {name!r}")

    def pool_index(self, name: str) -> int:
        for i, p in enumerate(self.pools):
            if p.name == name:
                return i
        raise LookupError(f"no pool {name!r}")

    def pool_of_volume(self, volume: str) -> int:
        """Index of the pool a volume (trace volume name) lives in: first matching map entry,
        else the default pool."""
        for m in self.volume_maps:
            if fnmatchcase(volume, m.pattern):
                return self.pool_index(m.pool)
        return self.pool_index(self.default_pool)

    @property
    def n_drives(self) -> int:
        """HDD and flash-tier drives of the RAID groups (an SSD cache's drives not included)."""
        return sum(rg.width for rg in self.raid_groups)

    @property
    def ssd(self) -> SsdCache | None:
        """The SSD cache when it is switched on."""
        return self.ssd_cache if self.ssd_cache is not None and self.ssd_cache.enabled else None

    @property
    def tiering(self) -> Tiering | None:
        """FAST VP when it is switched on."""
        t = self.tiering_section
        return t if t is not None and t.enabled else None

    @property
    def snapshots(self) -> Snapshots | None:
        """The snapshot schedule when it is switched on."""
        t = self.snapshots_section
        return t if t is not None and t.enabled else None

    def rg_tier(self, rg: RaidGroup) -> str:
        return self.drive_classes[rg.drive_class].fast_vp_tier

    @property
    def flash(self) -> Flash | None:
        """The all-flash mechanism when it is switched on."""
        return self.flash_array if self.flash_array is not None and self.flash_array.enabled else None

    def features(self) -> list[str]:
        """What the scenario models: DRAM cache mode, SSD cache, RAID levels, replay loop."""
        f = [f"dram:{self.dram.mode}"]
        if self.ssd:
            f.append(f"ssd_cache:{self.ssd.kind}" + (f":{self.ssd.mode}" if self.ssd.kind == "qcache" else ""))
        f += sorted({f"raid{rg.level}" for rg in self.raid_groups})
        if any(self.drive_classes[rg.drive_class].kind == "ssd" for rg in self.raid_groups):
            f.append("flash_tier")
        if self.tiering:
            f.append(f"fast_vp:{self.tiering.policy}")
        if self.snapshots:
            f.append(f"snapshots:{self.snapshots.mode}")
        f.append(f"{self.replay.mode}_loop")
        if self.flash:
            f.append("all_flash")
        return f

    def relabel(self, name: str) -> Scenario:
        """A copy under another name (the hash, which keys runs, covers the model only)."""
        return replace(self, name=name)

    def with_replay(self, **changes) -> Scenario:
        """A copy with replay options changed (e.g. ``mode="closed", outstanding=48``), checked
        as the file's ``[replay]`` section is (ValueError naming the option and its range)."""
        opts = replace(self.replay, **changes)
        if opts.mode not in ("open", "closed"):
            raise ValueError(f"replay mode must be 'open' or 'closed', got {opts.mode!r}")
        _check_range("outstanding", opts.outstanding, 1, MAX_OUTSTANDING, integer=True)
        _check_range("warmup_pct", opts.warmup_pct, 0, MAX_WARMUP_PCT)
        if opts.interval_ns != 0:  # 0: auto
            _check_range("interval_ns", opts.interval_ns, MIN_INTERVAL_NS, None, integer=True)
        return replace(self, replay=opts)

    def describe(self) -> dict:
        """Short summary for listings."""
        drives = {}
        for rg in self.raid_groups:
            drives[rg.drive_class] = drives.get(rg.drive_class, 0) + rg.width
        return {
            "name": self.name,
            "description": self.description,
            "hash": self.hash,
            "dram_mode": self.dram.mode,
            "cache_bytes": self.dram.cache_bytes,
            "raid_groups": [f"{rg.name}: RAID {rg.level} x{rg.width} {rg.drive_class}" for rg in self.raid_groups],
            "drives": drives,
            "mode": self.replay.mode,
            "outstanding": self.replay.outstanding,
            "features": self.features(),
            "ssd_cache_bytes": self.ssd.usable_bytes(self.drive_classes) if self.ssd else 0,
            "not_yet_modelled": self.ignored_sections,
            "source": self.source,
        }


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------
_TOP = {"name", "description", "controller", "dram", "drive_classes", "raid_groups", "pools", "volumes",
        "replay", "ssd_cache", "tiering", "snapshots", "flash", *NOT_YET_MODELLED}


def _names(cls) -> set[str]:
    return {f.name for f in fields(cls)}


def _parse_drive(w: _Where, name: str, t: dict) -> DriveClass:
    sec = f"drive_classes.{name}"
    _check_keys(w, sec, t, _names(DriveClass) - {"name"})
    d = DriveClass(name=name)
    kind = _get(w, sec, t, "kind", "str", d.kind, choices=("hdd", "ssd"))
    dc = DriveClass(
        name=name,
        kind=kind,
        planning_iops=_get(w, sec, t, "planning_iops", "float", d.planning_iops, minimum=0, strict_min=True),
        rpm=_get(w, sec, t, "rpm", "int", d.rpm, minimum=1000),
        avg_seek_ms=_get(w, sec, t, "avg_seek_ms", "float", None, minimum=0),
        track_to_track_ms=_get(w, sec, t, "track_to_track_ms", "float", d.track_to_track_ms, minimum=0),
        transfer_mb_per_s=_get(w, sec, t, "transfer_mb_per_s", "float", d.transfer_mb_per_s, minimum=0,
                               strict_min=True),
        queue_gain_exponent=_get(w, sec, t, "queue_gain_exponent", "float", d.queue_gain_exponent,
                                 minimum=0, maximum=1),
        queue_depth_max=_get(w, sec, t, "queue_depth_max", "int", d.queue_depth_max, minimum=1),
        capacity_bytes=_get(w, sec, t, "capacity_bytes", "size", d.capacity_bytes),
        read_iops=_get(w, sec, t, "read_iops", "float", d.read_iops, minimum=0),
        write_iops=_get(w, sec, t, "write_iops", "float", d.write_iops, minimum=0),
        read_latency_us=_get(w, sec, t, "read_latency_us", "float", d.read_latency_us, minimum=0, strict_min=True),
        tier=_get(w, sec, t, "tier", "str", "", choices=TIER_NAMES),
    )
    if kind == "hdd":
        for k in ("read_iops", "write_iops", "read_latency_us"):
            if k in t:
                raise w.error(sec, k, "only for kind = \"ssd\"")
    if dc.write_iops and not dc.read_iops:
        raise w.error(sec, "write_iops", "give read_iops too")
    if dc.kind == "hdd":
        if dc.seek_ms < 0:
            raise w.error(sec, "planning_iops", f"{dc.planning_iops} IOPS is faster than half a rotation at "
                          f"{dc.rpm} rpm plus the transfer: no room for a seek (give avg_seek_ms)")
        if dc.track_to_track_ms > dc.seek_ms:
            raise w.error(sec, "track_to_track_ms", f"{dc.track_to_track_ms} ms exceeds the average seek "
                          f"{dc.seek_ms:.2f} ms")
    elif dc.latency_ms <= 0:
        raise w.error(sec, "planning_iops", "an 8 KiB transfer alone takes longer than 1/planning_iops")
    return dc


def _parse_rg(w: _Where, i: int, t: dict, classes: dict[str, DriveClass]) -> RaidGroup:
    sec = f"raid_groups[{i}]"
    t = _table(w, sec, t)
    _check_keys(w, sec, t, _names(RaidGroup))
    for k in ("name", "level", "width", "drive_class"):
        if k not in t:
            raise w.error(sec, None, f"lacks {k!r}")
    name = _get(w, sec, t, "name", "str")
    level = _get(w, sec, t, "level", "int", choices=RAID_LEVELS)
    width = _get(w, sec, t, "width", "int", minimum=1)
    dclass = _get(w, sec, t, "drive_class", "str")
    elem = _get(w, sec, t, "stripe_element_bytes", "size", 64 << 10, minimum=512)
    if dclass not in classes:
        raise w.error(sec, "drive_class", f"RAID group {name!r}: unknown drive class {dclass!r}; "
                      f"defined: {', '.join(classes) or 'none'}")
    need = {0: 1, 1: 2, 10: 4, 5: 3, 6: 4}[level]
    if width < need or (level == 1 and width != 2) or (level == 10 and width % 2):
        raise w.error(sec, "width", f"RAID group {name!r}: RAID {level} cannot have {width} drives")
    if elem & (elem - 1):
        raise w.error(sec, "stripe_element_bytes", f"RAID group {name!r}: {elem} is not a power of two")
    return RaidGroup(name, level, width, dclass, elem)


def _parse_dram(w: _Where, t: dict) -> Dram:
    d = Dram()
    allowed = _names(Dram)
    _check_keys(w, "dram", t, allowed)
    mode = _get(w, "dram", t, "mode", "str", d.mode, choices=("flare", "mcx"))
    ft = _table(w, "dram.flare", t.get("flare", {}))
    mt = _table(w, "dram.mcx", t.get("mcx", {}))
    _check_keys(w, "dram.flare", ft, _names(Flare))
    _check_keys(w, "dram.mcx", mt, _names(Mcx))
    f0, m0 = Flare(), Mcx()
    flare = Flare(
        read_cache_bytes=_get(w, "dram.flare", ft, "read_cache_bytes", "size", f0.read_cache_bytes),
        high_watermark_pct=_get(w, "dram.flare", ft, "high_watermark_pct", "float", f0.high_watermark_pct,
                                minimum=0, maximum=100),
        low_watermark_pct=_get(w, "dram.flare", ft, "low_watermark_pct", "float", f0.low_watermark_pct,
                               minimum=0, maximum=100),
        idle_after_ms=_get(w, "dram.flare", ft, "idle_after_ms", "float", f0.idle_after_ms, minimum=0),
        idle_flush_outstanding=_get(w, "dram.flare", ft, "idle_flush_outstanding", "int",
                                    f0.idle_flush_outstanding, minimum=0),
    )
    if flare.low_watermark_pct >= flare.high_watermark_pct:
        raise w.error("dram.flare", "low_watermark_pct", f"low watermark {flare.low_watermark_pct} % must be "
                      f"below the high watermark {flare.high_watermark_pct} %")
    ms = "dram.mcx"
    mcx = Mcx(
        initial_age_ms=_get(w, ms, mt, "initial_age_ms", "float", m0.initial_age_ms, minimum=0, strict_min=True),
        min_age_ms=_get(w, ms, mt, "min_age_ms", "float", m0.min_age_ms, minimum=0, strict_min=True),
        max_age_ms=_get(w, ms, mt, "max_age_ms", "float", m0.max_age_ms, minimum=0, strict_min=True),
        adapt_interval_ms=_get(w, ms, mt, "adapt_interval_ms", "float", m0.adapt_interval_ms, minimum=0,
                               strict_min=True),
        rate_window_ms=_get(w, ms, mt, "rate_window_ms", "float", m0.rate_window_ms, minimum=0, strict_min=True),
        dirty_target_pct=_get(w, ms, mt, "dirty_target_pct", "float", m0.dirty_target_pct, minimum=0,
                              maximum=100, strict_min=True),
        dirty_max_pct=_get(w, ms, mt, "dirty_max_pct", "float", m0.dirty_max_pct, minimum=0, maximum=100),
        min_free_pct=_get(w, ms, mt, "min_free_pct", "float", m0.min_free_pct, minimum=0, maximum=100),
        age_smoothing=_get(w, ms, mt, "age_smoothing", "float", m0.age_smoothing, minimum=0, maximum=1,
                           strict_min=True),
        throttle_drain_ms=_get(w, ms, mt, "throttle_drain_ms", "float", m0.throttle_drain_ms, minimum=0),
        throttle_ratio_min=_get(w, ms, mt, "throttle_ratio_min", "float", m0.throttle_ratio_min, minimum=0,
                                maximum=1, strict_min=True),
        throttle_overshoot_pct=_get(w, ms, mt, "throttle_overshoot_pct", "float", m0.throttle_overshoot_pct,
                                    minimum=0, strict_min=True),
        throttle_saturation_pct=_get(w, ms, mt, "throttle_saturation_pct", "float", m0.throttle_saturation_pct,
                                     minimum=0, maximum=100, strict_min=True),
        throttle_room_pct=_get(w, ms, mt, "throttle_room_pct", "float", m0.throttle_room_pct, minimum=0,
                               maximum=100, strict_min=True),
    )
    if mcx.dirty_max_pct < mcx.dirty_target_pct:
        raise w.error(ms, "dirty_max_pct", f"must be >= dirty_target_pct ({mcx.dirty_target_pct}), "
                      f"got {mcx.dirty_max_pct}")
    if not mcx.min_age_ms <= mcx.initial_age_ms <= mcx.max_age_ms:
        raise w.error(ms, "initial_age_ms", f"must lie within min_age_ms..max_age_ms "
                      f"({mcx.min_age_ms}..{mcx.max_age_ms}), got {mcx.initial_age_ms}")
    dram = Dram(
        mode=mode,
        cache_bytes=_get(w, "dram", t, "cache_bytes", "size", d.cache_bytes),
        page_bytes=_get(w, "dram", t, "page_bytes", "size", d.page_bytes, minimum=512),
        flush_unit_bytes=_get(w, "dram", t, "flush_unit_bytes", "size", d.flush_unit_bytes, minimum=512),
        mirror_latency_us=_get(w, "dram", t, "mirror_latency_us", "float", d.mirror_latency_us, minimum=0),
        flush_queue_depth=_get(w, "dram", t, "flush_queue_depth", "int", d.flush_queue_depth, minimum=1),
        flush_order=_get(w, "dram", t, "flush_order", "str", "address" if mode == "mcx" else "age",
                         choices=("age", "address")),
        flare=flare,
        mcx=mcx,
    )
    pb, fu = dram.page_bytes, dram.flush_unit_bytes
    if pb & (pb - 1):
        raise w.error("dram", "page_bytes", f"{pb} is not a power of two")
    if fu & (fu - 1) or fu < pb:
        raise w.error("dram", "flush_unit_bytes", f"{fu} must be a power of two >= the page size {pb}")
    if fu // pb > 64:
        raise w.error("dram", "flush_unit_bytes", f"at most 64 pages per flush unit ({fu // pb} given)")
    if dram.cache_bytes < pb:
        raise w.error("dram", "cache_bytes", f"{dram.cache_bytes} B holds no {pb} B page")
    if mode == "flare" and dram.write_cache_bytes < pb:
        raise w.error("dram.flare", "read_cache_bytes", f"read cache {flare.read_cache_bytes} B leaves no write "
                      f"cache out of {dram.cache_bytes} B")
    return dram


def parse(data: dict, source: str = "<scenario>", text: str | None = None) -> Scenario:
    """A validated :class:`Scenario` from a parsed TOML document."""
    w = _Where(source, text)
    _check_keys(w, "", data, _TOP)
    name = _get(w, "", data, "name", "str", Path(source).stem)
    description = _get(w, "", data, "description", "str", "")

    ct = _table(w, "controller", data.get("controller", {}))
    _check_keys(w, "controller", ct, _names(Controller))
    c0 = Controller()
    controller = Controller(
        overhead_us=_get(w, "controller", ct, "overhead_us", "float", c0.overhead_us, minimum=0),
        bandwidth_mb_per_s=_get(w, "controller", ct, "bandwidth_mb_per_s", "float", c0.bandwidth_mb_per_s,
                                minimum=0, strict_min=True),
    )
    dram = _parse_dram(w, _table(w, "dram", data.get("dram", {})))

    dct = _table(w, "drive_classes", data.get("drive_classes", {}))
    classes = {k: _parse_drive(w, k, _table(w, f"drive_classes.{k}", v)) for k, v in dct.items()}
    rgs_raw = data.get("raid_groups", [])
    if not isinstance(rgs_raw, list) or not rgs_raw:
        raise w.error("raid_groups", None, "at least one [[raid_groups]] entry is needed")
    rgs = tuple(_parse_rg(w, i, t, classes) for i, t in enumerate(rgs_raw))
    seen = set()
    for i, rg in enumerate(rgs):
        if rg.name in seen:
            raise w.error(f"raid_groups[{i}]", "name", f"RAID group {rg.name!r} defined twice")
        seen.add(rg.name)
        if rg.stripe_element_bytes % dram.flush_unit_bytes:
            raise w.error(f"raid_groups[{i}]", "stripe_element_bytes", f"RAID group {rg.name!r}: stripe element "
                          f"{rg.stripe_element_bytes} B is not a multiple of the flush unit {dram.flush_unit_bytes} B")

    pools_raw = data.get("pools", [])
    if not isinstance(pools_raw, list) or not pools_raw:
        raise w.error("pools", None, "at least one [[pools]] entry is needed")
    pools = []
    used: dict[str, str] = {}
    for i, pt in enumerate(pools_raw):
        sec = f"pools[{i}]"
        pt = _table(w, sec, pt)
        _check_keys(w, sec, pt, _names(Pool))
        if "name" not in pt or "raid_groups" not in pt:
            raise w.error(sec, None, "needs 'name' and 'raid_groups'")
        pname = _get(w, sec, pt, "name", "str")
        members = pt["raid_groups"]
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise w.error(sec, "raid_groups", f"pool {pname!r}: a non-empty list of RAID group names")
        for m in members:
            if m not in seen:
                raise w.error(sec, "raid_groups", f"pool {pname!r}: unknown RAID group {m!r}")
            if m in used:
                raise w.error(sec, "raid_groups", f"RAID group {m!r} is in pools {used[m]!r} and {pname!r}")
            used[m] = pname
        p = Pool(
            name=pname,
            raid_groups=tuple(members),
            slice_bytes=_get(w, sec, pt, "slice_bytes", "size", Pool.slice_bytes, minimum=0),
            span_fraction=_get(w, sec, pt, "span_fraction", "float", Pool.span_fraction, minimum=0,
                               maximum=1, strict_min=True),
        )
        if p.slice_bytes and p.slice_bytes % dram.flush_unit_bytes:
            raise w.error(sec, "slice_bytes", f"pool {pname!r}: slice is not a multiple of the flush unit")
        for m in members:
            rg = rgs[[r.name for r in rgs].index(m)]
            if p.slice_bytes and p.slice_bytes % rg.stripe_element_bytes:
                raise w.error(sec, "slice_bytes", f"pool {pname!r}: slice is not a multiple of RAID group "
                              f"{m!r}'s stripe element")
        if len(members) > 1 and not p.slice_bytes:
            raise w.error(sec, "slice_bytes", f"pool {pname!r} spreads over {len(members)} RAID groups: "
                          "give a slice size")
        if pname in [q.name for q in pools]:
            raise w.error(sec, "name", f"pool {pname!r} defined twice")
        pools.append(p)

    vt = _table(w, "volumes", data.get("volumes", {}))
    _check_keys(w, "volumes", vt, {"default_pool", "map"})
    pool_names = [p.name for p in pools]
    default_pool = _get(w, "volumes", vt, "default_pool", "str", pool_names[0])
    if default_pool not in pool_names:
        raise w.error("volumes", "default_pool", f"unknown pool {default_pool!r}; defined: {', '.join(pool_names)}")
    maps = []
    for i, mt in enumerate(vt.get("map", [])):
        sec = f"volumes.map[{i}]"
        mt = _table(w, sec, mt)
        _check_keys(w, sec, mt, {"pattern", "pool"})
        if "pattern" not in mt or "pool" not in mt:
            raise w.error(sec, None, "needs 'pattern' and 'pool'")
        pat = _get(w, sec, mt, "pattern", "str")
        pl = _get(w, sec, mt, "pool", "str")
        if pl not in pool_names:
            raise w.error(sec, "pool", f"unknown pool {pl!r}; defined: {', '.join(pool_names)}")
        maps.append(VolumeMap(pat, pl))

    rt = _table(w, "replay", data.get("replay", {}))
    _check_keys(w, "replay", rt, {"mode", "outstanding", "interval", "warmup_pct"})
    r0 = ReplayOptions()
    replay_opts = ReplayOptions(
        mode=_get(w, "replay", rt, "mode", "str", r0.mode, choices=("open", "closed")),
        outstanding=_get(w, "replay", rt, "outstanding", "int", r0.outstanding, minimum=1, maximum=MAX_OUTSTANDING),
        interval_ns=0 if rt.get("interval", "auto") == "auto" else _get(w, "replay", rt, "interval", "duration",
                                                                          r0.interval_ns, minimum=1, strict_min=False),
        warmup_pct=_get(w, "replay", rt, "warmup_pct", "float", r0.warmup_pct, minimum=0, maximum=MAX_WARMUP_PCT),
    )
    if 0 < replay_opts.interval_ns < MIN_INTERVAL_NS:
        raise w.error("replay", "interval", "must be at least 1 ms")

    extra = {}
    for k in NOT_YET_MODELLED:
        if k in data:
            extra[k] = _table(w, k, data[k])
    ssd = _parse_ssd(w, _table(w, "ssd_cache", data["ssd_cache"]), classes, dram) if "ssd_cache" in data else None
    tiering = (_parse_tiering(w, _table(w, "tiering", data["tiering"]), pools, rgs, classes, default_pool)
               if "tiering" in data else None)
    snaps = _parse_snapshots(w, _table(w, "snapshots", data["snapshots"])) if "snapshots" in data else None
    flash = _parse_flash(w, _table(w, "flash", data["flash"])) if "flash" in data else None
    if flash is not None and flash.enabled and ssd is not None and ssd.enabled:
        raise w.error("flash", "enabled", "an all-flash array has no SSD cache: switch [ssd_cache] off")
    return Scenario(name, description, controller, dram, classes, rgs, tuple(pools), tuple(maps), default_pool,
                    replay_opts, extra, ssd, tiering, snaps, source, flash)


def _parse_snapshots(w: _Where, t: dict) -> Snapshots:
    sec = "snapshots"
    _check_keys(w, sec, t, _names(Snapshots))
    d = Snapshots()
    s = Snapshots(
        enabled=_get(w, sec, t, "enabled", "bool", d.enabled),
        every_s=_get(w, sec, t, "every_s", "float", d.every_s, minimum=0.001),
        keep_s=_get(w, sec, t, "keep_s", "float", d.keep_s, minimum=0, strict_min=True),
        mode=_get(w, sec, t, "mode", "str", d.mode, choices=("row", "cofw")),
    )
    return s


def _parse_tiering(w: _Where, t: dict, pools: list[Pool], rgs: tuple[RaidGroup, ...],
                   classes: dict[str, DriveClass], default_pool: str) -> Tiering:
    sec = "tiering"
    _check_keys(w, sec, t, _names(Tiering))
    d = Tiering()
    maps = []
    raw = t.get("policies", [])
    if not isinstance(raw, list):
        raise w.error(sec, "policies", "an array of {pattern, policy} tables")
    for i, mt in enumerate(raw):
        ms = f"tiering.policies[{i}]"
        mt = _table(w, ms, mt)
        _check_keys(w, ms, mt, {"pattern", "policy"})
        if "pattern" not in mt or "policy" not in mt:
            raise w.error(ms, None, "needs 'pattern' and 'policy'")
        maps.append(PolicyMap(_get(w, ms, mt, "pattern", "str"), _get(w, ms, mt, "policy", "str", choices=TIER_POLICIES)))
    tg = Tiering(
        enabled=_get(w, sec, t, "enabled", "bool", d.enabled),
        pool=_get(w, sec, t, "pool", "str", default_pool) or default_pool,
        policy=_get(w, sec, t, "policy", "str", d.policy, choices=TIER_POLICIES),
        policies=tuple(maps),
        half_life_h=_get(w, sec, t, "half_life_h", "float", d.half_life_h, minimum=0, strict_min=True),
        rank_interval_s=_get(w, sec, t, "rank_interval_s", "float", d.rank_interval_s, minimum=1),
        window_start_h=_get(w, sec, t, "window_start_h", "float", d.window_start_h, minimum=0),
        window_hours=_get(w, sec, t, "window_hours", "float", d.window_hours, minimum=0, strict_min=True),
        window_every_h=_get(w, sec, t, "window_every_h", "float", d.window_every_h, minimum=0, strict_min=True),
        relocation_mb_per_s=_get(w, sec, t, "relocation_mb_per_s", "float", d.relocation_mb_per_s, minimum=0,
                                 strict_min=True),
        free_pct=_get(w, sec, t, "free_pct", "float", d.free_pct, minimum=0, maximum=90),
        promote_margin_pct=_get(w, sec, t, "promote_margin_pct", "float", d.promote_margin_pct, minimum=0),
        rebalance=_get(w, sec, t, "rebalance", "bool", d.rebalance),
        rebalance_tolerance_pct=_get(w, sec, t, "rebalance_tolerance_pct", "float", d.rebalance_tolerance_pct,
                                     minimum=0),
    )
    names = [p.name for p in pools]
    if tg.pool not in names:
        raise w.error(sec, "pool", f"unknown pool {tg.pool!r}; defined: {', '.join(names)}")
    pool = pools[names.index(tg.pool)]
    if not pool.slice_bytes:
        raise w.error(sec, "pool", f"pool {tg.pool!r} has no slice_bytes: FAST VP moves slices")
    if tg.window_hours > tg.window_every_h:
        raise w.error(sec, "window_hours", f"{tg.window_hours} h window is longer than its period "
                      f"{tg.window_every_h} h")
    by_name = {rg.name: rg for rg in rgs}
    for m in pool.raid_groups:
        rg = by_name[m]
        cap = classes[rg.drive_class].capacity_bytes
        if tg.enabled and cap <= 0:
            raise w.error(sec, "pool", f"RAID group {m!r} of pool {tg.pool!r}: drive class {rg.drive_class!r} "
                          "needs capacity_bytes (tiers fill by capacity)")
        if tg.enabled and cap * (rg.data_drives) < pool.slice_bytes:
            raise w.error(sec, "pool", f"RAID group {m!r} holds no {pool.slice_bytes} B slice")
    return tg


def _parse_flash(w: _Where, t: dict) -> Flash:
    sec = "flash"
    _check_keys(w, sec, t, _names(Flash))
    d = Flash()
    pos = {"minimum": 0, "strict_min": True}
    f = Flash(
        enabled=_get(w, sec, t, "enabled", "bool", d.enabled),
        user_capacity_bytes=_get(w, sec, t, "user_capacity_bytes", "size", d.user_capacity_bytes, minimum=1),
        spare_factor=_get(w, sec, t, "spare_factor", "float", d.spare_factor, maximum=100, **pos),
        valid_pct=_get(w, sec, t, "valid_pct", "float", d.valid_pct, minimum=0, maximum=100),
        gc_mib_per_s=_get(w, sec, t, "gc_mib_per_s", "float", d.gc_mib_per_s, **pos),
        gc_start_pct=_get(w, sec, t, "gc_start_pct", "float", d.gc_start_pct, maximum=100, **pos),
        stripe_unit_bytes=_get(w, sec, t, "stripe_unit_bytes", "size", d.stripe_unit_bytes, minimum=512),
        stripe_data_units=_get(w, sec, t, "stripe_data_units", "int", d.stripe_data_units, minimum=1, maximum=64),
        stripe_parity_units=_get(w, sec, t, "stripe_parity_units", "int", d.stripe_parity_units, minimum=0,
                                 maximum=2),
        read_iops=_get(w, sec, t, "read_iops", "float", d.read_iops, **pos),
        read_latency_us=_get(w, sec, t, "read_latency_us", "float", d.read_latency_us, **pos),
        write_iops=_get(w, sec, t, "write_iops", "float", d.write_iops, **pos),
        write_latency_us=_get(w, sec, t, "write_latency_us", "float", d.write_latency_us, **pos),
        media_mib_per_s=_get(w, sec, t, "media_mib_per_s", "float", d.media_mib_per_s, **pos),
    )
    if f.stripe_unit_bytes & (f.stripe_unit_bytes - 1):
        raise w.error(sec, "stripe_unit_bytes", f"{f.stripe_unit_bytes} is not a power of two")
    return f


def _parse_ssd(w: _Where, t: dict, classes: dict[str, DriveClass], dram: Dram) -> SsdCache:
    sec = "ssd_cache"
    _check_keys(w, sec, t, _names(SsdCache) | {"block_bytes"})
    kind = _get(w, sec, t, "kind", "str", None, choices=SSD_KINDS)
    if kind is None:
        raise w.error(sec, None, f"lacks 'kind' ({' or '.join(map(repr, SSD_KINDS))})")
    d = SsdCache(kind=kind)
    own = {"fastcache": {"chunk_bytes", "promote_after_hits", "promote_window_ms", "proactive_cleaning",
                         "idle_after_ms", "clean_outstanding"},
           "qcache": {"block_bytes", "mode", "io_type", "sub_block_bytes", "populate_on_read", "populate_on_write"}}
    size_key = "chunk_bytes" if kind == "fastcache" else "block_bytes"
    for other, keys in own.items():
        if other != kind:
            for k in sorted(keys & set(t)):
                raise w.error(sec, k, f"only for kind = {other!r}")
    mode = _get(w, sec, t, "mode", "str", d.mode, choices=("read", "read_write"))
    io_type = _get(w, sec, t, "io_type", "str", d.io_type, choices=(*QCACHE_IO_TYPES, "custom"))
    if io_type != "custom":
        for k in ("block_bytes", "sub_block_bytes", "populate_on_read", "populate_on_write"):
            if k in t:
                raise w.error(sec, k, f"set by io_type = {io_type!r}; use io_type = \"custom\" to choose it")
        chunk, sub, por, pow_ = QCACHE_IO_TYPES[io_type]
    else:
        chunk = _get(w, sec, t, size_key, "size", d.chunk_bytes, minimum=512)
        sub = _get(w, sec, t, "sub_block_bytes", "size", 0)
        por = _get(w, sec, t, "populate_on_read", "int", d.populate_on_read, minimum=0, maximum=1 << 20)
        pow_ = _get(w, sec, t, "populate_on_write", "int", d.populate_on_write, minimum=0, maximum=1 << 20)
    s = SsdCache(
        kind=kind,
        enabled=_get(w, sec, t, "enabled", "bool", d.enabled),
        drive_class=_get(w, sec, t, "drive_class", "str", ""),
        drives=_get(w, sec, t, "drives", "int", d.drives, minimum=1, maximum=1024),
        capacity_bytes=_get(w, sec, t, "capacity_bytes", "size", 0),
        mode=mode,
        chunk_bytes=chunk,
        sub_block_bytes=sub,
        promote_after_hits=_get(w, sec, t, "promote_after_hits", "int", d.promote_after_hits, minimum=1,
                                maximum=1 << 20),
        promote_window_ms=_get(w, sec, t, "promote_window_ms", "float", d.promote_window_ms, minimum=0),
        io_type=io_type,
        populate_on_read=por,
        populate_on_write=pow_,
        fills_in_flight=_get(w, sec, t, "fills_in_flight", "int", d.fills_in_flight, minimum=1, maximum=4096),
        proactive_cleaning=_get(w, sec, t, "proactive_cleaning", "bool", d.proactive_cleaning),
        idle_after_ms=_get(w, sec, t, "idle_after_ms", "float", d.idle_after_ms, minimum=0),
        clean_outstanding=_get(w, sec, t, "clean_outstanding", "int", d.clean_outstanding, minimum=1, maximum=4096),
    )
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
    if kind == "qcache" and s.populate_on_read == 0 and s.populate_on_write == 0 and s.enabled:
        raise w.error(sec, "populate_on_read", "populate_on_read and populate_on_write are both 0: nothing "
                      "would ever be cached")
    return s


def loads(text: str, source: str = "<string>", overrides: Iterable[str] = ()) -> Scenario:
    """A scenario from TOML text; ``overrides`` (``key=value``, :mod:`replay.overrides`) change
    the document before it is validated. With overrides, ``source`` lists them and errors name
    them (the file's line numbers no longer locate every value)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{source}: not valid TOML: {e}") from None
    if overrides:
        data.setdefault("name", Path(source).stem)
        data, source = apply_overrides(data, overrides, source)
        text = None
    return parse(data, source, text)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load(ref: str | Path, overrides: Iterable[str] = ()) -> Scenario:
    """A preset by name (``vnx2-mcx``) or a scenario file by path, with ``overrides`` (see
    :func:`loads`)."""
    p = Path(ref)
    if not p.suffix and not p.exists():
        cand = PRESET_DIR / f"{ref}.toml"
        if not cand.exists():
            raise LookupError(f"no scenario preset {str(ref)!r}; presets: {', '.join(preset_names())} "
                              "(or give a path to a .toml file)")
        p = cand
    if not p.is_file():
        raise FileNotFoundError(f"scenario file {p} does not exist")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a leading BOM (some Windows editors) is fine
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{p}: not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start} (line {line}); "
                         "save the scenario as UTF-8") from None
    return loads(text, str(p), overrides)
