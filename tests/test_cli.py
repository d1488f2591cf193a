"""How the ``tiercast`` command behaves for people and scripts (docs/reference/cli-behaviour.md): every
error is one line and an exit code (0 ok, 1 internal error, 2 user error, 130/143 interrupted),
``--debug`` adds the traceback, ``--json`` stays JSON on error, ``sql`` never writes, output
files are replaced atomically and only when they are regular files, help text keeps its
brackets, invalid option values are refused before any work.

CLI tests go through ``main(handle_errors=True)``, the same path as the ``tiercast`` script
(``run``); a few run the real script in a subprocess.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import errno
import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import require
from test_readers_malformed import FAMILIES, GENERIC_MAPPING
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.cli.common import describe_error, jsonable
from pipelines.cli.console import StderrConsole

ROOT = Path(__file__).resolve().parent.parent
TIERCAST = [sys.executable, "-c", "from pipelines.cli import main; main()"]


def run(*args, env: dict | None = None):
    """``tiercast ARGS`` in-process, through the same error handling as the installed script."""
    return CliRunner().invoke(app, [str(a) for a in args], env=env, handle_errors=True)


def script(*args, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*TIERCAST, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, **kw)


def one_error_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A small ingested synthetic trace: (data dir, trace id)."""
    d = tmp_path_factory.mktemp("cli")
    src = d / "w.parquet"
    r = run("synth", "--out", src, "--requests", 3000, "--region", "64MiB", "--seed", 3)
    assert r.exit_code == 0, r.output
    r = run("ingest", src, "--data-dir", d / "data", "--validate", "off", "--json")
    assert r.exit_code == 0, r.output
    assert run("load", "--data-dir", d / "data").exit_code == 0
    return d / "data", json.loads(r.stdout)["trace_id"]


# --- 1. no raw tracebacks ---------------------------------------------------------------------


def _family_garbage(tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    """A file of family ``name`` where no line parses, and the options to ingest it with."""
    fam = FAMILIES[name]
    bad = fam.wrong_columns[0]
    head = [fam.header] if name == "generic" else []
    p = tmp_path / f"bad-{name}.txt"
    p.write_text("\n".join(head + [bad] * 5) + "\n")
    opts = ["--format", fam.fmt]
    if name == "generic":
        m = tmp_path / "mapping.toml"
        m.write_text(GENERIC_MAPPING)
        opts += ["-o", f"mapping={m}"]
    return p, opts


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_ingest_malformed_file_of_every_family_is_one_line(family, tmp_path):
    path, opts = _family_garbage(tmp_path, family)
    r = run("ingest", path, *opts, "--data-dir", tmp_path / "data", "--validate", "off")
    assert r.exit_code == 2
    line = one_error_line(r.stderr)
    assert line.startswith("error: ") and str(path) in line


def _binary_garbage(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 64)


def _truncated_gzip(p: Path) -> None:
    p.write_bytes(gzip.compress(b"128166372003061629,usr,0,Read,0,512,10\n" * 5000)[:300])


def _bad_vscsi(p: Path) -> None:
    p.write_bytes(b"\x01" * 32 * 10)


def _not_parquet(p: Path) -> None:
    p.write_bytes(b"PAR1" + b"\x00" * 100)


@pytest.mark.parametrize("make, fmt", [
    (lambda p: p.write_bytes(b""), None),
    (_binary_garbage, None),
    (_truncated_gzip, None),
    (_bad_vscsi, "vscsi"),
    (_not_parquet, "tiercast-parquet"),
], ids=["empty", "binary-garbage", "truncated-gzip", "vscsi-garbage", "parquet-garbage"])
def test_ingest_unreadable_files_are_one_line(make, fmt, tmp_path):
    p = tmp_path / "input.bin"
    make(p)
    r = run("ingest", p, *(["--format", fmt] if fmt else []), "--data-dir", tmp_path / "data")
    assert r.exit_code == 2, r.output
    assert one_error_line(r.stderr).startswith("error: ")


def test_ingest_malformed_in_a_real_process_is_one_line(tmp_path):
    path, opts = _family_garbage(tmp_path, "msr")
    p = script("ingest", path, *opts, "--data-dir", tmp_path / "data")
    assert p.returncode == 2
    assert one_error_line(p.stderr).startswith(f"error: {path}")
    p = script("ingest", path, *opts, "--data-dir", tmp_path / "data", "--json")
    assert p.returncode == 2 and str(path) in json.loads(p.stdout)["error"]


def test_missing_input_and_directory_input_are_one_line(tmp_path):
    for target in (tmp_path / "nosuch.csv", tmp_path):
        r = run("ingest", target, "--data-dir", tmp_path / "data")
        assert r.exit_code == 2
        one_error_line(r.stderr)


@pytest.mark.parametrize("cmd", [["simulate"], ["mrc"], ["replay", "-s", "vnx5400"], ["sweep", "-s", "vnx5400"]])
def test_unknown_trace_id_is_one_line_and_json(cmd, trace):
    d, _ = trace
    r = run(cmd[0], "nosuchtrace", *cmd[1:], "--data-dir", d)
    assert r.exit_code == 2
    assert "no ingested trace 'nosuchtrace'" in one_error_line(r.stderr)
    r = run(cmd[0], "nosuchtrace", *cmd[1:], "--data-dir", d, "--json")
    assert r.exit_code == 2
    assert "no ingested trace 'nosuchtrace'" in json.loads(r.stdout)["error"]


def test_bad_size_is_one_line(trace):
    d, tid = trace
    r = run("simulate", tid, "--cache-size", "12XB", "--data-dir", d)
    assert r.exit_code == 2
    assert "'12XB'" in one_error_line(r.stderr)
    r = run("mrc", tid, "--sizes", "1GiB,12XB", "--data-dir", d, "--json")
    assert r.exit_code == 2 and "'12XB'" in json.loads(r.stdout)["error"]


def test_bad_toml_scenario_is_one_line(trace, tmp_path):
    d, tid = trace
    bad = tmp_path / "bad.toml"
    bad.write_text("[cache\nsize = 1\n")
    r = run("replay", tid, "-s", bad, "--data-dir", d)
    assert r.exit_code == 2
    one_error_line(r.stderr)
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("name = 'caf\xe9'\n".encode("latin-1"))
    r = run("replay", tid, "-s", latin1, "--data-dir", d)
    assert r.exit_code == 2
    one_error_line(r.stderr)


def test_usage_errors_keep_exit_2_and_are_one_line(trace):
    d, tid = trace
    for args in (["simulate"], ["simulate", tid, "--no-such-option"], ["nosuchcommand"],
                 ["simulate", tid, "--page-size"]):
        r = run(*args)
        assert r.exit_code == 2, args
        line = one_error_line(r.stderr)
        assert line.startswith("error: ") and "--help" in line


def test_internal_error_is_one_line_and_debug_shows_the_traceback(monkeypatch, tmp_path):
    import pipelines.cli.ingest as cli_ingest

    def boom(_):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli_ingest, "list_traces", boom)
    r = run("traces", "--data-dir", tmp_path)
    assert r.exit_code == 1
    assert one_error_line(r.stderr) == ("error: internal error: RuntimeError: boom (run with --debug for the "
                                        "traceback)")
    for args, env in ((["--debug", "traces"], None), (["traces", "--debug"], None),
                      (["traces"], {"TIERCAST_DEBUG": "1"})):
        r = run(*args, "--data-dir", tmp_path, env=env)
        assert r.exit_code == 1
        assert "Traceback" in r.stderr and 'raise RuntimeError("boom")' in r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith("error: internal error: RuntimeError: boom")
    r = run("traces", "--data-dir", tmp_path, "--json")
    assert r.exit_code == 1 and json.loads(r.stdout) == {
        "error": "internal error: RuntimeError: boom (run with --debug for the traceback)"}


@pytest.mark.parametrize("exc, code, message", [
    (LookupError("no ingested trace 'x'"), 2, "no ingested trace 'x'"),
    (ValueError("bad\nvalue"), 2, "bad value"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "/x/y"), 2, "/x/y: No such file or directory"),
    (PermissionError(errno.EACCES, "Permission denied", "/ro/f"), 2, "/ro/f: Permission denied"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/tmp"), 2, "/tmp: Is a directory"),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "/f/x"), 2, "/f/x: Not a directory"),
    (OSError(errno.ENOSPC, "No space left on device", "/full/x"), 2, "/full/x: No space left on device"),
    (UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte"), 2, "cannot decode text as utf-8: byte 0xff at offset 2 (invalid start byte)"),
    (KeyError("volumes"), 1, "internal error: KeyError: 'volumes' (run with --debug for the traceback)"),
    (TypeError("x"), 1, "internal error: TypeError: x (run with --debug for the traceback)"),
])
def test_describe_error(exc, code, message):
    assert describe_error(exc) == (code, message)


def test_describe_toml_and_duckdb_errors():
    import tomllib

    import duckdb

    try:
        tomllib.loads("[a\n")
    except tomllib.TOMLDecodeError as e:
        code, msg = describe_error(e)
        assert code == 2 and "\n" not in msg
    with pytest.raises(duckdb.Error) as e:
        duckdb.connect().sql("selec 1")
    assert describe_error(e.value) == (2, 'Parser Error: syntax error at or near "selec"')


def test_oserror_in_a_command_is_one_line(monkeypatch, tmp_path):
    import pipelines.cli.ingest as cli_ingest

    def full(_):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setattr(cli_ingest, "list_traces", full)
    r = run("traces", "--data-dir", tmp_path)
    assert r.exit_code == 2
    assert one_error_line(r.stderr) == f"error: {tmp_path / 'x'}: No space left on device"


# --- 2. tiercast sql --------------------------------------------------------------------------


@pytest.mark.parametrize("statement, fragment", [
    ("selec * from traces", 'syntax error at or near "selec"'),
    ("select * from nosuch_table", "Table with name nosuch_table does not exist"),
    ("", "no SQL statement given"),
    ("  ;  ", "no SQL statement given"),
    ("create table t (a int)", "CREATE refused: tiercast sql is read-only"),
    ("insert into traces (trace_id) values ('x')", "INSERT refused"),
    ("set threads = 1", "SET refused"),
    ("attach 'other.duckdb'", "ATTACH refused"),
    ("select 1; drop table traces", "statement 2 (DROP) refused"),
])
def test_sql_errors_are_one_line(statement, fragment, trace):
    d, _ = trace
    r = run("sql", statement, "--data-dir", d)
    assert r.exit_code == 2
    assert fragment in one_error_line(r.stderr)
    r = run("sql", statement, "--data-dir", d, "--json")
    assert r.exit_code == 2 and fragment in json.loads(r.stdout)["error"]


def test_sql_copy_writes_no_file(trace, tmp_path):
    d, _ = trace
    for target in (tmp_path / "out.csv", d / "inside.csv"):
        for stmt in (f"copy (select * from traces) to '{target}'", f"copy traces to '{target}' (format parquet)",
                     f"select 1; copy (select 1) to '{target}'", f"export database '{target}'"):
            r = run("sql", stmt, "--data-dir", d)
            assert r.exit_code == 2, stmt
            assert "refused" in one_error_line(r.stderr)
            assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_sql_is_sandboxed_to_the_data_dir(trace, tmp_path):
    """Below the statement check: external access off except for the data directory, locked."""
    from pipelines.cli.warehouse import run_read_only
    from pipelines.load import db_path

    d, _ = trace
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    r = run("sql", f"select * from read_csv('{outside}')", "--data-dir", d)
    assert r.exit_code == 2
    line = one_error_line(r.stderr)
    assert "disabled by configuration" in line and "reads only files in the data directory" in line
    r = run("sql", "select count(*) as n from requests", "--data-dir", d, "--format", "csv")  # views over Parquet
    assert r.exit_code == 0 and r.stdout.splitlines() == ["n", "3000"]
    import duckdb

    for q in (f"copy (select 1) to '{tmp_path / 'x.csv'}'", "set enable_external_access = true",
              "set allowed_directories = ['/']"):
        with pytest.raises(duckdb.Error):  # even with the statement check bypassed
            run_read_only(db_path(d), [q], 0, [d])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.csv"]


def test_sql_relative_paths_are_under_the_data_dir_from_any_folder(trace, tmp_path, monkeypatch):
    """``read_parquet('traces/...')`` means the data directory's file whatever the current folder
    (one at the same relative path there is not read); a relative path that leaves the data
    directory (``../``) is still refused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d, tid = trace
    rel = f"traces/{tid}/volume=synth0/part-00000.parquet"
    assert (d / rel).is_file()
    decoy = tmp_path / rel  # the same relative path under the current folder, 2 rows
    decoy.parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2]}), decoy)
    monkeypatch.chdir(tmp_path)
    r = run("sql", f"select count(*) as n from read_parquet('{rel}')", "--data-dir", d, "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["n", "3000"]
    r = run("sql", f"select count(*) as n from read_parquet('traces/{tid}/*/*.parquet')", "--data-dir", d,
            "--format", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["n", "3000"]
    assert (d.parent / "w.parquet").is_file()  # the synthetic source, beside the data directory
    for escape in ("../w.parquet", f"traces/{tid}/../../../w.parquet"):
        r = run("sql", f"select count(*) from read_parquet('{escape}')", "--data-dir", d)
        assert r.exit_code == 2, escape
        line = one_error_line(r.stderr)
        assert "disabled by configuration" in line and "reads only files in the data directory" in line
    assert Path.cwd() == tmp_path  # the command's working directory was the data directory, and is restored


def test_sql_sandbox_follows_symlinked_trace_storage(trace, tmp_path):
    """traces/ kept on another disk (a symbolic link): the views over it still work."""
    d, tid = trace
    elsewhere = tmp_path / "bigdisk"
    shutil.copytree(d / "traces", elsewhere)
    dd = tmp_path / "data"
    dd.mkdir()
    (dd / "traces").symlink_to(elsewhere)
    assert run("load", "--data-dir", dd).exit_code == 0
    r = run("sql", "select count(*) as n from requests; select trace_id from traces", "--data-dir", dd)
    assert r.exit_code == 0, r.output
    assert "3000" in r.stdout.split() and tid in r.stdout.split()


def test_sql_every_statement_shown_as_a_table(trace):
    d, tid = trace
    r = run("sql", "select trace_id, rows_accepted from traces; select 2 as two, 'x' as s", "--data-dir", d)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "-- select trace_id, rows_accepted from traces;"
    assert lines[1].split() == ["trace_id", "rows_accepted"]
    assert set(lines[2]) == {"-", " "}
    assert lines[3].split() == [tid, "3000"]
    assert lines[4] == "(1 row)"
    assert "-- select 2 as two, 'x' as s" in lines
    assert lines[-2].split() == ["2", "x"] and lines[-1] == "(1 row)"
    assert "shape:" not in r.stdout and "┌" not in r.stdout  # not a Polars dump


def test_sql_limit_and_formats(trace):
    d, _ = trace
    r = run("sql", "select * from range(1500) t(i)", "--data-dir", d)
    assert r.exit_code == 0
    rows = r.stdout.splitlines()
    assert rows[2].strip() == "0" and rows[-2].strip() == "999" and len(rows) == 2 + 1000 + 1
    assert "cut at --limit 1000" in rows[-1] and "--limit 0 shows all" in r.stderr
    r = run("sql", "select * from range(1500) t(i)", "--data-dir", d, "--limit", "0")
    assert len(r.stdout.splitlines()) == 2 + 1500 + 1 and r.stderr == ""
    r = run("sql", "select i, i * 0.5 as half, 'a,b' as s from range(3) t(i)", "--data-dir", d, "--format", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines() == ["i,half,s", '0,0.0,"a,b"', '1,0.5,"a,b"', '2,1.0,"a,b"']
    r = run("sql", "select 1; select 2", "--data-dir", d, "--format", "csv")
    assert r.exit_code == 2 and "takes one statement" in one_error_line(r.stderr)
    r = run("sql", "select 1", "--data-dir", d, "--format", "xml")
    assert r.exit_code == 2 and "'xml'" in one_error_line(r.stderr)


def test_sql_json_types(trace):
    d, _ = trace
    r = run("sql", "select sum(rows_accepted) as total, avg(rows_accepted) as mean, lines_skipped, "
            "'2026-01-02 03:04:05'::timestamp as ts, 1.25::decimal(10, 2) as dec from traces group by lines_skipped",
            "--data-dir", d, "--json")
    assert r.exit_code == 0, r.output
    [row] = json.loads(r.stdout)
    assert row == {"total": 3000, "mean": 3000.0, "lines_skipped": {}, "ts": "2026-01-02T03:04:05", "dec": 1.25}
    assert isinstance(row["total"], int)


def test_sql_never_loads_nor_writes(tmp_path, trace):
    """No warehouse: statements that name no table still run, with a note; nothing is created."""
    r = run("sql", "select 1", "--data-dir", tmp_path / "absent")
    assert r.exit_code == 0 and r.stdout.splitlines()[-2].strip() == "1"
    assert "no warehouse at" in r.stderr and "tiercast load" in r.stderr
    r = run("sql", "select * from traces", "--data-dir", tmp_path / "absent")
    assert r.exit_code == 2 and "traces does not exist" in one_error_line(r.stderr)
    assert not (tmp_path / "absent").exists()
    d, _ = trace
    before = sorted((p.name, p.stat().st_mtime_ns) for p in d.iterdir())
    assert run("sql", "select count(*) from traces", "--data-dir", d).exit_code == 0
    assert sorted((p.name, p.stat().st_mtime_ns) for p in d.iterdir()) == before


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`tiercast sql ... | head -1`: no BrokenPipeError traceback, no 'Exception ignored' at exit."""
    p = subprocess.Popen([*TIERCAST, "sql", "select * from range(300000) t(i)", "--limit", "0", "--data-dir",
                          str(tmp_path / "d")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().split() == [b"i"]
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141
    assert err == ""


# --- 3. OS errors, output files ---------------------------------------------------------------


def test_data_dir_that_is_a_file(tmp_path, trace):
    f = tmp_path / "afile"
    f.write_text("x")
    for args in (["traces"], ["ingest", f], ["sql", "select 1"], ["load"], ["report", "--out", tmp_path / "r.html"]):
        r = run(*args, "--data-dir", f)
        assert r.exit_code == 2, args
        assert f"data directory {f} is not a directory" in one_error_line(r.stderr)
    assert f.read_text() == "x" and not (tmp_path / "r.html").exists()


def _unprivileged() -> list[str]:
    """A command prefix that drops root (root ignores directory permissions): setpriv to nobody."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    require(setpriv, "running as root without setpriv: cannot drop privileges to test a read-only data dir")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


@contextlib.contextmanager
def _traversable_by_others(path: Path):
    """Let an unprivileged user reach ``path`` (the checkout and its .venv): a checkout inside a
    ``mktemp -d`` directory (mode 700, as CI makes it) is closed to nobody. Adds o+x to the
    ancestors that lack it for the duration, then restores their modes."""
    changed = []
    for d in [path, *path.parents]:
        mode = d.stat().st_mode
        if not mode & stat.S_IXOTH:
            d.chmod(mode | stat.S_IXOTH)
            changed.append((d, mode))
    try:
        yield
    finally:
        for d, mode in changed:
            d.chmod(stat.S_IMODE(mode))


def test_read_only_data_dir_fails_up_front(trace):
    d, _ = trace
    base = Path(tempfile.mkdtemp(prefix="tiercast-ro-"))
    with _traversable_by_others(ROOT), contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, base)
        stack.callback(lambda: (base / "data").chmod(0o755) if (base / "data").exists() else None)
        base.chmod(0o755)
        ro = base / "data"
        ro.mkdir()
        (base / "numba").mkdir()
        (base / "numba").chmod(0o777)
        src = d.parent / "w.parquet"
        shutil.copy(src, base / "w.parquet")
        ro.chmod(0o555)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(base / "numba"), "HOME": str(base)}
        p = subprocess.run([*_unprivileged(), *TIERCAST, "ingest", str(base / "w.parquet"), "--data-dir", str(ro)],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        assert p.returncode == 2, p.stderr
        assert one_error_line(p.stderr) == f"error: data directory {ro} is not writable: Permission denied"
        assert list(ro.iterdir()) == []
        p = subprocess.run([*_unprivileged(), *TIERCAST, "traces", "--data-dir", str(ro)],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        assert p.returncode == 0, p.stderr  # reading a read-only data dir is fine


def test_unwritable_data_dir_is_refused_before_any_work(trace, tmp_path, monkeypatch):
    """The check runs before the command's work starts (which read and hashed the whole input
    first, up to 9 s on a large file, and then failed with a traceback)."""
    import pipelines.cli.common as common
    import pipelines.ingest as ingest_step

    d, _ = trace
    started = []
    monkeypatch.setattr(ingest_step, "ingest_file", lambda *a, **k: started.append(a))

    def refused(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(common.tempfile, "TemporaryFile", refused)
    for args in (["ingest", d.parent / "w.parquet"], ["simulate", "x"], ["load"]):
        r = run(*args, "--data-dir", tmp_path)
        assert r.exit_code == 2, args
        assert one_error_line(r.stderr) == f"error: data directory {tmp_path} is not writable: Permission denied"
    assert started == []
    for args in (["traces"], ["sql", "select 1"]):  # reading needs no write access
        assert run(*args, "--data-dir", tmp_path).exit_code == 0


def test_report_refuses_directories_devices_and_fifos(tmp_path, trace):
    d, _ = trace
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    targets = {tmp_path / "dir": "is a directory", fifo: "is a FIFO", afile / "r.html": "is not a directory"}
    if os.geteuid() == 0 and Path("/dev/full").exists():
        targets[Path("/dev/full")] = "is a character device"
    for target, why in targets.items():
        r = run("report", "--out", target, "--data-dir", d)
        assert r.exit_code == 2, target
        assert why in one_error_line(r.stderr)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    if Path("/dev/full").exists():
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "dir", "fifo"]
    assert list((tmp_path / "dir").iterdir()) == []


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_report_written_atomically(tmp_path, trace, monkeypatch):
    """The page and its CSV folder change together: a report that fails after writing some of its
    tables leaves the previous page and tables as they were, and no empty, half-filled or hidden
    folder."""
    d, _ = trace
    (tmp_path / "reports").mkdir()
    out = tmp_path / "reports" / "r.html"
    r = run("report", "--out", out, "--data-dir", d)
    assert r.exit_code == 0, r.output
    first = _tree(out.parent)
    assert first["r.html"].startswith(b"<!doctype html>") and "r_tables/traces.csv" in first
    assert f"as CSV in {out.parent / 'r_tables'}" in r.stdout
    import pipelines.report as rep

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    traces_section = rep._traces_section

    def full_after_traces_csv(*a, **k):
        traces_section(*a, **k)
        full()

    # the disk fills before any table is written, and after traces.csv was
    for section, failing in (("_runs_section", full), ("_traces_section", full_after_traces_csv)):
        with monkeypatch.context() as m:
            m.setattr(rep, section, failing)
            r = run("report", "--out", out, "--data-dir", d)
            assert r.exit_code == 2 and "No space left on device" in one_error_line(r.stderr)
            assert _tree(out.parent) == first  # the old report and its tables are intact
            assert [p.name for p in out.parent.rglob(".*")] == []
            assert run("report", "--out", tmp_path / "fresh.html", "--data-dir", d).exit_code == 2
            assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # no fresh_tables/, empty or not


def test_report_without_tables_leaves_no_tables_folder_and_drops_stale_ones(tmp_path):
    """A report of an empty data directory has no table: no ``_tables/`` folder, and none named
    in the output; rewriting a report removes the CSVs of its previous version that it no longer
    writes (a file of another kind in the folder is kept)."""
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "r.html"
    stale = tmp_path / "r_tables"
    stale.mkdir()
    (stale / "hit_ratio.csv").write_text("old\n")
    r = run("report", "--out", out, "--data-dir", data)
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"wrote {out}"
    assert b"r_tables/" not in out.read_bytes() and b"also a CSV" not in out.read_bytes()
    assert not stale.exists()
    stale.mkdir()
    (stale / "hit_ratio.csv").write_text("old\n")
    (stale / "notes.txt").write_text("mine\n")
    assert run("report", "--out", out, "--data-dir", data).exit_code == 0
    assert [p.name for p in stale.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "r.html", "r_tables"]


@pytest.mark.parametrize("command, option", [
    (["report"], "--out"),
    (["synth", "--requests", "10"], "--out"),
    (["calibrate", "--measured", "nope"], "--out"),
    (["calibrate", "--measured", "nope"], "--scenario-out"),
    (["experiments", "--quick", "--only", "seed000"], "--report"),
    (["compare", "nope", "--scenario", "vnx2-mcx"], "--out"),
    (["size", "nope", "--base", "vnx5400-fastcache", "--vary", "ssd_cache.capacity_bytes=0,50GB",
      "--target", "p95_ms<=5"], "--out"),
    (["demo"], "--reports"),
])
def test_outputs_into_a_missing_directory_are_refused_naming_it(command, option, tmp_path):
    """An output path the user typed must be in a directory that exists: a mistyped folder is
    refused before any work (exit 2, the missing directory named), never created."""
    missing = tmp_path / "missing" / "dir"
    target = missing / ("reports" if option == "--reports" else "x.out")
    r = run(*command, option, target, "--data-dir", tmp_path / "data")
    assert r.exit_code == 2, r.output
    assert one_error_line(r.stderr) == f"error: {option} {target}: directory {missing} does not exist (create it first)"
    assert list(tmp_path.iterdir()) == []


def test_the_default_reports_folder_is_created(tmp_path, trace, monkeypatch):
    d, _ = trace
    monkeypatch.chdir(tmp_path)
    r = run("report", "--data-dir", d)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "reports" / "report.html").is_file() and (tmp_path / "reports" / "report_tables").is_dir()


def test_synth_out_is_checked_and_atomic(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run("synth", "--out", fifo, "--requests", 10)
    assert r.exit_code == 2 and "is a FIFO" in one_error_line(r.stderr)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    r = run("synth", "--out", tmp_path / "w.parquet", "--requests", 10)
    assert r.exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "w.parquet"]


# --- 4. Ctrl-C and SIGTERM --------------------------------------------------------------------


@pytest.mark.serial  # times the exit after a signal (< 3 s)
@pytest.mark.parametrize("sig, delay, code", [
    (signal.SIGINT, 0.4, 130),   # during start-up (imports)
    (signal.SIGINT, 4.5, 130),   # while generating
    (signal.SIGTERM, 4.5, 143),
])
def test_interrupt_is_prompt_and_clean(sig, delay, code, tmp_path):
    out = tmp_path / "big.parquet"
    p = subprocess.Popen([*TIERCAST, "synth", "--out", str(out), "--requests", "50000000"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    assert p.poll() is None, "finished before the signal: make the workload larger"
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=10)
    finally:
        p.kill()
    # the forced exit fires 1.0 s after the signal; the rest is scheduling on a busy machine (the
    # old behaviour took 3.5-8.6 s, or never printed anything)
    assert time.monotonic() - t0 < 3.0
    assert p.returncode == code
    assert stderr.strip() == "interrupted"
    assert stdout == "" and not out.exists()


# --- 5. brackets survive ----------------------------------------------------------------------


def test_help_keeps_bracketed_defaults():
    r = CliRunner().invoke(app, ["traces", "--help"])
    assert "Data directory [default: ./tiercast-data]." in " ".join(r.stdout.split())
    r = CliRunner().invoke(app, ["mrc", "--help"])
    assert "e.g. 1GiB,2GiB,4GiB" in r.stdout and "default: 20 " in " ".join(r.stdout.split())


def test_errors_and_warnings_keep_brackets(monkeypatch, tmp_path, capsys):
    import pipelines.cli.ingest as cli_ingest

    def missing(_):
        raise ValueError("scenario x.toml: at least one [raid_groups] entry is needed")

    monkeypatch.setattr(cli_ingest, "list_traces", missing)
    r = run("traces", "--data-dir", tmp_path)
    assert r.exit_code == 2
    assert one_error_line(r.stderr) == "error: scenario x.toml: at least one [raid_groups] entry is needed"
    c = StderrConsole(file=sys.stderr, soft_wrap=True)
    c.print("[yellow]warning:[/] section [drive_classes.ssd] and [bold] stay")
    assert capsys.readouterr().err == "warning: section [drive_classes.ssd] and [bold] stay\n"


# --- 6. output --------------------------------------------------------------------------------


def test_jsonable_types():
    import numpy as np

    obj = {"n": np.int64(7), "f": np.float32(0.5), "nan": float("nan"), "d": decimal.Decimal("12"),
           "d2": decimal.Decimal("1.50"), "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
           "day": dt.date(2026, 1, 2), "arr": np.arange(3), "p": Path("/x"),
           "lines_skipped": '{"blank": 2}', "validation": '[{"gx": "ok"}]', "other": '{"kept": "as text"}'}
    assert jsonable(obj) == {"n": 7, "f": 0.5, "nan": None, "d": 12, "d2": 1.5, "when": "2026-01-02T03:04:05+00:00",
                             "day": "2026-01-02", "arr": [0, 1, 2], "p": "/x", "lines_skipped": {"blank": 2},
                             "validation": [{"gx": "ok"}], "other": '{"kept": "as text"}'}
    assert isinstance(jsonable(np.int64(7)), int) and isinstance(jsonable(decimal.Decimal("3")), int)


def test_replay_json_has_objects_not_json_text(trace):
    """No value of a replay summary is JSON text: nested data are lists and objects, as the
    summary itself holds them (FAST VP's tiers too)."""
    d, tid = trace
    for preset in ("vnx5400", "vnx5400-fastvp"):
        r = run("replay", tid, "-s", preset, "--data-dir", d, "--json")
        assert r.exit_code == 0, r.output
        s = json.loads(r.stdout)
        assert isinstance(s["raid_groups"], list) and isinstance(s["requests"], int)
        assert isinstance(s["raid_groups"][0]["flush_pages"], int) and isinstance(s["warnings"], list)
        text = [k for k, v in s.items() if isinstance(v, str) and v[:1] in ("[", "{")]
        assert text == [], text
    assert isinstance(s["tiers"], list) and {"tier", "request_share"} <= set(s["tiers"][0])


def test_version():
    r = run("--version")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == f"tiercast {version('tiercast')}"
    p = script("--version")
    assert p.returncode == 0 and p.stdout.startswith(f"tiercast {version('tiercast')}\n")


def test_version_lists_model_and_reader_versions_when_defined(monkeypatch):
    import types

    from pipelines.cli.common import versions

    rv = types.ModuleType("replay.version")
    rv.ARRAY_MODEL, rv.CACHE_MODEL = ("a",), ("c",)
    rv.model_version = lambda mods: "hash-" + "".join(mods)
    pv = types.ModuleType("pipelines.versions")
    pv.versions = lambda: {"readers": 3}
    monkeypatch.setitem(sys.modules, "replay.version", rv)
    monkeypatch.setitem(sys.modules, "pipelines.versions", pv)
    vs = versions()
    assert vs["array model"] == "hash-a" and vs["cache model"] == "hash-c" and vs["readers"] == "3"
    r = run("--version")
    assert r.exit_code == 0 and "array model hash-a" in r.stdout and "readers 3" in r.stdout
    pv.versions = lambda: 1 / 0  # a broken module does not break --version
    assert "readers" not in versions() and run("--version").exit_code == 0


def test_every_command_takes_data_dir():
    names = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
    assert len(names) >= 17 and "synth" in names and "scenarios" in names
    for name in names:
        r = CliRunner().invoke(app, [name, "--help"])
        assert r.exit_code == 0 and "--data-dir" in r.stdout, name
    r = run("scenarios", "--data-dir", "/nonexistent", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)


def test_output_not_wrapped_when_not_a_terminal(tmp_path):
    deep = tmp_path / ("d" * 120) / ("e" * 60)
    p = script("load", "--data-dir", deep)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == f"{deep / 'tiercast.duckdb'}:"


# --- 7. invalid values refused ----------------------------------------------------------------


@pytest.mark.parametrize("args, option, allowed", [
    (["--read-pct", "150"], "--read-pct", "must be a number from 0 to 100, got 150"),
    (["--read-pct", "-1"], "--read-pct", "must be a number from 0 to 100, got -1"),
    (["--read-pct", "nan"], "--read-pct", "must be a finite number from 0 to 100, got nan"),
    (["--random-pct", "101"], "--random-pct", "must be a number from 0 to 100, got 101"),
    (["--random-pct", "-inf"], "--random-pct", "must be a finite number from 0 to 100, got -inf"),
    (["--block-size", "3000"], "--block-size", "a multiple of 512 B"),
    (["--block-size", "0"], "--block-size", "a multiple of 512 B, 512 B to"),
    (["--block-size", "4GiB"], "--block-size", "to 2,147,483,136 B"),
    (["--requests", "0"], "--requests", "must be an integer >= 1, got 0"),
    (["--requests", "-5"], "--requests", "must be an integer >= 1, got -5"),
    (["--requests", "10000000000000", "--iops", "1e6"], "--requests' / '--duration",
     "10,000,000,000,000 requests need about 909.5 TiB of memory to generate"),
    (["--region", "0"], "--region", "8,192 B or more"),
    (["--region", "1000"], "--region", "a multiple of 512 B"),
    (["--region", "12XB"], "--region", "not a size"),
    (["--outstanding", "0"], "--outstanding", "must be an integer from 1 to 1048576, got 0"),
    (["--outstanding", "99999999999"], "--outstanding", "must be an integer from 1 to 1048576, got 99999999999"),
    (["--seed", "-1"], "--seed", "must be an integer >= 0, got -1"),
    (["--iops", "0"], "--iops", "must be a number > 0 and <= 1000000000, got 0"),
    (["--iops", "-3"], "--iops", "must be a number > 0 and <= 1000000000, got -3"),
    (["--iops", "inf"], "--iops", "must be a finite number > 0 and <= 1000000000, got inf"),
    (["--iops", "nan"], "--iops", "must be a finite number > 0 and <= 1000000000, got nan"),
    (["--iops", "2e9"], "--iops", "must be a number > 0 and <= 1000000000, got 2000000000"),
    (["--requests", "10", "--iops", "1e-9"], "--requests' / '--iops",
     "10 requests at 1e-09 IO/s last 1e+10 s, more than the 1e+09 s a synthetic trace may span"),
    (["--duration", "-5"], "--duration", "must be a number > 0 and <= 1000000000, got -5"),
    (["--duration", "0"], "--duration", "must be a number > 0 and <= 1000000000, got 0"),
    (["--duration", "inf"], "--duration", "must be a finite number > 0 and <= 1000000000, got inf"),
    (["--duration", "nan"], "--duration", "must be a finite number > 0 and <= 1000000000, got nan"),
    (["--duration", "1e9", "--iops", "1e9"], "--requests' / '--duration",
     "1,000,000,000,000,000,000 requests need about"),
    (["--distribution", "zipf:-1"], "--distribution", "zipf's THETA must be a finite number > 0"),
    (["--distribution", "zipf:0"], "--distribution", "zipf's THETA must be a finite number > 0"),
    (["--distribution", "zipf:nan"], "--distribution", "zipf's THETA must be a finite number > 0"),
    (["--distribution", "zipf:inf"], "--distribution", "zipf's THETA must be a finite number > 0"),
    (["--distribution", "zipf:hot"], "--distribution", "zipf's THETA must be a finite number > 0 (uniform for none), got 'hot'"),
    (["--distribution", "zoned:60"], "--distribution", "zoned expects ACCESS/RANGE pairs such as 60/10:40/90"),
    (["--distribution", "zoned:120/50:-20/50"], "--distribution", "zoned percentages must be from 0 to 100"),
    (["--distribution", "zoned:60/10:30/20"], "--distribution", "zoned distribution must sum to 100/100"),
    (["--distribution", "zoned:90/100:10/0"], "--distribution", "a zone with accesses needs a range > 0"),
    (["--distribution", "pareto:0.5"], "--distribution", "unknown distribution 'pareto:0.5'"),
    (["--pattern", "nope"], "--pattern", "is not one of database"),
])
def test_synth_refuses_invalid_values(args, option, allowed, tmp_path):
    out = tmp_path / "w.parquet"
    r = run("synth", "--out", out, *args)
    assert r.exit_code == 2
    line = one_error_line(r.stderr)
    assert f"'{option}'" in line and allowed in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["--requests", "10", "--duration", "2", "--iops", "5"],
                                  ["--requests", "10", "--duration", "2"]])
def test_synth_refuses_requests_with_duration(args, tmp_path):
    """--duration (at --iops) sets the number of requests: with --requests too, one of them would
    be ignored, so the combination is refused."""
    r = run("synth", "--out", tmp_path / "w.parquet", *args)
    assert r.exit_code == 2
    assert one_error_line(r.stderr).startswith("error: --requests and --duration exclude each other:")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("distribution", ["uniform", "zipf", "zipf:0.8", "zipf:1.2", "zoned:60/10:40/90",
                                          "zoned:0/50:100/50"])
def test_synth_takes_the_distributions_it_documents(distribution, tmp_path):
    r = run("synth", "--out", tmp_path / "w.parquet", "--requests", "200", "--region", "1MiB",
            "--distribution", distribution, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["workload"]["distribution"] == distribution


def test_synth_duration_at_iops_sets_the_requests(tmp_path):
    r = run("synth", "--out", tmp_path / "w.parquet", "--duration", "2.5", "--iops", "40", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["requests"] == 100


def test_vendored_click_is_what_typer_raises():
    """common.py imports typer's private vendored click (see the comment there): a usage error
    raised by typer must be an instance of that ClickException, or usage errors would become
    internal errors."""
    import typer
    from typer._click.exceptions import ClickException

    t = typer.Typer()

    @t.command()
    def one(n: int) -> None:  # pragma: no cover - never runs
        pass

    try:
        t(["not-a-number"], standalone_mode=False)
    except Exception as e:  # noqa: BLE001 - the type is what is tested
        assert isinstance(e, ClickException) and e.exit_code == 2
    else:
        raise AssertionError("typer accepted a bad int")


def test_traces_fits_80_columns_and_wide_adds_the_rest(tmp_path):
    from traces import synth

    src = tmp_path / "a-rather-long-source-file-name-for-the-listing.parquet"
    synth.write(synth.pattern("randread-4k", requests=1_000, region_bytes=1 << 30), src)
    assert run("ingest", src, "--data-dir", tmp_path / "d").exit_code == 0
    r = run("traces", "--data-dir", tmp_path / "d", env={"COLUMNS": "80"})
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["trace_id", "source", "format", "requests", "rejected", "span", "s"]
    assert all(len(ln) <= 80 for ln in lines) and "1,000" in r.stdout
    pieces = [ln.split()[0] if i else ln.split()[1] for i, ln in enumerate(lines[2:])]
    assert "".join(pieces) == src.name  # the name folds over lines, it is not cut
    wide = run("traces", "--data-dir", tmp_path / "d", "--wide").stdout
    assert "volumes" in wide and "reader" in wide
