"""The array model's mechanisms, one package each, and their registry (:data:`MECHANISMS`).

A mechanism lives in ``replay/mech/<name>/``:

* ``schema.py``: its scenario tables as data (``replay.schema.Section``): every parameter with its
  type, unit, range, default and source. ``replay.scenario`` makes the scenario classes and reads
  the TOML from them; nothing in it imports numba or Polars.
* ``kernel.py``: its compiled steps (numba), and the same few functions in every mechanism:
  ``params(sc)`` (its parameters: a NamedTuple whose fields carry the schema's knob names, in the
  kernel's units; ``on`` for an optional mechanism), ``new_state(sc, p)`` (its state: NamedTuples
  of arrays, tables are structured arrays with named fields; ``p``: every mechanism's parameters),
  ``counters(sc, p, state)`` (its summary counters), and ``grow_units(st, n)`` if its state has a
  row per DRAM cache unit.
* ``outputs.py``: what it adds to a replay's results, as data: its per-request outcome columns
  (:class:`replay.outputs.Column`), its records, its counters, and the lines ``tiercast replay``
  prints for it.
* ``results.py`` (optional): what it aggregates as a replay streams (Polars, above the kernel):
  ``TABLES`` (per-run tables, loaded into the warehouse by name), ``SUMMARY`` (the summary fields
  it adds, with units) and ``Results(model, interval_ns)`` with ``add(requests, logs)``,
  ``coarsen(interval_ns)`` and ``finish(model, state) -> (summary fields, tables)``.

``replay.array.run_requests`` is the one hand-written place where the steps are composed (numba
needs static calls); everything else (the scenario's sections, the kernel's parameter and state
tuples, the outcome columns, the summary, the numba cache key and the model version) loops over
:data:`MECHANISMS`. Adding a mechanism is a new package, one line here and its calls in
``run_requests``.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Mechanism:
    """One mechanism of the array model: its name (the key of its parameters, state and outputs)
    and the modules it splits its compiled code into beyond ``kernel`` (they key the numba cache
    and the model version too)."""

    name: str
    more_modules: tuple[str, ...] = ()
    #: every run has its state, counters and outcome columns (else only when its parameters' ``on``)
    always: bool = False
    #: the mechanisms it stands in for when on (all-flash: no DRAM cache and no RAID back end)
    replaces: tuple[str, ...] = ()

    @property
    def package(self) -> str:
        return f"replay.mech.{self.name}"

    @property
    def kernel_modules(self) -> tuple[str, ...]:
        return (f"{self.package}.kernel", *(f"{self.package}.{m}" for m in self.more_modules))

    def module(self, part: str) -> ModuleType:
        """``schema``, ``kernel``, ``outputs`` or ``results`` of this mechanism."""
        return importlib.import_module(f"{self.package}.{part}")

    def has(self, part: str) -> bool:
        """Whether the mechanism has that module (``results`` is optional)."""
        return importlib.util.find_spec(f"{self.package}.{part}") is not None


#: In composition order: the host issues, the DRAM cache serves, the back end stores, the SSD
#: cache sits between them, FAST VP places slices, snapshots see writes, flash replaces the rest, and
#: so do a cloud volume and a measured device.
MECHANISMS = (
    Mechanism("host", always=True),
    Mechanism("dram_cache", always=True),
    Mechanism("backend", ("queueing", "drive"), always=True),
    Mechanism("ssd_cache", ("fast_cache", "qcache")),
    Mechanism("tiering"),
    Mechanism("snapshots"),
    Mechanism("flash", ("sums",), replaces=("dram_cache", "backend")),
    Mechanism("cloud", ("types", "sums"), replaces=("dram_cache", "backend")),
    Mechanism("device", replaces=("dram_cache", "backend")),
)
BY_NAME = {m.name: m for m in MECHANISMS}


def kernel_modules() -> tuple[str, ...]:
    """Every mechanism's compiled modules, in registry order."""
    return tuple(mod for m in MECHANISMS for mod in m.kernel_modules)


def schema_modules() -> tuple[str, ...]:
    """Every mechanism's schema module (their parameters' defaults change results too)."""
    return tuple(f"{m.package}.schema" for m in MECHANISMS)
