"""Requests -> cache pages -> dense page ids: the preparation every replay model shares.

A request ``[offset, offset + size)`` on a volume touches every page of ``page_size`` bytes it
overlaps, in address order; each page access keeps the request's index (hence its op and time)
and the number of the request's bytes that fall inside that page (``page_bytes``). Splitting is
vectorized (``np.repeat`` over per-request page counts, a cumulative sum for the position inside
the request), with a fast path when every request fits in one page. Requests of size 0 (flushes)
touch no page.

A page key packs (volume id, page number) into one non-negative int64:
``volume_id << PAGE_BITS | page_no``; ``replay.ids.IdMap`` turns keys into dense ids.
``SegmentBuilder`` carries the volume dictionary, the id map and the request counter across the
frames of a trace, so segments built one after another share one id space (segmented replay).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from replay.ids import IdMap
from replay.jit import njit
from replay.model import Segment
from schemas.trace import OP_WRITE, OPS

MIN_PAGE_SIZE = 512
MAX_PAGE_SIZE = 1 << 30
PAGE_BITS = 44  # page numbers below 2^44: 8 PiB volumes at 512 B pages
MAX_VOLUMES = 1 << (63 - PAGE_BITS)
DIRECT_MAX_KEYS = 1 << 24  # page keys below this map through a 64 MiB array (replay.ids)


def check_page_size(page_size: int) -> int:
    """The page size as an int; a power of two from 512 B to 1 GiB, else ValueError."""
    page_size = int(page_size)
    if page_size < MIN_PAGE_SIZE or page_size > MAX_PAGE_SIZE or page_size & (page_size - 1):
        raise ValueError(f"page size {page_size} B must be a power of two from 512 B to 1 GiB")
    return page_size


@dataclass(frozen=True)
class PageSplit:
    """Page accesses of a batch of requests (all arrays have one entry per page access)."""

    page_no: np.ndarray  # int64 page number within the volume
    page_req: np.ndarray  # int64 index of the request in the batch
    page_bytes: np.ndarray  # int64 bytes of the request inside this page


@njit
def _count_pages(offset, size_bytes, shift, first, n_pages):
    """One fused pass: first page and page count per request. Returns (total pages, index of
    the first request with a negative offset or size, or -1)."""
    total = 0
    for i in range(offset.shape[0]):
        o = offset[i]
        sz = size_bytes[i]
        if o < 0 or sz < 0:
            return total, i
        f = o >> shift
        first[i] = f
        k = (((o + sz - 1) >> shift) - f + 1) if sz > 0 else 0
        n_pages[i] = k
        total += k
    return total, -1


def split_pages(offset: np.ndarray, size_bytes: np.ndarray, page_size: int) -> PageSplit:
    """Split requests into the pages they touch (see module docstring); no per-request Python
    loop: one compiled counting pass (numpy would need ~8 passes for the same checks), then
    ``np.repeat`` / ``cumsum`` expand multi-page requests."""
    shift = check_page_size(page_size).bit_length() - 1
    offset = np.ascontiguousarray(offset, dtype=np.int64)
    size_bytes = np.ascontiguousarray(size_bytes, dtype=np.int64)
    n = offset.shape[0]
    first = np.empty(n, dtype=np.int64)
    n_pages = np.empty(n, dtype=np.int64)
    total, bad = _count_pages(offset, size_bytes, shift, first, n_pages)
    if bad >= 0:
        raise ValueError(f"request {bad}: offset {offset[bad]} and size {size_bytes[bad]} must be non-negative")
    if total == n and (n == 0 or n_pages.min() == 1):  # fast path: every request in one page
        return PageSplit(first, np.arange(n, dtype=np.int64), size_bytes)
    page_req = np.repeat(np.arange(n, dtype=np.int64), n_pages)
    starts = np.cumsum(n_pages) - n_pages  # index of each request's first page access
    within = np.arange(total, dtype=np.int64) - starts[page_req]
    page_no = first[page_req] + within
    lo = np.maximum(offset[page_req], page_no << shift)
    hi = np.minimum(offset[page_req] + size_bytes[page_req], (page_no + 1) << shift)
    return PageSplit(page_no, page_req, hi - lo)


@njit
def _expand(offset, counts, shift, page_req, page_no):
    j = 0
    for r in range(counts.shape[0]):
        first = offset[r] >> shift
        for k in range(counts[r]):
            page_req[j] = r
            page_no[j] = first + k
            j += 1


def expand_pages(offset: np.ndarray, counts: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(page_req, page_no) of requests at ``offset`` touching ``counts`` pages each (a stored
    page split read back, ``replay.page_stream``): the inverse of the counting in ``split_pages``."""
    total = int(counts.sum(dtype=np.int64))
    page_req = np.empty(total, dtype=np.int64)
    page_no = np.empty(total, dtype=np.int64)
    _expand(offset, counts, shift, page_req, page_no)
    return page_req, page_no


def single_page_segment(offset: np.ndarray, size_bytes: np.ndarray, shift: int):
    """(page_req, page_no, page_bytes) when every request touches exactly one page."""
    return np.arange(offset.shape[0], dtype=np.int64), offset >> shift, size_bytes


def segment_head(segment: Segment, n: int) -> Segment:
    """The first ``n`` requests of ``segment`` and their page accesses (``n_ids`` kept: ids stay
    below it)."""
    cut = int(np.searchsorted(segment.page_req, n))
    return Segment(ts_ns=segment.ts_ns[:n], op=segment.op[:n], volume=segment.volume[:n], offset=segment.offset[:n],
                 size_bytes=segment.size_bytes[:n], page_id=segment.page_id[:cut], page_no=segment.page_no[:cut],
                 page_req=segment.page_req[:cut], page_bytes=segment.page_bytes[:cut], page_size=segment.page_size,
                 first_request=segment.first_request, n_ids=segment.n_ids)


def segment_page_keys(segment: Segment) -> np.ndarray:
    """Page keys (volume id and page number packed, as ``SegmentBuilder`` makes them) of every page
    access of ``segment``."""
    if segment.volume.size and segment.volume.max() == 0:
        return segment.page_no
    return (segment.volume[segment.page_req].astype(np.int64) << PAGE_BITS) | segment.page_no


def _op_codes(op: pl.Series) -> np.ndarray:
    """uint8 op codes (schemas.trace.OPS order) from an Enum, Categorical or String column."""
    if op.dtype == pl.UInt8:
        return op.to_numpy()
    if isinstance(op.dtype, pl.Enum) and list(op.dtype.categories) == list(OPS) and not op.null_count():
        return op.to_physical().cast(pl.UInt8).to_numpy()
    codes = op.cast(pl.String).cast(pl.Enum(list(OPS)), strict=False)
    if codes.null_count() > op.null_count() or op.null_count():
        bad = op.filter(codes.is_null()).unique().head(5).to_list()
        raise ValueError(f"unknown op value(s) {bad}; expected one of {', '.join(OPS)}")
    return codes.to_physical().cast(pl.UInt8).to_numpy()


@dataclass
class SegmentBuilder:
    """Turns canonical request frames, in global time order, into ``Segment`` objects sharing one
    dense id space. Picklable state: the volume dictionary, the ``IdMap`` and the request count."""

    page_size: int
    volumes: dict[str, int] = field(default_factory=dict)
    ids: IdMap = field(default_factory=lambda: IdMap(direct_max=DIRECT_MAX_KEYS))
    n_requests: int = 0

    def __post_init__(self) -> None:
        self.page_size = check_page_size(self.page_size)

    def _volume_ids(self, volume: pl.Series) -> np.ndarray:
        uniq = None
        if volume.len() and not volume.null_count() and isinstance(volume.dtype, pl.Categorical | pl.Enum):
            phys = volume.to_physical()
            if phys.min() == phys.max():  # one volume in this frame: no per-row string work
                uniq = [volume.head(1).cast(pl.String)[0]]
        if uniq is None:
            uniq = volume.unique(maintain_order=True).cast(pl.String).to_list()
        for v in uniq:
            if v is None:
                raise ValueError("request with a null volume")
            if v not in self.volumes:
                if len(self.volumes) >= MAX_VOLUMES:
                    raise ValueError(f"more than {MAX_VOLUMES} volumes in one trace")
                self.volumes[v] = len(self.volumes)
        if len(uniq) == 1:
            return np.full(volume.len(), self.volumes[uniq[0]], dtype=np.int32)
        return volume.cast(pl.String).replace_strict(self.volumes, return_dtype=pl.Int32).to_numpy()

    def _split(self, df: pl.DataFrame):
        offset = df["offset"].cast(pl.Int64).to_numpy()
        size_bytes = df["size"].cast(pl.Int64).to_numpy()
        volume = self._volume_ids(df["volume"])
        split = split_pages(offset, size_bytes, self.page_size)
        if split.page_no.size and int(split.page_no.max()) >= 1 << PAGE_BITS:
            raise ValueError(f"offset beyond {(1 << PAGE_BITS) * self.page_size} B: page numbers "
                             f"must stay below 2^{PAGE_BITS}")
        if len(self.volumes) == 1 and volume.size and volume[0] == 0:
            keys = split.page_no  # volume id 0: the key is the page number
        else:
            keys = (volume[split.page_req].astype(np.int64) << PAGE_BITS) | split.page_no
        return offset, size_bytes, volume, split, keys

    def page_keys(self, df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(page keys, page bytes) of the read/write page accesses of ``df``, without dense ids
        (for samplers that only need keys, such as SHARDS)."""
        _, _, _, split, keys = self._split(df)
        op = _op_codes(df["op"])
        self.n_requests += df.height
        if op.size and op.max() > OP_WRITE:
            access = op[split.page_req] <= OP_WRITE
            return keys[access], split.page_bytes[access]
        return keys, split.page_bytes

    def build(self, df: pl.DataFrame) -> Segment:
        """One segment from a frame with columns ts_ns, volume, op, offset, size (others ignored)."""
        offset, size_bytes, volume, split, keys = self._split(df)
        page_id = self.ids.assign(keys)
        segment = Segment(
            ts_ns=df["ts_ns"].cast(pl.Int64).to_numpy(),
            op=_op_codes(df["op"]),
            volume=volume,
            offset=offset,
            size_bytes=size_bytes,
            page_id=page_id,
            page_no=split.page_no,
            page_req=split.page_req,
            page_bytes=split.page_bytes,
            page_size=self.page_size,
            first_request=self.n_requests,
            n_ids=self.ids.n_ids,
        )
        self.n_requests += df.height
        return segment
