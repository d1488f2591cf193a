"""Building blocks every ingest step shares: atomic staging directories, rejects, content ids
and the re-ingest index. Traces (pipelines.ingest) and measured logs use the same ones, so
both give the same guarantees: a dataset appears only complete, rejects keep line + raw +
reason, and the same content with the same options is ingested once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pipelines.catalog import write_json_atomic

if TYPE_CHECKING:  # imported where rejects are written, not by `tiercast traces` (is_current)
    import polars as pl
    import pyarrow.parquet as pq

R = TypeVar("R")
#: what a dataset's content depends on besides the input: every reader, the source layer, the
#: canonical schemas and the ingest steps (see :func:`reader_version`)
READER_MODULES = ("traces", "schemas.trace", "schemas.measured", "pipelines.dataset", "pipelines.ingest",
                  "pipelines.ingest_logs")


def reader_version() -> str:
    """Version of the code that turns a raw file into a dataset: 16 hex digits of the SHA-256 of
    the source of ``READER_MODULES`` (``replay.version.model_version``, the hash replay results
    are keyed on). A hash, not a constant bumped by hand, because a reader fix that forgets the
    bump would leave wrong traces counted as current; the price is that any change to those
    modules (a comment too) makes every dataset stale, so re-ingests happen more often than
    strictly needed, never less. Recorded in every manifest as ``reader_version``."""
    from replay.version import model_version

    return model_version(READER_MODULES)


def is_current(manifest: dict) -> bool:
    """Whether the dataset was made by the current reader version (older ones are stale)."""
    return manifest.get("reader_version") == reader_version()


def package_version() -> str:
    """The installed tiercast package version ("0+unknown" in a source tree never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tiercast")
    except PackageNotFoundError:
        return "0+unknown"
#: ``--validate``: full below TIERCAST_GX_FULL_ROWS rows else sample; every row; a sample; none
VALIDATE_MODES = ("auto", "full", "sample", "off")


def check_validate_mode(validate: str) -> None:
    """Refuse an unknown validation mode (a typo must not silently mean "auto")."""
    if validate not in VALIDATE_MODES:
        raise ValueError(f"--validate must be one of {', '.join(VALIDATE_MODES)}; got {validate!r}")


def key_of(what: list) -> str:
    """16 hex digits naming a derived result by what produced it (ids, versions, parameters,
    in a fixed order): page streams, skew results, model-vs-measured comparisons."""
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


def content_id(sha256: str, identity: dict) -> str:
    """Id of a dataset: the source's sha256 plus everything that changes the output."""
    key = json.dumps({"sha256": sha256, **identity}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


OWNER_FILE = ".owner.json"
#: A staging directory without an owner file (older tiercast), or from another host (shared
#: storage, where its owner cannot be checked), is stale after this long without a change.
STALE_UNOWNED_S = 24 * 3600.0
#: An owner file that cannot be read is stale this long after it was written: it is written
#: whole or not at all (:func:`_claim`), so only a write cut short by a full disk (tiercast
#: before it wrote the file atomically) or a damaged file is unreadable.
STALE_UNREADABLE_OWNER_S = 60.0


def _process_started(pid: int) -> float | None:
    """Start time of a live process, None when there is none (pid reuse shows as another start)."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def _is_stale(stage: Path, now_s: float) -> bool:
    """A staging directory whose ingest cannot finish any more: its process is gone (killed,
    SIGKILL, power loss), or it has no owner we can check and nothing changed in it for a day."""
    owner_file = stage / OWNER_FILE
    try:
        owner = json.loads(owner_file.read_text())
        pid, host, started = int(owner["pid"]), str(owner["host"]), float(owner["started"])
    except FileNotFoundError:
        try:
            return now_s - stage.stat().st_mtime > STALE_UNOWNED_S
        except OSError:
            return False
    except (OSError, ValueError, KeyError, TypeError):
        try:
            return now_s - owner_file.stat().st_mtime > STALE_UNREADABLE_OWNER_S
        except OSError:
            return False
    if host != socket.gethostname():
        return now_s - stage.stat().st_mtime > STALE_UNOWNED_S
    live_start = _process_started(pid)
    return live_start is None or abs(live_start - started) > 1.0


def _claim(stage: Path) -> None:
    """Mark ``stage`` as this process's (see :func:`_is_stale`); the owner file is written whole
    or not at all."""
    pid = os.getpid()
    write_json_atomic(stage / OWNER_FILE, {"pid": pid, "host": socket.gethostname(), "started": _process_started(pid)})


def _claimed_dir(path: Path) -> Path:
    """Create ``path`` as a staging directory of this process; removed again when it cannot be
    claimed (a full disk): nothing ownerless is left for a day."""
    path.mkdir()
    try:
        _claim(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def remove_stale_staging(root: Path) -> list[Path]:
    """Delete the staging directories under ``root`` left by interrupted ingests; returns them.
    A concurrent ingest's directory (its process alive) is kept."""
    removed = []
    now_s = time.time()
    for stage in Path(root).glob(".tmp-*"):
        if stage.is_dir() and _is_stale(stage, now_s):
            shutil.rmtree(stage, ignore_errors=True)
            removed.append(stage)
    return removed


class Staging:
    """A temporary directory under ``root`` that becomes ``root/<id>`` only by :meth:`publish`.

    Used as a context manager: any exception (or a missing publish) removes the directory,
    so an interrupted ingest leaves nothing that looks like a dataset. A process killed
    outright (SIGKILL) cannot clean up: its directory names its owner (pid, host, process start
    time), and the next ingest into the same root removes it once that process is gone.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / f".tmp-{uuid.uuid4().hex[:12]}"
        self.final: Path | None = None

    def __enter__(self) -> Staging:
        _claimed_dir(self.path)
        return self

    def publish(self, dataset_id: str, replace: bool = False) -> bool:
        """Rename into place. When the dataset exists: with ``replace`` the old one is swapped
        out (moved into a staging directory of this process, then removed) and True returned;
        else False (and the staging removed)."""
        final = self.root / dataset_id
        self.final = final
        if (final / "manifest.json").is_file():
            if not replace:
                shutil.rmtree(self.path, ignore_errors=True)
                return False
            retired = _claimed_dir(self.root / f".tmp-{uuid.uuid4().hex[:12]}")  # claimed before it holds anything
            os.rename(final, retired / final.name)
            (self.path / OWNER_FILE).unlink()
            os.rename(self.path, final)
            shutil.rmtree(retired, ignore_errors=True)
            return True
        (self.path / OWNER_FILE).unlink()
        os.rename(self.path, final)
        return True

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)


class RejectsWriter:
    """Appends rejected rows (src_line, raw, reason) to ``<dir>/rejects/part-00000.parquet``."""

    def __init__(self, directory: Path):
        self.dir = Path(directory) / "rejects"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._writer: pq.ParquetWriter | None = None
        self.count = 0
        self.first: tuple[int, str] | None = None

    def write(self, rejects: pl.DataFrame) -> None:
        if not rejects.height:
            return
        import polars as pl
        import pyarrow.parquet as pq

        from schemas.trace import REJECT_SCHEMA

        t = rejects.select(pl.col(c).cast(d) for c, d in REJECT_SCHEMA.items()).to_arrow()
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.dir / "part-00000.parquet", t.schema)
        self._writer.write_table(t)
        if self.first is None:
            self.first = (int(rejects["src_line"][0]), rejects["reason"][0])
        self.count += rejects.height

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class IngestInvariantError(RuntimeError):
    """A check that must hold whatever the input failed: a bug in tiercast, not in the file.
    Raised explicitly (an ``assert`` is gone under ``python -O``); nothing is published."""


def check_counts(source: Path, read: int, accepted: int, rejected: int, what: str = "rows") -> None:
    """Nothing is lost: every row read is accepted or rejected."""
    if read != accepted + rejected:
        raise IngestInvariantError(
            f"{source}: internal error, {what} read {read:,} != accepted {accepted:,} + rejected {rejected:,}; "
            "nothing was published (please report this)"
        )


class CorruptIndexError(ValueError):
    """``_sources.json`` cannot be read. Not replaced silently: it may be a disk or a concurrent
    writer's problem the user must see; deleting it is safe (it only caches what was ingested)."""

    def __init__(self, file: Path, problem: object):
        super().__init__(
            f"{file}: the re-ingest index is corrupt ({problem}); it only records which files were "
            "already ingested (the manifests are the truth): delete it and run again"
        )


class SourceIndex:
    """(path, size, mtime, options) -> dataset id, so re-ingesting an unchanged file is a
    no-op without reading it again. A hint only: the dataset's manifest is the truth."""

    def __init__(self, root: Path):
        self.file = Path(root) / "_sources.json"

    @staticmethod
    def key(path: Path, identity: dict) -> str:
        st = Path(path).stat()
        return json.dumps([str(Path(path).resolve()), st.st_size, st.st_mtime_ns, identity], sort_keys=True)

    def _load(self) -> dict:
        try:
            idx = json.loads(self.file.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise CorruptIndexError(self.file, e) from e
        if not isinstance(idx, dict):
            raise CorruptIndexError(self.file, f"expected a JSON object, found {type(idx).__name__}")
        return idx

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def put(self, key: str, dataset_id: str) -> None:
        idx = self._load()
        idx[key] = dataset_id
        self.file.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.file, idx)


def _manifest(d: Path) -> dict | None:
    m = d / "manifest.json"
    return json.loads(m.read_text()) if m.is_file() else None


def ingest_once(
    root: Path,
    path: Path,
    identity: dict,
    id_key: str,
    build: Callable[[Path], dict],
    result: Callable[[dict, Path, bool], R],
    force: bool = False,
) -> R:
    """The publish protocol every ingest step follows.

    Stale staging directories of dead ingests are removed first. An unchanged file seen before
    returns its dataset without being read, when that dataset was made by the current reader
    version (:func:`reader_version`); otherwise ``build`` writes the dataset into a staging
    directory and returns its manifest, whose ``id_key`` names the dataset. The staging
    directory is renamed into place; an existing dataset with that id (same content under
    another name) is kept unless ``force`` is set or an older reader version made it, in which
    case it is replaced. ``result(manifest, dataset_dir, already)`` makes the caller's result.
    """
    remove_stale_staging(root)
    index = SourceIndex(root)
    key = SourceIndex.key(path, identity)
    known = index.get(key)
    if not force and known and (man := _manifest(root / known)) is not None and is_current(man):
        return result(man, root / known, True)
    with Staging(root) as stage:
        manifest = build(stage.path)
        existing = _manifest(root / manifest[id_key])
        replace = force or (existing is not None and not is_current(existing))
        fresh = stage.publish(manifest[id_key], replace=replace)
    index.put(key, manifest[id_key])
    if not fresh:
        return result(_manifest(stage.final), stage.final, True)
    return result(manifest, stage.final, False)
