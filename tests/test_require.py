"""The rule of tests/conftest.py: a missing requirement skips outside CI and fails under CI=true,
and under CI=true any skip at all is reported as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import block_device_dir, require, require_module

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


def test_require_skips_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    require(True, "present")  # no exception
    with pytest.raises(pytest.skip.Exception, match="fio missing"):
        require(False, "fio missing")
    monkeypatch.setenv("CI", "false")  # only the exact value "true" means CI
    with pytest.raises(pytest.skip.Exception):
        require(False, "fio missing")


def test_require_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    require(True, "present")
    with pytest.raises(pytest.fail.Exception, match="CI=true.*fio missing"):
        require(False, "fio missing")


def test_require_module(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert require_module("json", "stdlib").dumps([1]) == "[1]"
    with pytest.raises(pytest.fail.Exception, match="no_such_module_tiercast"):
        require_module("no_such_module_tiercast", "needed")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="needed"):
        require_module("no_such_module_tiercast", "needed")


def test_block_device_dir_falls_back_or_fails(monkeypatch, tmp_path):
    import pipelines.capture as cap

    # nothing is on a block device: skip outside CI, fail under it
    monkeypatch.setattr(cap, "block_devices_of", lambda p: [])
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="block device"):
        next(block_device_dir(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="block device"):
        next(block_device_dir(tmp_path))
    # tmp_path is not on one but /var/tmp is: a fresh directory there, removed afterwards
    monkeypatch.setattr(cap, "block_devices_of", lambda p: ["vdz"] if str(p) == "/var/tmp" else [])
    gen = block_device_dir(tmp_path)
    d = next(gen)
    assert d.parent == Path("/var/tmp") and d.is_dir()
    with pytest.raises(StopIteration):
        next(gen)
    assert not d.exists()


SKIPPING = """
import pytest

@pytest.mark.skipif(True, reason="marked")
def test_marked():
    pass

def test_bare():
    pytest.skip("bare skip")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

def test_ok():
    pass
"""

MODULE_SKIP = """
import pytest
pytest.importorskip("no_such_module_tiercast")

def test_never():
    pass
"""


@pytest.mark.parametrize("ci", ["true", None])
def test_ci_reports_every_skip_as_a_failure(pytester, monkeypatch, ci):
    """The makereport hook: under CI=true skips (a skipif mark, a bare pytest.skip) fail; xfail
    stays xfail. Outside CI they are plain skips."""
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_skips=SKIPPING, test_module_skip=MODULE_SKIP)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--continue-on-collection-errors")
    if ci == "true":
        # the skipif mark fires in setup (an error), the bare skip in the call (a failure), the
        # module-level importorskip at collection (an error)
        res.assert_outcomes(failed=1, errors=2, passed=1, xfailed=1)
        res.stdout.fnmatch_lines(["*CI=true: skipped tests count as failures (Skipped: bare skip)*"])
        res.stdout.fnmatch_lines(["*CI=true: a module skipped at collection counts as a failure*"])
        assert res.ret != 0
    else:
        res.assert_outcomes(skipped=3, passed=1, xfailed=1)
        assert res.ret == 0
