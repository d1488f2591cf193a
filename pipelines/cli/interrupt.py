"""Ctrl-C and SIGTERM for the ``tiercast`` command (standard library only: installed before the
heavy imports, so an interrupt during start-up is handled too).

The first SIGINT or SIGTERM raises :class:`KeyboardInterrupt` in the main thread; the CLI's
error handler prints ``interrupted`` and exits with 128 + the signal number (130, 143), after the
``finally`` blocks on the way out ran (temporary files removed). Should the process still be
running :data:`GRACE_S` seconds later (the main thread stuck in a long native call), or should a
second signal arrive, it exits at once with the same code.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

#: seconds between the first signal and a forced exit
GRACE_S = 1.0

#: the signal number that interrupted the process, or None
received: int | None = None
_said = False


def exit_code() -> int:
    return 128 + (received or signal.SIGINT)


def say_interrupted() -> None:
    """Print ``interrupted`` on stderr (once)."""
    global _said
    if _said:
        return
    _said = True
    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - stderr may be closed; exiting anyway
        pass


def _force_exit(code: int) -> None:
    say_interrupted()
    os._exit(code)


def _handler(signum: int, frame) -> None:
    global received
    if received is not None:  # second signal: do not wait for clean-up
        _force_exit(128 + received)
    received = signum
    t = threading.Timer(GRACE_S, _force_exit, args=(128 + signum,))
    t.daemon = True
    t.start()
    raise KeyboardInterrupt


def install() -> None:
    """Route SIGINT and SIGTERM to :func:`_handler` (main thread only; no-op elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        # a SIGINT ignored by the parent (nohup, background job of a script) stays ignored
        if sig == signal.SIGINT and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        signal.signal(sig, _handler)
