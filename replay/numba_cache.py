"""Where numba keeps tiercast's compiled code: one rule for every entry point (``make``, ``tiercast``
run from an activated venv, pytest, Airflow workers), so what one of them compiled the others load.

The first of these that can be written (a directory is made if needed, then a file created in it):

1. ``$NUMBA_CACHE_DIR`` when set and not empty: numba's own setting, the documented override;
2. in a virtual environment (``sys.prefix != sys.base_prefix``): ``<venv>/var/tiercast/numba-cache``.
   The code compiled belongs to the numba, LLVM and tiercast source installed there, so it lives
   and goes with the install (``make clean`` deletes ``.venv``);
3. the user cache directory: ``$XDG_CACHE_HOME/tiercast/numba`` (an absolute value only, as the
   XDG spec says), else ``~/.cache/tiercast/numba``;
4. ``<temporary directory>/tiercast-numba-<uid>``: compiled code is kept at least until a reboot.

A read-only install or home directory passes to the next rule instead of failing: nothing breaks,
the code is only compiled once more into the next place. ``replay.jit`` puts a per-model-version
directory under it. Imports neither numba nor numpy: the CLI and the DAG processor use it cheaply.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

ENV = "NUMBA_CACHE_DIR"


class Location(NamedTuple):
    """The cache directory, the rule that chose it, and the places of earlier rules that could
    not be written (passed over)."""

    path: Path
    rule: str
    passed_over: tuple[Path, ...] = ()


def candidates(environ: Mapping[str, str] | None = None, prefix: str | None = None,
               base_prefix: str | None = None) -> list[tuple[str, Path]]:
    """(rule, directory) in the order they are tried; defaults: this process's environment and
    interpreter."""
    env = os.environ if environ is None else environ
    prefix = sys.prefix if prefix is None else prefix
    base_prefix = sys.base_prefix if base_prefix is None else base_prefix
    out: list[tuple[str, Path]] = []
    if env.get(ENV, "").strip():
        out.append((ENV, Path(env[ENV].strip()).expanduser().absolute()))
    if Path(prefix) != Path(base_prefix):
        out.append(("venv", Path(prefix) / "var" / "tiercast" / "numba-cache"))
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    home = env.get("HOME", "").strip() or _home()
    if xdg and Path(xdg).is_absolute():
        out.append(("user cache", Path(xdg) / "tiercast" / "numba"))
    elif home:
        out.append(("user cache", Path(home) / ".cache" / "tiercast" / "numba"))
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    out.append(("temporary", Path(tempfile.gettempdir()) / f"tiercast-numba-{uid}"))
    return out


def _home() -> str:
    try:
        return str(Path.home())
    except RuntimeError:  # no HOME and no password entry
        return ""


def writable(directory: Path) -> bool:
    """Whether files can be created in ``directory`` (made if missing): numba's own test."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError:
        return False
    return True


def locate(environ: Mapping[str, str] | None = None, prefix: str | None = None,
           base_prefix: str | None = None) -> Location:
    """The first writable directory of :func:`candidates` (the last one when none is: numba
    then falls back to its own locations)."""
    tried = candidates(environ, prefix, base_prefix)
    passed = []
    for rule, path in tried:
        if writable(path):
            return Location(path, rule, tuple(passed))
        passed.append(path)
    rule, path = tried[-1]
    return Location(path, rule, tuple(passed[:-1]))


def base_dir() -> Path:
    """The cache directory of this process (:func:`locate`)."""
    return locate().path
