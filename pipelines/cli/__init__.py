"""The ``tiercast`` command. Each command group lives in its own module and registers on ``app``."""

from __future__ import annotations

from pipelines.cli import demo as _demo  # noqa: E402,F401

# Importing a command module registers its commands on ``app``.
from pipelines.cli import ingest as _ingest  # noqa: E402,F401
from pipelines.cli import synth as _synth  # noqa: E402,F401
from pipelines.cli.common import app, run_app


def main() -> None:
    run_app()


__all__ = ["app", "main"]
