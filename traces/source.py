"""Raw input files: transparent gzip/zstd decompression, a running sha256 of the raw bytes,
and line-aligned blocks of text with their first line number.

Everything downstream reads through :class:`Source`, so every reader streams and every
reader gets the same errors for truncated or corrupt compressed files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
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
DEFAULT_BLOCK_BYTES = 48 << 20
ZSTD_FEED_BYTES = 1 << 20
DECOMPRESSED = ("gzip", "zstd")


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
    if head.startswith(BZIP2_MAGIC) and head[4:10] == b"1AY&SY":
        return "bzip2"
    return "none"


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(READ_BYTES):
            h.update(chunk)
    return h.hexdigest()


_DONE = object()


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
        if self.compression not in ("none", *DECOMPRESSED):
            raise TraceFormatError(self.path, None, f"{self.compression}-compressed input is not supported "
                                   f"(accepted: {', '.join(DECOMPRESSED)}); decompress it first")
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
        """First ``n`` decompressed bytes (does not advance the streaming read)."""
        with open(self.path, "rb") as f:
            if self.compression == "gzip":
                stream = gzip.GzipFile(fileobj=f)
            elif self.compression == "zstd":
                stream = zstandard.ZstdDecompressor().stream_reader(f)
            else:
                stream = f
            try:
                return stream.read(n)
            except (EOFError, OSError, zlib.error, zstandard.ZstdError):
                return b""

    def iter_bytes(self, size: int = READ_BYTES) -> Iterator[bytes]:
        """Stream the decompressed content in pieces of about ``size`` bytes; every raw byte
        passes through the sha256. A compressed stream that ends early is an error naming the
        byte offset: the data before the cut must never be taken for the whole file."""
        self._digest = hashlib.sha256()
        with open(self.path, "rb") as f:
            self._raw = _HashingReader(f, self._digest)
            if self.compression == "zstd":
                yield from self._zstd_pieces(size)
                return
            buffered = io.BufferedReader(self._raw, READ_BYTES)
            stream = gzip.GzipFile(fileobj=buffered) if self.compression == "gzip" else buffered
            while True:
                try:
                    data = stream.read(size)
                except EOFError as e:
                    raise self._truncated(f"the file ends at byte offset {self.raw_bytes_read} before the end "
                                          "of the compressed stream") from e
                except (OSError, zlib.error) as e:
                    raise self._corrupt(f"near byte offset {self.raw_bytes_read}", e) from e
                if not data:
                    break
                yield data

    def _zstd_pieces(self, size: int) -> Iterator[bytes]:
        """Decompress frame by frame with ``decompressobj`` (whose ``eof`` says whether a frame
        really ended: ``stream_reader`` returns a clean EOF on a cut frame), fed
        ``ZSTD_FEED_BYTES`` at a time so memory stays bounded by the compression ratio."""
        dctx = zstandard.ZstdDecompressor()
        obj = None
        frame_start = pos = 0
        out: list[bytes] = []
        held = 0
        while buf := self._raw.read(ZSTD_FEED_BYTES):
            while buf:
                if obj is None:
                    obj, frame_start = dctx.decompressobj(), pos
                try:
                    data = obj.decompress(buf)
                except zstandard.ZstdError as e:
                    raise self._corrupt(f"in the frame starting at byte offset {frame_start}", e) from e
                if data:
                    out.append(data)
                    held += len(data)
                if obj.eof:
                    rest = obj.unused_data
                    pos += len(buf) - len(rest)
                    buf, obj = rest, None
                else:
                    pos += len(buf)
                    buf = b""
            if held >= size:
                yield b"".join(out)
                out, held = [], 0
        if obj is not None:
            raise self._truncated(f"the frame starting at byte offset {frame_start} is incomplete; "
                                  f"the file ends at byte offset {pos}")
        if out:
            yield b"".join(out)

    def _truncated(self, detail: str) -> TraceFormatError:
        return TraceFormatError(self.path, None, f"truncated {self.compression} stream: {detail}")

    def _corrupt(self, where: str, e: Exception) -> TraceFormatError:
        return TraceFormatError(self.path, None, f"corrupt {self.compression} stream {where} ({e})")

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
