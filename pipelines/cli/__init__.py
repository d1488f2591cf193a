"""The ``tiercast`` command. Each command group lives in its own module and registers on ``app``
when imported; :data:`COMMANDS` says which module defines each command (keep it sorted).

Start-up is kept short (docs/reference/cli-behaviour.md): importing this package is cheap, :func:`main`
imports only the module of the command it runs (``tiercast --help`` imports them all, to list
them), and command modules import Polars, numba, DuckDB and the pipeline steps inside the
commands, not at their top (``tests/test_cli_startup.py``). ``pipelines.cli.app`` (tests) has
every command registered.
"""

from __future__ import annotations

import importlib

#: command -> the module of pipelines.cli that defines it
COMMANDS = {
    "calibrate": "calibrate", "capture": "capture", "captures": "capture", "compare": "whatif",
    "compare-measured": "compare", "demo": "demo", "experiments": "experiments", "ingest": "ingest",
    "load": "warehouse", "measured": "measured", "mrc": "simulate", "replay": "replay", "report": "report",
    "scenarios": "replay", "simulate": "simulate", "size": "whatif", "skew": "analytics",
    "snapshots": "analytics", "sql": "warehouse", "sweep": "replay", "synth": "synth", "traces": "ingest",
    "validate": "ingest", "warm": "warm",
}


def load_commands(names=None) -> None:
    """Import the modules that define ``names`` (default: every command), registering them on
    ``app``."""
    for module in sorted({COMMANDS[n] for n in (COMMANDS if names is None else names)}):
        importlib.import_module(f"pipelines.cli.{module}")


def _load_app():
    load_commands()
    from pipelines.cli.common import app

    return app


def __getattr__(name: str):
    if name == "app":
        return _load_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    from pipelines.cli import startup_gc

    startup_gc.pause()
    try:
        _run()
    finally:
        startup_gc.before_exit()


def _run() -> None:
    import sys

    from pipelines.cli import interrupt

    interrupt.install()
    try:
        from pipelines.cli.common import run_app
    except KeyboardInterrupt:
        interrupt.say_interrupted()
        sys.exit(interrupt.exit_code())
    except Exception as e:  # the CLI cannot even start (a broken install, an unwritable cache): one line
        import os
        import traceback

        if "--debug" in sys.argv or os.environ.get("TIERCAST_DEBUG", "").strip().lower() not in ("", "0", "false", "no"):
            traceback.print_exception(e, file=sys.stderr)
        msg = " ".join(str(e).split())
        sys.stderr.write(f"error: internal error: {type(e).__name__}: {msg} (run with --debug for the traceback)\n")
        sys.exit(1)

    run_app()


__all__ = ["COMMANDS", "app", "load_commands", "main"]
