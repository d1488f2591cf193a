"""DuckDB's engine without its Python layer, for the commands whose start-up counts (``tiercast sql``).

``import duckdb`` (2.0) spends 0.07-0.2 s on its Python layer (relations, expressions, and
``importlib.metadata`` for its version) before a query runs: a third of ``tiercast sql``'s
start-up. The engine is the extension module ``_duckdb``, which ``duckdb/__init__.py``
re-exports unchanged (``from _duckdb import connect, Error, ...``), so its connections and
exceptions are the very objects ``duckdb`` hands out; ``tests/test_cli_startup.py`` pins that.
It lacks only what the Python layer adds (``con.sql`` relations, Arrow results): code that needs
those imports ``duckdb`` as usual, and may do so after a connection was opened here.
"""

import _duckdb as engine  # noqa: F401  (private module: see the docstring for why and where it is pinned)
