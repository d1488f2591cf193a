"""Snapshots' per-request outcome."""

from replay.outputs import Column

OUTCOMES = (
    Column("snapshot_first_writes", "chunks", "chunks the request wrote first since the latest snapshot"),
)

RECORDS: dict = {}
