"""Python's cyclic garbage collector, paused while a ``tiercast`` process starts and skipped at exit.

Start-up (importing numba, Polars, pyarrow; numba typing and loading cached kernels) creates about
a million objects that live as long as the process. The collector scans them again and again as
they pile up (a full collection each time the old generation grows by 25 %), and once more while
the interpreter shuts down. Measured on `tiercast simulate` of 10 M requests (page stream ready,
2 cores): 1.25-1.34 s as a process, of which 0.29-0.35 s between the last ``atexit`` handler and
the end of the process; with the collector paused during start-up and the start-up objects frozen
(``gc.freeze``: the documented way to exempt long-lived objects from collection) 0.85-0.92 s.

:func:`pause` at the start of ``main``; collection resumes :data:`RESUME_AFTER_S` later (a
timer), with everything created until then frozen, so a long command (a replay of hours, a report
drawing many charts) collects cycles as usual from then on. :func:`before_exit` freezes again so
the collection during interpreter shutdown has nothing to scan (what is still alive then is freed
by the OS with the process; open files are closed by their ``with`` blocks, not by finalizers);
except when DuckDB is loaded: its nanobind bindings report every object of theirs still alive at
shutdown as a leak on stderr, so then everything is unfrozen and collected as Python would.
"""

from __future__ import annotations

import gc
import threading

#: seconds after start when collection resumes: start-up (imports, numba's first dispatch) takes
#: ~0.6-0.9 s; longer than that costs at most this long without cycle collection
RESUME_AFTER_S = 1.0


def pause() -> None:
    """Stop cyclic collection until :func:`resume` (called by a timer :data:`RESUME_AFTER_S` on)."""
    gc.disable()
    timer = threading.Timer(RESUME_AFTER_S, resume)
    timer.daemon = True
    timer.start()


def resume() -> None:
    """Freeze what exists (it lives as long as the process) and collect from here on."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


#: extension modules that count their live objects when the interpreter shuts down and print
#: "leaked instances" for any still alive (nanobind: DuckDB 2.0's ``_duckdb``); with them loaded
#: the shutdown collection must see everything, frozen or not
LEAK_CHECKED_MODULES = ("_duckdb",)


def before_exit() -> None:
    """The process is about to end: nothing left for the shutdown collection to scan, unless a
    module of :data:`LEAK_CHECKED_MODULES` is loaded (then everything is unfrozen instead)."""
    import sys

    if any(m in sys.modules for m in LEAK_CHECKED_MODULES):
        gc.unfreeze()
    else:
        gc.freeze()
