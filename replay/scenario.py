"""Scenarios: a TOML description of an array (controller, DRAM cache, drives, RAID groups, pools,
volume placement) plus replay options, validated on load, with a stable hash.

A scenario file is read with :func:`load` (a preset name from ``replay/scenarios/`` or a path).
Every key is checked: an unknown key, a wrong type, a negative size or a watermark low >= high is
a ``ValueError`` naming the file, the line (when it can be found) and the problem. Defaults are
the published numbers of docs/models/sources.md (source in a comment next to each) or,
marked *est*, our estimates; every one of them is a parameter.

The optional sections are the mechanisms' (``SECTIONS``, from the registry ``replay.mech``): each
mechanism whose ``schema.py`` has a ``parse`` owns the table of its name, its section class and its
checks: ``[ssd_cache]`` (FAST Cache, QCache), ``[tiering]`` (FAST VP), ``[snapshots]``, ``[flash]``
(an all-flash array). ``sc.<name>`` is the section when switched on, else None. Nothing is ignored
(``NOT_YET_MODELLED`` is empty; a future section listed there would be accepted, hashed and
reported as not yet modelled).

The hash (:attr:`Scenario.hash`) is the SHA-256 of the canonical JSON of the normalized model
(sizes as integers, defaults filled in), without ``name``/``description``: the same array written
two ways has one hash, and renaming a file does not change results' run ids.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from replay.mech import MECHANISMS
from replay.mech.backend.schema import DRIVE_CLASS, POOL, RAID_GROUP, seek_range
from replay.mech.dram_cache.schema import DRAM, FLARE, MCX
from replay.mech.host.schema import (
    CONTROLLER,
    MAX_LOAD_FACTOR,
    MAX_OUTSTANDING,
    MAX_WARMUP_PCT,
    MIN_INTERVAL_NS,
    MIN_LOAD_FACTOR,
    REPLAY,
)
from replay.overrides import apply as apply_overrides
from replay.scenario_file import ScenarioFile, TableRead

PRESET_DIR = Path(__file__).resolve().parent / "scenarios"

PARITY_DRIVES = {0: 0, 1: 0, 10: 0, 5: 1, 6: 2}
NOT_YET_MODELLED: tuple[str, ...] = ()
#: The optional mechanisms' sections, by table name (= mechanism name): the schema module of every
#: mechanism whose ``schema.py`` has a ``parse`` (its section class, parser and ``feature``).
SECTIONS = {m.name: schema for m in MECHANISMS if hasattr(schema := m.module("schema"), "parse")}


def _check_range(name: str, v: Any, lo: float, hi: float | None, integer: bool = False) -> None:
    """ValueError unless ``lo <= v <= hi`` (an int when ``integer``)."""
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type or not (lo <= v and (hi is None or v <= hi)):
        rng = f"from {lo:.12g} to {hi:.12g}" if hi is not None else f">= {lo:.12g}"
        raise ValueError(f"{name} must be {kind} {rng}, got {v!r}")


# --------------------------------------------------------------------------------------------
# the model of a scenario
# --------------------------------------------------------------------------------------------
class DriveClass(DRIVE_CLASS.base("DriveClass", before=(("name", str),))):
    """A drive type (parameters: ``replay.mech.backend.schema.DRIVE_CLASS``). HDD service time =
    seek + half a rotation + transfer, where the seek depends on the distance (``span_fraction`` of
    the pool, address-sorted flushing) and a queue of q requests shortens positioning by
    ``min(q, queue_depth_max) ** queue_gain_exponent`` (command reordering). SSD: a latency +
    transfer, with the same queue law as parallelism: given ``read_iops`` (4 KiB random reads per
    second at depth) and ``read_latency_us`` (at queue depth 1), the drive has P = ``read_iops x
    read_latency`` internal servers, rounded (gain exponent 1 up to P queued requests), a latency
    that makes P servers give exactly ``read_iops`` (so the depth-1 latency is about
    ``read_latency_us``), and a write costs ``read_iops / write_iops`` times a read; without
    ``read_iops`` an SSD is the planning latency ``1 / planning_iops`` with the HDD queue law."""

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
        """2.0 / 3.0 / 4.17 ms at 15k / 10k / 7.2k rpm (docs/models/sources.md#back-end-raid-groups-and-drives)."""
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


class RaidGroup(RAID_GROUP.base("RaidGroup")):
    """A RAID group (``replay.mech.backend.schema.RAID_GROUP``)."""

    @property
    def parity_drives(self) -> int:
        return PARITY_DRIVES[self.level]

    @property
    def data_drives(self) -> int:
        return self.width // 2 if self.level in (1, 10) else self.width - self.parity_drives


class Pool(POOL.base("Pool", before=(("name", str), ("raid_groups", tuple)))):
    """A pool of RAID groups (``replay.mech.backend.schema.POOL``)."""


@dataclass(frozen=True)
class VolumeMap:
    pattern: str  # fnmatch pattern on the trace's volume name
    pool: str


class Flare(FLARE.base("Flare")):
    """FLARE (VNX1/CLARiiON) write cache (``replay.mech.dram_cache.schema.FLARE``)."""


class Mcx(MCX.base("Mcx")):
    """MCx (VNX2) cache (``replay.mech.dram_cache.schema.MCX``; the control law in ``replay.mech.dram_cache.kernel``)."""


class Dram(DRAM.base("Dram", after=(("flare", Any, field(default_factory=Flare)),
                                    ("mcx", Any, field(default_factory=Mcx))))):
    """The DRAM cache (``replay.mech.dram_cache.schema.DRAM``) and its FLARE and MCx sections."""

    @property
    def pages_per_unit(self) -> int:
        return self.flush_unit_bytes // self.page_bytes

    @property
    def write_cache_bytes(self) -> int:
        return self.cache_bytes - self.flare.read_cache_bytes if self.mode == "flare" else self.cache_bytes


class Controller(CONTROLLER.base("Controller")):
    """The storage processor (``replay.mech.host.schema.CONTROLLER``)."""


@dataclass(frozen=True)
class ReplayOptions:
    mode: str = "open"  # open: trace timestamps; closed: `outstanding` I/Os in flight
    outstanding: int = 16  # IOMeter workers x outstanding, fio numjobs x iodepth
    interval_ns: int = 0  # per-interval outputs; 0: "auto", chosen from the run's length (replay.intervals)
    warmup_pct: float = 0.0  # summary metrics skip this share of the requests (cache warm-up)
    load_factor: float = 1.0  # open loop: arrivals this many times faster (timestamps divided by it)


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
    #: the optional mechanisms' sections the file has (``SECTIONS``), switched on or not
    sections: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def __getattr__(self, name: str) -> Any:
        """An optional mechanism's section by its name (``sc.ssd_cache``, ``sc.tiering``,
        ``sc.snapshots``, ``sc.flash``: every ``SECTIONS`` entry) when it is switched on, else
        None; ``sc.sections[name]`` has it as written even when off."""
        if name in SECTIONS:
            t = self.__dict__.get("sections", {}).get(name)
            return t if t is not None and t.enabled else None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- derived ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source")
        d.update(d.pop("sections"))  # each section under its table's name, only when the file has it
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

    def rg_tier(self, rg: RaidGroup) -> str:
        return self.drive_classes[rg.drive_class].fast_vp_tier

    def features(self) -> list[str]:
        """What the scenario models: DRAM cache mode, SSD cache, RAID levels, replay loop."""
        if self.cloud or self.device:  # a volume (buckets, a device or both): no DRAM cache or RAID groups
            return [f"{self.replay.mode}_loop", *(SECTIONS[k].feature(s) for k in ("cloud", "device")
                                                   if (s := getattr(self, k)))]
        f = [f"dram:{self.dram.mode}"]
        f += sorted({f"raid{rg.level}" for rg in self.raid_groups})
        if any(self.drive_classes[rg.drive_class].kind == "ssd" for rg in self.raid_groups):
            f.append("flash_tier")
        f.append(f"{self.replay.mode}_loop")
        return f + [schema.feature(s) for name, schema in SECTIONS.items() if (s := getattr(self, name))]

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
        _check_range("load_factor", opts.load_factor, MIN_LOAD_FACTOR, MAX_LOAD_FACTOR)
        if opts.interval_ns != 0:  # 0: auto
            _check_range("interval_ns", opts.interval_ns, MIN_INTERVAL_NS, None, integer=True)
        return replace(self, replay=opts)

    def data_capacity_bytes(self, pool: Pool) -> int:
        """User data a pool's RAID groups hold (0 when a drive class has no capacity_bytes)."""
        total = 0
        for name in pool.raid_groups:
            rg = self.raid_groups[self.rg_index(name)]
            cap = self.drive_classes[rg.drive_class].capacity_bytes
            if not cap:
                return 0
            total += rg.data_drives * cap
        return total

    def with_footprint(self, max_end_bytes: Mapping[str, int]) -> Scenario:
        """A copy whose pools without a ``span_fraction`` get the workload's: the highest address
        (offset + size) of each volume that lives there, summed, over the pool's data capacity
        (at most 1). ``max_end_bytes``: by trace volume name. Pools whose capacity is unknown stay
        unset (full stroke)."""
        used = [0] * len(self.pools)
        for vol, end in max_end_bytes.items():
            used[self.pool_of_volume(vol)] += int(end)
        pools = []
        for p, u in zip(self.pools, used, strict=True):
            cap = self.data_capacity_bytes(p)
            if p.span_fraction is None and cap and u:
                p = replace(p, span_fraction=min(1.0, u / cap))
            pools.append(p)
        return replace(self, pools=tuple(pools))

    def describe(self) -> dict:
        """Short summary for listings."""
        drives = {}
        for rg in self.raid_groups:
            drives[rg.drive_class] = drives.get(rg.drive_class, 0) + rg.width
        cloud = self.cloud  # a cloud volume has no DRAM cache of its own
        return {
            "name": self.name,
            "description": self.description,
            "hash": self.hash,
            "dram_mode": "none" if cloud else self.dram.mode,
            "cache_bytes": 0 if cloud else self.dram.cache_bytes,
            "raid_groups": ([f"{cloud.volume_type} {cloud.size_bytes / 2**30:,.0f} GiB: {cloud.limits.iops:,.0f} IOPS, "
                             f"{cloud.limits.mib_per_s:,.0f} MiB/s"] if cloud else
                            [f"{rg.name}: RAID {rg.level} x{rg.width} {rg.drive_class}" for rg in self.raid_groups]),
            "drives": drives,
            "mode": self.replay.mode,
            "outstanding": self.replay.outstanding,
            "features": self.features(),
            "ssd_cache_bytes": self.ssd_cache.usable_bytes(self.drive_classes) if self.ssd_cache else 0,
            "not_yet_modelled": self.ignored_sections,
            "source": self.source,
        }


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------
_TOP = {"name", "description", "controller", "dram", "drive_classes", "raid_groups", "pools", "volumes",
        "replay", *SECTIONS, *NOT_YET_MODELLED}


def _names(cls) -> set[str]:
    return {f.name for f in fields(cls)}


def _parse_drive(w: ScenarioFile, name: str, t: dict) -> DriveClass:
    sec = f"drive_classes.{name}"
    dc = DriveClass(name=name, **w.read(sec, DRIVE_CLASS, t))
    kind = dc.kind
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
        if dc.full_stroke_ms is not None:
            lo, hi = seek_range(dc.track_to_track_ms, dc.full_stroke_ms)
            if not lo <= dc.seek_ms <= hi:
                raise w.error(sec, "full_stroke_ms", f"an average seek of {dc.seek_ms:.2f} ms does not fit a curve "
                              f"from {dc.track_to_track_ms} ms (single track) to {dc.full_stroke_ms} ms (full stroke): "
                              f"it must be {lo:.2f}-{hi:.2f} ms")
        if dc.transfer_inner_mb_per_s is not None and dc.transfer_inner_mb_per_s > dc.transfer_mb_per_s:
            raise w.error(sec, "transfer_inner_mb_per_s", f"{dc.transfer_inner_mb_per_s} MB/s is faster than the outer "
                          f"diameter's {dc.transfer_mb_per_s} MB/s (transfer_mb_per_s)")
    elif dc.latency_ms <= 0:
        raise w.error(sec, "planning_iops", "an 8 KiB transfer alone takes longer than 1/planning_iops")
    return dc


def _parse_rg(w: ScenarioFile, i: int, t: dict, classes: dict[str, DriveClass]) -> RaidGroup:
    sec = f"raid_groups[{i}]"
    rg = RaidGroup(**w.read(sec, RAID_GROUP, w.table(sec, t)))
    name, level, width, dclass, elem = rg.name, rg.level, rg.width, rg.drive_class, rg.stripe_element_bytes
    if dclass not in classes:
        raise w.error(sec, "drive_class", f"RAID group {name!r}: unknown drive class {dclass!r}; "
                      f"defined: {', '.join(classes) or 'none'}")
    need = {0: 1, 1: 2, 10: 4, 5: 3, 6: 4}[level]
    if width < need or (level == 1 and width != 2) or (level == 10 and width % 2):
        raise w.error(sec, "width", f"RAID group {name!r}: RAID {level} cannot have {width} drives")
    if elem & (elem - 1):
        raise w.error(sec, "stripe_element_bytes", f"RAID group {name!r}: {elem} is not a power of two")
    return rg


def _parse_dram(w: ScenarioFile, t: dict) -> Dram:
    ft = w.table("dram.flare", t.get("flare", {}))
    mt = w.table("dram.mcx", t.get("mcx", {}))
    flare = Flare(**w.read("dram.flare", FLARE, ft))
    if flare.low_watermark_pct >= flare.high_watermark_pct:
        raise w.error("dram.flare", "low_watermark_pct", f"low watermark {flare.low_watermark_pct} % must be "
                      f"below the high watermark {flare.high_watermark_pct} %")
    ms = "dram.mcx"
    mcx = Mcx(**w.read(ms, MCX, mt))
    if mcx.dirty_max_pct < mcx.dirty_target_pct:
        raise w.error(ms, "dirty_max_pct", f"must be >= dirty_target_pct ({mcx.dirty_target_pct}), "
                      f"got {mcx.dirty_max_pct}")
    if not mcx.min_age_ms <= mcx.initial_age_ms <= mcx.max_age_ms:
        raise w.error(ms, "initial_age_ms", f"must lie within min_age_ms..max_age_ms "
                      f"({mcx.min_age_ms}..{mcx.max_age_ms}), got {mcx.initial_age_ms}")
    mode = w.get("dram", t, "mode", "str", DRAM["mode"].default, choices=DRAM["mode"].choices)
    dram = Dram(**w.read("dram", DRAM, t, defaults={"flush_order": "address" if mode == "mcx" else "age"}),
                flare=flare, mcx=mcx)
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


def parse(data: dict, source: str = "<scenario>", text: str | None = None,
          reads: list[TableRead] | None = None) -> Scenario:
    """A validated :class:`Scenario` from a parsed TOML document; ``reads`` (a list) receives the
    declared tables as they were read (``replay.provenance``)."""
    w = ScenarioFile(source, text)
    w.check_keys("", data, _TOP)
    name = w.get("", data, "name", "str", Path(source).stem)
    description = w.get("", data, "description", "str", "")

    ct = w.table("controller", data.get("controller", {}))
    controller = Controller(**w.read("controller", CONTROLLER, ct))
    dram = _parse_dram(w, w.table("dram", data.get("dram", {})))

    dct = w.table("drive_classes", data.get("drive_classes", {}))
    classes = {k: _parse_drive(w, k, w.table(f"drive_classes.{k}", v)) for k, v in dct.items()}
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
        pt = w.table(sec, pt)
        values = w.read(sec, POOL, pt)
        if "name" not in pt or "raid_groups" not in pt:
            raise w.error(sec, None, "needs 'name' and 'raid_groups'")
        pname = w.get(sec, pt, "name", "str")
        members = pt["raid_groups"]
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise w.error(sec, "raid_groups", f"pool {pname!r}: a non-empty list of RAID group names")
        for m in members:
            if m not in seen:
                raise w.error(sec, "raid_groups", f"pool {pname!r}: unknown RAID group {m!r}")
            if m in used:
                raise w.error(sec, "raid_groups", f"RAID group {m!r} is in pools {used[m]!r} and {pname!r}")
            used[m] = pname
        p = Pool(name=pname, raid_groups=tuple(members), **values)
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
        if p.controller >= controller.count:
            raise w.error(sec, "controller", f"pool {pname!r}: controller {p.controller} of {controller.count} "
                          "(controllers are numbered from 0; set controller.count)")
        pools.append(p)

    vt = w.table("volumes", data.get("volumes", {}))
    w.check_keys("volumes", vt, {"default_pool", "map"})
    pool_names = [p.name for p in pools]
    default_pool = w.get("volumes", vt, "default_pool", "str", pool_names[0])
    if default_pool not in pool_names:
        raise w.error("volumes", "default_pool", f"unknown pool {default_pool!r}; defined: {', '.join(pool_names)}")
    maps = []
    for i, mt in enumerate(vt.get("map", [])):
        sec = f"volumes.map[{i}]"
        mt = w.table(sec, mt)
        w.check_keys(sec, mt, {"pattern", "pool"})
        if "pattern" not in mt or "pool" not in mt:
            raise w.error(sec, None, "needs 'pattern' and 'pool'")
        pat = w.get(sec, mt, "pattern", "str")
        pl = w.get(sec, mt, "pool", "str")
        if pl not in pool_names:
            raise w.error(sec, "pool", f"unknown pool {pl!r}; defined: {', '.join(pool_names)}")
        maps.append(VolumeMap(pat, pl))

    rt = w.table("replay", data.get("replay", {}))
    auto = rt.get("interval") == "auto"
    opts = w.read("replay", REPLAY, {k: v for k, v in rt.items() if not (auto and k == "interval")})
    replay_opts = ReplayOptions(mode=opts["mode"], outstanding=opts["outstanding"], interval_ns=opts["interval"],
                                warmup_pct=opts["warmup_pct"], load_factor=opts["load_factor"])
    if 0 < replay_opts.interval_ns < MIN_INTERVAL_NS:
        raise w.error("replay", "interval", "must be at least 1 ms")

    extra = {}
    for k in NOT_YET_MODELLED:
        if k in data:
            extra[k] = w.table(k, data[k])
    sc = Scenario(name, description, controller, dram, classes, rgs, tuple(pools), tuple(maps), default_pool,
                  replay_opts, extra, {}, source)
    for key, schema in SECTIONS.items():  # in registry order: a section's parser sees the ones before it
        if key in data:
            sc.sections[key] = schema.parse(w, w.table(key, data[key]), sc)
    if reads is not None:
        reads.extend(w.reads)
    return sc


def loads(text: str, source: str = "<string>", overrides: Iterable[str] = (),
          reads: list[TableRead] | None = None) -> Scenario:
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
    return parse(data, source, text, reads)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load(ref: str | Path, overrides: Iterable[str] = (), reads: list[TableRead] | None = None) -> Scenario:
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
    return loads(text, str(p), overrides, reads)
