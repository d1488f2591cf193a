"""Interrupted ingests: staging directories left by a killed process are removed by the next
ingest into the same place; a live ingest's staging directory is never touched."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.catalog import list_traces, traces_root
from pipelines.dataset import OWNER_FILE, STALE_UNOWNED_S, Staging, remove_stale_staging
from pipelines.ingest import ingest_file

ROOT = Path(__file__).resolve().parent.parent
T0 = 128166372003061629


def _msr(path: Path, rows: int) -> Path:
    path.write_text("".join(f"{T0 + 10 * i},usr,{i % 2},Read,{i * 4096},4096,1\n" for i in range(rows)))
    return path


def _stage(root: Path, name: str, owner: dict | None, age_s: float = 0.0) -> Path:
    d = root / f".tmp-{name}"
    (d / "volume=usr_0").mkdir(parents=True)
    (d / "volume=usr_0" / "part-00000.parquet").write_bytes(b"x" * 1000)
    if owner is not None:
        (d / OWNER_FILE).write_text(json.dumps(owner))
    if age_s:
        t = time.time() - age_s
        os.utime(d, (t, t))
    return d


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_staging_of_dead_processes_is_removed_live_ones_kept(tmp_path):
    root = tmp_path / "traces"
    root.mkdir()
    host = socket.gethostname()
    me = os.getpid()
    import psutil

    my_start = psutil.Process(me).create_time()
    dead = _stage(root, "dead", {"pid": _dead_pid(), "host": host, "started": 1.0})
    reused = _stage(root, "reused", {"pid": me, "host": host, "started": my_start - 3600})  # pid reused
    live = _stage(root, "live", {"pid": me, "host": host, "started": my_start})
    legacy_old = _stage(root, "legacy-old", None, age_s=STALE_UNOWNED_S + 60)
    legacy_new = _stage(root, "legacy-new", None)
    other_host = _stage(root, "other-host", {"pid": 1, "host": host + "-elsewhere", "started": 1.0})
    removed = remove_stale_staging(root)
    assert sorted(p.name for p in removed) == sorted(p.name for p in (dead, reused, legacy_old))
    assert live.exists() and legacy_new.exists() and other_host.exists()
    assert not dead.exists() and not reused.exists() and not legacy_old.exists()


def test_owner_file_is_not_published(tmp_path):
    with Staging(tmp_path) as st:
        assert json.loads((st.path / OWNER_FILE).read_text())["pid"] == os.getpid()
        (st.path / "manifest.json").write_text("{}")
        assert st.publish("abc")
    assert sorted(p.name for p in (tmp_path / "abc").iterdir()) == ["manifest.json"]


def test_sigkill_mid_ingest_then_rerun_cleans_up_and_matches_a_clean_run(tmp_path):
    src = _msr(tmp_path / "usr.csv", 200_000)
    data = tmp_path / "data"
    # the default validation imports Great Expectations (seconds) while the staging dir exists
    p = subprocess.Popen([sys.executable, "-c", "from pipelines.cli import main; main()", "ingest", str(src),
                          "--data-dir", str(data)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(traces_root(data).glob(".tmp-*/volume=*/*.parquet")):
        time.sleep(0.02)
    assert p.poll() is None, "ingest finished before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    left = list(traces_root(data).glob(".tmp-*"))
    assert left and list_traces(data) == []
    r = ingest_file(src, data, validate="off")
    assert not list(traces_root(data).glob(".tmp-*"))
    clean = ingest_file(src, tmp_path / "clean", validate="off")
    assert (r.trace_id, r.rows_accepted, r.volumes) == (clean.trace_id, 200_000, clean.volumes)


def test_streaming_reads_blocks_and_writes_bounded_parts(tmp_path, monkeypatch):
    """The streaming guarantee of docs/guide/ingest.md at a small scale: 64 KiB blocks, a volume's buffer is
    written out once it holds FLUSH_ROWS_PER_VOLUME rows, so a part holds at most that many plus
    one block's rows, and the result equals a one-block ingest."""
    import polars as pl

    import pipelines.ingest as ingest_mod
    from pipelines.catalog import find_trace
    from traces.source import Source

    src = _msr(tmp_path / "usr.csv", 20_000)  # ~1 MB: 16 blocks of 64 KiB, ~1,200 rows each
    whole = ingest_file(src, tmp_path / "whole", validate="off")
    blocks, reads = Source.iter_line_blocks, Source.iter_bytes
    monkeypatch.setattr(Source, "iter_line_blocks", lambda self, block_bytes: blocks(self, 64 << 10))
    monkeypatch.setattr(Source, "iter_bytes", lambda self, size=0: reads(self, 16 << 10))
    monkeypatch.setattr(ingest_mod, "FLUSH_ROWS_PER_VOLUME", 1000)
    r = ingest_file(src, tmp_path / "small", validate="off")
    t = find_trace(tmp_path / "small", r.trace_id)
    parts = sorted(t.volume_files)
    rows = [pl.read_parquet(p).height for p in parts]
    assert len(parts) >= 10 and max(rows) <= 1000 + 1300 and sum(rows) == 20_000
    a = t.scan().collect().sort("src_line")
    b = find_trace(tmp_path / "whole", whole.trace_id).scan().collect().sort("src_line")
    assert a.equals(b) and r.trace_id == whole.trace_id


# --- a full disk (ENOSPC) -----------------------------------------------------------------------


def _full_disk(monkeypatch, name: str) -> list[Path]:
    """Make every text write to a file named ``name`` (or a temporary file for it, named with
    it) fail as on a full disk (the file created, nothing written: OSError ENOSPC); returns the
    paths it failed on."""
    failed, write_text = [], Path.write_text

    def full(self, *args, **kw):
        if name in self.name:
            write_text(self, "")
            failed.append(self)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return write_text(self, *args, **kw)

    monkeypatch.setattr(Path, "write_text", full)
    return failed


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def test_full_disk_while_claiming_the_staging_leaves_nothing(tmp_path, monkeypatch):
    """The owner file is the first thing written into a staging directory: a full disk there
    left ``.tmp-*/.owner.json`` (empty) behind, which the next ingest kept for a day."""
    src = _msr(tmp_path / "usr.csv", 500)
    failed = _full_disk(monkeypatch, OWNER_FILE)
    with pytest.raises(OSError) as e:
        ingest_file(src, tmp_path / "data", validate="off")
    assert e.value.errno == errno.ENOSPC and failed
    assert _leftovers(traces_root(tmp_path / "data")) == []
    monkeypatch.undo()
    assert ingest_file(src, tmp_path / "data", validate="off").rows_accepted == 500


@pytest.mark.parametrize("name", ["manifest.json", "_sources.json"])
def test_full_disk_while_publishing_leaves_no_temporary_file_or_directory(tmp_path, monkeypatch, name):
    """The manifest (inside the staging directory) and the source index (beside the datasets)
    are written through a temporary file: a full disk removes both the staging directory and
    the temporary file on the way out."""
    src = _msr(tmp_path / "usr.csv", 500)
    failed = _full_disk(monkeypatch, name)
    with pytest.raises(OSError) as e:
        ingest_file(src, tmp_path / "data", validate="off")
    assert e.value.errno == errno.ENOSPC and failed
    assert _leftovers(traces_root(tmp_path / "data")) == []


def test_full_disk_while_replacing_a_dataset_keeps_the_old_one(tmp_path, monkeypatch):
    """``--force`` moves the old dataset into a staging directory of its own before removing it:
    that directory is claimed before anything moves, so a full disk leaves the old dataset in
    place (it used to be renamed away first, then lost with its unclaimed directory)."""
    root = tmp_path / "traces"
    with Staging(root) as st:
        (st.path / "manifest.json").write_text('{"old": true}')
        st.publish("abc")
    with pytest.raises(OSError) as e, Staging(root) as st2:
        (st2.path / "manifest.json").write_text('{"new": true}')
        failed = _full_disk(monkeypatch, OWNER_FILE)
        st2.publish("abc", replace=True)
    assert e.value.errno == errno.ENOSPC and failed
    assert json.loads((root / "abc" / "manifest.json").read_text()) == {"old": True}
    assert _leftovers(root) == []


def test_unreadable_owner_file_left_by_a_full_disk_is_removed_by_the_next_ingest(tmp_path):
    """What a full disk left before owner files were written atomically: ``.tmp-*/`` with an
    empty ``.owner.json``. A live ingest's owner file is whole from the start, so one that
    cannot be read a minute after it was written has no owner left: the next ingest removes it.
    A just-written one is kept (an older tiercast may be writing it at this moment)."""
    from pipelines.dataset import STALE_UNREADABLE_OWNER_S

    data = tmp_path / "data"
    root = traces_root(data)
    root.mkdir(parents=True)
    old, fresh = _stage(root, "enospc-old", None), _stage(root, "enospc-fresh", None)
    for d in (old, fresh):
        (d / OWNER_FILE).write_text("")
    (old / OWNER_FILE).write_text('{"pid": 12')  # cut short
    t = time.time() - STALE_UNREADABLE_OWNER_S - 60
    os.utime(old / OWNER_FILE, (t, t))
    ingest_file(_msr(tmp_path / "usr.csv", 500), data, validate="off")
    assert not old.exists() and fresh.exists()
