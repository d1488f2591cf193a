"""A scenario's TOML text as the parsers read it: values checked against their declared
parameters (``replay.schema``) and errors that name the file, the line and the key.

It sits below ``replay.scenario`` and the mechanisms' schemas (``replay/mech/<name>/schema.py``),
so a mechanism's section parser gets it as an argument and imports nothing above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from replay.schema import Param, Section

_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")


def _split(section: str) -> tuple[str, int | None]:
    """``"raid_groups[1]"`` -> (``"raid_groups"``, 1): the second ``[[raid_groups]]`` entry."""
    m = _INDEXED.match(section)
    return (m.group(1), int(m.group(2))) if m else (section, None)


@dataclass(frozen=True)
class TableRead:
    """One declared table as it was read: where (``sec``: ``dram.mcx``, ``raid_groups[1]``), its
    section, the keys the file set, and the file's name of a parameter where it differs
    (``aliases``: QCache's ``block_bytes`` is the ``chunk_bytes`` parameter)."""

    sec: str
    section: Section
    keys: frozenset[str]
    values: dict[str, Any]  # as read (before what the scenario derives from them)
    aliases: dict[str, str] = field(default_factory=dict)


class ScenarioFile:
    """The source and text of a scenario. A section is a table name (``dram.flare``) or an entry of
    an array of tables (``raid_groups[1]``, 0-based); the line of a key is found in the text, so
    errors can point at it (no line without the text, e.g. after ``--set`` overrides)."""

    def __init__(self, source: str, text: str | None):
        self.source = source
        self.lines = text.splitlines() if text else []
        #: every declared table read so far (``replay.provenance`` walks them)
        self.reads: list[TableRead] = []

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

    def table(self, section: str, v: Any) -> dict:
        """``v``, which must be a TOML table."""
        if not isinstance(v, dict):
            raise self.error(section, None, f"expected a table, got {type(v).__name__}")
        return v

    def check_keys(self, section: str, table: dict, allowed: set[str]) -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.error(section, unknown[0], f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}")

    def get(self, section: str, table: dict, key: str, kind: str, default: Any = None, *,
            minimum: float | None = None, maximum: float | None = None, strict_min: bool = False,
            choices: tuple | None = None) -> Any:
        """Read and check one value that is not a declared parameter (names, lists' members)."""
        if key not in table:
            return default
        p = Param(key, kind, default, minimum=minimum, maximum=maximum, strict_min=strict_min, choices=choices or ())
        try:
            v = p.convert(table[key])
        except ValueError as e:
            raise self.error(section, key, str(e)) from None
        bad = p.check(v)
        if bad:
            raise self.error(section, key, bad)
        return v

    def read(self, sec: str, section: Section, table: dict, **kw) -> dict[str, Any]:
        """The values of ``section``'s parameters in ``table`` (errors at ``sec``, e.g. ``raid_groups[1]``)."""
        values = section.read(table, lambda key, msg: self.error(sec, key, msg), **kw)
        self.reads.append(TableRead(sec, section, frozenset(table), values))
        return values
