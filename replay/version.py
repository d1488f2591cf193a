"""Model versions: what produced a result, as a hash of the source of the modules it depends on.

Results are keyed on the model version so that a fix to a kernel gives new run ids (the old
results stay on disk, labelled with their own version) instead of old numbers returned as
``already_done``. Why a source hash rather than a version number bumped by hand: it cannot be
forgotten, and it costs one read of ~12 files (~170 KB) per process, ~2 ms. The price is that a
change to a comment also gives new ids, so results are recomputed more often than strictly
needed, never less.

``ARRAY_MODEL`` lists what an array replay or sweep depends on (the kernels, the page split and
dense ids, the scenario parser that fills in defaults and derives drive timings, the interval
aggregation and ``pipelines.replay``'s result shaping); ``CACHE_MODEL`` what ``simulate`` and
``mrc`` depend on; ``SKEW_MODEL`` and ``COMPARE_MODEL`` what a skew result and a model vs
measured comparison depend on. Reading the trace is not modelling and is not listed: the trace id covers the
input. ``replay.jit`` keys numba's on-disk cache with the same hash of its ``KERNEL_MODULES``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from importlib.util import find_spec
from pathlib import Path

from replay.mech import kernel_modules, schema_modules

SCHEMA_MODULES = ("schemas.trace",)  # op codes: compiled into the kernels as constants
#: the array model's code: every mechanism (``replay.mech``), the event loop and what it shares
#: (``replay.mech`` is a package: every file under it, each mechanism's results too)
ARRAY_MODEL = ("replay.array", *kernel_modules(), *schema_modules(), "replay.schema", "replay.mech",
               "replay.outputs", "replay.layout", "replay.events", "replay.prefetch", "replay.pages",
               "replay.ids", "replay.intervals", "replay.groupby", "replay.model", "replay.scenario", "replay.scenario_file",
               "replay.jit", "pipelines.replay", "pipelines.physics", "pipelines.tiering", "replay.prices",
               "pipelines.confidence",
               *SCHEMA_MODULES)
CACHE_MODEL = ("replay.kernels", "replay.mrc", "replay.pages", "replay.page_stream", "replay.ids", "replay.intervals", "replay.model",
               "replay.jit", "pipelines.simulate", *SCHEMA_MODULES)
#: what ``tiercast skew``'s result depends on (the counting and the curve), and what a model vs
#: measured comparison's does (the alignment and the metrics; the run id covers the model)
SKEW_MODEL = ("replay.skew", "pipelines.analytics", *SCHEMA_MODULES)
COMPARE_MODEL = ("pipelines.compare", "pipelines.calibrate")


def source_files(modules: Iterable[str]) -> list[tuple[str, Path]]:
    """(label, file) of every source file of ``modules`` (dotted names; a package stands for every
    ``.py`` and ``.toml`` file under it: ``replay.prices``' tables are data a result depends on),
    sorted by label. LookupError for a module that cannot be found."""
    out = []
    for name in set(modules):
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            raise LookupError(f"model version: no source file for module {name!r}")
        if spec.submodule_search_locations:  # a package
            for loc in spec.submodule_search_locations:
                out += [(f"{name}/{p.relative_to(loc).as_posix()}", p) for ext in ("*.py", "*.toml")
                        for p in Path(loc).rglob(ext)]
        else:
            out.append((name, Path(spec.origin)))
    return sorted(out)


def _read(path: Path) -> bytes:
    return path.read_bytes()


@functools.cache
def _version(modules: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for label, path in source_files(modules):
        data = _read(path)
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]


def model_version(modules: Iterable[str]) -> str:
    """16 hex digits of the SHA-256 of the source of ``modules`` (computed once per process)."""
    return _version(tuple(sorted(set(modules))))


def clear_cache() -> None:
    """Forget the computed versions (tests that change a module's source)."""
    _version.cache_clear()
