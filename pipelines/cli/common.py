"""Shared pieces of the CLI: the Typer app, common options, progress bars, JSON output, and how
errors end (one line and an exit code; see docs/reference/cli-behaviour.md).

Exit codes: 0 ok, 1 internal error (a bug: the traceback with ``--debug``), 2 an error the user
can act on (bad option or input, unknown id, unreadable or unwritable file, bad SQL), 130 / 143
interrupted by SIGINT / SIGTERM.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import enum
import json
import math
import os
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import Annotated

import typer

# typer 0.29 vendors click as the private typer._click and re-exports neither ClickException (the
# base of every usage error, which we turn into one line with exit 2), NoArgsIsHelpError nor
# get_current_context; the installed click package is not the one typer raises from. Pinned by
# tests/test_cli.py::test_vendored_click_is_what_typer_raises.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer._click.globals import get_current_context
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit

from pipelines.catalog import ENV_DATA_DIR, resolve_data_dir
from pipelines.cli import COMMANDS, coercion, interrupt, load_commands
from pipelines.files import OutputPathError, atomic_output, check_output, check_output_dir, write_text
from traces.errors import TraceFormatError

coercion.install()  # no pydantic for str and path values (start-up time)

__all__ = [
    "OutputPathError", "atomic_output", "check_output", "check_output_dir", "write_text",  # re-exported
]

ENV_DEBUG = "TIERCAST_DEBUG"


class _Console:
    """A rich console of :mod:`pipelines.cli.console` (``factory`` names the function that makes
    it), made when first used: rich is imported then, not by ``--help``."""

    def __init__(self, factory: str):
        self._factory, self._made = factory, None

    @property
    def rich(self):
        """The console itself (what rich needs where it takes a console, e.g. a progress bar)."""
        if self._made is None:
            from pipelines.cli import console as consoles

            self._made = getattr(consoles, self._factory)()
        return self._made

    def __getattr__(self, name: str):
        return getattr(self.rich, name)


console = _Console("stderr_console")  # messages
out = _Console("stdout_console")  # results


def mode_text(run: Mapping) -> str:
    """How a run issued its requests: ``open (trace timing)`` or ``closed, 12 outstanding``."""
    if run.get("mode") == "closed":
        return f"closed, {run.get('outstanding')} outstanding"
    return "open (trace timing)"


def print_findings(findings, label: str = "") -> None:
    """A run's physics checks (``pipelines.physics``) on stderr, one line each."""
    for f in findings or ():
        kind = "model error" if f["severity"] == "model_error" else "caveat"
        console.print(f"[{'red' if kind == 'model error' else 'yellow'}]{kind}[/]{' ' + label if label else ''}: "
                      f"{f['check']}: {f['message']}", markup=True, highlight=False)


def table(*columns, **kw):
    """A rich ``Table`` (rich is imported when a table is shown, not when a command module is)."""
    from rich.table import Table

    return Table(*columns, **kw)


def decision_table(columns: list[tuple[str, bool]], rows: list[list[str]], wide: bool = False,
                   wrap: tuple[int, ...] = (0,), **kw):
    """A results table that fits 80 columns: ``columns`` are ``(header, decision)``; without
    ``wide`` only the decision columns are shown, each cell whole, except the columns ``wrap``
    (indices into ``columns``; default the first, the name), which share the width left, wrapping
    between words (a word longer than that is folded, never cut to "vn…"). ``wide`` (``--wide``)
    adds the other columns at their natural widths."""
    keep = [i for i, (_, decision) in enumerate(columns) if wide or decision or i == 0]
    t = table(box=_simple_head(), pad_edge=False, show_edge=False, collapse_padding=True, **kw)
    natural = {i: max(len(x) for x in (columns[i][0], *(str(r[i]) for r in rows))) for i in keep}
    wraps = [i for i in keep if i in wrap]
    # two characters between columns (padding collapsed); the wrapping columns share what is left
    room = TERMINAL_COLUMNS - sum(natural[i] for i in keep if i not in wrap) - 2 * (len(keep) - 1)
    share = {i: natural[i] for i in wraps}
    while sum(share.values()) > room and max(share.values()) > 12:  # narrow the widest wrapping column first
        widest = max(share, key=share.get)
        share[widest] -= 1
    for i in keep:
        if i in wrap:
            t.add_column(columns[i][0], overflow="fold", width=None if wide else share[i])
        else:
            t.add_column(columns[i][0], justify="left" if i == keep[0] else "right", no_wrap=not wide,
                         width=None if wide else natural[i])
    for r in rows:
        t.add_row(*(str(r[i]) for i in keep))
    return t


#: the terminal width a results table fits without ``--wide``
TERMINAL_COLUMNS = 80


def _simple_head():
    """rich's SIMPLE_HEAD box: a rule under the header, no vertical borders (two fewer columns of
    the 80 per column)."""
    from rich import box

    return box.SIMPLE_HEAD


#: ``--wide``: every column of a results table (default: the decision columns, to fit 80 columns)
WideOpt = Annotated[bool, typer.Option("--wide", help="Show every column (default: the decision columns, which "
                                                      "fit an 80-column terminal).")]

# ---------------------------------------------------------------------------------------------
# errors


def _one_line(msg: str) -> str:
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())


def _duckdb_message(msg: str) -> str:
    """DuckDB's multi-line messages as one line (without the ``LINE 1: ...`` / ``^^^`` pointer)."""
    lines = [x.strip() for x in msg.splitlines()]
    keep = [x for x in lines if x and not x.startswith("LINE ") and not set(x) <= {"^", " "}]
    return " ".join(keep)


def _os_message(e: OSError) -> str:
    if not e.strerror:
        return _one_line(str(e))
    if e.filename is not None and e.filename2 is not None:
        return f"{e.filename} -> {e.filename2}: {e.strerror}"
    if e.filename is not None:
        return f"{e.filename}: {e.strerror}"
    return e.strerror


def describe_error(e: BaseException) -> tuple[int, str]:
    """(exit code, one-line message) for an exception that ended a command."""
    if isinstance(e, KeyboardInterrupt):
        return interrupt.exit_code(), "interrupted"
    if isinstance(e, TraceFormatError | OutputPathError):
        return 2, _one_line(str(e))
    if isinstance(e, KeyError | IndexError):  # almost always a bug, not an unknown name
        return 1, f"internal error: {type(e).__name__}: {_one_line(str(e))} (run with --debug for the traceback)"
    if isinstance(e, UnicodeDecodeError):
        return 2, f"cannot decode text as {e.encoding}: byte 0x{e.object[e.start]:02x} at offset {e.start} ({e.reason})"
    if isinstance(e, LookupError | ValueError):  # incl. tomllib.TOMLDecodeError, pyarrow's ArrowInvalid
        return 2, _one_line(str(e)) or type(e).__name__
    if isinstance(e, OSError):  # incl. PermissionError, IsADirectoryError, ENOSPC
        return 2, _os_message(e)
    duckdb = sys.modules.get("_duckdb")  # only when something imported it: no import cost otherwise
    if duckdb is not None and isinstance(e, duckdb.Error):
        return 2, _duckdb_message(str(e))
    return 1, f"internal error: {type(e).__name__}: {_one_line(str(e))} (run with --debug for the traceback)"


def _debug_env() -> bool:
    return os.environ.get(ENV_DEBUG, "").strip().lower() not in ("", "0", "false", "no")


_state = {"debug": False, "json": False}


def _report(code: int, message: str, exc: BaseException | None) -> None:
    if exc is not None and _state["debug"]:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, KeyboardInterrupt):
        interrupt.say_interrupted()
    else:
        console.print(f"[bold red]error:[/] {message}")
    if _state["json"]:
        try:
            print_json({"error": message})
        except OSError:
            pass


def _wants_json(args: list[str]) -> bool:
    args = args[: args.index("--")] if "--" in args else args
    return "--json" in args or "--format=json" in args or any(
        a == "--format" and b == "json" for a, b in zip(args, args[1:], strict=False))


class TiercastGroup(TyperGroup):
    """The top-level command. ``main(handle_errors=True)`` (what ``tiercast`` runs) turns every
    exception into one line and an exit code; without it (tests with CliRunner) exceptions
    propagate as before.

    Commands are loaded lazily (click's lazy group pattern): a command's module is imported
    when the command is looked up (:data:`pipelines.cli.COMMANDS`), all of them to list them
    (``--help``) or to suggest a name for an unknown one."""

    def _add_registered(self) -> None:
        """Build the commands registered on ``app`` since the group was built."""
        from typer.main import get_command_from_info, get_command_name

        for info in app.registered_commands:
            if (info.name or get_command_name(info.callback.__name__)) not in self.commands:
                cmd = get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                            rich_markup_mode=app.rich_markup_mode)
                self.commands[cmd.name] = cmd

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            load_commands([cmd_name])
            self._add_registered()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx) -> list[str]:
        load_commands()
        self._add_registered()
        return super().list_commands(ctx)

    def resolve_command(self, ctx, args):
        if args and args[0] not in COMMANDS:  # every command known, for typer's "Did you mean ...?"
            self.list_commands(ctx)
        return super().resolve_command(ctx, args)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             handle_errors: bool = False, **extra):
        if not handle_errors:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        args = list(sys.argv[1:] if args is None else args)
        end = args.index("--") if "--" in args else len(args)
        debug = "--debug" in args[:end]
        args = [a for i, a in enumerate(args) if i >= end or a != "--debug"]  # accepted anywhere
        _state["debug"] = debug or _debug_env()
        _state["json"] = _wants_json(args)
        if prog_name is None:
            prog_name = "tiercast"
        try:
            try:
                with self.make_context(prog_name, args, **extra) as ctx:
                    self.invoke(ctx)
                code = 0
            except Exit as e:
                code = e.exit_code
            except Abort as e:  # click's own prompt aborts (EOF / Ctrl-C)
                cause = e.__cause__ if isinstance(e.__cause__, KeyboardInterrupt) else KeyboardInterrupt()
                code, msg = describe_error(cause)
                _report(code, msg, cause)
            except NoArgsIsHelpError as e:
                e.show()
                code = e.exit_code
            except ClickException as e:
                msg = _one_line(e.format_message())
                ctx = getattr(e, "ctx", None)
                msg += f" (see '{ctx.command_path} --help')" if ctx is not None else " (see --help)"
                code = e.exit_code
                _report(code, msg, None)
            except BrokenPipeError:  # `tiercast ... | head`: stop quietly
                try:  # what is still buffered goes nowhere, not into a second BrokenPipeError at exit
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except (OSError, ValueError):
                    pass
                code = 141
            except (KeyboardInterrupt, Exception) as e:
                code, msg = describe_error(e)
                _report(code, msg, e)
        except KeyboardInterrupt as e:  # a second interrupt while reporting the first
            code, _ = describe_error(e)
            interrupt.say_interrupted()
        sys.exit(code)


app = typer.Typer(
    name="tiercast",
    cls=TiercastGroup,
    help="Trace-replay analytics for storage engineers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: brackets ([default: ...]) are shown, not eaten
)


def versions() -> dict[str, str]:
    """tiercast's version and the versions that shape its results (from package metadata: no
    imports). Extend here: ``tiercast --version`` prints every entry."""
    from importlib.metadata import PackageNotFoundError, version

    def v(pkg: str) -> str:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "not installed"

    out_ = {"tiercast": v("tiercast"), "python": sys.version.split()[0]}
    for pkg in ("duckdb", "polars", "pyarrow", "numba", "numpy"):
        out_[pkg] = v(pkg)
    out_.update(_model_versions())
    return out_


def _model_versions() -> dict[str, str]:
    """Versions of what shapes results, from the modules that define them when they exist:
    ``replay.version`` (model source hashes) and ``pipelines.versions`` (a ``versions()`` dict,
    e.g. reader versions). Cheap modules (hashlib only), imported for ``--version`` alone."""
    import importlib

    found: dict[str, str] = {}
    try:
        rv = importlib.import_module("replay.version")
        for key, attr in (("array model", "ARRAY_MODEL"), ("cache model", "CACHE_MODEL"), ("skew", "SKEW_MODEL"),
                          ("model vs measured", "COMPARE_MODEL")):
            if hasattr(rv, attr) and hasattr(rv, "model_version"):
                found[key] = str(rv.model_version(getattr(rv, attr)))
    except Exception:  # noqa: BLE001 - absent or broken: --version still prints the rest
        pass
    try:
        pv = importlib.import_module("pipelines.versions")
        extra = pv.versions() if callable(getattr(pv, "versions", None)) else {}
        found.update({str(k): str(x) for k, x in dict(extra).items()})
    except Exception:  # noqa: BLE001
        pass
    return found


def _version_callback(value: bool) -> None:
    if value:
        vs = versions()
        sys.stdout.write(f"tiercast {vs.pop('tiercast')}\n" + ", ".join(f"{k} {x}" for k, x in vs.items()) + "\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version_callback,
                                          help="Print the version of tiercast (and of its engines) and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="On an error, print the Python traceback too (also "
                                        f"{ENV_DEBUG}=1; accepted anywhere on the command line).")] = False,
) -> None:
    """Trace-replay analytics for storage engineers."""
    if debug:
        _state["debug"] = True


DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar=ENV_DATA_DIR, help="Data directory [default: ./tiercast-data]."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout (errors too: "
                                                      '{"error": "..."}).')]
#: ``--jobs N``: replays at once, in worker processes (``pipelines.workers``); None: the cores
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, help="Replays run at once, in worker processes (default: the cores this process may "
    "use; 1: one after another in this process).")]

def checked(parse, ok, expected: str):
    """An option callback: ``parse(text)`` must not raise ValueError and ``ok(value)`` must hold,
    else typer.BadParameter (exit 2, the option named). None passes (an option left unset)."""

    def callback(text: str | None) -> str | None:
        if text is None:
            return text
        try:
            value = parse(text)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        if not ok(value):
            raise typer.BadParameter(f"{expected}, got {text!r}")
        return text

    return callback


def _num(x: float) -> str:
    """12, 99, 0.5 (not 12.0 or 1e+06); integers of any size as they are."""
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if x.is_integer() else str(x)


def bounded(lo: float | None = None, hi: float | None = None, *, integer: bool = False,
            lo_open: bool = False) -> Callable:
    """An option callback refusing values outside [lo, hi] (``lo_open``: (lo, hi]), NaN and
    infinities (``float`` takes "nan" and "inf") with ``typer.BadParameter`` (exit 2; click names
    the option). None passes (an option left unset)."""
    kind = "an integer" if integer else "a number"
    if lo is not None and hi is not None:
        rng = f" > {_num(lo)} and <= {_num(hi)}" if lo_open else f" from {_num(lo)} to {_num(hi)}"
    elif lo is not None or hi is not None:
        rng = f" {'>' if lo_open else '>='} {_num(lo)}" if lo is not None else f" <= {_num(hi)}"
    else:
        rng = ""

    def check(value):
        if value is None:
            return value
        if isinstance(value, float) and not math.isfinite(value):
            raise typer.BadParameter(f"must be a finite number{rng}, got {value}")
        below = lo is not None and (value <= lo if lo_open else value < lo)
        if below or (hi is not None and value > hi):
            raise typer.BadParameter(f"must be {kind}{rng}, got {_num(value)}")
        return value

    return check


def one_of(value: str, allowed: tuple[str, ...]) -> str:
    """Option callback: refuse a value outside ``allowed`` with ``typer.BadParameter`` (exit 2;
    click names the option), listing the allowed values."""
    if value not in allowed:
        raise typer.BadParameter(f"must be one of {', '.join(allowed)}; got {value!r}")
    return value


def exclusive(first: str, second: str, why: str) -> UsageError:
    """The usage error (exit 2) of two options given together that exclude each other."""
    return UsageError(f"{first} and {second} exclude each other: {why}", ctx=get_current_context(silent=True))


def check_out_option(path: Path, option: str, default: Path | None = None, *, directory: bool = False) -> Path:
    """The file (``directory``: the folder) an output option names, checked before any work: never
    a directory, device or FIFO, and refused when the folder it goes into does not exist (a
    mistyped path is not created; docs/reference/cli-behaviour.md, "Files written for you"). The option's
    ``default`` (tiercast's own ``reports/``) is created when needed."""
    if directory:
        return check_output_dir(path, option, parent_must_exist=path != default)
    return check_output(path, option, parent_must_exist=path != default)


#: commands that write into the data directory: its writability is checked before any work
WRITES_DATA_DIR = frozenset({"ingest", "load", "replay", "sweep", "simulate", "mrc", "skew", "capture", "demo",
                             "compare", "size", "experiments", "validate", "compare-measured"})


def check_data_dir(d: Path, write: bool) -> Path:
    """Refuse a data directory that is not a directory, or (``write``) cannot be written, up front."""
    d = Path(d)
    if d.exists() and not d.is_dir():
        raise OutputPathError(f"data directory {d} is not a directory")
    if not write:
        return d
    probe = d
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise OutputPathError(f"data directory {d}: {probe} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        where = "" if probe == d else f" ({probe} cannot be written)"
        raise OutputPathError(f"data directory {d} is not writable{where}: {e.strerror or e}") from None
    return d


def data_dir_of(opt: Path | None, write: bool | None = None) -> Path:
    """The data directory of a command (``--data-dir``, ``TIERCAST_DATA_DIR``, ./tiercast-data),
    checked: a directory, and writable when the command writes (``write=None``: the commands in
    :data:`WRITES_DATA_DIR`)."""
    d = resolve_data_dir(opt)
    if write is None:
        ctx = get_current_context(silent=True)
        write = ctx is not None and ctx.info_name in WRITES_DATA_DIR
    return check_data_dir(d, write)


# ---------------------------------------------------------------------------------------------
# JSON

#: fields that summaries and manifests carry as JSON text: emitted as JSON objects, not strings
JSON_TEXT_FIELDS = frozenset({"lines_skipped", "reader_metadata", "workload", "validation"})


def jsonable(obj, key: str | None = None):
    """``obj`` as plain JSON values: numpy / Decimal integers as ints, floats as floats (NaN and
    infinities as null), dates and times in ISO 8601, paths as strings, nested JSON text of
    :data:`JSON_TEXT_FIELDS` decoded."""
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        if key in JSON_TEXT_FIELDS and obj[:1] in ("{", "["):
            try:
                return json.loads(obj)
            except ValueError:
                return obj
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, decimal.Decimal):
        if not obj.is_finite():
            return None
        return int(obj) if obj.as_tuple().exponent >= 0 else float(obj)
    if isinstance(obj, _dt.datetime | _dt.date | _dt.time):
        return obj.isoformat()
    if isinstance(obj, _dt.timedelta):
        return obj.total_seconds()
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v, str(k)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, set | frozenset):
        items = [jsonable(v) for v in obj]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(obj, enum.Enum):
        return jsonable(obj.value)
    if isinstance(obj, PurePath | uuid.UUID):
        return str(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return bytes(obj).hex()
    if type(obj).__module__ == "numpy":  # numpy scalars and arrays, without importing numpy
        return jsonable(obj.tolist() if hasattr(obj, "shape") and obj.shape else obj.item(), key)
    if hasattr(obj, "to_dicts"):  # a Polars frame
        return jsonable(obj.to_dicts())
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return jsonable(dataclasses.asdict(obj))
    return str(obj)


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(jsonable(obj), allow_nan=False) + "\n")
    sys.stdout.flush()


def count_text(done: int, total: int | None) -> str:
    """A progress bar's count: ``12,000 of 100,000`` (never cut, unlike rich's M/N column)."""
    return f"{done:,} of {total:,}" if total else f"{done:,}"


@contextmanager
def progress_bar(label: str, unit: str = "bytes", enabled: bool = True):
    """A transient rich progress bar on stderr over ``unit`` (``bytes``: size and rate; else a
    count of that unit, e.g. ``requests``); yields a ``callback(done, total)``, or None when
    stderr is not a terminal or not ``enabled``. rich.progress is imported only to show one."""
    if not enabled or not console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.table import Column

    counts = (DownloadColumn(), TransferSpeedColumn()) if unit == "bytes" else (
        TextColumn("{task.fields[count]} " + unit, table_column=Column(no_wrap=True)),)
    # the label gives way (cut with an ellipsis) before the counts do
    label_column = TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1))
    with Progress(label_column, BarColumn(bar_width=12), *counts, TimeRemainingColumn(),
                  console=console.rich, transient=True, expand=True) as p:
        task = p.add_task(label, total=None, count="")
        yield lambda done, total: p.update(task, completed=done, total=total, count=count_text(done, total))


def run_app() -> None:
    """Run ``tiercast``: errors become one line on stderr (and ``{"error": ...}`` on stdout with
    ``--json``) and an exit code; ``--debug`` or TIERCAST_DEBUG=1 adds the traceback."""
    interrupt.install()
    try:
        app(handle_errors=True)
    except SystemExit:
        raise
    except BaseException as e:  # building the command itself failed (a bug) or Ctrl-C before parsing
        code, msg = describe_error(e)
        _state["debug"] = _state["debug"] or _debug_env()
        _report(code, msg, e)
        sys.exit(code)
