"""Where every value of a resolved scenario comes from (``tiercast scenarios NAME --json``).

A preset states the source of each value it sets in a tag at the start of the line's comment:
``# (doc) ...`` vendor documentation, ``(seed 002) ...`` a seed article's text, ``(fit: ... [s000_peak96])``
fitted to seed figures (the bracket names their keys in ``pipelines.seed_figures``), ``(datasheet
...)``, ``(measured ...)``, ``(est) ...`` our estimate. A value the file does not set is the
parameter's default, with the source and reference its declaration gives (``replay.schema.Param``);
a value set by ``--set`` says so. A figure is *calibration* when some preset's parameter was fitted
to it; ``pipelines.seed_figures`` derives every figure's kind from :func:`fitted_figures`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from replay.overrides import parse_override
from replay.physical import as_json, physical_range
from replay.scenario import PRESET_DIR, Scenario, load, preset_names
from replay.scenario_file import ScenarioFile, TableRead

_TAG = re.compile(r"#\s*\(([^)]*)\)\s*(.*)$")
#: a tag's first word -> ``replay.schema.SOURCES``
_TAG_SOURCES = {"doc": "doc", "seed": "seed", "fit": "seed-fit", "est": "estimate", "datasheet": "datasheet",
                "measured": "measured"}
_FIGURE = re.compile(r"\bs\d{3}_[a-z0-9_]+")
_INDEXED = re.compile(r"^(\w+)\[(\d+)\]$")


def tag(line: str) -> tuple[str, str] | None:
    """(source, reference) of a preset line's comment tag, None when it has none."""
    m = _TAG.search(line)
    if not m:
        return None
    inside, rest = m.group(1).strip(), m.group(2).strip()
    word = re.split(r"[\s:,/]", inside, maxsplit=1)[0].lower()
    source = _TAG_SOURCES.get(word)
    if source is None:
        return None
    return source, f"({inside}) {rest}".strip()


def _section_object(sc: Scenario, sec: str) -> Any:
    if sec.startswith("drive_classes."):
        return sc.drive_classes[sec.split(".", 1)[1]]
    if m := _INDEXED.match(sec):
        return getattr(sc, m.group(1))[int(m.group(2))]
    if sec.startswith("dram."):
        return getattr(sc.dram, sec.split(".", 1)[1])
    if sec in ("controller", "dram", "replay"):
        return getattr(sc, sec)
    return sc.sections[sec]


def _json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _overridden(overrides: Iterable[str]) -> set[str]:
    """``sec.key`` of every override (``raid_groups[0].width``, ``dram.mcx.min_age_ms``)."""
    out = set()
    for o in overrides:
        path = parse_override(o).path
        if len(path) >= 3 and path[1].isdigit():
            out.add(f"{path[0]}[{path[1]}].{'.'.join(path[2:])}")
        out.add(".".join(path))
    return out


def parameters(ref: str | Path, overrides: Iterable[str] = ()) -> list[dict]:
    """One row per parameter of every table the scenario has: ``table``, ``name``, ``value`` (the
    resolved one), ``unit``, ``source``, ``reference``, ``set_by`` (``file``, ``default`` or
    ``--set``), ``line`` (in the file), ``minimum`` / ``maximum`` (its declared range), ``fitted_to`` (seed figure keys, for ``seed-fit``),
    ``physical`` (``replay.physical``: the range the hardware allows, declared for fitted parameters; else None)."""
    overrides = list(overrides)
    reads: list[TableRead] = []
    sc = load(ref, overrides, reads)
    path = Path(ref) if Path(ref).suffix or Path(ref).exists() else PRESET_DIR / f"{ref}.toml"
    f = ScenarioFile(str(path), path.read_text(encoding="utf-8-sig"))
    changed = _overridden(overrides)
    rows = []
    for r in reads:
        for p in r.section.params:
            key = r.aliases.get(p.name, p.name)
            value = r.values[p.name] if p.name in r.values else getattr(_section_object(sc, r.sec), p.name)
            if f"{r.sec}.{key}" in changed:
                set_by, source, reference, line = "--set", "set", "--set " + f"{r.sec}.{key}", None
            elif key in r.keys:
                line = f.line_of(r.sec, key)
                t = tag(f.lines[line - 1]) if line else None
                set_by = "file"
                source, reference = t if t else ("choice" if p.source == "choice" else "unstated", "")
            else:
                set_by, line = "default", None
                source, reference = ("derived", p.doc) if p.optional and p.default is None else (p.source, p.reference)
            rows.append({"table": r.sec, "name": p.name, "value": _json(value), "unit": p.unit, "source": source,
                         "reference": reference, "set_by": set_by, "line": line, "minimum": p.minimum,
                         "maximum": p.maximum,
                         "fitted_to": _FIGURE.findall(reference) if source == "seed-fit" else [],
                         "physical": as_json(physical_range(path.stem, r.sec, p.name))})
    return rows


@cache
def fitted_figures() -> dict[str, list[str]]:
    """Seed figure key -> the ``preset: table.name`` parameters fitted to it, over every preset."""
    out: dict[str, list[str]] = {}
    for name in preset_names():
        for row in parameters(name):
            for key in row["fitted_to"]:
                out.setdefault(key, []).append(f"{name}: {row['table']}.{row['name']}")
    return out
