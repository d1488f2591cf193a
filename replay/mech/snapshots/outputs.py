"""Snapshots' per-request outcome and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("snapshot_first_writes", "chunks", "chunks the request wrote first since the latest snapshot"),
    Column("snapshot_map_updates", "entries", "redirect-on-write: mapping entries (map blocks) the request moved"),
    Column("snapshot_map_ios", "I/Os", "... and the metadata page reads and writes that cost the drives"),
    Column("snapshot_read_splits", "I/Os", "redirect-on-write: extra back-end reads, a read's run split by moved blocks"),
    Column("snapshot_delete_ios", "I/Os", "redirect-on-write: drive I/Os of the snapshot deletions due at the request"),
)

RECORDS: dict = {}

#: What ``tiercast replay`` prints for snapshots: first writes, the space they hold, copy-on-first-write.
LINES = (
    Line("snapshot chunks first written", "{snapshot_first_writes:,}"),
    Line("snapshot space peak / end GiB", "{snapshot_peak_bytes:GiB:,.1f} / {snapshot_bytes_end:GiB:,.1f}"),
    Line("COFW copies / wait s", "{snapshot_cofw_copies:,} / {snapshot_cofw_wait_ns:s:,.1f}"),
    Line("ROW map updates / page reads / writes", "{snapshot_map_updates:,} / {snapshot_map_page_reads:,} / "
         "{snapshot_map_page_writes:,}"),
    Line("ROW split reads / deletions / their I/Os", "{snapshot_read_splits:,} / {snapshot_deletes:,} / "
         "{snapshot_delete_ios:,}"),
)
