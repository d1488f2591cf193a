"""The ``tiercast`` command. Each command group lives in its own module and registers on ``app``
when imported below (keep the list sorted)."""

from __future__ import annotations

from pipelines.cli import calibrate as _calibrate  # noqa: F401
from pipelines.cli import capture as _capture  # noqa: F401
from pipelines.cli import compare as _compare  # noqa: F401
from pipelines.cli import demo as _demo  # noqa: F401
from pipelines.cli import ingest as _ingest  # noqa: F401
from pipelines.cli import measured as _measured  # noqa: F401
from pipelines.cli import replay as _replay  # noqa: F401
from pipelines.cli import report as _report  # noqa: F401
from pipelines.cli import simulate as _simulate  # noqa: F401
from pipelines.cli import synth as _synth  # noqa: F401
from pipelines.cli import warehouse as _warehouse  # noqa: F401
from pipelines.cli.common import app, run_app


def main() -> None:
    run_app()


__all__ = ["app", "main"]
