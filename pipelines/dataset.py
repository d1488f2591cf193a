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
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow.parquet as pq

from pipelines.catalog import write_json_atomic
from schemas.trace import REJECT_SCHEMA

R = TypeVar("R")
#: ``--validate``: full below TIERCAST_GX_FULL_ROWS rows else sample; every row; a sample; none
VALIDATE_MODES = ("auto", "full", "sample", "off")


def check_validate_mode(validate: str) -> None:
    """Refuse an unknown validation mode (a typo must not silently mean "auto")."""
    if validate not in VALIDATE_MODES:
        raise ValueError(f"--validate must be one of {', '.join(VALIDATE_MODES)}; got {validate!r}")


def content_id(sha256: str, identity: dict) -> str:
    """Id of a dataset: the source's sha256 plus everything that changes the output."""
    key = json.dumps({"sha256": sha256, **identity}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class Staging:
    """A temporary directory under ``root`` that becomes ``root/<id>`` only by :meth:`publish`.

    Used as a context manager: any exception (or a missing publish) removes the directory,
    so an interrupted ingest leaves nothing that looks like a dataset.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / f".tmp-{uuid.uuid4().hex[:12]}"
        self.final: Path | None = None

    def __enter__(self) -> Staging:
        self.path.mkdir()
        return self

    def publish(self, dataset_id: str) -> bool:
        """Rename into place; False (and the staging removed) when it already exists."""
        final = self.root / dataset_id
        if (final / "manifest.json").is_file():
            shutil.rmtree(self.path, ignore_errors=True)
            self.final = final
            return False
        os.rename(self.path, final)
        self.final = final
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
            return json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}

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
) -> R:
    """The publish protocol every ingest step follows.

    An unchanged file seen before returns its dataset without being read; otherwise ``build``
    writes the dataset into a staging directory and returns its manifest, whose ``id_key`` names
    the dataset; the staging directory is renamed into place unless that dataset already exists
    (same content under another name). ``result(manifest, dataset_dir, already)`` makes the
    caller's result object.
    """
    index = SourceIndex(root)
    key = SourceIndex.key(path, identity)
    known = index.get(key)
    if known and (man := _manifest(root / known)) is not None:
        return result(man, root / known, True)
    with Staging(root) as stage:
        manifest = build(stage.path)
        fresh = stage.publish(manifest[id_key])
    index.put(key, manifest[id_key])
    if not fresh:
        return result(_manifest(stage.final), stage.final, True)
    return result(manifest, stage.final, False)
