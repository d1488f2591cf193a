"""The all-flash array's per-request outcomes."""

from replay.outputs import Column

OUTCOMES = (
    Column("flash_free_bytes", "B", "free space after the request"),
    Column("flash_gc_bytes", "B", "bytes GC copied while the request was processed"),
)

RECORDS: dict = {}
