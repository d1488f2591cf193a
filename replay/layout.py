"""Record arrays laid out for the CPU cache.

The array model's tables (cache units, SSD cache slots) are numpy structured arrays read at
random places; a record that straddles two cache lines costs two memory loads, and a prefetch
(``replay.prefetch``) brings only the line it names. numpy aligns a large allocation to 16 bytes,
so records of 32 or 64 bytes start anywhere in a line; :func:`aligned_records` starts them on a
line boundary.
"""

from __future__ import annotations

import numpy as np

CACHE_LINE = 64


def aligned_records(n: int, dtype: np.dtype, align: int = CACHE_LINE) -> np.ndarray:
    """``np.zeros(n, dtype)`` starting at an ``align``-byte boundary (a view into a slightly
    larger buffer; a copy, e.g. after pickling, may lose the alignment, never a value)."""
    dtype = np.dtype(dtype)
    buf = np.zeros(n * dtype.itemsize + align, dtype=np.uint8)
    off = -buf.ctypes.data % align
    return buf[off:off + n * dtype.itemsize].view(dtype)
