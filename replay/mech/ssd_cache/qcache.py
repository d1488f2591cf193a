"""QSAN QCache 2.0's admission policy (seed 003, docs/models/sources.md#ssd-cache-with-populate-thresholds-qsan-qcache-20): each cache block counts the reads
and the writes that reach it; a read miss on a block whose read count has reached
``populate_on_read`` populates it, and likewise a write with ``populate_on_write``; 0 disables
either (doc). The I/O-type presets (Database, File System, Web Service) that set block size,
sub-block size and both thresholds are ``replay.mech.ssd_cache.schema.QCACHE_IO_TYPES``.

The block's counters (``accesses`` = reads, ``writes`` of ``replay.mech.ssd_cache.kernel.CHUNK``) belong to this
policy; the cache machinery (slots, sub-blocks, LRU, copies) is ``replay.mech.ssd_cache.kernel``.
"""

from __future__ import annotations

from replay.jit import kernel


@kernel
def count(ch, write, por, pow_):
    """One read (write) reaching block ``ch`` (a CHUNK record); True when it is to be populated."""
    if write:
        ch.writes += 1
        return pow_ > 0 and ch.writes >= pow_
    ch.accesses += 1  # the read count (CHUNK shares the field with FAST Cache's access count)
    return por > 0 and ch.accesses >= por
