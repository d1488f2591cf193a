"""What a mechanism adds to a replay's results, declared as data (``replay/mech/<name>/outputs.py``).

:class:`Column`: a per-request outcome the array kernel writes (an int64 array per column, one
value per request of a segment, in ``replay.array.Outcome``'s field of that name). Units are in the
names (``_ns``, ``_bytes``, ``_pages``) and in ``unit``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One per-request outcome column (int64)."""

    name: str
    unit: str
    doc: str


def record_counters(rec, table: dict[str, str]) -> dict[str, int]:
    """``table``'s counters (summary name -> field) read from one state record."""
    return {name: int(rec[f]) for name, f in table.items()}
