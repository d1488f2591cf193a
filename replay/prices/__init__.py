"""List prices as data (``replay/prices/<provider>.toml``) and a cloud volume's monthly cost.

A provider's file has ``currency`` and one table per region (``source``: page and date) holding
one table per volume type: ``per_gib_month``, ``per_iops_month`` above ``iops_included``,
``iops_tiers`` (``[[up to IOPS, price], ...]``: each tier prices the IOPS within it),
``per_mib_per_s_month`` above ``mib_per_s_included``, ``per_disk_month`` (a price per size tier, by
tier name). A scenario's ``[cloud] price_*`` values override the table's (``--set``).
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from replay.mech.cloud.types import GIB

PRICE_DIR = Path(__file__).resolve().parent


@cache
def _file(provider: str) -> dict:
    path = PRICE_DIR / f"{provider}.toml"
    if not path.is_file():
        raise LookupError(f"no price table for provider {provider!r} ({path})")
    return tomllib.loads(path.read_text())


def regions(provider: str) -> list[str]:
    return sorted(_file(provider)["regions"])


def price_table(provider: str, region: str) -> dict:
    """The region's table (LookupError naming the regions the provider's table has)."""
    regs = _file(provider)["regions"]
    if region not in regs:
        raise LookupError(f"no {provider} prices for region {region!r}; the table (replay/prices/{provider}.toml) "
                          f"has: {', '.join(sorted(regs))}")
    return regs[region]


def currency(provider: str) -> str:
    return _file(provider)["currency"]


def _tiered(n: float, tiers: list) -> float:
    """The price of ``n`` units priced tier by tier (``[[up to, price], ...]``)."""
    total, below = 0.0, 0.0
    for upto, price in tiers:
        if n <= below:
            break
        total += (min(n, upto) - below) * price
        below = upto
    return total


def monthly_cost(cloud) -> dict:
    """``cost_per_month`` (rounded to the cent), ``currency``, the parts (``cost_capacity``,
    ``cost_iops``, ``cost_throughput``) and the price table's ``price_source`` of a
    ``replay.mech.cloud.schema.Cloud``."""
    reg = price_table(cloud.provider, cloud.region)
    t = reg.get(cloud.volume_type)
    if t is None:
        raise LookupError(f"replay/prices/{cloud.provider}.toml has no {cloud.volume_type} prices for region "
                          f"{cloud.region!r}")
    lim = cloud.limits
    parts = {"cost_capacity": 0.0, "cost_iops": 0.0, "cost_throughput": 0.0}
    if cloud.price_per_disk_month is not None or "per_disk_month" in t:
        per_disk = cloud.price_per_disk_month
        if per_disk is None:
            if lim.tier not in t["per_disk_month"]:
                raise LookupError(f"replay/prices/{cloud.provider}.toml: no price for {cloud.volume_type} tier {lim.tier}")
            per_disk = t["per_disk_month"][lim.tier]
        parts["cost_capacity"] = per_disk
    else:
        per_gib = cloud.price_per_gib_month if cloud.price_per_gib_month is not None else t.get("per_gib_month", 0.0)
        parts["cost_capacity"] = cloud.size_bytes / GIB * per_gib
    if cloud.type.provisioned_iops:
        extra = max(0.0, lim.iops - t.get("iops_included", 0))
        if cloud.price_per_iops_month is not None:
            parts["cost_iops"] = extra * cloud.price_per_iops_month
        elif "iops_tiers" in t:
            parts["cost_iops"] = _tiered(extra, t["iops_tiers"])
        else:
            parts["cost_iops"] = extra * t.get("per_iops_month", 0.0)
    if cloud.type.provisioned_mib:
        extra = max(0.0, lim.mib_per_s - t.get("mib_per_s_included", 0))
        per = cloud.price_per_mib_per_s_month
        parts["cost_throughput"] = extra * (per if per is not None else t.get("per_mib_per_s_month", 0.0))
    parts = {k: round(v, 4) for k, v in parts.items()}
    return {"cost_per_month": round(sum(parts.values()), 2), "currency": currency(cloud.provider), **parts,
            "price_source": reg.get("source", "")}
