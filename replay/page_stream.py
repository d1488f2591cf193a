"""Replay-ready page streams: a trace's page split and dense ids, written once, mapped afterwards.

What-if work replays one trace through many policies and sizes; each replay used to read the
Parquet trace, split requests into pages and give pages dense ids (``replay.pages``) before the
kernel ran, ~3x the kernel's own time. A page stream stores the outcome of that preparation as
flat ``.npy`` files, so a later replay at the same page size maps them and goes straight to the
kernel, one window of rows at a time (the rows of a segment only: peak memory is a segment, not the
trace).

Files of a stream directory (one value per request, or per page access)::

    manifest.json     written last: counts, page size, volume names, distinct pages, key
    ts_ns.npy         int64  per request
    op.npy            uint8  per request (schemas.trace op codes)
    offset.npy        int64  per request, bytes
    size_bytes.npy    int32  per request
    volume.npy        int32  per request (dense volume id; absent for one-volume traces: all 0)
    page_id.npy       int32  per page access, dense id in first-appearance order
    page_count.npy    int32  per request, pages it touches   } absent when every request
    page_bytes.npy    int32  per page access                 } touches exactly one page

Page numbers and owning requests are derived on reading (``replay.pages.expand_pages``), and
``Segment.n_ids`` is the running maximum of the ids + 1 (ids are given in first-appearance order).
Every file has a fixed 128-byte ``.npy`` header written when the stream is finished (the row count
is known only then). ``PageStream.open`` checks the manifest, each header and each file's exact
length; the replay checks every segment's ids against the manifest's count before a kernel indexes
with them, so a damaged stream is refused (the caller rebuilds it), never followed out of bounds.
Where the stream lives, its key and the atomic publication are the caller's
(``pipelines.simulate``): this module reads and writes the files of one directory.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from replay.model import Segment
from replay.pages import expand_pages, single_page_segment

FORMAT = 1
MANIFEST = "manifest.json"
HEADER_BYTES = 128
REQUEST_COLUMNS = {"ts_ns": np.int64, "op": np.uint8, "offset": np.int64, "size_bytes": np.int32,
                   "volume": np.int32}
PAGE_COLUMNS = {"page_id": np.int32, "page_bytes": np.int32}
COUNT_COLUMN = ("page_count", np.int32)
MAX_STREAM_IDS = (1 << 31) - 1


class StreamError(ValueError):
    """A stream directory that cannot be used (missing, partial, damaged or of another key)."""


def _header(dtype: np.dtype, n: int) -> bytes:
    """A ``.npy`` 1.0 header for ``n`` values of ``dtype``, padded to HEADER_BYTES."""
    text = f"{{'descr': '{np.dtype(dtype).str}', 'fortran_order': False, 'shape': ({n},), }}"
    body = text.ljust(HEADER_BYTES - 10 - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body.encode("latin1")


def _read_header(path: Path) -> tuple[np.dtype, int]:
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
    if len(head) != HEADER_BYTES or head[:8] != b"\x93NUMPY\x01\x00" or int.from_bytes(head[8:10], "little") != HEADER_BYTES - 10:
        raise StreamError(f"{path}: not a page-stream column (bad .npy header)")
    try:
        d = ast.literal_eval(head[10:].decode("latin1").strip())
        return np.dtype(d["descr"]), int(d["shape"][0])
    except (ValueError, SyntaxError, KeyError, TypeError, IndexError) as e:
        raise StreamError(f"{path}: unreadable .npy header ({e})") from None


class PageStreamWriter:
    """Appends segments (``replay.model.Segment``, built in order by one ``SegmentBuilder``) to the
    column files of ``directory`` (an empty staging directory); ``finish`` writes the headers and
    the manifest. Nothing here is published: the caller renames the directory into place."""

    def __init__(self, directory: str | Path, page_size: int, key: str):
        self.dir = Path(directory)
        self.page_size = page_size
        self.key = key
        self.n_requests = self.n_pages = 0
        self.single_page = True  # so far every request touched exactly one page
        self.multi_volume = False
        self._files = {}
        for name, dt in {**REQUEST_COLUMNS, "page_id": np.int32}.items():
            if name != "volume":
                self._open(name, dt)

    def _open(self, name: str, dtype) -> None:
        f = open(self.dir / f"{name}.npy", "wb")  # noqa: SIM115 - closed in finish/close
        f.write(_header(dtype, 0))
        self._files[name] = (f, np.dtype(dtype))

    def _put(self, name: str, values: np.ndarray) -> None:
        f, dt = self._files[name]
        np.ascontiguousarray(values, dtype=dt).tofile(f)

    def _become_multi_page(self) -> None:
        """First request with other than one page: every earlier request had one page, whose
        bytes were its size; write those counts and page bytes before continuing."""
        self._open(*COUNT_COLUMN)
        self._open("page_bytes", np.int32)
        step = 1 << 22
        for a in range(0, self.n_requests, step):
            n = min(step, self.n_requests - a)
            self._put("page_count", np.ones(n, dtype=np.int32))
        self._files["size_bytes"][0].flush()
        sizes = np.memmap(self.dir / "size_bytes.npy", dtype=np.int32, mode="r", offset=HEADER_BYTES,
                          shape=(self.n_requests,)) if self.n_requests else np.zeros(0, np.int32)
        for a in range(0, self.n_requests, step):
            self._put("page_bytes", sizes[a: a + step])
        del sizes
        self.single_page = False

    def add(self, segment: Segment) -> None:
        if segment.page_size != self.page_size:
            raise ValueError(f"page stream of {self.page_size} B pages given a segment of {segment.page_size} B pages")
        if segment.n_ids > MAX_STREAM_IDS:
            raise ValueError(f"{segment.n_ids} distinct pages: page streams hold at most {MAX_STREAM_IDS}")
        single = segment.n_pages == segment.n_requests and (segment.n_pages == 0 or bool(
            (segment.page_req == np.arange(segment.n_requests)).all()))
        if self.single_page and not single:
            self._become_multi_page()
        if not self.multi_volume and segment.volume.size and segment.volume.max() > 0:
            self._open("volume", np.int32)
            step = 1 << 22
            for a in range(0, self.n_requests, step):
                self._put("volume", np.zeros(min(step, self.n_requests - a), dtype=np.int32))
            self.multi_volume = True
        for name in ("ts_ns", "op", "offset"):
            self._put(name, getattr(segment, name))
        self._put("size_bytes", segment.size_bytes)
        if self.multi_volume:
            self._put("volume", segment.volume)
        self._put("page_id", segment.page_id)
        if not self.single_page:
            self._put("page_count", segment.pages_per_request())
            self._put("page_bytes", segment.page_bytes)
        self.n_requests += segment.n_requests
        self.n_pages += segment.n_pages

    def finish(self, n_ids: int, volumes: Sequence[str], source: dict) -> None:
        """Write every header with its final length, then the manifest (the stream's last file)."""
        for name, (f, dt) in self._files.items():
            n = self.n_pages if name in PAGE_COLUMNS else self.n_requests
            f.flush()
            f.seek(0)
            f.write(_header(dt, n))
            f.close()
        self._files = {}
        manifest = {"format": FORMAT, "key": self.key, "page_size": self.page_size, "requests": self.n_requests,
                    "pages": self.n_pages, "distinct_pages": int(n_ids), "volumes": list(volumes),
                    "single_page": self.single_page, "multi_volume": self.multi_volume, "source": source}
        (self.dir / MANIFEST).write_text(json.dumps(manifest, indent=2))

    def close(self) -> None:
        for f, _ in self._files.values():
            f.close()
        self._files = {}


class PageStream:
    """A finished stream directory, checked on opening (``StreamError`` if unusable)."""

    def __init__(self, directory: str | Path, key: str | None = None):
        self.dir = Path(directory)
        try:
            m = json.loads((self.dir / MANIFEST).read_text())
            self.page_size = int(m["page_size"])
            self.n_requests, self.n_pages = int(m["requests"]), int(m["pages"])
            self.n_ids = int(m["distinct_pages"])
            self.volumes = [str(v) for v in m["volumes"]]
            self.single_page, self.multi_volume = bool(m["single_page"]), bool(m["multi_volume"])
            fmt, self.key = m["format"], m["key"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StreamError(f"{self.dir}: no usable page-stream manifest ({e})") from None
        if fmt != FORMAT or (key is not None and self.key != key):
            raise StreamError(f"{self.dir}: page stream of another format or key")
        if not 0 <= self.n_ids <= MAX_STREAM_IDS:
            raise StreamError(f"{self.dir}: distinct pages {self.n_ids} out of range")
        self.columns = dict(REQUEST_COLUMNS)
        self.columns["page_id"] = np.int32
        if not self.multi_volume:
            del self.columns["volume"]
        if not self.single_page:
            self.columns.update((COUNT_COLUMN, ("page_bytes", np.int32)))
        for name, dt in self.columns.items():
            path = self.dir / f"{name}.npy"
            n = self.n_pages if name in PAGE_COLUMNS else self.n_requests
            if not path.is_file():
                raise StreamError(f"{path}: missing")
            got_dt, got_n = _read_header(path)
            if got_dt != np.dtype(dt) or got_n != n or path.stat().st_size != HEADER_BYTES + n * got_dt.itemsize:
                raise StreamError(f"{path}: expected {n} values of {np.dtype(dt)}, the file says {got_n} of "
                                  f"{got_dt} in {path.stat().st_size} B")

    def nbytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file())

    def _window(self, name: str, start: int, stop: int) -> np.ndarray:
        """Values [start, stop) of column ``name``: one read of only these rows into a new,
        writable array (the dtypes and flags the compiled kernels were built for), so peak
        memory is one segment whatever the trace's length."""
        dt = np.dtype(self.columns[name])
        if stop <= start:
            return np.zeros(0, dtype=dt)
        return np.fromfile(self.dir / f"{name}.npy", dtype=dt, count=stop - start,
                           offset=HEADER_BYTES + start * dt.itemsize)

    def segments(self, batch_rows: int) -> Iterator[Segment]:
        """The stream as ``Segment`` objects of at most ``batch_rows`` requests, with the dtypes of
        ``replay.model.Segment`` (the same segments a ``SegmentBuilder`` makes from the trace)."""
        shift = self.page_size.bit_length() - 1
        n_ids = 0
        page_at = 0
        for a in range(0, self.n_requests, batch_rows):
            b = min(a + batch_rows, self.n_requests)
            offset = self._window("offset", a, b)
            size_bytes = self._window("size_bytes", a, b).astype(np.int64)
            volume = (self._window("volume", a, b) if self.multi_volume
                      else np.zeros(b - a, dtype=np.int32))
            if self.single_page:
                n_pages = b - a
                page_req, page_no, page_bytes = single_page_segment(offset, size_bytes, shift)
            else:
                counts = self._window("page_count", a, b)
                n_pages = int(counts.sum(dtype=np.int64))
                if (counts.size and counts.min() < 0) or page_at + n_pages > self.n_pages:
                    raise StreamError(f"{self.dir}: page counts do not add up to the manifest's {self.n_pages}")
                page_req, page_no = expand_pages(offset, counts, shift)
                page_bytes = self._window("page_bytes", page_at, page_at + n_pages).astype(np.int64)
            page_id = self._window("page_id", page_at, page_at + n_pages).astype(np.int64)
            if n_pages:
                lo, hi = int(page_id.min()), int(page_id.max())
                if lo < 0 or hi >= self.n_ids:
                    raise StreamError(f"{self.dir}: page id {lo if lo < 0 else hi} outside 0..{self.n_ids - 1}")
                n_ids = max(n_ids, hi + 1)
            page_at += n_pages
            yield Segment(ts_ns=self._window("ts_ns", a, b), op=self._window("op", a, b), volume=volume,
                        offset=offset, size_bytes=size_bytes, page_id=page_id, page_no=page_no, page_req=page_req,
                        page_bytes=page_bytes, page_size=self.page_size, first_request=a, n_ids=n_ids)
        if page_at != self.n_pages:
            raise StreamError(f"{self.dir}: page counts add up to {page_at}, the manifest says {self.n_pages}")
