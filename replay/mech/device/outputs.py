"""A device's per-request outcomes, counters and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("device_queue", "I/Os", "requests in the device when it arrived, itself included (its gain's q)"),
    Column("device_wait_ns", "ns", "time a write waited for room in the full write cache"),
)

RECORDS: dict = {}

#: counters (``replay.array.ArrayModel.counters``): summary name -> field of ``replay.mech.device.kernel.DEVICE``
COUNTERS = {"device_reads": "reads", "device_writes": "writes", "device_busy_ns": "busy_ns",
            "device_queue_sum": "queue_sum", "device_cache_waits": "cache_waits",
            "device_cache_wait_ns": "cache_wait_ns", "device_drain_ns": "drain_ns"}

#: What ``tiercast replay`` prints for a device.
LINES = (
    Line("device write-cache waits", "{device_cache_waits:,} ({device_cache_wait_ns:ms:,.1f} ms)"),
    Line("device drain before reads", "{device_drain_ns:ms:,.1f} ms of media time"),
    Line("calibration holdout error", "IOPS {holdout_iops_error_pct:.1f} %, mean latency "
                                      "{holdout_latency_error_pct:.1f} %", none="not measured"),
)
