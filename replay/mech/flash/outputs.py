"""The all-flash array's per-request outcomes and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("flash_free_bytes", "B", "free space after the request"),
    Column("flash_gc_bytes", "B", "bytes GC copied while the request was processed"),
)

RECORDS: dict = {}

#: What ``tiercast replay`` prints for an all-flash array: GC waits, free space, write amplification,
#: the write cliff.
LINES = (
    Line("writes that waited for GC", "{flash_gc_waits:,} (wait sum {flash_gc_wait_ns:ms:,.0f} ms)"),
    Line("flash free GiB / %", "{flash_free_bytes:GiB:,.1f} / {flash_free_pct:.1f}"),
    Line("flash GC GiB copied / WA", "{flash_gc_bytes:GiB:,.1f} / {flash_write_amplification:.3f}"),
    Line(
        "flash GC-bound write MiB/s",
        "{flash_steady_write_mib_per_s:,.0f} (WA {flash_gc_write_amplification:.2f})",
    ),
    Line("flash time to cliff", "{flash_time_to_cliff_s:,.1f s}", none="no cliff"),
    Line(
        "write IOPS pre / post cliff",
        "{flash_pre_cliff_write_iops:,.0f} / {flash_post_cliff_write_iops:,.0f}",
    ),
    Line(
        "write MiB/s pre / post cliff",
        "{flash_pre_cliff_write_mib_per_s:,.0f} / {flash_post_cliff_write_mib_per_s:,.0f}",
    ),
)
