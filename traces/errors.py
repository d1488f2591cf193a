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


def excerpt(data: bytes, limit_chars: int = 60) -> str:
    """A bounded, readable view of a file's first bytes for an error message: quoted text when
    the bytes are printable UTF-8, else ``binary data`` with the first bytes in hex (never a
    Python ``b'\\x7fELF...'`` repr)."""
    line = data.split(b"\n", 1)[0].rstrip(b"\r")
    text = line[: limit_chars * 4].decode("utf-8", errors="replace")
    if "\ufffd" not in text and all(c.isprintable() or c == "\t" for c in text):
        return repr(text[:limit_chars] + ("..." if len(text) > limit_chars else ""))
    return f"binary data [{' '.join(f'{b:02x}' for b in data[:16])}{' ...' if len(data) > 16 else ''}]"
