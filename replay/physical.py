"""The physical range of every parameter a preset fits to a seed figure (issue 27: "every fitted
parameter within its datasheet's physical range").

A fit can reproduce its figure with a value no hardware has; the range says what the hardware
allows, from a source that is not the figure the value was fitted to. Each range states where its
bounds come from: ``datasheet``, ``doc`` (a vendor document or an interface standard), ``seed``
(another published figure than the one fitted), ``definition`` (the parameter is a share, so its
range is 0-1 or 0-100 % and says nothing about the hardware) or ``estimate``. ``tiercast scenarios
NAME --json`` gives each fitted value's range (``physical``); ``tests/test_provenance.py`` holds every
fitted value of every preset inside its range, and the seed figures page lists them
(``pipelines.docgen``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fnmatch import fnmatch

#: where a range's bounds come from
RANGE_SOURCES = ("datasheet", "doc", "seed", "definition", "estimate")

#: SAS-2 (6 Gb/s) and SAS-3 (12 Gb/s) links carry 600 and 1,200 MB/s of data (8b/10b coding)
SAS2_MB_PER_S = 600.0
SAS3_MB_PER_S = 1200.0
#: seed 001: the Violin's four 8 Gb FC links to the load server, ~800 MB/s each
VIOLIN_HOST_MB_PER_S = 3200.0


@dataclass(frozen=True)
class PhysicalRange:
    """``low`` <= value <= ``high`` (in the parameter's unit), with the source of the bounds."""

    low: float
    high: float
    source: str
    reference: str

    def __post_init__(self) -> None:
        if self.source not in RANGE_SOURCES:
            raise ValueError(f"physical range: source {self.source!r} is not one of {', '.join(RANGE_SOURCES)}")
        if not self.low <= self.high:
            raise ValueError(f"physical range: low {self.low} above high {self.high}")

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


def _iops_at_4k(mb_per_s: float) -> float:
    return mb_per_s * 1e6 / 4096


def _mib(mb_per_s: float) -> float:
    return mb_per_s * 1e6 / (1 << 20)


#: a SAS SSD's 4 KiB IOPS, either direction
_SAS_SSD_IOPS = PhysicalRange(
    3500.0, _iops_at_4k(SAS3_MB_PER_S), "doc",
    "low: seed 000's EMC planning figure for an eMLC SSD (a sizing floor); high: 4 KiB transfers on one "
    "SAS-3 link (12 Gb/s, 1,200 MB/s after 8b/10b)")

#: (preset pattern, table pattern, parameter) -> its physical range, the first match counting; tables
#: as ``tiercast scenarios --json`` names them (``drive_classes.ssd_sas100``, ``pools[0]``), patterns
#: matched with fnmatch
RANGES: dict[tuple[str, str, str], PhysicalRange] = {
    ("*", "controller", "overhead_us"): PhysicalRange(
        2.0, 1e6 / 2261, "seed",
        "low: seed 002, 'the raised ceiling of 1 Million IOPS for the VNX platform' on two SPs, so at "
        "least 2 us per I/O on one SP of the largest VNX; high: seed 000's VNX5400 served up to 2,261 IOPS "
        "through one SP, so at most 442 us"),
    ("*", "dram.mcx", "dirty_target_pct"): PhysicalRange(
        0.0, 100.0, "definition", "a share of the cache; EMC publishes no MCx target"),
    ("*", "drive_classes.*", "reorder_efficiency"): PhysicalRange(
        0.0, 1.0, "definition", "the share of the ideal SPTF gain a drive realises: 0 first come first "
        "served, 1 ideal shortest-positioning-time-first"),
    ("*", "pools[[]*[]]", "span_fraction"): PhysicalRange(
        0.0, 1.0, "definition", "the share of each drive's stroke the pool's data spans"),
    ("vnx*", "ssd_cache", "fill_mib_per_s"): PhysicalRange(
        0.0, _mib(SAS2_MB_PER_S), "doc",
        "FAST Cache writes every copy to both SSDs of its RAID 1 pair (seed 000: two 100 GB SSDs), so at most "
        "one SAS-2 link's 600 MB/s (6 Gb/s, 8b/10b)"),
    ("xs5224d*", "ssd_cache", "fill_mib_per_s"): PhysicalRange(
        0.0, _mib(8 * SAS3_MB_PER_S), "doc",
        "QCache spreads its copies over its 8 SSDs (seed 003), so at most 8 SAS-3 links' 1,200 MB/s "
        "(12 Gb/s, 8b/10b)"),
    ("*", "drive_classes.*", "read_iops"): _SAS_SSD_IOPS,
    ("*", "drive_classes.*", "write_iops"): _SAS_SSD_IOPS,
    ("*", "flash", "read_iops"): PhysicalRange(
        0.0, 500_000.0, "seed", "seed 001: Violin declares at most 500,000 read IOPS for the 6232"),
    ("*", "flash", "write_iops"): PhysicalRange(
        0.0, _iops_at_4k(VIOLIN_HOST_MB_PER_S), "seed",
        "4 KiB writes over seed 001's four 8 Gb FC host links (3,200 MB/s)"),
    ("*", "flash", "media_mib_per_s"): PhysicalRange(
        0.0, _mib(VIOLIN_HOST_MB_PER_S), "seed", "seed 001's four 8 Gb FC host links (3,200 MB/s)"),
    ("*", "flash", "gc_mib_per_s"): PhysicalRange(
        0.0, _mib(VIOLIN_HOST_MB_PER_S), "estimate",
        "garbage collection moves data inside the modules; taken no faster than the host links feed them "
        "(seed 001: 3,200 MB/s)"),
    ("*", "flash", "read_latency_us"): PhysicalRange(
        50.0, 1000.0, "estimate",
        "low: an MLC NAND page read (tR ~50 us) plus nothing else; high: a millisecond, the HDD-class "
        "latency all-flash arrays are bought to avoid"),
    ("*", "flash", "write_latency_us"): PhysicalRange(
        10.0, 1000.0, "estimate",
        "acknowledged from the modules' buffers, not after the NAND program: low: a Fibre Channel round "
        "trip and a buffer copy (~10 us); high: a millisecond"),
}


def physical_range(preset: str, table: str, name: str) -> PhysicalRange | None:
    """The range of parameter ``name`` of table ``table`` in scenario ``preset``, None when none is
    declared."""
    for (scenarios, tables, param), r in RANGES.items():
        if param == name and fnmatch(preset, scenarios) and fnmatch(table, tables):
            return r
    return None


def as_json(r: PhysicalRange | None) -> dict | None:
    return None if r is None else asdict(r)


def outside(rows: list[dict]) -> list[str]:
    """The fitted rows of ``replay.provenance.parameters`` without a physical range or outside it."""
    bad = []
    for row in rows:
        if row["source"] != "seed-fit":
            continue
        r = None if row["physical"] is None else PhysicalRange(**row["physical"])
        if r is None:
            bad.append(f"{row['table']}.{row['name']} = {row['value']}: no physical range declared")
        elif not r.holds(float(row["value"])):
            bad.append(f"{row['table']}.{row['name']} = {row['value']}: outside {r.low:g}-{r.high:g} ({r.reference})")
    return bad
