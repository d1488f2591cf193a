"""Compiled page-cache kernels, one module per policy, all behind ``replay.model.Model``.

``POLICIES`` maps a policy name (``lru``, ``fifo``, ``clock``, ``arc``, ``s3fifo``) to its
model class; ``cache_model(policy, cache_bytes, page_size_bytes, **params)`` builds one.
"""

from __future__ import annotations

from replay.kernels.arc import ARC
from replay.kernels.base import CacheModel, CacheState
from replay.kernels.clock import CLOCK
from replay.kernels.fifo import FIFO
from replay.kernels.lru import LRU
from replay.kernels.s3fifo import S3FIFO

POLICIES: dict[str, type[CacheModel]] = {m.name: m for m in (LRU, FIFO, CLOCK, ARC, S3FIFO)}


def cache_model(policy: str, cache_bytes: int, page_size_bytes: int = 4096, **params) -> CacheModel:
    """The cache model ``policy`` (case-insensitive; ``s3-fifo`` is accepted for ``s3fifo``)."""
    key = policy.lower().replace("-", "").replace("_", "")
    if key not in POLICIES:
        raise ValueError(f"unknown cache policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return POLICIES[key](cache_bytes=cache_bytes, page_size_bytes=page_size_bytes, **params)


__all__ = ["ARC", "CLOCK", "FIFO", "LRU", "POLICIES", "S3FIFO", "CacheModel", "CacheState", "cache_model"]
