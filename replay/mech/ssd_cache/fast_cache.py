"""EMC FAST Cache's admission policy (seed 000, docs/models/sources.md#fast-cache): a 64 KB chunk is promoted to flash
after ``promote_after_hits`` accesses (reads or writes, default 3, doc) "in a short period".
The period is not published: ``promote_window_ms`` (0: no window, accesses count for ever). With
a window the count restarts at the first access after the window since the count began.

The chunk's counters (``accesses``, ``first_ns`` of ``replay.mech.ssd_cache.kernel.CHUNK``) belong to this
policy; the cache machinery (slots, LRU, copies, cleaning) is ``replay.mech.ssd_cache.kernel``.
"""

from __future__ import annotations

from replay.jit import kernel


@kernel
def count(ch, after, window_ns, t):
    """One access to chunk ``ch`` (a CHUNK record) at t; True when it reaches ``after`` accesses."""
    if ch.accesses == 0 or (window_ns > 0 and t - ch.first_ns > window_ns):
        ch.accesses = 0
        ch.first_ns = t
    ch.accesses += 1
    return ch.accesses >= after
