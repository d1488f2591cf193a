"""The progress callback the long steps take (ingest, replay, simulate, curves, skew, warm), in a
module that imports nothing heavy: ``progress(done, total)``, in the step's own unit (bytes read
for an ingest, rows or requests for a replay)."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]
