"""Shared fixtures: the third-party samples in ../shared/data, temporary data directories, and
the one rule for tests that cannot run here.

A test that skips is a test that does not exist. Outside CI a test may skip when something it
needs is missing (libcachesim, fio, iostat, airflow, a shared sample, a directory on a block
device), with the reason. Under ``CI=true`` the same condition FAILS the test: the CI machine is
supposed to have everything (``.ci/run`` installs it), so a skip there would hide a test that
never ran. Every skip site goes through :func:`require` / :func:`require_module`, and
:func:`pytest_runtest_makereport` turns any other skip into a failure under CI as well (belt and
braces: a bare ``pytest.skip`` or ``skipif`` added later cannot hide either).
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("TIERCAST_SHARED_DATA", ROOT.parent / "shared" / "data"))

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


def in_ci() -> bool:
    """CI=true (GitHub Actions, GitLab, ``.ci/run``): nothing may skip."""
    return os.environ.get("CI") == "true"


def require(condition: object, reason: str) -> None:
    """Go on when ``condition`` holds; otherwise fail under CI=true, skip (with ``reason``)
    elsewhere. Works in tests, fixtures and at module level."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI=true and a requirement is missing (would skip elsewhere): {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, reason: str) -> ModuleType:
    """``pytest.importorskip`` under the same rule: the module, or fail in CI / skip elsewhere."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        require(False, f"{reason} (import {name}: {e})")
        raise  # unreachable: require() raised


def shared_sample(*parts: str) -> Path | None:
    """A sample under ../shared/data, or None when it is absent (fixtures that build several
    samples decide per test with :func:`require`)."""
    p = SHARED_DATA.joinpath(*parts)
    return p if p.exists() else None


def shared_path(*parts: str) -> Path:
    """A sample under ../shared/data; when absent the test skips (fails under CI)."""
    p = SHARED_DATA.joinpath(*parts)
    require(p.exists(), f"sample {p} not present (tests read third-party samples from ../shared/data)")
    return p


def block_device_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory on a block device (iostat must see the I/O done in it): ``tmp_path``
    when it is on one, else a temporary directory under the repository or /var/tmp (removed
    afterwards); none of them: skip, or fail under CI."""
    from pipelines.capture import block_devices_of

    if block_devices_of(tmp_path):
        yield tmp_path
        return
    for base in (ROOT, Path("/var/tmp"), Path(tempfile.gettempdir())):
        try:
            if not (base.is_dir() and os.access(base, os.W_OK) and block_devices_of(base)):
                continue
        except OSError:
            continue
        d = Path(tempfile.mkdtemp(prefix=".tiercast-blk-", dir=base))
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return
    require(False, f"no writable directory on a block device (tried {tmp_path}, {ROOT}, /var/tmp): "
                   "iostat cannot see the job's I/O on tmpfs/overlay")


@pytest.fixture
def blockdir(tmp_path) -> Iterator[Path]:
    yield from block_device_dir(tmp_path)


@pytest.fixture
def shared():
    return shared_path


@pytest.fixture
def data_dir(tmp_path) -> Path:
    d = tmp_path / "tiercast-data"
    d.mkdir()
    return d


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skipped test is reported as failed, whatever skipped it (a ``skipif``
    mark, a bare ``pytest.skip``, an ``importorskip``). ``xfail`` is left alone."""
    outcome = yield
    rep = outcome.get_result()
    if in_ci() and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"CI=true: skipped tests count as failures ({reason})"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped at collection (``pytest.skip(allow_module_level=True)``,
    a module-level ``importorskip``): under CI=true it is a collection error."""
    outcome = yield
    rep = outcome.get_result()
    if in_ci() and rep.skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"CI=true: a module skipped at collection counts as a failure ({reason})"
