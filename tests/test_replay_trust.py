"""Results follow the code that produced them: model versions in run ids, numba's on-disk cache
keyed on every kernel module, and the private numba option the kernels rely on."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from test_backend import replay_rows

from pipelines import replay as rp
from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from replay import array as ar
from replay import jit, numba_cache, version
from replay.ids import IdMap
from replay.mech.backend import kernel as be
from replay.mech.backend import queueing as qk
from replay.mech.dram_cache import kernel as dc
from replay.scenario import load
from traces import synth

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def edited(monkeypatch):
    """``edited("replay/mech/backend/queueing.py")``: from now on the model-version hash reads that file with
    one more line, as after a fix to it (nothing is written to the source tree)."""
    real = version._read

    def edit(rel: str) -> None:
        target = (ROOT / rel).resolve()
        monkeypatch.setattr(version, "_read", lambda p: real(p) + (b"\n# fixed\n" if p.resolve() == target else b""))
        version.clear_cache()

    version.clear_cache()
    yield edit
    version.clear_cache()


def test_model_version_hashes_the_source_of_every_module_it_covers(edited):
    files = dict(version.source_files(version.ARRAY_MODEL))
    assert files["replay.mech.backend.queueing"] == ROOT / "replay" / "mech" / "backend" / "queueing.py"
    assert files["pipelines.replay"] == ROOT / "pipelines" / "replay.py"
    kernels = {k for k in dict(version.source_files(version.CACHE_MODEL)) if k.startswith("replay.kernels/")}
    assert {"replay.kernels/lru.py", "replay.kernels/arc.py", "replay.kernels/base.py"} <= kernels
    array_v, cache_v = version.model_version(version.ARRAY_MODEL), version.model_version(version.CACHE_MODEL)
    assert len(array_v) == 16 and array_v != cache_v
    assert version.model_version(reversed(version.ARRAY_MODEL)) == array_v  # order does not matter
    edited("replay/mech/backend/queueing.py")  # in the array model, not in the cache model
    assert version.model_version(version.ARRAY_MODEL) != array_v
    assert version.model_version(version.CACHE_MODEL) == cache_v
    edited("replay/kernels/lru.py")
    assert version.model_version(version.CACHE_MODEL) != cache_v
    with pytest.raises(LookupError, match="no source file for module 'replay.nosuch'"):
        version.model_version(["replay.nosuch"])


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("trust")
    w = synth.pattern("database", requests=3000, region_bytes=1 << 30, volume="db", seed=4)
    synth.write(w, d / "db.parquet")
    return d, find_trace(d, ingest_file(d / "db.parquet", d, validate="off").trace_id)


def test_a_change_to_a_kernel_module_replays_again_instead_of_returning_the_old_run(small_trace, edited):
    d, trace = small_trace
    sc = load("vnx2-mcx")
    first = rp.replay_trace(trace, d, sc)
    again = rp.replay_trace(trace, d, sc)
    assert not first["already_done"] and again["already_done"] and again["run_id"] == first["run_id"]
    assert first["model_version"] == version.model_version(version.ARRAY_MODEL)
    sweep_before = rp.sweep_trace(trace, None, sc, [2], max_requests=1000)[0]["sweep_id"]

    edited("replay/mech/backend/queueing.py")  # e.g. a fix to the drive model
    fixed = rp.replay_trace(trace, d, sc)
    assert not fixed["already_done"]
    assert fixed["run_id"] != first["run_id"] and fixed["model_version"] != first["model_version"]
    assert rp.sweep_trace(trace, None, sc, [2], max_requests=1000)[0]["sweep_id"] != sweep_before
    # both runs stay on disk, each labelled with the code that produced it
    runs = sorted(p.name for p in (d / "results" / "array_runs").iterdir())
    assert runs == sorted([first["run_id"], fixed["run_id"]])
    assert rp.replay_trace(trace, d, sc)["already_done"]


def test_the_numba_cache_directory_follows_every_kernel_module(edited):
    base = numba_cache.base_dir()
    before = jit.cache_dir()
    assert before.parent == base and before.name == f"tiercast-kernels-{version.model_version(jit.KERNEL_MODULES)}"
    for callee in ("replay/mech/dram_cache/kernel.py", "replay/mech/backend/queueing.py", "replay/mech/backend/kernel.py", "replay/ids.py",
                   "schemas/trace.py"):
        edited(callee)  # a callee of the array kernel, or constants compiled into it
        assert jit.cache_dir() != before, callee
    # the kernels of this process were compiled into (or loaded from) the keyed directory
    replay_rows(load("vnx2-mcx"), [(0, "v", "write", 0, 8192), (1000, "v", "read", 8192, 8192)])
    assert list(before.rglob("array.run_requests-*.nbi")) and list(before.rglob("ids.slot-*.nbi"))


def test_no_module_of_replay_compiles_outside_the_keyed_cache():
    """Only replay/jit.py and replay/prefetch.py (an LLVM intrinsic, which needs numba's
    extension API) import numba: every other module decorates with jit's njit or kernel, and
    every module that compiles or is compiled into a kernel is one whose source keys the cache."""
    for path in (ROOT / "replay").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        uses_numba = "numba" in {m.split(".")[0] for m in imported}
        assert uses_numba == (path.name in ("jit.py", "prefetch.py")), path
        if "replay.jit" in imported or path.name == "prefetch.py":
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            assert any(name == m or name.startswith(m + ".") for m in jit.KERNEL_MODULES), name


CALLER = """
from fakepkg.callee import value
from replay.jit import cached_njit

MODULES = ("fakepkg.caller", "fakepkg.callee")

@cached_njit(MODULES)
def keyed(x):
    return value(x)

import numba

@numba.njit(cache=True)
def plain(x):
    return value(x)

print(keyed(1), plain(1))
"""


def test_a_callee_change_in_another_module_is_not_served_stale(tmp_path):
    """numba alone keeps the caller's machine code when only the callee's module changes; the
    keyed cache recompiles it."""
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(CALLER)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "NUMBA_CACHE_DIR": str(tmp_path / "nc")}

    def run(callee_body: str) -> list[int]:
        (pkg / "callee.py").write_text(textwrap.dedent(f"""
            import numba

            @numba.njit(cache=True)
            def value(x):
                return {callee_body}
            """))
        p = subprocess.run([sys.executable, "-c", "import fakepkg.caller"], env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return [int(v) for v in p.stdout.split()]

    assert run("x + 1") == [2, 2]
    keyed, plain = run("x + 100")
    assert keyed == 101  # the fix is used
    assert plain == 2  # numba's own key (the caller's file) serves the old code: the pitfall


def test_kernels_compile_without_reference_counting():
    """``_nrt=False`` is a private numba option (see replay/jit.py); pin what it does on the
    installed numba: the array kernels are compiled with it and such code holds no NRT call."""
    for fn in (ar.run_requests, dc.flush, dc.mark_dirty, be.write_drives, qk.drive_submit):
        assert fn.targetoptions.get("_nrt") is False, fn

    def write_run(place, drives, queues, u, tau, nops, nbytes, batch):
        # passes arrays on to another kernel, as the array kernel does: reference counted by default
        return be.write_drives(drives, queues, place[u, 0], place[u, 1], place[u, 2], tau, nops, nbytes, batch)

    counted = numba.njit(nogil=True)(write_run)
    uncounted = numba.njit(nogil=True, **jit.KERNEL_OPTIONS)(write_run)
    place = np.full((2, 3), -1, dtype=np.int32)  # data drive, parity/mirror drives (-1: none)
    place[:, 0] = 0
    drives = np.ones(2, qk.DRIVE)
    drives["gain_table"] = 1.0
    args = (place, drives, qk.new_queues(2), 0, 0, 1, 8192, 1.0)
    assert counted(*args)[2] == uncounted(*args)[2] == 1  # one data drive, one write
    ir_counted = "".join(counted.inspect_llvm().values())
    ir_uncounted = "".join(uncounted.inspect_llvm().values())
    assert "NRT_incref" in ir_counted and "NRT_decref" in ir_counted
    assert "NRT_" not in ir_uncounted


def test_the_array_kernel_probes_the_id_table_with_the_public_hash():
    ids = IdMap(initial_slots=16)
    keys = np.arange(0, 4000, 7, dtype=np.int64) << 20
    ids.assign(keys)  # grows the table several times
    for k in (keys[0], keys[-1], keys[300], np.int64(5) << 20):
        want = int(ids.lookup(np.array([k]))[0])
        assert dc.probe(ids.table, k, ids.shift) == want
    assert dc.probe(ids.table, np.int64(5) << 20, ids.shift) == -1


def test_a_reingest_by_a_fixed_reader_replays_again(tmp_path, monkeypatch):
    """A re-ingest keeps the trace id but replaces its rows; results keyed on the trace id alone
    would be served from the old rows. The run and sweep ids carry the trace's data version."""
    import pipelines.dataset as ds
    import pipelines.ingest as ing

    w = synth.pattern("database", requests=2000, region_bytes=1 << 30, volume="db", seed=5)
    synth.write(w, tmp_path / "db.parquet")
    tid = ingest_file(tmp_path / "db.parquet", tmp_path, validate="off").trace_id
    trace = find_trace(tmp_path, tid)
    sc = load("vnx2-mcx")
    first = rp.replay_trace(trace, tmp_path, sc)
    sweep_before = rp.sweep_trace(trace, None, sc, [2], max_requests=500)[0]["sweep_id"]
    assert rp.replay_trace(trace, tmp_path, sc)["already_done"]

    fixed = "f" * 16  # as if a reader module had changed
    monkeypatch.setattr(ds, "reader_version", lambda: fixed)
    monkeypatch.setattr(ing, "reader_version", lambda: fixed)
    again = ingest_file(tmp_path / "db.parquet", tmp_path, validate="off")
    assert again.trace_id == tid and not again.already_ingested
    trace2 = find_trace(tmp_path, tid)
    assert trace2.data_version == fixed != trace.data_version
    rerun = rp.replay_trace(trace2, tmp_path, sc)
    assert not rerun["already_done"] and rerun["run_id"] != first["run_id"]
    assert rp.sweep_trace(trace2, None, sc, [2], max_requests=500)[0]["sweep_id"] != sweep_before
