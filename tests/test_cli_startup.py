"""``tiercast`` starts fast (docs/reference/cli-behaviour.md, start-up time): importing the CLI and building
its help loads no engine (numba, Polars, DuckDB, Great Expectations, pyarrow, numpy), ``tiercast
--help`` not even rich or pydantic, ``tiercast traces`` and ``tiercast sql`` only what they use.
Checked on ``sys.modules`` in a fresh interpreter, never with timings (machines are noisy; the
docs and benchmarks give the times). Also pinned here: what the fast paths stand in for (the
option names in ``pipelines.choices``, the command -> module table, pydantic-free coercion, the
SQL result fetch without Arrow) behaves exactly like what it replaces.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import duckdb
import pytest
import typer
from test_scenario import MINIMAL
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("numba", "polars", "duckdb", "great_expectations", "pyarrow", "numpy")

#: a fresh interpreter runs the snippet, then prints which of ``watch`` it imported
PROBE = """
import atexit, json, sys
watch = {watch!r}
atexit.register(lambda: sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(m for m in watch if m in sys.modules))))
{snippet}
"""


def imported(snippet: str, watch=ENGINES, args=()) -> tuple[list[str], subprocess.CompletedProcess]:
    """The modules of ``watch`` that running ``snippet`` (with ``sys.argv[1:] = args``) imported."""
    p = subprocess.run([sys.executable, "-c", PROBE.format(watch=tuple(watch), snippet=snippet), *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "100"}, timeout=120)
    err, _, mods = p.stderr.rpartition("\nMODULES ")
    p.stderr = err
    return json.loads(mods), p


CLI = "from pipelines.cli import main; sys.argv[0] = 'tiercast'; main()"


def test_importing_the_cli_and_building_its_help_loads_no_engine():
    snippet = """
import typer.main
import pipelines.cli
from pipelines.cli import COMMANDS
group = typer.main.get_command(pipelines.cli.app)  # every command module imported, every command built
ctx = group.make_context("tiercast", ["--help"], resilient_parsing=True)
assert all(n in group.get_help(ctx) for n in COMMANDS)
for name in COMMANDS:  # what `tiercast NAME --help` shows (help is eager: no other option is processed)
    cmd = group.get_command(ctx, name)
    assert "--data-dir" in cmd.get_help(cmd.context_class(cmd, info_name=name, parent=ctx))
"""
    mods, p = imported(snippet)
    assert p.returncode == 0, p.stderr
    assert mods == []


@pytest.mark.parametrize("args, absent", [
    (["--help"], (*ENGINES, "rich", "pydantic")),
    ([], (*ENGINES, "rich", "pydantic")),  # no arguments: the help
    (["--version"], (*ENGINES, "rich", "pydantic")),
    (["traces"], (*ENGINES, "pydantic")),
    (["warm", "--help"], (*ENGINES, "pydantic")),  # compiling is the command's work, not its help's
    # DuckDB's engine only, not its Python layer (pipelines/duckdb_engine.py)
    (["sql", "select 42 as answer"], ("numba", "polars", "duckdb", "great_expectations", "pyarrow", "numpy",
                                      "pydantic")),
])
def test_commands_import_only_what_they_use(tmp_path, args, absent):
    data_dir = ["--data-dir", tmp_path / "d"] if args[:1] in (["traces"], ["sql"]) else []
    mods, p = imported(CLI, watch=absent, args=[*args, *data_dir])
    assert p.returncode == (0 if args else 2), p.stderr  # no arguments: the help, on stderr, exit 2
    assert mods == []
    if args[:1] == ["sql"]:
        assert "answer" in p.stdout and "42" in p.stdout


def test_help_lists_every_command_and_an_unknown_one_gets_a_suggestion():
    from pipelines.cli import COMMANDS

    _, p = imported(CLI, args=["--help"])
    listed = [line.split()[0] for line in p.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert sorted(listed) == sorted(COMMANDS)
    _, p = imported(CLI, args=["trace"])
    assert p.returncode == 2
    assert p.stderr.strip() == "error: No such command 'trace'. Did you mean 'traces'? (see 'tiercast --help')"


def test_a_progress_bar_on_a_terminal_gets_the_console_itself(tmp_path):
    """The consoles are made at first use (common.console stands in for one); rich's progress bar
    needs the console object itself (it enters it as a context manager)."""
    from traces import synth

    synth.write(synth.pattern("database", requests=2000, region_bytes=64 << 20), tmp_path / "w.parquet")
    primary, secondary = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-c", "from pipelines.cli import main; main()", "ingest",
                            str(tmp_path / "w.parquet"), "--data-dir", str(tmp_path / "d"), "--validate", "off"],
                           stdin=secondary, stdout=secondary, stderr=secondary, cwd=ROOT, timeout=120)
        os.close(secondary)
        shown = b""
        while chunk := _read(primary):
            shown += chunk
    finally:
        os.close(primary)
    assert p.returncode == 0, shown.decode(errors="replace")
    assert b"ingested as trace" in b" ".join(shown.split())  # rich wraps at the terminal's width


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # the terminal closed (Linux: EIO once the child is gone and all is read)
        return b""


def test_commands_table_names_the_module_of_every_command():
    from pipelines.cli import COMMANDS, app

    defined = {c.name or c.callback.__name__.replace("_", "-"): c.callback.__module__ for c in app.registered_commands}
    assert defined == {name: f"pipelines.cli.{module}" for name, module in COMMANDS.items()}
    assert list(COMMANDS) == sorted(COMMANDS)


def test_option_names_agree_with_what_they_name():
    from pipelines import calibrate, choices
    from replay import scenario
    from replay.kernels import POLICIES
    from traces.synth import PATTERNS

    assert (choices.MAX_OUTSTANDING, choices.MAX_WARMUP_PCT) == (scenario.MAX_OUTSTANDING, scenario.MAX_WARMUP_PCT)
    hdd = MINIMAL.replace("planning_iops = 150", "planning_iops = 10")  # 100 ms: room for a slow rotation
    assert scenario.loads(hdd.replace("rpm = 10000", f"rpm = {choices.MIN_RPM}"), "min.toml")
    with pytest.raises(ValueError, match=f"rpm: must be >= {choices.MIN_RPM}"):
        scenario.loads(hdd.replace("rpm = 10000", f"rpm = {choices.MIN_RPM - 1}"), "below.toml")
    assert choices.CACHE_POLICIES == tuple(POLICIES)
    assert choices.SYNTH_PATTERNS == tuple(PATTERNS)
    assert (calibrate.BASES, calibrate.WINDOWS) == (choices.CALIBRATE_BASES, choices.CALIBRATE_WINDOWS)


# --- coercion without pydantic ------------------------------------------------------------------


def _probe_app() -> typer.Typer:
    """One command with every kind of parameter tiercast uses; prints what it received."""
    app = typer.Typer(add_completion=False)

    @app.command()
    def probe(
        text: Annotated[str, typer.Argument()],
        path: Annotated[Path | None, typer.Option()] = None,
        existing: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
        count: Annotated[int | None, typer.Option(min=1)] = None,
        share: Annotated[float, typer.Option(max=100)] = 50.0,
        paths: Annotated[list[Path] | None, typer.Option()] = None,
        words: Annotated[list[str] | None, typer.Option("--word")] = None,
        flag: Annotated[bool, typer.Option()] = False,
    ) -> None:
        print(repr((text, path, existing, count, share, paths, words, flag)))

    return app


@pytest.mark.parametrize("args", [
    ["x"], ["é [b]", "--path", "a/b", "--count", "3", "--share", "99.5", "--paths", "p", "--paths", "q",
                    "--word", "w", "--flag"],
    ["x", "--path", ""], ["x", "--existing", "{here}"], ["x", "--existing", "{missing}"],
    ["x", "--existing", "{dir}"], ["x", "--count", "0"], ["x", "--count", "abc"], ["x", "--share", "1e3"],
    ["x", "--no-flag"],
])
def test_coercion_without_pydantic_is_typers_own(tmp_path, monkeypatch, args):
    from typer.core import _TyperParameter

    from pipelines.cli import coercion

    (tmp_path / "here.txt").write_text("x")
    args = [a.format(here=tmp_path / "here.txt", missing=tmp_path / "nope", dir=tmp_path) for a in args]
    assert _TyperParameter.get_runtime_param is coercion._get_runtime_param  # installed (typer internals found)
    ours = CliRunner().invoke(_probe_app(), args)
    monkeypatch.setattr(_TyperParameter, "get_runtime_param", coercion.TYPER_GET_RUNTIME_PARAM)
    theirs = CliRunner().invoke(_probe_app(), args)
    assert (ours.exit_code, ours.output) == (theirs.exit_code, theirs.output)


# --- SQL results without Arrow ----------------------------------------------------------------

PLAIN_VALUES = {
    "BOOLEAN": ["true", "false"], "TINYINT": ["-128", "127"], "SMALLINT": ["-32768"], "INTEGER": ["-2147483648"],
    "BIGINT": ["-9223372036854775808", "9223372036854775807"], "UTINYINT": ["255"], "USMALLINT": ["65535"],
    "UINTEGER": ["4294967295"], "UBIGINT": ["18446744073709551615"], "FLOAT": ["1.5", "'nan'", "'inf'", "'-0.0'"],
    "DOUBLE": ["0.1", "'nan'", "'-inf'", "1e308"], "VARCHAR": ["'é\n\t'", "''"], "JSON": ["'{\"a\": [1, null]}'"],
    "BLOB": ["'\\x00\\xff'"], "DATE": ["'2024-02-29'", "'0001-01-01'", "'9999-12-31'"], "TIME": ["'23:59:59.999999'"],
    "TIMESTAMP": ["'2024-01-02 03:04:05.123456'", "'1970-01-01'", "'0001-01-01'"],
    "DECIMAL(4,1)": ["-999.9"], "DECIMAL(18,3)": ["-123.456"], "DECIMAL(38,10)": ["12345678901234567890.0123456789"],
}


def test_sql_plain_types_are_read_as_arrow_would(tmp_path):
    """Results whose columns are all PLAIN_TYPES are fetched by DuckDB itself (no pyarrow, no
    numpy): the values must be exactly the ones Arrow's ``to_pylist`` gave; other types still go
    through Arrow."""
    from pipelines.cli.warehouse import PLAIN_TYPES, run_read_only

    db = tmp_path / "w.duckdb"
    duckdb.connect(str(db)).close()
    assert set(PLAIN_VALUES) >= PLAIN_TYPES
    con = duckdb.connect()
    for kind, values in PLAIN_VALUES.items():
        q = "SELECT * FROM (VALUES " + ", ".join(f"(({v})::{kind})" for v in values) + f", (NULL::{kind})) t(v)"
        arrow = [r for b in con.sql(q).to_arrow_reader(100) for r in zip(*(c.to_pylist() for c in b.columns), strict=True)]
        [res] = run_read_only(db, [q], 0)
        assert res.types == [kind] and repr(res.rows) == repr(arrow), kind
        [cut] = run_read_only(db, [q], 1)
        assert cut.cut and repr(cut.rows) == repr(arrow[:1])
    [hugeint] = run_read_only(db, ["SELECT 1::HUGEINT AS h"], 0)  # not plain: as before, through Arrow
    assert repr(hugeint.rows) == repr([(Decimal(1),)])


def test_the_engine_module_is_what_duckdb_re_exports():
    """pipelines/duckdb_engine.py uses the private extension module ``_duckdb`` to skip DuckDB's
    Python layer: pin that ``duckdb`` hands out the same connect, connections and exceptions, and
    that the engine alone streams a result and describes its columns."""
    from pipelines.duckdb_engine import engine

    for name in ("connect", "extract_statements", "DuckDBPyConnection", "Error", "IOException",
                 "PermissionException", "ParserException", "StatementType"):
        assert getattr(duckdb, name) is getattr(engine, name), name
    con = engine.connect()
    con.execute("SELECT i, i / 2 AS x FROM range(1000000000) t(i)")  # streamed: returns at once
    assert [(d[0], str(d[1])) for d in con.description] == [("i", "BIGINT"), ("x", "DOUBLE")]
    assert con.fetchmany(3) == [(0, 0.0), (1, 0.5), (2, 1.0)]
    [s] = engine.extract_statements("DESCRIBE SELECT 1")
    assert s.type.name == "SELECT"
    with pytest.raises(duckdb.ParserException, match="syntax error"):
        con.execute("SELEC 1")


def test_cyclic_collection_pauses_at_start_resumes_with_startup_frozen_and_skips_shutdown():
    """``pipelines.cli.startup_gc``: paused while the CLI starts, back on RESUME_AFTER_S later with
    what start-up created frozen (a long command collects cycles again), frozen again at exit."""
    snippet = """
import gc, time, weakref
from pipelines.cli import startup_gc
startup_gc.RESUME_AFTER_S = 0.2
startup_gc.pause()
assert not gc.isenabled()
class Node:
    pass
a = Node(); a.me = a  # a cycle dropped during start-up: frozen with the rest, never collected
early = weakref.ref(a)
del a
time.sleep(1.0)
assert gc.isenabled() and gc.get_freeze_count() > 0
frozen = gc.get_freeze_count()
b = Node(); b.me = b  # after start-up: collected as usual
late = weakref.ref(b)
del b
gc.collect()
assert early() is not None and late() is None
alive = [Node() for _ in range(10)]
startup_gc.before_exit()
assert gc.get_freeze_count() > frozen
print("ok")
"""
    _, p = imported(snippet)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"
    # and main() pauses it: a command that ends at once (--help) exits cleanly through before_exit
    _, p = imported(CLI + "\n", args=["--help"])
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("checked", [True, False])
def test_shutdown_with_duckdb_loaded_reports_no_leaks(checked, tmp_path):
    """DuckDB 2.0's nanobind bindings print "nanobind: leaked ..." at shutdown for every object of
    theirs the final collection did not free; ``before_exit`` unfreezes when DuckDB is loaded.
    ``checked=False`` (the module left out of LEAK_CHECKED_MODULES) shows the warning is real."""
    snippet = f"""
from pipelines.cli import startup_gc
if not {checked}:
    startup_gc.LEAK_CHECKED_MODULES = ()
startup_gc.RESUME_AFTER_S = 0.05  # the query below outlasts it: its objects are collectable
{CLI}
"""
    p = subprocess.run([sys.executable, "-c", "import sys\n" + snippet, "sql", "--data-dir", str(tmp_path),
                        "select sum(hash(range)) from range(50000000)"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert ("nanobind: leaked" in p.stderr) is not checked, p.stderr
