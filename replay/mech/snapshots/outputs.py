"""Snapshots' per-request outcome and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("snapshot_first_writes", "chunks", "chunks the request wrote first since the latest snapshot"),
)

RECORDS: dict = {}

#: What ``tiercast replay`` prints for snapshots: first writes, the space they hold, copy-on-first-write.
LINES = (
    Line("snapshot chunks first written", "{snapshot_first_writes:,}"),
    Line("snapshot space peak / end GiB", "{snapshot_peak_bytes:GiB:,.1f} / {snapshot_bytes_end:GiB:,.1f}"),
    Line("COFW copies / wait s", "{snapshot_cofw_copies:,} / {snapshot_cofw_wait_ns:s:,.1f}"),
)
