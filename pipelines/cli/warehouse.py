"""``tiercast load`` and ``tiercast sql``: the DuckDB warehouse over the data directory.

``load`` is the only writer (``pipelines.load``). ``sql`` never loads: it queries the warehouse
as the last load left it, and says so when the data directory changed since.

``sql`` is read-only in both senses: the database is opened ``read_only`` and only statements
that read are run (``SELECT`` in all its forms: ``FROM``-first, ``WITH``, ``VALUES``,
``DESCRIBE``, ``SHOW``, ``SUMMARIZE``; and ``EXPLAIN``). ``COPY ... TO``, ``EXPORT``, ``ATTACH``,
``SET``/``PRAGMA`` (which can name output files), ``INSTALL``/``LOAD`` and every write are
refused before anything runs, so no file is written. Underneath, the connection is sandboxed:
external access is disabled except for the data directory (``allowed_directories``) and the
configuration is locked, so even a statement that got past the check could touch no file
outside it.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    app,
    console,
    data_dir_of,
    jsonable,
    out,
    print_json,
)
from pipelines.cli.common import _duckdb_message as _one_line
from pipelines.cli.examples import epilog

#: statement types ``tiercast sql`` runs (names of duckdb.StatementType)
READ_STATEMENTS = ("SELECT", "EXPLAIN")
FORMATS = ("table", "csv", "json", "parquet")
DEFAULT_TABLE_LIMIT = 1000
BATCH_ROWS = 100_000
#: result column types whose values DuckDB's own fetch gives exactly as pyarrow's ``to_pylist``
#: does (and DECIMAL(p,s); pinned by tests/test_cli_startup.py): such results are read without
#: importing pyarrow and numpy (~0.15 s); other types (HUGEINT, UUID, TIMESTAMPTZ, INTERVAL, MAP,
#: nested types, ...) go through Arrow as before
PLAIN_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT",
    "DOUBLE", "VARCHAR", "JSON", "BLOB", "DATE", "TIME", "TIMESTAMP",
})


@app.command("load", epilog=epilog("load"))
def load_cmd(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Bring tiercast.duckdb up to date with the data directory: new and changed datasets and
    results loaded (each in one transaction), removed ones dropped, the schema upgraded if older."""
    from pipelines.load import load

    dd = data_dir_of(data_dir)
    dd.mkdir(parents=True, exist_ok=True)
    report = load(dd)
    counts = report.counts()
    if as_json:
        print_json({"database": str(report.database), "migrations": report.migrations, "loaded": report.loaded,
                    "removed": report.removed, "unchanged": report.unchanged, "seconds": round(report.seconds, 3),
                    "tables": counts})
        return
    out.print(f"{report.database}:")
    for m in report.migrations:
        out.print(f"  {m}")
    done = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in report.loaded.items()) or "nothing new"
    gone = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in report.removed.items())
    out.print(f"  loaded {done}{'; removed ' + gone if gone else ''}; {report.unchanged} unchanged "
              f"({report.seconds:.2f} s)")
    for name, n in counts.items():
        out.print(f"  {name:<28} {n:>14,} rows")


class SqlRefused(ValueError):
    """A statement ``tiercast sql`` does not run (exit code 2)."""


def read_statements(sql: str) -> list[str]:
    """The statements of ``sql`` (DuckDB's parser), each checked to only read; :class:`SqlRefused`
    otherwise. Syntax errors raise DuckDB's ParserException."""
    from pipelines.duckdb_engine import engine as duckdb

    if not sql.strip():
        raise SqlRefused("no SQL statement given (e.g. tiercast sql \"select * from traces\")")
    stmts = duckdb.extract_statements(sql)
    if not stmts:
        raise SqlRefused("no SQL statement given (only comments or semicolons)")
    texts = []
    for i, s in enumerate(stmts, 1):
        kind = s.type.name
        if kind not in READ_STATEMENTS:
            which = f"statement {i} ({kind})" if len(stmts) > 1 else kind
            raise SqlRefused(f"{which} refused: tiercast sql is read-only and runs only SELECT (incl. "
                             "WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE) and EXPLAIN; nothing was run")
        texts.append(s.query)
    return texts


class Result:
    def __init__(self, statement: str, columns: list[str], types: list[str], rows: list[tuple], cut: bool):
        self.statement, self.columns, self.types, self.rows, self.cut = statement, columns, types, rows, cut


def sandboxed(database: Path | None, allowed: list[Path]):
    """``database`` (None: an empty in-memory one) opened read-only and sandboxed to ``allowed``."""
    from pipelines.duckdb_engine import engine as duckdb
    from pipelines.warehouse import sandbox

    con = duckdb.connect(str(database), read_only=True) if database is not None else duckdb.connect()
    try:
        return sandbox(con, allowed)
    except BaseException:
        con.close()
        raise


def data_dir_roots(dd: Path) -> list[Path]:
    """The directories the warehouse views read: the data directory, and where its symbolic links
    lead (``traces/`` or ``results/`` or a single trace kept on another disk); the views name files
    by their resolved paths."""
    roots = [Path(dd)]
    for sub in ("traces", "results"):
        top = Path(dd) / sub
        if top.is_symlink():
            roots.append(top.resolve())
        if top.is_dir():
            roots += [p.resolve() for p in top.iterdir() if p.is_symlink() and p.resolve().is_dir()]
    return roots


def run_read_only(database: Path, statements: list[str], limit: int, allowed: list[Path] | None = None) -> list[Result]:
    """Run read statements on ``database`` opened read-only and sandboxed (files only under
    ``allowed``, default: the database's directory); at most ``limit`` rows each (0: all)."""
    con = sandboxed(database, allowed or [Path(database).parent])
    try:
        return fetch(con, statements, limit)
    finally:
        con.close()


def fetch(con, statements: list[str], limit: int) -> list[Result]:
    """Run ``statements`` on ``con``, at most ``limit`` rows each (0: all)."""
    results = []
    for q in statements:
        con.execute(q)  # a streaming result: rows are made as they are fetched
        cols, types = [d[0] for d in con.description], [str(d[1]) for d in con.description]
        if all(t in PLAIN_TYPES or t.startswith("DECIMAL(") for t in types):
            rows = []
            while not limit or len(rows) <= limit:
                want = min(limit + 1 - len(rows), BATCH_ROWS) if limit else BATCH_ROWS
                batch = con.fetchmany(want)
                rows += batch
                if len(batch) < want:
                    break
            con.abort()  # DuckDB 2.0 refuses the next statement while a result is unread; a read has nothing to undo
        else:
            import duckdb  # noqa: F401  (con.sql and Arrow results come with the Python layer)

            con.abort()
            rows = []
            for batch in con.sql(q).to_arrow_reader(min(limit, BATCH_ROWS) if limit else BATCH_ROWS):
                rows.extend(zip(*(col.to_pylist() for col in batch.columns), strict=True))
                if limit and len(rows) > limit:
                    break
        cut = bool(limit) and len(rows) > limit
        results.append(Result(q, cols, types, rows[:limit] if cut else rows, cut))
    return results


def _cell(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict | list):
        return json.dumps(jsonable(v))
    return str(v).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
            "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


def format_table(r: Result) -> str:
    """Aligned text: header, rule, one line per row (numbers right-aligned, nothing cut)."""
    cells = [[_cell(v) for v in row] for row in r.rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(r.columns)]
    right = [t.split("(")[0] in _NUMERIC for t in r.types]

    def line(vals: list[str]) -> str:
        return "  ".join(v.rjust(w) if rj else v.ljust(w) for v, w, rj in zip(vals, widths, right, strict=True)).rstrip()

    if r.columns == ["explain_key", "explain_value"]:  # EXPLAIN: the plan as DuckDB draws it
        return "".join(f"{row[1]}\n" for row in r.rows)
    lines = [line(r.columns), "  ".join("-" * w for w in widths)] + [line(row) for row in cells]
    return "\n".join(lines) + "\n"


def format_csv(r: Result) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(r.columns)
    for row in r.rows:
        w.writerow(["" if v is None else json.dumps(jsonable(v)) if isinstance(v, dict | list) else
                    jsonable(v) for v in row])
    return buf.getvalue()


def json_rows(r: Result) -> list[dict]:
    """Rows as objects; JSON-typed columns decoded."""
    rows = []
    for row in r.rows:
        d = {}
        for c, t, v in zip(r.columns, r.types, row, strict=True):
            if t == "JSON" and isinstance(v, str):
                try:
                    v = json.loads(v)
                except ValueError:
                    pass
            d[c] = jsonable(v, c)
        rows.append(d)
    return rows


def write_parquet(con, statement: str, target) -> None:
    """The result of ``statement`` as Parquet into ``target`` (a path or a binary stream)."""
    import duckdb  # noqa: F401  (con.sql and Arrow results come with the Python layer)
    import pyarrow.parquet as pq

    pq.write_table(con.sql(statement).to_arrow_table(), target)


def schema_rows(con) -> list[dict]:
    """Every table and view of the warehouse with its columns, types and units."""
    from pipelines.warehouse import unit_of

    rows = con.execute(
        "SELECT c.table_name, t.table_type, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
        "WHERE c.table_schema = 'main' ORDER BY c.table_name, c.ordinal_position").fetchall()
    return [{"table": t, "kind": "view" if k == "VIEW" else "table", "column": c, "type": ty, "unit": unit_of(c)}
            for t, k, c, ty in rows]


def print_schema(rows: list[dict]) -> None:
    last = None
    for r in rows:
        if r["table"] != last:
            sys.stdout.write(f"{'' if last is None else chr(10)}{r['table']} ({r['kind']})\n")
            last = r["table"]
        unit = f"  [{r['unit']}]" if r["unit"] else ""
        sys.stdout.write(f"  {r['column']:<32} {r['type']:<14}{unit}\n".rstrip() + "\n")


@app.command("sql", epilog=epilog("sql"))
def sql_cmd(
    statement: Annotated[str | None, typer.Argument(help="SQL to run (read-only), e.g. \"select * from whatif\"; "
                                                         "several statements separated by ';' are run in order.")] = None,
    data_dir: DataDirOpt = None,
    fmt: Annotated[str, typer.Option("--format", help=f"Output: {', '.join(FORMATS)} (csv, json and parquet take "
                                                      "one statement; parquet goes to --output or a pipe).")] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the result to this file instead of "
                                                                       "standard output.")] = None,
    limit: Annotated[int | None, typer.Option(min=0, help=f"At most this many rows per statement (0: all) "
                                              f"[default: {DEFAULT_TABLE_LIMIT} for table, all for the other "
                                              "formats].")] = None,
    schema: Annotated[bool, typer.Option("--schema", help="List the tables and views, their columns, types and "
                                                          "units (no statement).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Query the warehouse with DuckDB SQL, read-only: nothing in the database or on disk changes,
    and nothing is loaded (`tiercast load` does that; a note says when the data is newer)."""
    if fmt not in FORMATS:
        raise typer.BadParameter(f"{fmt!r} is not one of {', '.join(FORMATS)}", param_hint="'--format'")
    if as_json:
        fmt = "json"
    if schema and statement is not None:
        raise SqlRefused("--schema takes no statement")
    statements = read_statements(statement or "") if not schema else []
    if fmt != "table" and len(statements) > 1:
        raise SqlRefused(f"--format {fmt} takes one statement, got {len(statements)} (use --format table, or run "
                         "them one at a time)")
    if fmt == "parquet" and output is None and sys.stdout.isatty():
        raise SqlRefused("--format parquet writes binary: give --output FILE or redirect standard output")
    dd = data_dir_of(data_dir, write=False)
    from pipelines.warehouse import db_path, reader, staleness, working_directory

    database = db_path(dd)
    roots = data_dir_roots(dd)
    from pipelines.duckdb_engine import engine as duckdb

    if database.exists():
        con = reader(database, dd, statement or "", allowed=roots)
        note = staleness(con, dd)
    else:
        if schema:
            raise LookupError(f"no warehouse at {database}: run `tiercast load` first")
        con = sandboxed(None, roots)
        note = f"no warehouse at {database} yet (run `tiercast load`): only queries that name no table work"
    sink = open(output, "wb" if fmt == "parquet" else "w", encoding=None if fmt == "parquet" else "utf-8") \
        if output is not None else None
    try:
        with working_directory(dd):  # relative paths in the query are under the data directory
            _answer(con, statements, fmt, limit, schema, sink, dd)
    except duckdb.Error as e:
        if note is None or isinstance(e, duckdb.PermissionException):
            raise
        raise SqlRefused(f"{_one_line(str(e))} (note: {note})") from None
    finally:
        con.close()
        if sink is not None:
            sink.close()
    if note:
        console.print(f"[yellow]note:[/] {note}")
    sys.stdout.flush()


def _answer(con, statements: list[str], fmt: str, limit: int | None, schema: bool, sink, dd: Path) -> None:
    from pipelines.duckdb_engine import engine as duckdb

    if schema:
        rows = schema_rows(con)
        print_json(rows) if fmt == "json" else print_schema(rows)
        return
    if fmt == "parquet":
        write_parquet(con, statements[0], sink if sink is not None else sys.stdout.buffer)
        return
    n = limit if limit is not None else (DEFAULT_TABLE_LIMIT if fmt == "table" else 0)
    try:
        results = fetch(con, statements, n)
    except duckdb.PermissionException as e:
        raise SqlRefused(f"{_one_line(str(e))} (tiercast sql reads only files in the data directory {dd}, "
                         "where relative paths start)") from None
    _emit(results, fmt, n, sink or sys.stdout)


def _emit(results: list[Result], fmt: str, n: int, stream) -> None:
    for i, r in enumerate(results):
        if fmt == "json":
            stream.write(json.dumps(jsonable(json_rows(r)), allow_nan=False) + "\n")
        elif fmt == "csv":
            stream.write(format_csv(r))
        else:
            if len(results) > 1:
                stream.write(("\n" if i else "") + f"-- {r.statement.strip()}\n")
            stream.write(format_table(r) if r.columns else "")
            stream.write(f"({len(r.rows):,} row{'s' if len(r.rows) != 1 else ''}"
                         f"{', cut at --limit ' + str(n) if r.cut else ''})\n")
        if r.cut:
            console.print(f"[yellow]note:[/] {'statement ' + str(i + 1) + ': ' if len(results) > 1 else ''}"
                          f"output cut at {n:,} rows; --limit 0 shows all")
