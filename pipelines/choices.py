"""Option values that ``tiercast`` lists in its help text before any command runs, in a module
that imports nothing: ``tiercast --help`` must not load numba, Polars or DuckDB to name them
(docs/reference/cli-behaviour.md, start-up time).

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
#: ``tiercast calibrate --kind``: the drive kinds ``pipelines.calibrate.estimate`` takes
CALIBRATE_KINDS = ("ssd", "hdd")
#: ``tiercast calibrate-suite --job-seconds`` by default (``pipelines.calibrate_suite.DEFAULT_JOB_S``): 12 jobs
#: of 7 s and ~2 s each of iostat wait, ingest and layout, under 2 minutes
CALIBRATE_SUITE_JOB_S = 7
#: ``tiercast calibrate --rpm``: the slowest spindle a scenario's drive class takes (replay.scenario)
MIN_RPM = 1000
#: ``tiercast capture --iostat-interval``: an hour at most (the capture waits one interval after fio)
MAX_IOSTAT_INTERVAL_S = 3600
#: ``tiercast simulate --policy``: the keys of ``replay.kernels.POLICIES``
CACHE_POLICIES = ("lru", "fifo", "clock", "arc", "s3fifo")
#: ``tiercast replay/sweep --outstanding`` and ``sweep --warmup``: replay.scenario's limits
MAX_OUTSTANDING = 1 << 20
MAX_WARMUP_PCT = 99.0
#: ``tiercast synth --pattern``: the keys of ``traces.synth.PATTERNS``
SYNTH_PATTERNS = ("database", "randread-4k", "randwrite-4k", "randwrite-8k", "randrw-70-30", "seqread-1m",
                  "seqwrite-1m")
#: ``tiercast synth --duration``, and requests / IOPS: at most this many seconds (31.7 years), far
#: inside the int64 nanosecond clock of a trace (292 years): Poisson gaps stay within it (and
#: ``traces.synth.generate`` refuses a draw that would not)
SYNTH_MAX_SPAN_S = 1e9
#: ``tiercast synth --iops``: at most one arrival per nanosecond, the trace clock's resolution
SYNTH_MAX_IOPS = 1e9
