"""Interrupted ingests: staging directories left by a killed process are removed by the next
ingest into the same place; a live ingest's staging directory is never touched."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

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
    """The README's streaming guarantee at a small scale: 64 KiB blocks, a volume's buffer is
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
