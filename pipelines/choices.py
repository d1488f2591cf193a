"""Option values that ``tiercast`` lists in its help text before any command runs, in a module
that imports nothing: ``tiercast --help`` must not load numba, Polars or DuckDB to name them
(README "CLI behaviour", start-up time).

``CALIBRATE_BASES`` and ``CALIBRATE_WINDOWS`` are defined here and used by
``pipelines.calibrate``. The others name what heavier modules define (the cache kernels, the
synthetic workload patterns, the scenario parser's limits); ``tests/test_cli_startup.py`` checks
that they agree.
"""

from __future__ import annotations

#: ``tiercast calibrate --basis``: the service time of all I/Os, the reads or the writes
CALIBRATE_BASES = ("all", "read", "write")
#: ``tiercast calibrate --window``: a capture's fio run (auto), that run, every interval
CALIBRATE_WINDOWS = ("auto", "job", "all")
#: ``tiercast simulate --policy``: the keys of ``replay.kernels.POLICIES``
CACHE_POLICIES = ("lru", "fifo", "clock", "arc", "s3fifo")
#: ``tiercast replay/sweep --outstanding`` and ``sweep --warmup``: replay.scenario's limits
MAX_OUTSTANDING = 1 << 20
MAX_WARMUP_PCT = 99.0
#: ``tiercast synth --pattern``: the keys of ``traces.synth.PATTERNS``
SYNTH_PATTERNS = ("database", "randread-4k", "randwrite-4k", "randwrite-8k", "randrw-70-30", "seqread-1m",
                  "seqwrite-1m")
