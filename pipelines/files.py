"""Files written for the user (reports, CSV tables, synthetic traces, scenario fragments): always
through a temporary file beside the target and an atomic rename, so a crash or Ctrl-C never leaves
a half-written file under the target's name, and never over something that is not a regular file
(a directory, a device such as /dev/full, a FIFO, a socket): those are refused before any work.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class OutputPathError(ValueError):
    """The output path cannot be written as a regular file (a user error: exit code 2)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_output(path: str | Path, what: str = "output") -> Path:
    """The regular file to write for ``path`` (symbolic links followed), or :class:`OutputPathError`
    when it exists and is not a regular file, or when its parent exists and is not a directory."""
    given = Path(path)
    target = given.resolve() if given.is_symlink() else given
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise OutputPathError(f"{what} {given}: a parent of it is not a directory") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{what} {given} is {_kind(st.st_mode)}; give a file name (it is replaced "
                              "only when it is a regular file)")
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputPathError(f"{what} {given}: {parent} is not a directory")
    return target


def check_output_dir(path: str | Path, what: str = "output directory") -> Path:
    """``path`` as a directory to write into: refused when it exists and is not a directory."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{what} {p} exists and is not a directory")
    return p


@contextmanager
def atomic_output(path: str | Path, what: str = "output") -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix) to write; rename it over ``path`` when the
    block ends without an exception, remove it otherwise."""
    target = check_output(path, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}-{secrets.token_hex(4)}.tmp{target.suffix}")
    try:
        yield tmp
        check_output(target, what)  # still a regular file (or absent) just before the rename
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | Path, text: str, what: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path written."""
    with atomic_output(path, what) as tmp:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
    return Path(path)
