"""``[controller]`` (the storage processor) and ``[replay]`` (how requests are issued) as data."""

from __future__ import annotations

from replay.schema import Param, Section

#: closed-loop I/Os in flight at most, and the share of requests a warm-up may skip
MAX_OUTSTANDING = 1 << 20
MAX_WARMUP_PCT = 99.0
#: the range of ``[replay] load_factor`` (time compression of an open-loop replay)
MIN_LOAD_FACTOR, MAX_LOAD_FACTOR = 0.01, 1000.0
#: per-interval outputs: at least 1 ms
MIN_INTERVAL_NS = 1_000_000

CONTROLLER = Section("controller", (
    Param("overhead_us", "float", 30.0, "us", "SP time per host I/O (one FCFS server): caps cache-hit IOPS",
          "seed-fit", "seed 000: 2 GB file, ~29k IOPS at 192 outstanding [s000_2gb]", minimum=0),
    Param("bandwidth_mb_per_s", "float", 3200.0, "MB/s", "SP / front-end data rate", minimum=0, strict_min=True),
    Param("count", "int", 1, "controllers", "storage processors, each an FCFS server of its own with these costs; a "
          "pool's volumes go through the one that owns it (pools[].controller): an active-active dual-controller "
          "array serves twice the cache-hit IOPS when both own pools (seed 003's dual-controller tests)", "choice",
          minimum=1, maximum=8),
), doc="The storage processors, each an FCFS server: per-I/O CPU cost plus a bandwidth limit.")

REPLAY = Section("replay", (
    Param("mode", "str", "open", "", "open: each request issues at its timestamp (the trace's own timing); closed: "
          "`outstanding` I/Os in flight", "choice", choices=("open", "closed")),
    Param("outstanding", "int", 16, "I/Os", "closed loop: I/Os in flight (IOMeter workers x outstanding, fio numjobs "
          "x iodepth)", "choice", minimum=1, maximum=MAX_OUTSTANDING),
    Param("interval", "duration", 0, "ns", "per-interval outputs: \"auto\" (60-300 intervals from the run's length) or "
          "a duration of at least 1 ms", "choice"),
    Param("warmup_pct", "float", 0.0, "%", "summary metrics skip this share of the requests (cache warm-up)",
          "choice", minimum=0, maximum=MAX_WARMUP_PCT),
    Param("load_factor", "float", 1.0, "x", "open loop: the trace's arrivals this many times faster (its timestamps "
          "divided by it): the same requests at N x the rate, how headroom is measured", "choice",
          minimum=MIN_LOAD_FACTOR, maximum=MAX_LOAD_FACTOR),
), doc="How the trace's requests are issued and measured.")
