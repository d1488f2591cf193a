"""What the scheduled DAGs (``dags/tiercast_*.py``) do, as plain functions: where the data root is,
which landed files are ready, ingest with quarantine and archive, one contract check per batch,
the replay plan from ``replay.toml``, and the summaries. The DAG files only wire these together,
so every step runs the same in a test without Airflow.

All paths live under one data root: the Airflow Variable ``tiercast_data_dir``, else
``$TIERCAST_DATA_DIR``; an absolute path, never the worker's working directory. Landing,
quarantine and archive default to ``<root>/landing``, ``<root>/quarantine`` and
``<root>/archive``; a parameter that points outside the root is refused.

Errors are of two kinds. An *input* error (a file no reader can read, a truncated archive, a bad
configuration) cannot change on a retry: :class:`InputError`, which the DAGs raise as
``AirflowFailException`` (no retries). Anything else (I/O, a locked warehouse) may pass: it is
raised as is and retried.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import posixpath
import shutil
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from pipelines.catalog import ENV_DATA_DIR, write_json_atomic
from pipelines.object_store import is_url

if TYPE_CHECKING:  # the DAG files import this module: nothing heavy at import
    from replay.scenario import Scenario

VARIABLE = "tiercast_data_dir"
CONFIG_FILE = "replay.toml"
#: replayed when ``replay.toml`` names no scenarios: FLARE against MCx, the seed 002 what-if
DEFAULT_SCENARIOS = ("vnx1-flare", "vnx2-mcx")
#: a landed file is ingested once unchanged (size and mtime) for this long, or with a marker
DEFAULT_STABLE_S = 60.0
DONE_SUFFIX = ".done"
#: at most this many files per ingest run, and replay tasks (batches of pairs) per replay run: below
#: Airflow's max_map_length (1024); the rest waits for the next run
MAX_BATCH = 500
#: a mapped replay task runs consecutive pairs of one trace while their requests add up to at most
#: this (``replay.toml`` ``task_requests``; 0: one task per pair). A task costs Airflow ~0.3-0.5 s
#: to start and report on its own (fork, three execution-API calls, XCom) and two run at once on
#: two cores; measured (benchmarks/orchestration.py, 4 traces x 3 scenarios, parallelism 2), one
#: task per 1 M-request pair made the run 1.53-1.59x the direct calls (docs/operations/airflow.md, Orchestration overhead)
DEFAULT_TASK_REQUESTS = 4_000_000
#: names in the landing folder that are never data (temporary copies, markers, hidden files)
SKIP_SUFFIXES = (".tmp", ".part", ".partial", ".crdownload", ".filepart", DONE_SUFFIX)
#: what each landed file became: ``<root>/landed/<quoted path under the root>.json`` (its dataset,
#: sha256, size and where it was archived), read when a file of that name lands again
LEDGER_DIR = "landed"
#: an archived file is watched this long after its ingest for growth (a copy still being written
#: into it after it was moved: same file system, same inode)
REGROWTH_WATCH_S = 24 * 3600.0


class InputError(ValueError):
    """A problem with the input or the configuration: retrying cannot help."""


# --- the data root ---------------------------------------------------------------------------


def data_root(variable: str | None) -> Path | str:
    """The data root: the Variable's value, else ``$TIERCAST_DATA_DIR``; an absolute path, or an
    object-store URL (``s3://bucket/prefix``, returned as is: the tasks stage from it)."""
    value = (variable or "").strip() or os.environ.get(ENV_DATA_DIR, "").strip()
    if not value:
        raise InputError(f"no data root: set the Airflow Variable {VARIABLE} or ${ENV_DATA_DIR} to an absolute path")
    if is_url(value):
        return value.rstrip("/")
    root = Path(value).expanduser()
    if not root.is_absolute():
        raise InputError(f"data root {value!r} is relative: it would depend on the worker's working directory; "
                         f"give an absolute path in {VARIABLE} / ${ENV_DATA_DIR}")
    root.mkdir(parents=True, exist_ok=True)
    return root


def under_root(root: Path, value: str | None, default: str, what: str, must_exist: bool = False) -> Path:
    """``value`` (relative to ``root``, or absolute), or ``root/default`` when empty; refused when
    it leads outside ``root`` (symbolic links and ``..`` resolved) or, with ``must_exist``, is
    not an existing directory (a misspelled folder must not be a silent empty run)."""
    given = (value or "").strip()
    path = Path(given).expanduser() if given else Path(default)
    path = path if path.is_absolute() else root / path
    real, real_root = path.resolve(), root.resolve()
    if real != real_root and real_root not in real.parents:
        raise InputError(f"{what} {path} is outside the data root {root}: refused")
    if given and must_exist and not path.is_dir():
        raise InputError(f"{what} {path} does not exist (misspelled?): nothing to do is not success")
    path.mkdir(parents=True, exist_ok=True)
    return path


def worker_env() -> None:
    """Per-process settings every task needs before importing the data stack: Great Expectations
    quiet and offline. numba's cache needs none: a worker finds it like every other entry point
    (``replay.numba_cache``: in its venv, else its user cache directory), not in the data root,
    so ``tiercast warm`` prepares a new worker and its first task compiles nothing."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


# --- landing ---------------------------------------------------------------------------------


def ready_files(landing: Path, stable_s: float = DEFAULT_STABLE_S, limit: int = MAX_BATCH,
                now_s: float | None = None, require_marker: bool = False) -> tuple[list[Path], list[Path]]:
    """(ready, waiting) files in the local folder ``landing`` (:func:`ready_names`)."""
    entries = {p.name: p.stat().st_mtime for p in landing.iterdir() if p.is_file()}
    ready, waiting = ready_names(entries, stable_s, limit, now_s, require_marker)
    return [landing / n for n in ready], [landing / n for n in waiting]


def ready_names(entries: dict[str, float], stable_s: float = DEFAULT_STABLE_S, limit: int = MAX_BATCH,
                now_s: float | None = None, require_marker: bool = False) -> tuple[list[str], list[str]]:
    """(ready, waiting) names of a landing folder's files ({name: mtime in s}), oldest first, at
    most ``limit`` ready. A file is ready when a ``<name>.done`` marker sits beside it, or (unless
    ``require_marker``) when it has not changed for ``stable_s`` seconds: a copy still being
    written keeps its mtime fresh. Files that arrive by rename (or as one object-store PUT) are
    ready once ``stable_s`` old."""
    now_s = time.time() if now_s is None else now_s
    ready, waiting = [], []
    names = sorted((n for n in entries if not n.startswith(".") and not n.endswith(SKIP_SUFFIXES)),
                   key=lambda n: (entries[n], n))
    for n in names:
        if n + DONE_SUFFIX in entries or (not require_marker and now_s - entries[n] >= stable_s):
            ready.append(n)
        else:
            waiting.append(n)
    return ready[:limit], waiting + ready[limit:]


def discover(location: Path | str, landing_dir: str, stable_s: float, limit: int,
             require_marker: bool = False) -> tuple[list[str], list[str]]:
    """(ready, waiting) files of the landing folder as paths relative to the data root
    ``location`` (a local path or an object-store URL, listed without downloading anything).
    In a local root, archived files that grew since their ingest are first put back into the
    landing folder (:func:`reopen_grown`)."""
    if not is_url(location):
        landing = under_root(location, landing_dir, "landing", "landing_dir", must_exist=True)
        reopen_grown(location)
        ready, waiting = ready_files(landing, stable_s, limit, require_marker=require_marker)
        return [_relative(p, location) for p in ready], [_relative(p, location) for p in waiting]
    from pipelines import object_store

    rel = url_under_root(location, landing_dir, "landing", "landing_dir")
    entries = object_store.listing(location, rel)
    if entries is None and (landing_dir or "").strip():
        raise InputError(f"landing_dir {location}/{rel} does not exist (misspelled?): nothing to do is not success")
    ready, waiting = ready_names(entries or {}, stable_s, limit, require_marker=require_marker)
    return [f"{rel}/{n}" for n in ready], [f"{rel}/{n}" for n in waiting]


# --- what landed files became: a file that lands again, or grows after its ingest ---------------


def _ledger_file(root: Path, landed_as: str) -> Path:
    return Path(root) / LEDGER_DIR / f"{quote(landed_as, safe='')}.json"


def ledger_entry(root: Path, landed_as: str) -> dict | None:
    """What the last file landed as ``landed_as`` (a path under the root) became, if any."""
    try:
        return json.loads(_ledger_file(root, landed_as).read_text())
    except FileNotFoundError:
        return None


def _starts_with(path: Path, size_bytes: int, sha256: str) -> bool:
    """Whether the first ``size_bytes`` of ``path`` are the bytes whose sha256 is ``sha256``."""
    if path.stat().st_size < size_bytes:
        return False
    h, left = hashlib.sha256(), size_bytes
    with open(path, "rb") as f:
        while left:
            block = f.read(min(left, 8 << 20))
            if not block:
                return False
            h.update(block)
            left -= len(block)
    return h.hexdigest() == sha256


def reopen_grown(root: Path, now_s: float | None = None) -> list[str]:
    """Put back into the landing folder every archived file that changed (size or mtime) within
    :data:`REGROWTH_WATCH_S` of its ingest: a copy that went on writing into the file after it
    was archived (same file system: the rename kept the inode). It is taken again once complete,
    and its ingest withdraws the partial trace (:func:`ingest_landed`). Returns the paths put
    back, relative to the root."""
    top = Path(root) / LEDGER_DIR
    if not top.is_dir():
        return []
    now_s = time.time() if now_s is None else now_s
    back = []
    for f in sorted(top.glob("*.json")):
        if now_s - f.stat().st_mtime > REGROWTH_WATCH_S:
            continue
        entry = json.loads(f.read_text())
        archived, landed = Path(root) / entry["archived_as"], Path(root) / entry["landed_as"]
        try:
            st = archived.stat()
        except FileNotFoundError:
            continue  # moved on (put back already, pruned by hand)
        if (st.st_size, st.st_mtime_ns) == (entry["archived_bytes"], entry["archived_mtime_ns"]) or landed.exists():
            continue
        landed.parent.mkdir(parents=True, exist_ok=True)
        os.rename(archived, landed)
        back.append(entry["landed_as"])
    return back


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.resolve().relative_to(root.resolve()).as_posix()


def url_under_root(url: str, value: str | None, default: str, what: str) -> str:
    """``value`` (or ``default``) as a path relative to the object-store root ``url``; refused
    when absolute or leading outside it."""
    given = (value or "").strip()
    rel = posixpath.normpath(given or default)
    if given.startswith("/") or rel == ".." or rel.startswith("../") or "://" in given:
        raise InputError(f"{what} {given!r} is outside the data root {url}: refused")
    return rel


def _move(src: Path, folder: Path) -> Path:
    """``src`` into ``folder`` (same name; ``name.1``, ``name.2`` ... when taken), with its marker."""
    folder.mkdir(parents=True, exist_ok=True)
    dest, k = folder / src.name, 0
    while dest.exists():
        k += 1
        dest = folder / f"{src.name}.{k}"
    shutil.move(str(src), dest)
    marker = src.with_name(src.name + DONE_SUFFIX)
    if marker.exists():
        marker.unlink()
    return dest


def quarantine(src: Path, folder: Path, error: str) -> Path:
    """Move a bad file to ``folder`` with ``<name>.error.json`` (the error, when, from where)."""
    dest = _move(src, folder)
    write_json_atomic(dest.with_name(dest.name + ".error.json"),
                      {"file": src.name, "landed_as": str(src), "error": error,
                       "quarantined_at": datetime.now(tz=UTC).isoformat()})
    return dest


def archive(src: Path, folder: Path) -> Path:
    """Move an ingested file to ``folder/<UTC date>/``: it is not listed again."""
    return _move(src, folder / datetime.now(tz=UTC).strftime("%Y-%m-%d"))


def ingest_landed(path: str | Path, root: Path, quarantine_dir: Path, archive_dir: Path,
                  supersede: bool = True) -> dict:
    """Ingest one landed file, then archive it; an input error (a trace whose rows break the
    contract's exact checks included) quarantines it and raises :class:`InputError`. The Great
    Expectations suite runs once per batch (:func:`validate_batch`). Idempotent: a file already
    ingested is archived and reported as such.

    With ``supersede`` (a local data root; an object store's objects land whole) the file's
    dataset is recorded under its landed name (:data:`LEDGER_DIR`). When a file lands again
    under a name already ingested and begins with the bytes of that earlier ingest, the earlier
    one was a partial copy (stalled longer than ``stable_seconds``, then resumed or sent again):
    its dataset, everything computed from it and its archived file are withdrawn into
    ``quarantine/superseded/<id>/`` (:func:`pipelines.withdraw.withdraw`), reported as
    ``superseded``. Other content under the same name is a new dataset beside the earlier one."""
    from pipelines.steps import ingest_any
    from traces.errors import TraceFormatError

    src = Path(path)
    landed_as = _relative(src, root)
    earlier = ledger_entry(root, landed_as) if supersede else None
    before = src.stat()
    try:
        result = ingest_any(src, root, options=None, validate="auto", measured_validate="off")
    except FileNotFoundError:
        raise  # moved or deleted meanwhile: a retry will tell
    except (TraceFormatError, UnicodeDecodeError, ValueError, LookupError, EOFError) as e:
        dest = quarantine(src, quarantine_dir, str(e))
        raise InputError(f"{e} (moved to {dest})") from None
    result["source"] = src.name
    if supersede and _stat_key(src.stat()) != _stat_key(before):
        return _still_landing(root, result, quarantine_dir)
    grew = (earlier is not None and earlier["id"] != result["id"]
            and _starts_with(src, earlier["bytes"], earlier["sha256"]))
    result["archived_as"] = _relative(archive(src, archive_dir), root)  # the data root may be a scratch copy
    if grew:
        result["superseded"] = _withdraw_partial(root, earlier, result, quarantine_dir)
    if supersede:
        manifest = json.loads((root / _dataset_dir(result["kind"]) / result["id"] / "manifest.json").read_text())
        entry = _ledger_file(root, landed_as)
        entry.parent.mkdir(parents=True, exist_ok=True)
        # the file as it was read (a rename keeps size and mtime): growth after the read shows
        write_json_atomic(entry, {
            "landed_as": landed_as, "kind": result["kind"], "id": result["id"], "sha256": manifest["sha256"],
            "bytes": manifest["source_bytes"], "archived_as": result["archived_as"], "archived_bytes": before.st_size,
            "archived_mtime_ns": before.st_mtime_ns, "ingested_at": datetime.now(tz=UTC).isoformat()})
    return result


def _stat_key(st: os.stat_result) -> tuple[int, int]:
    return st.st_size, st.st_mtime_ns


def _still_landing(root: Path, result: dict, quarantine_dir: Path) -> dict:
    """A file that changed while it was ingested is still being written: the dataset made of
    what was read is withdrawn at once (unless it existed before), the file stays in the landing
    folder to be taken again once unchanged, and nothing is recorded."""
    from pipelines.withdraw import withdraw

    if not result["already_ingested"]:
        withdraw(root, result["kind"], result["id"], _free(quarantine_dir / "superseded" / result["id"]),
                 {"landed_as": result["source"], "reason": "the file changed while it was ingested: still landing"})
    return {"kind": result["kind"], "source": result["source"], "still_landing": True}


def _free(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2`` ... when taken."""
    free, k = path, 0
    while free.exists():
        k += 1
        free = path.with_name(f"{path.name}.{k}")
    return free


def _dataset_dir(kind: str) -> str:
    return "traces" if kind == "trace" else "measured"


def _withdraw_partial(root: Path, earlier: dict, result: dict, quarantine_dir: Path) -> dict:
    """Withdraw the dataset of an earlier, partial copy of the file ``result`` ingested whole,
    with its results and its archived copy (unless that is the very file just archived: a copy
    that grew in the archive and was put back)."""
    from pipelines.withdraw import withdraw

    into = _free(quarantine_dir / "superseded" / earlier["id"])  # the same partial copy may have come before
    why = {"landed_as": earlier["landed_as"], "superseded_by": result["id"],
           "reason": f"a partial copy: {earlier['landed_as']} landed again, {earlier['bytes']:,} bytes then, "
                     f"beginning with the same bytes now"}
    copy = () if earlier["archived_as"] == result["archived_as"] else (root / earlier["archived_as"],)
    moved = withdraw(root, earlier["kind"], earlier["id"], into, why, also=copy)
    return {"kind": earlier["kind"], "id": earlier["id"], "moved_to": _relative(into, root), "moved": moved}


#: what the ingest DAG's ``split_by`` can be ("" = keep each landed trace whole)
SPLIT_BY = ("", "volume")


def split_landed(root: Path, result: dict, split_by: str) -> dict:
    """With ``split_by`` "volume", the landed trace ``result`` (of :func:`ingest_landed`) also
    becomes one dataset per volume (:func:`pipelines.ingest.split_by_volume`), listed under
    ``parts`` with the landed file's source and archive, so that the run validates and publishes
    them; the replay plan then takes the volumes instead of the whole trace
    (:func:`_matching_traces`). Anything else (a measured log, a file still landing) as is."""
    if split_by not in SPLIT_BY:
        raise InputError(f"split_by {split_by!r}: expected one of {', '.join(map(repr, SPLIT_BY))}")
    if not split_by or not split_inputs(result):
        return result
    from pipelines.ingest import split_by_volume

    parts = split_by_volume(result["id"], root, validate="auto")
    return {**result, "parts": [
        {"kind": "trace", "id": p.trace_id, "volume": next(iter(p.volumes)), "split_from": result["id"],
         "source": result["source"], "archived_as": result["archived_as"], "format": p.format,
         "rows_accepted": p.rows_accepted, "already_ingested": p.already_ingested} for p in parts]}


def _new_datasets(ingested: list[dict]) -> list[dict]:
    """The datasets an ingest run made new: its files' and the volumes split from them."""
    return [d for r in ingested if r for d in (r, *r.get("parts", ()))
            if not d.get("already_ingested") and "id" in d]


def validate_batch(root: Path, ingested: list[dict], quarantine_dir: Path) -> dict:
    """The Great Expectations contract, once for all datasets this run made new
    (:func:`pipelines.contract.validate_datasets`), the per-volume datasets split from the
    run's traces included (:func:`split_landed`). A dataset that fails is moved out of the
    data root's catalog into ``quarantine/datasets/`` with its report, and its source is
    quarantined too. Returns {"valid": [...], "invalid": [...]} of the new results and
    {"superseded": [...]}, the partial datasets the run's files withdrew (:func:`ingest_landed`)."""
    from pipelines.contract import validate_datasets

    new = {(r["kind"], r["id"]): r for r in _new_datasets(ingested)}
    checked = validate_datasets(root, list(new), quarantine_dir)
    out = {"valid": [new[k] for k in checked["valid"]], "invalid": [],
           "superseded": [{**r["superseded"], "by": r["id"], "source": r["source"]} for r in ingested
                          if r and r.get("superseded")]}
    for kind, dataset_id, summary in checked["invalid"]:
        r = new[(kind, dataset_id)]
        archived = root / r["archived_as"]
        if archived.exists():
            quarantine(archived, quarantine_dir, f"accepted rows fail the {kind} contract: {summary}")
        out["invalid"].append({**r, "error": summary})
    return out


# --- replay plan -----------------------------------------------------------------------------


def scenario_ref(root: Path, name: str) -> str:
    """A preset name as is; a ``.toml`` file relative to the data root, refused outside it."""
    if not name.endswith(".toml"):
        return name
    return str(under_root(root, str(Path(name).parent), ".", "scenario file") / Path(name).name)


@dataclass(frozen=True)
class ReplayConfig:
    scenarios: dict[str, Scenario]  # by name (preset or .toml under the root), parsed once, when checked
    traces: tuple[str, ...]  # globs over trace id and source file name
    formats: tuple[str, ...]  # empty: any
    skew_slice_bytes: tuple[int, ...] = ()  # I/O skew at these slice sizes, mapped over volumes; empty: none
    task_requests: int = DEFAULT_TASK_REQUESTS  # requests of the pairs one replay task runs (replay_batches)


CONFIG_KEYS = {"scenarios", "traces", "formats", "skew_slice_bytes", "task_requests"}


def replay_config(root: Path, scenarios: list[str] | None = None, traces: list[str] | None = None) -> ReplayConfig:
    """``<root>/replay.toml`` (optional) with the run's overrides, checked before anything is
    mapped: every scenario must load (a preset name or a TOML file under the data root), every
    key must be known. No scenarios anywhere: :data:`DEFAULT_SCENARIOS`."""
    from replay.scenario import load as load_scenario

    path = root / CONFIG_FILE
    doc: dict = {}
    if path.is_file():
        try:
            doc = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{path}: {e}") from None
        unknown = sorted(set(doc) - CONFIG_KEYS)
        if unknown:
            raise InputError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(CONFIG_KEYS))})")
    parsed, bad = {}, []
    for name in scenarios or doc.get("scenarios") or DEFAULT_SCENARIOS:
        try:
            parsed[name] = load_scenario(scenario_ref(root, name))
        except (OSError, ValueError, LookupError) as e:
            bad.append(f"{name}: {e}")
    slices = doc.get("skew_slice_bytes") or []
    if not isinstance(slices, list) or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in slices):
        bad.append(f"skew_slice_bytes: expected a list of positive integers (bytes), got {slices!r}")
    task_requests = doc.get("task_requests", DEFAULT_TASK_REQUESTS)
    if not isinstance(task_requests, int) or isinstance(task_requests, bool) or task_requests < 0:
        bad.append(f"task_requests: expected an integer >= 0 (0: one replay task per pair), got {task_requests!r}")
    if bad:
        raise InputError("replay configuration refused before any replay: " + "; ".join(bad))
    globs = tuple(traces or doc.get("traces") or ("*",))
    return ReplayConfig(parsed, globs, tuple(doc.get("formats") or ()), tuple(slices), task_requests)


def _matching_traces(root: Path, config: ReplayConfig) -> list:
    """The traces ``config`` selects by id, source file name and format. A trace split by volume
    is replaced by its volumes' traces, which are selected when it is (or they are)."""
    from pipelines.catalog import list_traces

    traces = {t.trace_id: t for t in list_traces(root)}
    split = {t.split_from for t in traces.values()}

    def selected(t) -> bool:
        source = Path(t.manifest.get("source_path") or "").name
        if config.formats and t.manifest.get("format") not in config.formats:
            return False
        return any(fnmatch.fnmatchcase(t.trace_id, g) or fnmatch.fnmatchcase(source, g) for g in config.traces)

    return [t for t in traces.values() if t.trace_id not in split
            and (selected(t) or (t.split_from in traces and selected(traces[t.split_from])))]


def replay_plan(root: Path, config: ReplayConfig, limit: int = MAX_BATCH) -> tuple[list[dict], int, int]:
    """(pairs to run, pairs already run by this model version, pairs left for a later run):
    every trace that matches the config, times every scenario; a pair carries its trace's
    request count (:func:`replay_batches`). ``limit`` counts the tasks the pairs make (batches of
    ``config.task_requests``), not pairs: 1,000 small volumes x 2 scenarios fit one run."""
    from pipelines.replay import run_id, run_paths

    todo, done = [], 0
    for t in _matching_traces(root, config):
        for name, sc in config.scenarios.items():
            if run_paths(root, run_id(t.trace_id, sc, t.data_version))["summary_json"].is_file():
                done += 1
            else:
                todo.append({"trace_id": t.trace_id, "scenario": name,
                             "requests": int(t.manifest.get("rows_accepted") or 0),
                             **({"split_from": t.split_from} if t.split_from else {})})
    kept = [p for b in replay_batches(todo, config.task_requests)[:limit] for p in b]
    return kept, done, len(todo) - len(kept)


def replay_batches(pairs: list[dict], task_requests: int = DEFAULT_TASK_REQUESTS) -> list[list[dict]]:
    """``pairs`` in the order given, cut into the batches the replay tasks map over: consecutive
    pairs of one trace, or of the volumes of one trace split by volume (``split_from``), while
    their requests add up to at most ``task_requests`` (a pair larger than that, or
    ``task_requests`` 0, is a batch alone). Not across other traces: a trace's scenarios read the
    same page stream, and the batches of equal traces stay equal, which keeps the workers evenly
    busy; a split trace's small volumes would each pay Airflow's cost per task (1,000 volumes of a
    cloud trace: 1,000 tasks) for a replay of a fraction of a second."""
    batches: list[list[dict]] = []
    total = 0
    for pair in pairs:
        last = batches[-1] if batches else None
        if (task_requests and last and _batch_key(last[0]) == _batch_key(pair)
                and total + pair.get("requests", 0) <= task_requests):
            last.append(pair)
            total += pair.get("requests", 0)
        else:
            batches.append([pair])
            total = pair.get("requests", 0)
    return batches


def _batch_key(pair: dict) -> str:
    """What pairs must share to be batched: the trace they split from, else their own."""
    return pair.get("split_from") or pair["trace_id"]


# --- per-volume work: I/O skew mapped over the volumes of a trace ------------------------------


def skew_plan(root: Path, config: ReplayConfig, limit: int = MAX_BATCH) -> list[dict]:
    """One item per (trace, volume, slice size) whose trace has no skew result at that slice
    size yet: the per-volume counts are independent, so a multi-volume trace spreads over
    workers (:func:`skew_volume`), and the load task merges them (:func:`merge_skew`)."""
    from pipelines.analytics import skew_paths

    items = []
    for t in _matching_traces(root, config):
        for slice_bytes in config.skew_slice_bytes:
            if not skew_paths(root, t, slice_bytes)["summary"].is_file():
                items += [{"trace_id": t.trace_id, "volume": v, "slice_bytes": slice_bytes}
                          for v in sorted(t.manifest.get("volumes") or {})]
    return items[:limit]


def _skew_parts(root: Path, trace_id: str, slice_bytes: int) -> Path:
    """Where a trace's per-volume skew counts wait for the merge (hidden: the loader skips it)."""
    return root / "results" / ".skew_parts" / trace_id / str(slice_bytes)


def skew_volume(root: Path, item: dict) -> dict:
    """Count one volume's I/Os per slice (``replay.skew.SkewCounter``) into its part file."""
    from pipelines.catalog import find_trace, volume_dir
    from pipelines.files import write_parquet
    from replay.skew import SkewCounter

    trace = find_trace(root, item["trace_id"])
    counter = SkewCounter(int(item["slice_bytes"]))
    files = sorted(volume_dir(trace.path, item["volume"]).glob("part-*.parquet"))
    stats = (trace.manifest.get("volumes") or {}).get(item["volume"])
    rows = sum(counter.add_parquet(f, stats) for f in files)
    out = _skew_parts(root, trace.trace_id, counter.slice_bytes) / f"{volume_dir(Path(), item['volume']).name}.parquet"
    write_parquet(counter.partial(), out)
    return {**item, "rows": rows, "part": out.relative_to(root).as_posix()}


def merge_skew(root: Path, counted: list[dict]) -> list[str]:
    """Each trace's skew from its volumes' counts (equal to ``tiercast skew`` of the whole trace),
    written where the loader reads it, once every volume of the trace was counted; the parts are
    removed. Returns the skew files written, relative to the root."""
    import polars as pl

    from pipelines.analytics import capacities, write_skew
    from pipelines.catalog import find_trace
    from replay.skew import SkewCounter

    written = []
    for trace_id, slice_bytes in sorted({(c["trace_id"], int(c["slice_bytes"])) for c in counted if c}):
        trace = find_trace(root, trace_id)
        parts = _skew_parts(root, trace_id, slice_bytes)
        files = sorted(parts.glob("*.parquet"))
        if len(files) < len(trace.manifest.get("volumes") or {}):
            continue  # a volume failed: its trace waits for the next run
        counter = SkewCounter(slice_bytes)
        for f in files:
            counter.add_partial(pl.read_parquet(f))
        paths = write_skew(root, trace, counter.result(capacities(trace)))
        shutil.rmtree(parts)
        for empty in (parts.parent, parts.parent.parent):
            if not any(empty.iterdir()):
                empty.rmdir()
        written.append(paths["summary"].relative_to(root).as_posix())
    return written


def skew_inputs(item: dict) -> list[str]:
    """One volume of a trace, and its manifest."""
    from pipelines.catalog import volume_dir

    return [f"traces/{item['trace_id']}/manifest.json",
            f"traces/{item['trace_id']}/{volume_dir(Path(), item['volume']).name}/"]


def replay_pair(root: Path, pair: dict) -> dict:
    from pipelines.steps import replay_pair as step

    return step(pair["trace_id"], scenario_ref(root, pair["scenario"]), root)


def replay_batch(root: Path, batch: list[dict]) -> list[dict]:
    """Each pair of a batch (:func:`replay_batches`), one after another. An input error of one
    pair does not keep the others from running: the errors are raised together at the end
    (idempotent: a retry finds the finished pairs done)."""
    out, errors = [], []
    for pair in batch:
        try:
            out.append(replay_pair(root, pair))
        except InputError as e:
            errors.append(f"{pair['trace_id']} x {pair['scenario']}: {e}")
    if errors:
        raise InputError("; ".join(errors))
    return out


# --- summaries -------------------------------------------------------------------------------


def run_file(dag_id: str, run_id: str, suffix: str = ".json") -> str:
    """``runs/<dag>/<run><suffix>`` relative to the data root (a run id made safe as a name)."""
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in run_id)
    return f"runs/{dag_id}/{safe}{suffix}"


def write_run_summary(root: Path, dag_id: str, run_id: str, summary: dict) -> Path:
    """``<root>/runs/<dag>/<run>.json``: what a DAG run did and what failed (also in the log)."""
    path = root / run_file(dag_id, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"dag_id": dag_id, "run_id": run_id, "written_at": datetime.now(tz=UTC).isoformat(),
                             **summary})
    return path


# --- object-store data roots -----------------------------------------------------------------

#: what each task downloads from an object-store data root before it runs
#: (``pipelines.object_store.staged``); it uploads what it wrote
PLAN_INPUTS = [CONFIG_FILE, "scenarios/", "traces/*/manifest.json", "results/array_runs/*/summary.json"]
#: the loader removes units whose files are gone, so it sees all of them
LOAD_INPUTS = ["traces/", "measured/", "results/", "tiercast.duckdb"]
#: the report reads the warehouse and the files behind its views
REPORT_INPUTS = LOAD_INPUTS


def ingest_inputs(landed: str) -> list[str]:
    """A landed file (relative to the root) with its marker, the re-ingest index and the
    manifests (a dataset already there is not ingested again)."""
    return [landed, landed + DONE_SUFFIX, "traces/_sources.json", "traces/*/manifest.json", "measured/*/manifest.json"]


def validate_inputs(ingested: list[dict]) -> list[str]:
    """The datasets an ingest run made new, and their archived sources (quarantined when GX fails)."""
    return list(dict.fromkeys(p for r in _new_datasets(ingested)
                              for p in (f"{_dataset_dir(r['kind'])}/{r['id']}/", r["archived_as"])))


def split_inputs(result: dict) -> list[str]:
    """A landed trace, the re-ingest index and the manifests (a volume split before is not again)."""
    if result.get("kind") != "trace" or "id" not in result:
        return []
    return [f"traces/{result['id']}/", "traces/_sources.json", "traces/*/manifest.json"]


def replay_inputs(batch: list[dict]) -> list[str]:
    """The batch's traces (with their page streams), scenario files, and finished runs (idempotence)."""
    return [*dict.fromkeys(f"traces/{p['trace_id']}/" for p in batch), "scenarios/", "results/array_runs/*/summary.json"]
