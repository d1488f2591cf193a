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


def record(fields) -> np.dtype:
    """A structured dtype whose fields numba may load as naturally aligned (``align=True``; numba
    reads a packed record's fields as unaligned, which stops LLVM from hoisting and combining the
    loads: the back end's drive and group records cost the MCx kernel 7 % as packed). Refuses a
    field list whose aligned layout differs from the packed one (the tables' sizes are measured)."""
    packed, aligned = np.dtype(fields), np.dtype(fields, align=True)
    if aligned.itemsize != packed.itemsize or any(packed.fields[n][1] != aligned.fields[n][1] for n in packed.names):
        raise ValueError(f"record {packed}: aligning its fields would change its layout; order them by size")
    return aligned
