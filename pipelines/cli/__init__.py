"""The ``tiercast`` command. Each command group lives in its own module and registers on ``app``
when imported (keep the list sorted). Importing this package is cheap: the command modules are
imported by :func:`main` (after the interrupt handlers are installed, so Ctrl-C during start-up
ends cleanly too) or on first access to ``pipelines.cli.app``."""

from __future__ import annotations

import importlib

COMMAND_MODULES = (
    "calibrate", "capture", "compare", "demo", "ingest", "measured", "replay", "report", "simulate", "synth",
    "warehouse",
)


def _load_app():
    for name in COMMAND_MODULES:
        importlib.import_module(f"pipelines.cli.{name}")
    from pipelines.cli.common import app

    return app


def __getattr__(name: str):
    if name == "app":
        return _load_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    import sys

    from pipelines.cli import interrupt

    interrupt.install()
    try:
        _load_app()
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


__all__ = ["app", "main"]
