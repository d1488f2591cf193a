"""Scenario sections as data: every parameter once, with its type, unit, range, default and source.

A :class:`Section` lists the :class:`Param` of one TOML table (``dram.mcx``, ``snapshots``, ...).
From it come the section's frozen dataclass (:meth:`Section.base`: the fields, in order, with their
defaults; the scenario classes of ``replay.scenario`` subclass it to add derived properties), the
reading and checking of a TOML table with errors that name the file, the line and the rule
(:meth:`Section.read`), the parameter listing of ``tiercast scenarios NAME --json`` and the
documentation. A parameter has one name from the TOML file to the kernel's parameters.

``source`` says where a default comes from: ``doc`` (vendor documentation), ``seed`` (a seed
article), ``seed-fit`` (fitted to a seed figure: ``reference`` names it), ``datasheet``,
``measured``, ``estimate``. Nothing here imports numba, numpy or Polars: ``tiercast scenarios``
and the scenario parser stay light.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from schemas.units import parse_duration_ns, parse_size

KINDS = ("size", "duration", "int", "float", "str", "bool")
SOURCES = ("doc", "seed", "seed-fit", "datasheet", "measured", "estimate", "choice")


@dataclass(frozen=True)
class Param:
    """One parameter of a section. ``kind``: size (bytes; ``"8KiB"`` or an int), duration (ns;
    ``"60s"``), int, float, str, bool. ``minimum`` / ``maximum`` bound it (``strict_min``: the
    minimum itself is refused), ``choices`` lists the allowed strings. ``optional``: None is its
    default and means "derived" (say from what in ``doc``); ``required``: the table must give it
    (no default)."""

    name: str
    kind: str
    default: Any
    unit: str = ""
    doc: str = ""
    source: str = "estimate"
    reference: str = ""
    minimum: float | None = None
    maximum: float | None = None
    strict_min: bool = False
    choices: tuple = ()
    optional: bool = False
    required: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.source not in SOURCES:
            raise ValueError(f"parameter {self.name}: unknown source {self.source!r}")

    def rule(self) -> str:
        """The range or choices in words (``>= 0``, ``> 0 and <= 100``, ``one of 'a', 'b'``)."""
        if self.choices:
            return "one of " + ", ".join(map(repr, self.choices))
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.strict_min else '>='} {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return " and ".join(parts)

    def convert(self, v: Any) -> Any:
        """The value of TOML ``v`` for this parameter (ValueError saying what was expected)."""
        k = self.kind
        if k == "size":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError(f"expected a size such as 8192 or \"8KiB\", got {v!r}")
            if (isinstance(v, int) and v < 0) or (isinstance(v, str) and v.strip().startswith("-")):
                raise ValueError(f"negative size {v!r}")
            return parse_size(v)
        if k == "duration":
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise ValueError(f"expected a duration such as \"60s\", got {v!r}")
            if isinstance(v, str) and v.strip().startswith("-"):
                raise ValueError(f"negative duration {v!r}")
            return parse_duration_ns(v)
        if k == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"expected an integer, got {v!r}")
            return v
        if k == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"expected a number, got {v!r}")
            v = float(v)
            if not math.isfinite(v):
                raise ValueError(f"expected a finite number, got {v!r}")
            return v
        if k == "str":
            if not isinstance(v, str):
                raise ValueError(f"expected a string, got {v!r}")
            return v
        if not isinstance(v, bool):
            raise ValueError(f"expected true or false, got {v!r}")
        return v

    def check(self, v: Any) -> str | None:
        """What is wrong with the converted value ``v`` (None: nothing)."""
        if self.choices and v not in self.choices:
            return f"{v!r} is not one of {', '.join(map(repr, self.choices))}"
        if self.minimum is not None and (v < self.minimum or (self.strict_min and v == self.minimum)):
            return f"must be {'>' if self.strict_min else '>='} {self.minimum}, got {v}"
        if self.maximum is not None and v > self.maximum:
            return f"must be <= {self.maximum}, got {v}"
        return None

    def describe(self) -> dict:
        """The parameter as ``tiercast scenarios --json`` lists it (without a value)."""
        d = {"name": self.name, "type": self.kind, "unit": self.unit, "default": self.default,
             "source": self.source, "reference": self.reference, "doc": self.doc}
        if self.rule():
            d["range"] = self.rule()
        if self.required:
            d["required"] = True
            del d["default"]
        return d


@dataclass(frozen=True)
class Section:
    """The parameters of one TOML table (``path``: its dotted name). ``extra``: keys of the table
    that are not parameters but are read by hand (lists of tables such as ``policies``)."""

    path: str
    params: tuple[Param, ...]
    doc: str = ""
    extra: tuple[str, ...] = ()
    _base: list = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"section {self.path}: parameter {dup[0]!r} declared twice")

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"section {self.path} has no parameter {name!r}")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def base(self, name: str, before: tuple = (), after: tuple = ()) -> type:
        """The frozen dataclass of this section's parameters, made once; ``before`` / ``after``:
        fields ahead of them (a drive class's name) or behind them (the nested sections of
        ``[dram]``), as ``make_dataclass`` takes them."""
        if not self._base:
            fields_ = [*before, *((p.name, Any) if p.required else (p.name, Any, field(default=p.default))
                                  for p in self.params), *after]
            self._base.append(make_dataclass(f"{name}Base", fields_, frozen=True))
        return self._base[0]

    def read(self, table: dict, error: Callable[[str | None, str], Exception], *, skip: tuple[str, ...] = (),
             defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every parameter's value from the TOML ``table`` (default when absent), checked;
        ``error(key, message)`` makes the exception (with file and line). Unknown keys are refused
        (the section's parameters and ``extra`` are the known ones); ``skip``: parameters read
        by hand; ``defaults``: this scenario's default of a parameter, where it depends on other
        values."""
        known = {*self.names, *self.extra}
        unknown = sorted(set(table) - known)
        if unknown:
            raise error(unknown[0], f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(known))}")
        out = {}
        for p in self.params:
            if p.name in skip:
                continue
            if p.name not in table:
                if p.required:
                    raise error(None, f"lacks {p.name!r}")
                out[p.name] = (defaults or {}).get(p.name, p.default)
                continue
            try:
                v = p.convert(table[p.name])
            except ValueError as e:
                raise error(p.name, str(e)) from None
            bad = p.check(v)
            if bad:
                raise error(p.name, bad)
            out[p.name] = v
        return out
