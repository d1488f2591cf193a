"""Scenario overrides: ``--set key=value`` on the command line (``tiercast replay``, ``sweep``).

An override changes one value of the parsed TOML document of a preset or file before it is
validated, so an overridden value is checked exactly like one written in the file (unknown key,
wrong type, out of range) and is part of the scenario hash (which covers the normalized model):
``--set dram.cache_bytes=8GiB`` and ``--set dram.cache_bytes=8589934592`` give one hash.

- **Key**: a dotted TOML key (``dram.cache_bytes``, ``drive_classes."sas 10k".rpm``); an entry of
  an array of tables or an element of an array by its 0-based index, ``raid_groups.0.width`` or
  ``raid_groups[0].width``. A missing table is created (``--set ssd_cache.enabled=true`` on a
  preset without ``[ssd_cache]``); a key below a value that is not a table is an error.
- **Value**: a TOML value (``3``, ``0.5``, ``true``, ``"200GB"``, ``[1, 2]``, ``{a = 1}``); text
  that is not one is taken as a string, so ``200GB`` and ``"200GB"`` are the same.

Errors are ``ValueError``\\ s that name the scenario and the override (``vnx5400.toml --set
dram.cache_bytes=-1: [dram] cache_bytes: negative size -1``).
"""

from __future__ import annotations

import copy
import re
import shlex
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_INDEX = re.compile(r"\[(\d+)\](?=\.|$)")  # raid_groups[0].width -> raid_groups.0.width


def _flag(text: str) -> str:
    """How an override is written on a command line: ``--set dram.cache_bytes=8GiB``."""
    return f"--set {shlex.quote(text)}"


@dataclass(frozen=True)
class Override:
    text: str  # as given, e.g. "raid_groups[0].width=6"
    path: tuple[str, ...]  # ("raid_groups", "0", "width")
    value: Any


def parse_value(text: str) -> Any:
    """``text`` as a TOML value, or the text itself when it is not one."""
    try:
        doc = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    return doc["v"] if list(doc) == ["v"] else text


def parse_override(text: str) -> Override:
    """``key=value`` as an :class:`Override`; ValueError naming it when it is not one."""
    text = text.strip()
    key, sep, value = (part.strip() for part in text.partition("="))
    if not sep or not key:
        raise ValueError(f"{_flag(text)}: expected KEY=VALUE, such as dram.cache_bytes=8GiB")
    dotted = _INDEX.sub(r".\1", key)
    try:
        node = tomllib.loads(f"{dotted} = 0")
    except tomllib.TOMLDecodeError:
        node = None
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        (k, node), = node.items()
        path.append(k)
    if node != 0:
        raise ValueError(f"{_flag(text)}: {key!r} is not a key such as dram.cache_bytes or raid_groups[0].width")
    return Override(text, tuple(path), parse_value(value))


def _shown(path: Iterable[str]) -> str:
    return "".join(f"[{k}]" if k.isdigit() else f".{k}" for k in path).lstrip(".")


def _index(node: list, key: str, path: tuple[str, ...]) -> int:
    if not key.isdigit() or int(key) >= len(node):
        indexes = f"0 to {len(node) - 1}" if node else "none"
        raise ValueError(f"{_shown(path[:-1])} has {len(node)} entries: {key!r} is not one of its indexes ({indexes})")
    return int(key)


def _set(doc: dict, o: Override) -> None:
    node: Any = doc
    for depth, key in enumerate(o.path[:-1]):
        here = o.path[:depth + 1]
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[_index(node, key, here)]
        if not isinstance(node, dict | list):
            raise ValueError(f"{_shown(here)} is not a table (it is {node!r})")
    if isinstance(node, list):
        node[_index(node, o.path[-1], o.path)] = o.value
    else:
        node[o.path[-1]] = o.value


def apply(data: dict, overrides: Iterable[str], source: str = "<scenario>") -> tuple[dict, str]:
    """(a copy of ``data`` with ``overrides`` applied in order, the scenario's source with them:
    ``vnx5400.toml --set dram.cache_bytes=8GiB``). ValueError naming the scenario and the
    override for one that cannot be applied."""
    data = copy.deepcopy(data)
    flags = []
    for text in overrides:
        try:
            o = parse_override(text)
        except ValueError as e:
            raise ValueError(f"{source} {e}") from None
        try:
            _set(data, o)
        except ValueError as e:
            raise ValueError(f"{source} {_flag(o.text)}: {e}") from None
        flags.append(_flag(o.text))
    return data, " ".join([source, *flags])
