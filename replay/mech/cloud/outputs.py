"""A cloud volume's per-request outcomes and summary lines."""

from replay.outputs import Column, Line

OUTCOMES = (
    Column("cloud_start_ns", "ns", "when the request had its tokens (service started)"),
    Column("cloud_ios", "I/Os", "I/Os it was accounted (the type's units; 0: merged into the I/O before it)"),
    Column("cloud_credit_ios", "I/Os", "the volume's I/O credit balance after it took its tokens (gp2, Azure "
                                       "P20 and below)"),
    Column("cloud_credit_bytes", "B", "the volume's throughput credit balance after it took its tokens (st1, "
                                      "Azure P20 and below)"),
)

RECORDS: dict = {}

#: What ``tiercast replay`` prints for a cloud volume.
LINES = (
    Line("cloud volume", "{cloud_provider} {cloud_volume_type} {cloud_size_gib:,.0f} GiB{cloud_tier_text}: "
                         "{cloud_iops:,.0f} IOPS, {cloud_mib_per_s:,.0f} MiB/s{cloud_burst_text}"),
    Line("cost per month", "{cost_per_month:,.2f} {currency} ({cloud_region})"),
    Line("burst credits exhausted", "{burst_exhausted_s:,.1f s}", none="never"),
    Line("instance burst exhausted", "{instance_burst_exhausted_s:,.1f s}", none="never"),
    Line("throttled requests / wait", "{cloud_throttled:,} / {cloud_throttle_ns:s:,.1f} s"),
    Line("accounted I/Os (merged)", "{cloud_ios:,} ({cloud_merged:,} requests merged)"),
    Line("delivered IOPS / MiB/s max", "{cloud_delivered_iops_max:,.0f} / {cloud_delivered_mib_per_s_max:,.1f}"),
)
