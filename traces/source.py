"""Raw input files: transparent gzip/zstd/xz/bzip2 decompression (a cut file fails, never reads
as a shorter complete one), a running sha256 of the raw bytes, and line-aligned blocks of text with their first line number.

Everything downstream reads through :class:`Source`, so every reader streams and every
reader gets the same errors for truncated or corrupt compressed files.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import lzma
import queue
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zstandard

from traces.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZIP2_MAGIC = b"BZh"
READ_BYTES = 8 << 20
#: Raw bytes fed to a decompressor at a time: bounds one decompressed piece to a few tens of MB.
COMPRESSED_READ_BYTES = 1 << 20
DEFAULT_BLOCK_BYTES = 48 << 20


class _HashingReader(io.RawIOBase):
    """Wraps a binary file; hashes every raw byte read so the sha256 costs no extra pass."""

    def __init__(self, raw, digest):
        self._raw = raw
        self._digest = digest
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._raw.readinto(b)
        if n:
            self._digest.update(memoryview(b)[:n])
            self.bytes_read += n
        return n or 0


def compression_of(head: bytes) -> str:
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(BZIP2_MAGIC) and head[4:10] == b"1AY&SY":  # "BZh" + level + block magic
        return "bzip2"
    return "none"


def _decompressor(compression: str):
    """A fresh one-shot decompressor (one gzip member, zstd frame, xz or bzip2 stream): the
    standard ``decompress`` / ``eof`` / ``unused_data`` protocol of zlib, lzma, bz2 and zstandard."""
    if compression == "gzip":
        return zlib.decompressobj(wbits=31)
    if compression == "zstd":
        return zstandard.ZstdDecompressor().decompressobj()
    if compression == "xz":
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    return bz2.BZ2Decompressor()


_UNIT = {"gzip": "member", "zstd": "frame", "xz": "stream", "bzip2": "stream"}
_DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, zstandard.ZstdError)


def decompressed_chunks(raw: io.BufferedIOBase, compression: str, path: Path) -> Iterator[bytes]:
    """Decompress ``raw`` chunk by chunk, checking that the input ends where a gzip member, zstd
    frame or xz/bzip2 stream ends.

    Why not ``gzip.GzipFile`` / ``zstandard.stream_reader``: zstandard's reader returns EOF on a
    cut frame without an error (docs/architecture/pitfalls.md#compressed-input), so a truncated file would ingest as a shorter
    complete one. Driving the decompressors directly gives every format the same check and the
    byte offsets for the message. Concatenated members/frames/streams are read one after another.
    """
    unit = _UNIT[compression]
    dec = _decompressor(compression)
    unit_start = 0  # raw offset where the current member/frame/stream starts
    offset = 0  # raw bytes consumed so far
    in_unit = False  # bytes of a member/frame/stream fed whose end was not seen yet
    while True:
        chunk = raw.read(COMPRESSED_READ_BYTES)
        if not chunk:
            break
        data = chunk
        while data:
            try:
                out = dec.decompress(data)
            except _DECODE_ERRORS as e:
                raise TraceFormatError(path, None, f"corrupt {compression} data in the {unit} starting at byte "
                                                   f"{unit_start:,} ({e})") from e
            in_unit = True
            if out:
                yield out
            if not dec.eof:
                offset += len(data)
                break
            rest = dec.unused_data
            offset += len(data) - len(rest)
            if compression == "xz":
                stripped = rest.lstrip(b"\x00")  # xz stream padding (null bytes) between streams
                offset += len(rest) - len(stripped)
                rest = stripped
            unit_start, in_unit = offset, False
            dec = _decompressor(compression)
            data = rest
    if in_unit:
        raise TraceFormatError(path, None, f"truncated {compression} data: the file ends at byte {offset:,} inside "
                                           f"the {unit} starting at byte {unit_start:,}")


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(READ_BYTES):
            h.update(chunk)
    return h.hexdigest()


_DONE = object()


def open_parquet(path: Path):
    """A ``pyarrow.parquet.ParquetFile`` to stream row groups from, a corrupt file a
    :class:`TraceFormatError`. Pre-buffering is off: with it (pyarrow's default) ``iter_batches``
    kept every row group's column chunks it had read in its pool, so memory grew with the file
    (8.5 GiB peak ingesting a 6.7 GB, 1 G-row file; 2.65 vs 0.34 GiB over 300 M rows here, and
    25 % slower; apache/arrow#39820). ``tests/test_ingest_memory.py`` pins it."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path, pre_buffer=False)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for corrupt files
        raise TraceFormatError(path, None, f"not a readable Parquet file ({e})") from e


def prefetch(items: Iterable, depth: int = 2) -> Iterator:
    """Run ``items`` in a background thread, ``depth`` results ahead of the consumer.

    Reading, decompressing, hashing, parsing (Polars) and writing Parquet all release the
    GIL, so a producer thread overlaps them with the consumer on a second core. Exceptions
    from the producer are re-raised in the consumer; closing the consumer stops the producer.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put((True, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((True, _DONE))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer thread
            q.put((False, e))

    t = threading.Thread(target=run, name="tiercast-prefetch", daemon=True)
    t.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                raise item
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        while t.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                t.join(0.05)


@dataclass
class Source:
    """One raw input file, opened lazily; ``sha256`` is complete once the file was read to EOF."""

    path: Path
    compression: str = field(init=False)
    _digest: object = field(init=False, repr=False)
    _raw: _HashingReader | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.path.is_dir():
            raise TraceFormatError(self.path, None, "is a directory, not a trace file")
        if not self.path.is_file():
            raise TraceFormatError(self.path, None, "no such file")
        with open(self.path, "rb") as f:
            self.compression = compression_of(f.read(10))
        self._digest = hashlib.sha256()

    @property
    def sha256(self) -> str:
        """sha256 of the raw file: from the streaming read when it reached EOF, else a new pass
        (readers of binary containers such as Parquet do not read through ``iter_bytes``)."""
        if self.raw_bytes_read != self.path.stat().st_size:
            return file_sha256(self.path)
        return self._digest.hexdigest()

    @property
    def raw_bytes_read(self) -> int:
        return self._raw.bytes_read if self._raw else 0

    def head(self, n: int = 64 << 10) -> bytes:
        """First ``n`` decompressed bytes (does not advance the streaming read). A compressed
        file that is cut or corrupt within them raises, as ``iter_bytes`` would."""
        with open(self.path, "rb") as f:
            if self.compression == "none":
                return f.read(n)
            out = bytearray()
            for chunk in decompressed_chunks(f, self.compression, self.path):
                out += chunk
                if len(out) >= n:
                    break
            return bytes(out[:n])

    def iter_bytes(self, size: int = READ_BYTES) -> Iterator[bytes]:
        """Stream the decompressed content; every raw byte passes through the sha256. A
        compressed file that ends inside a member/frame/stream raises (``decompressed_chunks``)."""
        self._digest = hashlib.sha256()
        with open(self.path, "rb") as f:
            self._raw = _HashingReader(f, self._digest)
            buffered = io.BufferedReader(self._raw, READ_BYTES)
            if self.compression != "none":
                yield from decompressed_chunks(buffered, self.compression, self.path)
                return
            while data := buffered.read(size):
                yield data

    def count_lines(self) -> LineCount:
        """Read the whole file once (hashing it): its lines, and whether it holds NUL bytes."""
        newlines = 0
        nul = False
        last = b"\n"
        chunks = self._raw_chunks() if self.compression == "none" else ((d, len(d)) for d in self.iter_bytes())
        for data, n in chunks:
            # numpy counts ~2x faster than bytes.count and releases the GIL
            newlines += int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8, count=n) == 10))
            nul = nul or data.find(b"\x00", 0, n) >= 0
            last = data[n - 1 : n]
        return LineCount(newlines + (last != b"\n"), nul)

    def _raw_chunks(self) -> Iterator[tuple[bytearray, int]]:
        """An uncompressed file read into one reused buffer through the sha256, as (buffer,
        bytes in it): no copy per chunk (with the line count 1.4 instead of 2.1 CPU-s per GB)."""
        self._digest = hashlib.sha256()
        buf = bytearray(READ_BYTES)
        with open(self.path, "rb", buffering=0) as f:
            self._raw = _HashingReader(f, self._digest)
            while n := self._raw.readinto(buf):
                yield buf, n

    def iter_line_blocks(self, block_bytes: int = DEFAULT_BLOCK_BYTES) -> Iterator[LineBlock]:
        """Blocks of whole lines (the last line of the file may lack its newline), assembled
        one block ahead in a background thread (reading, hashing, decompressing, splitting)."""
        return prefetch(self._line_blocks(block_bytes), depth=1)

    def _line_blocks(self, block_bytes: int) -> Iterator[LineBlock]:
        pieces: list[bytes] = []
        size = 0
        first_line = 1
        for data in self.iter_bytes(min(READ_BYTES, block_bytes)):
            pieces.append(data)
            size += len(data)
            if size < block_bytes:
                continue
            buf = b"".join(pieces)
            cut = buf.rfind(b"\n")
            if cut < 0:
                pieces, size = [buf], len(buf)
                continue
            block = LineBlock(buf[: cut + 1], first_line)
            first_line += block.n_lines
            rest = buf[cut + 1 :]
            pieces, size = ([rest] if rest else []), len(rest)
            yield block
        if size:
            yield LineBlock(b"".join(pieces), first_line)


@dataclass(frozen=True)
class LineCount:
    lines: int
    has_nul: bool


class LineBlock:
    """A byte buffer of whole lines; where each line starts and ends (newline excluded) is
    computed only when asked for, since clean blocks go straight to the CSV parser."""

    __slots__ = ("data", "first_line", "_n", "_starts", "_ends")

    def __init__(self, data: bytes, first_line: int):
        self.data = data
        self.first_line = first_line
        self._n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        self._starts: np.ndarray | None = None
        self._ends: np.ndarray | None = None

    def _index(self) -> None:
        data, n = self.data, self._n
        nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        starts = np.empty(n, dtype=np.int64)
        ends = np.empty(n, dtype=np.int64)
        if n:
            starts[0] = 0
            starts[1:] = nl[: n - 1] + 1
            ends[: len(nl)] = nl
            if n > len(nl):
                ends[-1] = len(data)
        self._starts, self._ends = starts, ends

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._index()
        return self._starts

    @property
    def ends(self) -> np.ndarray:
        if self._ends is None:
            self._index()
        return self._ends

    @property
    def n_lines(self) -> int:
        return self._n

    def line_numbers(self) -> np.ndarray:
        return np.arange(self.first_line, self.first_line + self.n_lines, dtype=np.int64)

    def raw_lines(self, idx: np.ndarray, max_bytes: int = 4096) -> list[str]:
        """Decoded text of the given 0-based lines (for rejects), CR stripped, long lines cut."""
        out = []
        for i in np.asarray(idx, dtype=np.int64).tolist():
            if i == 0 and self._starts is None:  # header checks: do not index the whole block
                e = self.data.find(b"\n")
                s, e = 0, (len(self.data) if e < 0 else e)
            else:
                s, e = int(self.starts[i]), int(self.ends[i])
            raw = self.data[s:e].rstrip(b"\r")
            text = raw[:max_bytes].decode("utf-8", errors="backslashreplace")
            if len(raw) > max_bytes:
                text += f"...[{len(raw) - max_bytes} more bytes]"
            out.append(text)
        return out
