"""What a mechanism adds to a replay's results, declared as data (``replay/mech/<name>/outputs.py``).

:class:`Column`: a per-request outcome the array kernel writes (an int64 array per column, one
value per request of a segment, in ``replay.array.Outcome``'s field of that name). Units are in the
names (``_ns``, ``_bytes``, ``_pages``) and in ``unit``.

:class:`Line`: a line ``tiercast replay`` prints for a mechanism, a template over the summary's
keys; :func:`render` gives a run's lines from its summary.
"""

from __future__ import annotations

import string
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
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


#: Unit conversions a field of a :class:`Line` asks for with a prefix of its format spec, ``UNIT:``
#: (``{snapshot_peak_bytes:GiB:,.1f}``): from the unit the summary key is in (bytes, ns, a fraction)
#: to ``UNIT``.
CONVERT: dict[str, Callable[[float], float]] = {
    "GiB": lambda v: v / 2**30,  # bytes
    "s": lambda v: v / 1e9,  # ns
    "ms": lambda v: v / 1e6,  # ns
    "%": lambda v: v * 100,  # a fraction
}


@dataclass(frozen=True)
class Line:
    """One line ``tiercast replay`` prints for a mechanism: ``label`` and ``template``, each a
    ``str.format`` template over the run summary's keys.

    A field's format spec is ``[UNIT:]SPEC[ TEXT]``: ``UNIT`` converts the value first
    (:data:`CONVERT`), ``SPEC`` is Python's format spec (it cannot use a space as fill or sign),
    and ``TEXT`` after a space is printed after the value (``{ssd_time_to_50pct_fill_s:,.0f s}``).
    A ``None`` value renders as ``none`` (``"never"``, ``"no cliff"``), its ``TEXT`` dropped.

    ``each``: a summary key holding a list of dicts; the line repeats once per item, over the
    item's keys (then the summary's): ``Line("tier {tier}", ..., each="tiers")``.
    ``optional``: the line is skipped when a key it reads is missing from the summary (a field
    the mechanism does not always produce); otherwise a missing key is an error.
    """

    label: str
    template: str
    none: str = "-"
    each: str | None = None
    optional: bool = False

    def keys(self) -> set[str]:
        """The keys the label and template read (of an ``each`` item, or else of the summary)."""
        fields = (f for text in (self.label, self.template) for _, f, _, _ in string.Formatter().parse(text))
        return {f.split(".")[0].split("[")[0] for f in fields if f}


class _Formatter(string.Formatter):
    """``str.format`` with :class:`Line`'s field specs: a unit conversion, a trailing text and the
    ``none`` text for a ``None`` value."""

    def __init__(self, none: str) -> None:
        self.none = none

    def format_field(self, value, format_spec: str) -> str:
        unit, colon, rest = format_spec.partition(":")
        if colon:
            if unit not in CONVERT:
                raise ValueError(
                    f"unknown unit {unit!r} in format spec {format_spec!r} (one of {', '.join(CONVERT)})"
                )
            format_spec = rest
        format_spec, _, text = format_spec.partition(" ")
        if value is None:
            return self.none
        if colon:
            value = CONVERT[unit](value)
        return format(value, format_spec) + (f" {text}" if text else "")


def render(lines: Iterable[Line], summary: Mapping) -> list[tuple[str, str]]:
    """The ``(label, value)`` pairs ``lines`` give for a run's summary, in order."""
    rows = []
    for line in lines:
        fmt = _Formatter(line.none)
        for item in summary[line.each] if line.each else (None,):
            values = summary if item is None else ChainMap(item, summary)
            if line.optional and not all(k in values for k in line.keys()):
                continue
            rows.append((fmt.vformat(line.label, (), values), fmt.vformat(line.template, (), values)))
    return rows
