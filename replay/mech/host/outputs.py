"""The host's per-request outcomes (when each request was issued and completed) and its summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("arrival_ns", "ns", "issue time: the trace's timestamp (open loop) or the completion that freed a slot "
                               "(closed loop)"),
    Column("done_ns", "ns", "completion time: the response time is done_ns - arrival_ns"),
)

RECORDS: dict = {}

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
