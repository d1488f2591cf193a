"""``[cloud]`` as data: a cloud block-storage volume (``replay.mech.cloud.kernel``): its type, size,
provisioned IOPS and throughput, service-time figures, an optional instance-level limit in front,
and the region whose list prices give its monthly cost (``replay/prices/<provider>.toml``)."""

from __future__ import annotations

from replay.mech.cloud.types import PROVIDERS, TYPES, resolve
from replay.schema import Param, Section

_POS = {"minimum": 0, "strict_min": True}
_NONNEG = {"minimum": 0}
_OPT = {"optional": True}

CLOUD = Section("cloud", (
    Param("enabled", "bool", True, "", "false: the section is kept but the array has its DRAM cache and drives",
          "choice"),
    Param("provider", "str", "aws", "", "the cloud (its price table: replay/prices/<provider>.toml)", "choice",
          choices=PROVIDERS),
    Param("volume_type", "str", "gp3", "", "the volume type (replay.mech.cloud.types.TYPES: its published limits)",
          "choice", choices=tuple(TYPES)),
    Param("size_bytes", "size", 1000 << 30, "B", "the volume's size (gp2, pd-balanced, st1 and Azure Premium SSD: "
          "its size sets its IOPS and throughput)", "choice", minimum=1),
    Param("iops", "float", None, "IOPS", "provisioned IOPS (gp3, io2, Premium SSD v2, Hyperdisk Balanced; None: "
          "the type's included / default IOPS)", "choice", **_OPT, **_POS),
    Param("mib_per_s", "float", None, "MiB/s", "provisioned throughput (gp3, Premium SSD v2, Hyperdisk Balanced; "
          "None: the type's included throughput)", "choice", **_OPT, **_POS),
    Param("initial_credit_pct", "float", 100.0, "%", "credit buckets' balance at the start (AWS: a new gp2 volume "
          "starts with its full 5.4 M credits)", "doc", "AWS EBS User Guide, gp2 volumes", minimum=0, maximum=100),
    Param("read_latency_ms", "float", 0.6, "ms", "median service time of a read once it has its tokens",
          "estimate", "AWS: gp3 'single-digit millisecond latency'", **_POS),
    Param("read_latency_p99_ms", "float", 2.5, "ms", "99th percentile of the read service time (a lognormal "
          "through median and p99)", "estimate", "AWS: gp3 'single-digit millisecond latency'", **_POS),
    Param("write_latency_ms", "float", 0.8, "ms", "median service time of a write", "estimate",
          "AWS: gp3 'single-digit millisecond latency'", **_POS),
    Param("write_latency_p99_ms", "float", 3.5, "ms", "99th percentile of the write service time", "estimate",
          "AWS: gp3 'single-digit millisecond latency'", **_POS),
    Param("rate_window_ms", "float", 1.0, "ms", "the tolerance of every bucket's peak rate: up to this much "
          "time's tokens may pass back to back (the generic cell rate algorithm; 0: strict pacing)", "estimate",
          "providers publish per-second rates, not how they police within a second", **_NONNEG),
    Param("seed", "int", 0, "", "seed of the service-time draws (a hash of it and the request number)", "choice",
          minimum=0),
    Param("instance_iops", "float", 0.0, "IOPS", "the instance's EBS / disk IOPS limit in front of the volume "
          "(baseline; 0: none)", "choice", **_NONNEG),
    Param("instance_burst_iops", "float", 0.0, "IOPS", "the instance's burst IOPS (0: no burst)", "choice",
          **_NONNEG),
    Param("instance_mib_per_s", "float", 0.0, "MiB/s", "the instance's EBS / disk throughput limit (baseline; 0: "
          "none)", "choice", **_NONNEG),
    Param("instance_burst_mib_per_s", "float", 0.0, "MiB/s", "the instance's burst throughput (0: no burst)",
          "choice", **_NONNEG),
    Param("instance_burst_s", "float", 1800.0, "s", "how long a full instance bucket sustains the burst (AWS: "
          "smaller instance types burst for 30 minutes at least once every 24 hours)", "doc",
          "AWS EC2 User Guide, Amazon EBS-optimized instances", **_NONNEG),
    Param("region", "str", "us-east-1", "", "the price table's region (replay/prices/<provider>.toml)", "choice"),
    Param("price_per_gib_month", "float", None, "USD/GiB-month", "overrides the price table's capacity price",
          "choice", **_OPT, **_NONNEG),
    Param("price_per_iops_month", "float", None, "USD/IOPS-month", "overrides the price table's price per "
          "provisioned IOPS above the included ones", "choice", **_OPT, **_NONNEG),
    Param("price_per_mib_per_s_month", "float", None, "USD/(MiB/s)-month", "overrides the price table's price "
          "per provisioned MiB/s above the included ones", "choice", **_OPT, **_NONNEG),
    Param("price_per_disk_month", "float", None, "USD/month", "overrides the price table's price of the disk "
          "(Azure Premium SSD tiers are priced per disk)", "choice", **_OPT, **_NONNEG),
), doc="A cloud block-storage volume: token buckets for IOPS and throughput (with burst credits where the type "
       "has them), I/O accounting in the provider's units, a service-time distribution, and its list price.")


class Cloud(CLOUD.base("Cloud")):
    """A cloud volume (``replay.mech.cloud.schema.CLOUD``; ``replay.mech.cloud.kernel``)."""

    @property
    def type(self):
        return TYPES[self.volume_type]

    @property
    def limits(self):
        """The volume's resolved rates (``replay.mech.cloud.types.resolve``)."""
        return resolve(self.type, self.size_bytes, self.iops, self.mib_per_s)


def parse(w, t: dict, sc) -> Cloud:
    """``[cloud]``: the type must be the provider's, size and provisioned values within the type's
    published limits (the error names the limit), latency tails above medians, a known region;
    a cloud volume runs no SSD cache, FAST VP, snapshots or all-flash array."""
    sec = "cloud"
    c = Cloud(**w.read(sec, CLOUD, t))
    if c.type.provider != c.provider:
        raise w.error(sec, "volume_type", f"{c.volume_type!r} is a {c.type.provider} volume type, not {c.provider}'s "
                      f"(its types: {', '.join(n for n, v in TYPES.items() if v.provider == c.provider)})")
    try:
        resolve(c.type, c.size_bytes, c.iops, c.mib_per_s)
    except ValueError as e:
        key = str(e).split(":", 1)[0]
        raise w.error(sec, key if key in CLOUD.names else None, str(e)) from None
    for what in ("read", "write"):
        med, p99 = getattr(c, f"{what}_latency_ms"), getattr(c, f"{what}_latency_p99_ms")
        if p99 < med:
            raise w.error(sec, f"{what}_latency_p99_ms", f"{p99} ms is below the median {what}_latency_ms {med} ms")
    if c.instance_burst_iops and c.instance_burst_iops < c.instance_iops:
        raise w.error(sec, "instance_burst_iops", f"{c.instance_burst_iops:g} is below instance_iops "
                      f"{c.instance_iops:g}")
    if c.instance_burst_mib_per_s and c.instance_burst_mib_per_s < c.instance_mib_per_s:
        raise w.error(sec, "instance_burst_mib_per_s", f"{c.instance_burst_mib_per_s:g} is below instance_mib_per_s "
                      f"{c.instance_mib_per_s:g}")
    if c.enabled:
        from replay.prices import price_table  # the region must be in the provider's table

        try:
            price_table(c.provider, c.region)
        except LookupError as e:
            raise w.error(sec, "region", str(e)) from None
        for name, what in (("ssd_cache", "SSD cache"), ("tiering", "FAST VP tiers"), ("snapshots", "snapshots"),
                           ("flash", "all-flash array")):
            other = sc.sections.get(name)
            if other is not None and other.enabled:
                raise w.error(sec, "enabled", f"a cloud volume runs no {what}: switch [{name}] off")
    return c


def feature(s: Cloud) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"cloud:{s.provider}:{s.volume_type}"
