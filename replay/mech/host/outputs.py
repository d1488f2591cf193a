"""The host's per-request outcomes (when each request was issued and completed) and its summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("arrival_ns", "ns", "issue time: the trace's timestamp (open loop) or the completion that freed a slot "
                               "(closed loop)"),
    Column("done_ns", "ns", "completion time: the response time is done_ns - arrival_ns"),
)

RECORDS: dict = {}

#: counters (``replay.array.ArrayModel.counters``): summary name -> field of the host's record
#: (``replay.mech.host.kernel.HOST``)
COUNTERS = {
    "requests": "requests", "reads": "reads", "writes": "writes", "other_requests": "other",
    "read_bytes": "read_bytes", "write_bytes": "write_bytes", "stall_delay_sum_ns": "stall_ns",
    "stalled_requests": "stalled_requests", "throttle_delay_sum_ns": "throttle_ns",
    "throttled_requests": "throttled_requests", "first_arrival_ns": "first_arrival", "last_done_ns": "last_done",
    "latency_sum_ns": "latency_sum",
}

#: What ``tiercast replay`` prints for every run.
LINES = (
    Line("requests", "{requests:,}"),
    Line("iops", "{iops:,.0f}"),
    Line("mb_per_s", "{mb_per_s:,.1f}"),
    Line(
        "latency mean/p95/p99/max ms",
        "{latency_mean_ms:.2f} / {latency_p95_ms:.2f} / {latency_p99_ms:.2f} / {latency_max_ms:.1f}",
    ),
)
