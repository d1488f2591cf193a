"""Errors a person can act on: every one names the file, the line (when known) and the problem."""

from __future__ import annotations

from pathlib import Path


class TraceFormatError(Exception):
    """The input cannot be read as a whole (unknown format, corrupt stream, nothing parses)."""

    def __init__(self, path: str | Path | None, line: int | None, problem: str):
        self.path = str(path) if path is not None else "<input>"
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")
