"""Quoting for the DuckDB SQL that tiercast writes: the one place literals and identifiers are
escaped. Prefer bound parameters (``con.sql(q, params=[...])``); DDL such as ``CREATE VIEW``
cannot take parameters, so paths baked into views go through :func:`literal`.

A data directory may contain quotes, spaces or non-ASCII (``o'brien``, ``données``); a value
pasted unescaped would end the string early and turn the rest into SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def literal(value: str | Path) -> str:
    """A SQL string literal: single quotes doubled."""
    return "'" + str(value).replace("'", "''") + "'"


def identifier(name: str) -> str:
    """A quoted SQL identifier: double quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def path_list(paths: Iterable[str | Path]) -> str:
    """A SQL list of path literals, ``['a', 'b']``, for ``read_parquet`` in a view."""
    return "[" + ", ".join(literal(p) for p in paths) + "]"
