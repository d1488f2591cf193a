"""Files written for the user (reports, CSV tables, synthetic traces, scenario fragments): always
through a temporary file beside the target and an atomic rename, so a crash or Ctrl-C never leaves
a half-written file under the target's name, and never over something that is not a regular file
(a directory, a device such as /dev/full, a FIFO, a socket): those are refused before any work.
tiercast's own files under the data directory (results, manifests, indexes) take the same
temporary file and rename (:func:`atomic_file`), without the checks.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


class OutputPathError(ValueError):
    """The output path cannot be written as a regular file (a user error: exit code 2)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_output(path: str | Path, what: str = "output", *, parent_must_exist: bool = False) -> Path:
    """The regular file to write for ``path`` (symbolic links followed), or :class:`OutputPathError`
    when it exists and is not a regular file, or when its parent exists and is not a directory, or
    (``parent_must_exist``: a path the user typed) when its directory does not exist: a mistyped
    folder is refused, not created."""
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
    if parent_must_exist and not parent.exists():
        raise OutputPathError(f"{what} {given}: directory {parent} does not exist (create it first)")
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputPathError(f"{what} {given}: {parent} is not a directory")
    return target


def check_output_dir(path: str | Path, what: str = "output directory", *, parent_must_exist: bool = False) -> Path:
    """``path`` as a directory to write into: refused when it exists and is not a directory, or
    (``parent_must_exist``) when the directory it would be created in does not exist."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{what} {p} exists and is not a directory")
    if parent_must_exist and not p.exists() and not p.parent.is_dir():
        raise OutputPathError(f"{what} {p}: directory {p.parent} does not exist (create it first)")
    return p


@contextmanager
def atomic_file(path: Path, keep_suffix: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; rename it over ``path`` when the block ends
    without an exception, remove it otherwise: ``path`` is whole or absent. The temporary name is
    hidden and ends ``.tmp`` (no ``*.parquet`` glob of a reader takes a half-written file), or with
    ``keep_suffix`` the suffix of ``path``. No check of what ``path`` is (tiercast's own files;
    :func:`atomic_output` for a path the user gives); its directory must exist."""
    unique = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = path.with_name(f".{path.stem}.{unique}.tmp{path.suffix}" if keep_suffix else f".{path.name}.{unique}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_output(path: str | Path, what: str = "output") -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix) to write; rename it over ``path`` when the
    block ends without an exception, remove it otherwise."""
    target = check_output(path, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(target, keep_suffix=True) as tmp:
        yield tmp
        check_output(target, what)  # still a regular file (or absent) just before the rename


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` (its directory created) atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        df.write_parquet(tmp)


def write_text(path: str | Path, text: str, what: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path written."""
    with atomic_output(path, what) as tmp:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
    return Path(path)


@contextmanager
def atomic_output_dir(path: str | Path, pattern: str, what: str = "output directory") -> Iterator[Path]:
    """Yield a temporary directory named like ``path`` (in a hidden folder beside it, so relative
    links to it read the same) to write the files ``pattern`` names into. When the block ends
    without an exception they replace that directory's ``pattern`` files (each renamed into
    place; the old ones the new set lacks removed; other files kept) and a directory left empty
    is removed; otherwise nothing changes. So a failed or interrupted run leaves no empty or
    half-filled directory, and a run that writes no file leaves none."""
    target = check_output_dir(path, what)
    staging = target.parent / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    staging.mkdir(parents=True)
    try:
        yield staging / target.name
        new = {p.name: p for p in (staging / target.name).glob(pattern) if p.is_file()}
        if new:
            target.mkdir(exist_ok=True)
        for name, p in new.items():
            os.replace(p, target / name)
        if target.is_dir():
            for old in target.glob(pattern):
                if old.name not in new and old.is_file():
                    old.unlink()
            if not any(target.iterdir()):
                target.rmdir()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
