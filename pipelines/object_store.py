"""A data root in an object store (``s3://bucket/prefix``), for workers that share no disk.

The pipeline steps work on a local directory. A task on an object-store root *stages*: it
downloads the inputs it declares (relative paths or globs under the root) into a scratch
directory, runs the step there, and uploads what the step wrote or changed; data files first and
the files that mark a unit complete (``manifest.json`` of a dataset, ``summary.json`` of a run,
the warehouse file) last, each object written whole by one PUT. So a reader of the store never
sees a dataset or run whose marker is there and whose data is not, and a task that fails uploads
nothing. Files the step moved or removed (a landed file archived) are deleted from the store
after the uploads. Downloaded files keep the object's modification time, so the warehouse
loader's fingerprints (size, mtime) are the same on every worker and a second load loads
nothing.

Filesystems come from fsspec (``s3fs`` for ``s3://``); an S3-compatible server other than AWS
is named by ``$TIERCAST_S3_ENDPOINT_URL`` (else boto's ``$AWS_ENDPOINT_URL``). DuckDB reads the
trace Parquet in the store through the same filesystem (:func:`query`), registered with
``register_filesystem``: its ``httpfs`` extension would be downloaded at run time.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

ENV_ENDPOINT = "TIERCAST_S3_ENDPOINT_URL"
#: files whose upload makes a unit complete: uploaded after everything else
MARKERS = ("manifest.json", "summary.json", "tiercast.duckdb")
#: never uploaded: staging directories of interrupted steps, per-worker caches, DuckDB's WAL
LOCAL_ONLY = (".tmp-*", ".cache", "*.wal", ".owner.json")


def is_url(value: str | os.PathLike | None) -> bool:
    """True for ``scheme://...`` (an object store), false for a local path."""
    return "://" in str(value or "") and not str(value).startswith("file://")


def filesystem(url: str):
    """(fsspec filesystem, root path inside it without the scheme) of ``url``."""
    import fsspec

    options = {}
    endpoint = os.environ.get(ENV_ENDPOINT) or os.environ.get("AWS_ENDPOINT_URL")
    if url.startswith(("s3://", "s3a://")) and endpoint:
        options["endpoint_url"] = endpoint
    fs, base = fsspec.core.url_to_fs(url, **options)
    return fs, base.rstrip("/")


def _mtime_s(info: dict) -> float | None:
    value = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, int | float) else None


def _remote_files(fs, base: str, patterns: list[str]) -> dict[str, dict]:
    """{relative path: info} of the objects that ``patterns`` name: ``""`` or ``dir/`` is a whole
    subtree, anything else a glob (``traces/*/manifest.json``) or one file."""
    out: dict[str, dict] = {}
    for pattern in patterns:
        where = f"{base}/{pattern}".rstrip("/")
        if pattern == "" or pattern.endswith("/"):
            found = fs.find(where, detail=True) if fs.exists(where) else {}
        elif any(c in pattern for c in "*?["):
            found = fs.glob(where, detail=True)
        else:
            found = {where: fs.info(where)} if fs.isfile(where) else {}
        for path, info in found.items():
            if info.get("type", "file") == "file":
                out[path[len(base) + 1:]] = info
    return out


def pull(fs, base: str, local: Path, patterns: list[str]) -> dict[str, tuple[int, int]]:
    """Download what ``patterns`` name into ``local`` with the objects' mtimes; returns
    {relative path: (size, mtime_ns)} as written locally."""
    pulled = {}
    for rel, info in sorted(_remote_files(fs, base, patterns).items()):
        dest = local / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(f"{base}/{rel}", str(dest))
        mtime = _mtime_s(info)
        if mtime is not None:
            os.utime(dest, (mtime, mtime))
        st = dest.stat()
        pulled[rel] = (st.st_size, st.st_mtime_ns)
    return pulled


def _local_only(rel: str) -> bool:
    return any(fnmatch.fnmatchcase(part, pat) for part in rel.split("/") for pat in LOCAL_ONLY)


def push(fs, base: str, local: Path, pulled: dict[str, tuple[int, int]]) -> dict[str, list[str]]:
    """Upload the files under ``local`` that are new or changed since :func:`pull`, markers last,
    then delete the pulled files that are gone locally. Returns {"uploaded": [...], "deleted": [...]}."""
    changed = []
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        rel = path.relative_to(local).as_posix()
        st = path.stat()
        if not _local_only(rel) and pulled.get(rel) != (st.st_size, st.st_mtime_ns):
            changed.append(rel)
    changed.sort(key=lambda rel: rel.rsplit("/", 1)[-1] in MARKERS)
    for rel in changed:
        fs.put_file(str(local / rel), f"{base}/{rel}")
    deleted = sorted(rel for rel in pulled if not (local / rel).exists())
    for rel in deleted:
        fs.rm_file(f"{base}/{rel}")
    return {"uploaded": changed, "deleted": deleted}


@contextmanager
def staged(url: str, inputs: list[str], scratch: Path | None = None,
           keep_on: tuple[type[BaseException], ...] = ()) -> Iterator[Path]:
    """A local copy of the ``inputs`` of the data root ``url`` to run a step in; on success, what
    the step wrote goes back to the store (:func:`push`); on an exception, nothing does, except
    for the ``keep_on`` types (an input error whose quarantined file is an output), re-raised
    after the upload."""
    fs, base = filesystem(url)
    with tempfile.TemporaryDirectory(prefix="tiercast-stage-", dir=scratch) as tmp:
        local = Path(tmp)
        pulled = pull(fs, base, local, inputs)
        try:
            yield local
        except keep_on:
            push(fs, base, local, pulled)
            raise
        push(fs, base, local, pulled)


def listing(url: str, prefix: str) -> dict[str, float] | None:
    """{name: modification time in s} of the objects directly under ``prefix`` of the root
    ``url``; None when there is none (no such folder)."""
    fs, base = filesystem(url)
    where = f"{base}/{prefix}".rstrip("/")
    try:
        found = fs.ls(where, detail=True, refresh=True)
    except FileNotFoundError:
        return None
    files = {f["name"].rsplit("/", 1)[-1]: _mtime_s(f) or 0.0 for f in found if f.get("type") == "file"}
    return files if found else None


def put_json(url: str, rel: str, doc: dict) -> None:
    """One small JSON object at ``rel`` under the root ``url``, written whole by one PUT."""
    import json

    fs, base = filesystem(url)
    fs.pipe_file(f"{base}/{rel}", json.dumps(doc).encode())


def query(url: str, sql: str):
    """Run read-only SQL on the warehouse of the data root ``url`` (a local copy of its DuckDB
    file), the ``requests`` / ``rejects`` views reading the trace Parquet in the store through
    the registered fsspec filesystem. Returns a Polars frame."""
    import duckdb  # noqa: F401  (con.sql: relations come with DuckDB's Python layer, see pipelines/duckdb_engine.py)

    from pipelines import warehouse

    fs, base = filesystem(url)
    with tempfile.TemporaryDirectory(prefix="tiercast-query-") as tmp:
        db = Path(tmp) / "tiercast.duckdb"
        if not fs.isfile(f"{base}/{db.name}"):
            raise LookupError(f"no warehouse at {url}/{db.name}: load it first")
        fs.get_file(f"{base}/{db.name}", str(db))
        con = warehouse.connect(db, read_only=True)
        try:
            con.register_filesystem(fs)
            scheme = url.split("://", 1)[0]
            for view, (kind, _) in warehouse.FILE_VIEWS.items():
                rel = warehouse.file_paths(con, kind) if re.search(rf"\b{view}\b", sql, re.IGNORECASE) else []
                if rel:
                    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS "
                                + warehouse.file_view_sql(view, [f"{scheme}://{base}/{p}" for p in rel]))
            return con.sql(sql).pl()
        finally:
            con.close()
