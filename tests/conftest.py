"""Shared fixtures: the third-party samples in ../shared/data, temporary data directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("TIERCAST_SHARED_DATA", ROOT.parent / "shared" / "data"))

os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba-cache"))
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


def shared_path(*parts: str) -> Path:
    """A sample under ../shared/data; the test is skipped (with the reason) when it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"sample {p} not present (tests read third-party samples from ../shared/data)")
    return p


@pytest.fixture
def shared():
    return shared_path


@pytest.fixture
def data_dir(tmp_path) -> Path:
    d = tmp_path / "tiercast-data"
    d.mkdir()
    return d
