"""Parsing and printing of sizes and durations as storage engineers write them."""

from __future__ import annotations

import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
    "p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}
_TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "": 1_000_000_000,
               "m": 60_000_000_000, "min": 60_000_000_000, "h": 3_600_000_000_000,
               "d": 86_400_000_000_000}


def parse_size(text: str | int) -> int:
    """'8GiB' -> 8589934592. Binary multiples: storage capacities in this tool are powers of two
    (KB, MB, GB are read as KiB, MiB, GiB, as array vendors' cache and page sizes are)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 4096, 4KiB, 8MiB, 1.5GiB, 2TiB)")
    value = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if value != int(value):
        raise ValueError(f"size {text!r} is not a whole number of bytes")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    return [parse_size(t) for t in text.split(",") if t.strip()]


def parse_duration_ns(text: str | int) -> int:
    """'60s' -> 60e9, '500ms', '15min', '2h', '4d'; a bare number is seconds."""
    if isinstance(text, int):
        return text * 1_000_000_000
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Zµ]*)\s*", str(text))
    if not m or m.group(2).lower() not in _TIME_UNITS:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 60s, 15min, 1h, 4d)")
    return int(round(float(m.group(1)) * _TIME_UNITS[m.group(2).lower()]))


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
