"""The host's per-request outcomes: when each request was issued and completed."""

from replay.outputs import Column

OUTCOMES = (
    Column("arrival_ns", "ns", "issue time: the trace's timestamp (open loop) or the completion that freed a slot "
                               "(closed loop)"),
    Column("done_ns", "ns", "completion time: the response time is done_ns - arrival_ns"),
)

RECORDS: dict = {}
