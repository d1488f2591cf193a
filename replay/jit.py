"""The numba decorators of every compiled function in ``replay/``: ``njit`` and ``kernel``.

**On-disk cache keyed on every kernel module.** numba caches a compiled function under a key made
of its *own* source file only (numba 0.68: a SHA-256 of that file's bytes; docs/architecture/pitfalls.md#numba). The array
kernel (``replay.array``) calls functions of ``host``, ``dram_cache``, ``events``, ``queueing``,
``backend`` and ``ids`` and compiles their constants in, so a fix in one of those left the
caller's stale machine code in use. Touching the caller's file at import (what ``replay.array`` did) no longer helps since numba
hashes contents, not times, and it wrote into the source tree. Not caching at all would be
correct, but compiling the array kernels takes ~17 s, paid by every ``tiercast replay`` call.
So every decorator here puts its cache in a directory named by a hash of the source of all
kernel modules (:data:`KERNEL_MODULES`, :func:`replay.version.model_version`): a change in any of
them selects a new, empty directory (one full recompile), and stale code cannot be found.

numba takes the directory from its documented setting ``NUMBA_CACHE_DIR`` (``numba.config.CACHE_DIR``,
read when a function is decorated): the decorators set it only while they decorate, so other
numba users in the process keep theirs. Base directory: :func:`replay.numba_cache.base_dir`, the
one rule every entry point resolves the same way (``$NUMBA_CACHE_DIR`` when set, else
``<venv>/var/tiercast/numba-cache``, else the user cache directory). Old directories are not
pruned (``make clean`` deletes the venv, and them with it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numba

from replay.mech import kernel_modules
from replay.numba_cache import base_dir
from replay.version import SCHEMA_MODULES, model_version

F = TypeVar("F", bound=Callable)


def _numpy_support_without_blas_probe() -> None:
    """Load numba's numpy support (``numba.np.arraymath``) with scipy hidden.

    numba loads that module at the first compile or cache load in a process, and on import it
    probes for a BLAS by importing ``scipy.linalg`` (with ``numpy.f2py``): ~0.5 s, a quarter of a
    whole ``tiercast simulate`` on 10 M requests, paid only to choose the inner loop of
    ``np.correlate`` / ``np.convolve`` (numba's ``_HAVE_BLAS``), which tiercast does not use.
    While it loads, ``scipy.linalg.cython_blas`` reads as absent (``sys.modules`` entry None, the
    documented way to block an import); the entry is restored right after, so everything else
    (``np.dot`` in compiled code, GX, any later import of scipy) works as before."""
    import sys

    if "numba.np.arraymath" in sys.modules:
        return
    name = "scipy.linalg.cython_blas"
    saved = sys.modules.get(name)
    sys.modules[name] = None  # type: ignore[assignment]
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if saved is None:
            del sys.modules[name]
        else:
            sys.modules[name] = saved


_numpy_support_without_blas_probe()

#: Modules with compiled functions (or constants compiled into them); their source keys the cache.
KERNEL_MODULES = ("replay.array", *kernel_modules(), "replay.events", "replay.prefetch", "replay.ids", "replay.pages",
                  "replay.intervals", "replay.groupby", "replay.tally", "replay.mrc", "replay.kernels", "replay.jit", *SCHEMA_MODULES)


def cache_dir(modules: Sequence[str] = KERNEL_MODULES) -> Path:
    """The on-disk cache directory of functions compiled by ``cached_njit(modules)``."""
    return base_dir() / f"tiercast-kernels-{model_version(modules)}"


def cached_njit(modules: Sequence[str] = KERNEL_MODULES, **options) -> Callable[[F], F]:
    """A decorator: ``numba.njit(cache=True, nogil=True, **options)`` cached in ``cache_dir(modules)``."""
    directory = str(cache_dir(modules))

    def decorate(fn: F) -> F:
        saved = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = directory
        try:
            return numba.njit(cache=True, nogil=True, **options)(fn)
        finally:
            numba.config.CACHE_DIR = saved

    return decorate


#: Every compiled function of replay/ except the array model's.
njit = cached_njit()

#: The array model's functions, compiled without numba's reference counting (NRT). They only read
#: and write arrays they are handed (nothing is allocated), and with ~20 array arguments per call
#: counting references on entry and exit cost ~3 ns per array per call, about half of the kernel's
#: time (2-4x overall). numba has no public per-function switch for this: ``_nrt`` is a private
#: option (numba 0.68 lists it among its known options and rejects unknown ones when compiling).
#: tests/test_replay_trust.py pins it: the kernels compile with it on the installed numba and their
#: machine code holds no NRT call.
KERNEL_OPTIONS = {"_nrt": False}
kernel = cached_njit(**KERNEL_OPTIONS)

#: ``kernel`` inlined into its caller by numba (``inline="always"``): the per-request steps of the
#: array model's event loop (``replay.array.run_requests``). Each takes whole mechanisms' state
#: (NamedTuples of ~5-10 arrays, ~150 machine words as arguments); called once per request as
#: separate functions they made the kernel 6-11 % slower than the former inline loop.
step = cached_njit(inline="always", **KERNEL_OPTIONS)
