"""Cloud block-storage volume types as data: their published limits and how size and provisioned
values give a volume's token buckets (``replay.mech.cloud.kernel``).

One :class:`VolumeType` per type, each with the page it comes from and when it was read. What a
type says (a rate per GiB, a minimum, a maximum, a burst bucket) is here once; a scenario's
``[cloud]`` names the type and gives only what the user chooses (size, provisioned IOPS and
MiB/s, region, latency figures), so ``--set cloud.size_bytes=100GiB`` on ``aws-gp2`` gives the
300 IOPS baseline the type's rule gives.

Sources (retrieved 2026-11 through the project's search corpus, which stores copies of these
pages; the providers revise limits, so every value is a field that a later table can change):

* AWS: *Amazon EBS volume types* (EC2 / EBS User Guide), as quoted by the AWS SDK references
  (``Iops``: gp3 3,000-16,000; io2 100-256,000), AWS Prescriptive Guidance "Amazon EBS SSD storage
  types" (sizes, 16,000 / 256,000 IOPS, 250 / 1,000 / 4,000 MiB/s) and the user guide's gp2 text
  (3 IOPS per GiB, 1 GiB-16 TiB, 5.4 M initial credits, burst 3,000 IOPS). I/O accounting: SSD
  volumes count I/O up to 256 KiB as one operation and merge sequential small I/Os into 256 KiB
  units; HDD volumes (st1) use 1 MiB units, and a small random I/O costs a whole 1 MiB of
  throughput credit (user guide, "I/O characteristics and monitoring").
* Azure: *Azure managed disk types* / *Disk bursting*, as quoted by pages in the corpus (Premium
  SSD P-tier table; credit bursting for P20 and smaller to 3,500 IOPS and 170 MiB/s for up to 30
  minutes). Premium SSD v2 (3,000 IOPS and 125 MB/s included, 500 IOPS per GiB, 0.25 MB/s per
  IOPS, 80,000 IOPS and 1,200 MB/s at most) as last read: not found in the corpus, re-check.
* GCP: *About Persistent Disk performance* (pd-balanced: 6 IOPS and 0.28 MiB/s per GiB on top of
  a 3,000 IOPS / 140 MiB/s baseline) and *About Hyperdisk Balanced* (3,000 IOPS and 140 MiB/s
  included, up to 160,000 IOPS and 2,400 MiB/s per volume).

Values marked ``est`` in the reference are our reading where the page gives no number (the
per-IOPS throughput ratio of Hyperdisk Balanced, the I/O unit of GCP disks).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30
TIB = 1 << 40
KIB = 1 << 10
MIB = 1 << 20


@dataclass(frozen=True)
class AzureTier:
    """A Premium SSD (v1) size tier: the disk is billed and performs as the smallest tier that holds it."""

    name: str
    size_gib: int
    iops: int
    mib_per_s: int


#: Azure Premium SSD tiers (Azure managed disk types, Premium SSD sizes table)
AZURE_PREMIUM_TIERS = (
    AzureTier("P1", 4, 120, 25), AzureTier("P2", 8, 120, 25), AzureTier("P3", 16, 120, 25),
    AzureTier("P4", 32, 120, 25), AzureTier("P6", 64, 240, 50), AzureTier("P10", 128, 500, 100),
    AzureTier("P15", 256, 1100, 125), AzureTier("P20", 512, 2300, 150), AzureTier("P30", 1024, 5000, 200),
    AzureTier("P40", 2048, 7500, 250), AzureTier("P50", 4096, 7500, 250), AzureTier("P60", 8192, 16000, 500),
    AzureTier("P70", 16384, 18000, 750), AzureTier("P80", 32767, 20000, 900),
)


@dataclass(frozen=True)
class VolumeType:
    """What a provider publishes for one volume type. Rates: IOPS = ``iops_base + iops_per_gib x
    size`` clamped to ``iops_min..iops_max`` unless provisioned (``provisioned_iops``: the user
    gives it within ``iops_min..min(iops_max, iops_max_per_gib x size)``); the same for MiB/s.
    ``burst_iops`` / ``credit_ios``: an I/O credit bucket (gp2, Azure P20 and below) that refills
    at the baseline and lets the volume run at ``burst_iops`` while it holds credits;
    ``burst_mib_per_s_per_gib`` / ``credit_bytes_per_gib``: a throughput credit bucket (st1)."""

    name: str
    provider: str
    media: str  # ssd | hdd
    size_min_gib: float
    size_max_gib: float
    source: str
    # IOPS
    iops_base: float = 0.0
    iops_per_gib: float = 0.0
    iops_min: float = 0.0
    iops_max: float = 0.0
    provisioned_iops: bool = False
    iops_default: float = 0.0  # provisioned types: what the volume gets when none is given
    iops_max_per_gib: float = 0.0  # provisioned: at most this many per GiB (0: no such rule)
    # throughput
    mib_base: float = 0.0
    mib_per_gib: float = 0.0
    mib_min: float = 0.0
    mib_max: float = 0.0
    provisioned_mib: bool = False
    mib_default: float = 0.0
    mib_max_per_iops: float = 0.0  # provisioned: at most this many MiB/s per provisioned IOPS
    mib_small_volume: float = 0.0  # gp2: volumes up to ``small_volume_gib`` reach only this
    small_volume_gib: float = 0.0
    # I/O credit bucket
    burst_iops: float = 0.0
    credit_ios: float = 0.0  # bucket size in I/O credits (0: none)
    credit_burst_s: float = 0.0  # Azure: the bucket holds this many seconds at full burst
    burst_max_size_gib: float = 0.0  # bursting only for volumes up to this size (0: any)
    # throughput credit bucket
    burst_mib_per_gib: float = 0.0
    burst_mib_max: float = 0.0
    burst_mib: float = 0.0  # a fixed burst throughput (Azure credit bursting)
    credit_bytes_per_gib: float = 0.0
    # accounting
    io_unit_bytes: int = 256 * KIB
    merge_sequential: bool = False
    random_costs_unit: bool = False  # HDD: a random I/O costs a whole unit of throughput
    azure_tiers: bool = False  # Premium SSD v1: performance of the tier holding the size


AWS_SRC = "AWS EBS User Guide, Amazon EBS volume types and I/O characteristics, retrieved 2026-11"
AZURE_SRC = "Azure docs, Azure managed disk types and Managed disk bursting, as quoted in the search corpus 2026-11"
GCP_PD_SRC = "Google Cloud docs, About Persistent Disk performance, retrieved 2026-11"
GCP_HD_SRC = "Google Cloud docs, About Hyperdisk Balanced, retrieved 2026-11"

TYPES: dict[str, VolumeType] = {t.name: t for t in (
    VolumeType("gp2", "aws", "ssd", 1, 16 * 1024, AWS_SRC, iops_per_gib=3.0, iops_min=100, iops_max=16_000,
               mib_max=250, mib_small_volume=128, small_volume_gib=170, burst_iops=3000, credit_ios=5.4e6,
               io_unit_bytes=256 * KIB, merge_sequential=True),
    VolumeType("gp3", "aws", "ssd", 1, 16 * 1024, AWS_SRC, iops_min=3000, iops_max=16_000, provisioned_iops=True,
               iops_default=3000, iops_max_per_gib=500, mib_min=125, mib_max=1000, provisioned_mib=True,
               mib_default=125, mib_max_per_iops=0.25, io_unit_bytes=256 * KIB, merge_sequential=True),
    VolumeType("io2", "aws", "ssd", 4, 64 * 1024, AWS_SRC, iops_min=100, iops_max=256_000, provisioned_iops=True,
               iops_default=3000, iops_max_per_gib=1000, mib_max=4000, mib_min=4000,
               io_unit_bytes=256 * KIB, merge_sequential=True),
    VolumeType("st1", "aws", "hdd", 125, 16 * 1024, AWS_SRC, iops_max=500, iops_min=500, mib_per_gib=40 / 1024,
               mib_max=500, burst_mib_per_gib=250 / 1024, burst_mib_max=500, credit_bytes_per_gib=float(GIB),
               io_unit_bytes=MIB, merge_sequential=True, random_costs_unit=True),
    VolumeType("premium-ssd", "azure", "ssd", 4, 32767, AZURE_SRC, burst_iops=3500, burst_mib=170,
               credit_burst_s=1800, burst_max_size_gib=512, io_unit_bytes=256 * KIB, azure_tiers=True),
    VolumeType("premium-ssd-v2", "azure", "ssd", 1, 64 * 1024, AZURE_SRC, iops_min=3000, iops_max=80_000,
               provisioned_iops=True, iops_default=3000, iops_max_per_gib=500, mib_min=125, mib_max=1200,
               provisioned_mib=True, mib_default=125, mib_max_per_iops=0.25, io_unit_bytes=256 * KIB),
    VolumeType("pd-balanced", "gcp", "ssd", 10, 64 * 1024, GCP_PD_SRC, iops_base=3000, iops_per_gib=6.0,
               iops_min=3000, iops_max=80_000, mib_base=140, mib_per_gib=0.28, mib_min=140, mib_max=1200,
               io_unit_bytes=256 * KIB),
    VolumeType("hyperdisk-balanced", "gcp", "ssd", 4, 64 * 1024, GCP_HD_SRC, iops_min=3000, iops_max=160_000,
               provisioned_iops=True, iops_default=3000, iops_max_per_gib=500, mib_min=140, mib_max=2400,
               provisioned_mib=True, mib_default=140, mib_max_per_iops=0.25, io_unit_bytes=256 * KIB),
)}
PROVIDERS = ("aws", "azure", "gcp")


def azure_tier(size_gib: float) -> AzureTier:
    """The smallest Premium SSD tier holding ``size_gib`` (ValueError beyond the largest)."""
    for t in AZURE_PREMIUM_TIERS:
        if size_gib <= t.size_gib:
            return t
    raise ValueError(f"no Premium SSD tier holds {size_gib:g} GiB (largest P80: 32,767 GiB)")


@dataclass(frozen=True)
class Limits:
    """A volume's resolved rates (what the kernel's buckets are built from)."""

    iops: float  # baseline IOPS (the credit bucket's refill; the cap without credits)
    mib_per_s: float  # baseline throughput
    burst_iops: float  # 0: no I/O credit bucket
    credit_ios: float
    burst_mib_per_s: float  # 0: no throughput credit bucket
    credit_bytes: float
    tier: str = ""  # Azure Premium SSD tier


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v == int(v) else f"{v:,.2f}"


def resolve(t: VolumeType, size_bytes: int, iops: float | None, mib_per_s: float | None) -> Limits:
    """The rates of a volume of type ``t``; ValueError naming the published limit a value breaks
    (``key``: the message starts with the offending knob's name)."""
    gib = size_bytes / GIB
    if not t.size_min_gib <= gib <= t.size_max_gib:
        raise ValueError(f"size_bytes: {gib:,.2f} GiB is outside {t.name}'s published size limits "
                         f"{_fmt(t.size_min_gib)} GiB to {_fmt(t.size_max_gib)} GiB ({t.source})")
    if iops is not None and not t.provisioned_iops:
        raise ValueError(f"iops: {t.name} has no provisioned IOPS (its IOPS follow from its size); leave it out")
    if mib_per_s is not None and not t.provisioned_mib:
        raise ValueError(f"mib_per_s: {t.name} has no provisioned throughput; leave it out")
    if t.azure_tiers:
        tier = azure_tier(gib)
        burst = t.burst_iops if gib <= t.burst_max_size_gib else 0.0
        burst_mib = t.burst_mib if gib <= t.burst_max_size_gib else 0.0
        return Limits(tier.iops, tier.mib_per_s, burst, (burst - tier.iops) * t.credit_burst_s if burst else 0.0,
                      burst_mib, (burst_mib - tier.mib_per_s) * MIB * t.credit_burst_s if burst_mib else 0.0,
                      tier.name)
    if t.provisioned_iops:
        v = t.iops_default if iops is None else iops
        hi = min(t.iops_max, t.iops_max_per_gib * gib) if t.iops_max_per_gib else t.iops_max
        if v < t.iops_min:
            raise ValueError(f"iops: {_fmt(v)} is below {t.name}'s published minimum {_fmt(t.iops_min)} IOPS "
                             f"({t.source})")
        if v > t.iops_max:
            raise ValueError(f"iops: {_fmt(v)} is above {t.name}'s published maximum {_fmt(t.iops_max)} IOPS "
                             f"({t.source})")
        if v > hi:
            raise ValueError(f"iops: {_fmt(v)} is above {t.name}'s published limit of {_fmt(t.iops_max_per_gib)} "
                             f"IOPS per GiB: {_fmt(hi)} IOPS at {gib:,.2f} GiB ({t.source})")
        base_iops = v
    else:
        base_iops = min(t.iops_max, max(t.iops_min, t.iops_base + t.iops_per_gib * gib))
    if t.provisioned_mib:
        m = t.mib_default if mib_per_s is None else mib_per_s
        if m < t.mib_min:
            raise ValueError(f"mib_per_s: {_fmt(m)} is below {t.name}'s published minimum {_fmt(t.mib_min)} MiB/s "
                             f"({t.source})")
        if m > t.mib_max:
            raise ValueError(f"mib_per_s: {_fmt(m)} is above {t.name}'s published maximum {_fmt(t.mib_max)} MiB/s "
                             f"({t.source})")
        if t.mib_max_per_iops and m > t.mib_max_per_iops * base_iops and m > t.mib_default:
            raise ValueError(f"mib_per_s: {_fmt(m)} is above {t.name}'s published limit of {t.mib_max_per_iops:g} "
                             f"MiB/s per provisioned IOPS: {_fmt(t.mib_max_per_iops * base_iops)} MiB/s at "
                             f"{_fmt(base_iops)} IOPS ({t.source})")
        base_mib = m
    elif t.mib_per_gib:
        base_mib = min(t.mib_max, max(t.mib_min, t.mib_base + t.mib_per_gib * gib))
    else:
        base_mib = t.mib_small_volume if t.small_volume_gib and gib <= t.small_volume_gib else t.mib_max
    burst = t.burst_iops if t.credit_ios and t.burst_iops > base_iops else 0.0
    burst_mib = min(t.burst_mib_max, t.burst_mib_per_gib * gib) if t.burst_mib_per_gib else 0.0
    if burst_mib <= base_mib:
        burst_mib = 0.0
    return Limits(base_iops, base_mib, burst, t.credit_ios if burst else 0.0, burst_mib,
                  t.credit_bytes_per_gib * gib if burst_mib else 0.0)
