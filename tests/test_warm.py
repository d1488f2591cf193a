"""One compiled-code cache for every entry point (``replay.numba_cache``) and ``tiercast warm``: the
resolution rules (override, venv, user cache, a place that cannot be written passed over), and,
end to end in a virtual environment of its own, that a replay in a fresh process after ``tiercast
warm`` compiles nothing (numba's cache log, and no file of the cache written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from pipelines.ingest import ingest_file
from replay import jit, numba_cache
from replay.version import model_version
from traces import synth

ROOT = Path(__file__).resolve().parent.parent
CLI = "from pipelines.cli import main; main()"


def _double(x):
    return 2 * x


def test_an_explicit_numba_cache_dir_wins(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "mine"), "HOME": str(tmp_path / "home")}
    where = numba_cache.locate(env, prefix=str(tmp_path / "venv"), base_prefix="/usr")
    assert where == (tmp_path / "mine", "NUMBA_CACHE_DIR", ())
    assert (tmp_path / "mine").is_dir()
    # empty counts as unset (numba reads it the same way)
    where = numba_cache.locate({"NUMBA_CACHE_DIR": " "}, prefix=str(tmp_path / "venv"), base_prefix="/usr")
    assert where.rule == "venv"


def test_a_venv_keeps_its_compiled_code_and_elsewhere_the_user_cache(tmp_path):
    home = {"HOME": str(tmp_path / "home")}
    where = numba_cache.locate(home, prefix=str(tmp_path / "venv"), base_prefix="/usr")
    assert where == (tmp_path / "venv" / "var" / "tiercast" / "numba-cache", "venv", ())
    # not in a venv: the user cache directory, XDG's when it is absolute (a relative one is ignored)
    plain = {"prefix": "/usr", "base_prefix": "/usr"}
    assert numba_cache.locate(home, **plain).path == tmp_path / "home" / ".cache" / "tiercast" / "numba"
    xdg = {**home, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert numba_cache.locate(xdg, **plain) == (tmp_path / "xdg" / "tiercast" / "numba", "user cache", ())
    relative = {**home, "XDG_CACHE_HOME": "cache"}
    assert numba_cache.locate(relative, **plain).path == tmp_path / "home" / ".cache" / "tiercast" / "numba"


def test_a_place_that_cannot_be_written_is_passed_over(tmp_path, monkeypatch):
    """A path under a regular file cannot be made (not even by root, who may write anywhere else)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the last resort, kept in here
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"NUMBA_CACHE_DIR": str(blocker / "numba"), "HOME": str(blocker / "home")}
    venv = {"prefix": str(tmp_path / "venv"), "base_prefix": "/usr"}
    where = numba_cache.locate(env, **venv)
    assert where == (tmp_path / "venv" / "var" / "tiercast" / "numba-cache", "venv", (blocker / "numba",))
    where = numba_cache.locate(env, prefix=str(blocker / "venv"), base_prefix="/usr")
    assert where == (tmp_path / "tmp" / f"tiercast-numba-{os.getuid()}", "temporary", where.passed_over)
    assert where.passed_over == (blocker / "numba", blocker / "venv" / "var" / "tiercast" / "numba-cache",
                                 blocker / "home" / ".cache" / "tiercast" / "numba")


def test_the_kernels_compile_into_the_fallback_when_the_override_cannot_be_written(tmp_path, monkeypatch):
    """Nothing breaks: ``replay.jit`` decorates, compiles and caches in the next place."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "numba"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    expected = tmp_path / "venv" / "var" / "tiercast" / "numba-cache"
    assert jit.cache_dir(("replay.ids",)) == expected / f"tiercast-kernels-{model_version(('replay.ids',))}"
    double = jit.cached_njit(("replay.ids",))(_double)
    assert double(21) == 42
    assert list(expected.rglob("test_warm._double-*.nbi"))


def _venv(where: Path) -> Path:
    """A virtual environment that sees this one's packages (site-packages added by a .pth line,
    so the editable install's finder runs): its own ``sys.prefix``, hence its own cache."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    py = where / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "tiercast-parent.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return py


@pytest.mark.slow
def test_after_warm_a_first_replay_in_a_fresh_process_compiles_nothing(tmp_path):
    py = _venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the venv rule, as when activated
    cache = tmp_path / "venv" / "var" / "tiercast" / "numba-cache"

    def warm() -> dict:
        p = subprocess.run([str(py), "-c", CLI, "warm", "--json"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=1800)
        assert p.returncode == 0, p.stderr[-4000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    warmed = warm()
    assert Path(warmed["cache_dir"]) == cache / jit.cache_dir().name
    assert warmed["kernels"] > 0 and warmed["seconds"] > 0
    before = {f: f.stat().st_mtime_ns for f in cache.rglob("*") if f.is_file()}
    assert warm()["kernels"] == warmed["kernels"]  # the second time everything is loaded: nothing written
    assert {f: f.stat().st_mtime_ns for f in cache.rglob("*") if f.is_file()} == before

    src = tmp_path / "w.parquet"
    synth.write(synth.pattern("randwrite-8k", requests=2000, region_bytes=256 << 20, volume="lun9", seed=9), src)
    data = tmp_path / "data"
    trace_id = ingest_file(src, data, validate="off").trace_id
    replays = []
    for scenario in ("vnx2-mcx", "vnx5400-fastcache"):  # the page stream's first pass, then read
        p = subprocess.run([str(py), "-c", CLI, "replay", trace_id, "-s", scenario, "--data-dir", str(data),
                            "--json"], capture_output=True, text=True, env={**env, "NUMBA_DEBUG_CACHE": "1"},
                           cwd=ROOT, timeout=900)
        assert p.returncode == 0, p.stderr[-4000:]
        replays.append(p.stdout)
    for log in replays:
        assert "[cache] data loaded from" in log
        assert "[cache] data saved to" not in log, [line for line in log.splitlines() if "saved" in line]
        assert json.loads(log.strip().splitlines()[-1])["requests"] == 2000
    assert {f: f.stat().st_mtime_ns for f in cache.rglob("*") if f.is_file()} == before
