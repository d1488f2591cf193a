"""Canonical tables of measured performance logs (iostat, vxstat, vxdmpadm, fio, IOMeter).

Every table is declared once here as ``column -> (Polars dtype, unit or meaning)``; the Polars
schema and the Arrow schema written to Parquet (with the unit as field metadata) are derived
from it (docs/guide/measured.md lists the tables). Units are in the column names: ``*_per_s`` per second, ``*_kb``
kibibytes (sysstat and Veritas "kB" are 1024 bytes), ``*_ms`` / ``*_ns`` time, ``*_pct``
percent. A column a log does not carry stays null; nothing is derived from other columns
except where the name says so (e.g. vxstat's ``r_per_s`` = reads / interval_s).
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

F64 = pl.Float64
I64 = pl.Int64
I32 = pl.Int32
STR = pl.String
BOOL = pl.Boolean
TS = pl.Datetime("us", "UTC")

_IOSTAT_KEYS: dict[str, tuple] = {
    "host": (STR, "node name from the report banner / JSON nodename"),
    "run": (I32, "0-based index of the iostat run in the file (a new banner starts a run)"),
    "report": (I32, "0-based index of the report in the file"),
    "since_boot": (BOOL, "true for the first report of a run: averages since boot, not an interval"),
    "ts": (TS, "report time from -t (UTC; local times converted with the tz option); null without -t"),
}

IOSTAT_DEVICE: dict[str, tuple] = {
    **_IOSTAT_KEYS,
    "device": (STR, "device, partition, -N/-j name or -g group name"),
    "is_group": (BOOL, "row is a -g group total, not a device"),
    "tps": (F64, "transfers per second"),
    "r_per_s": (F64, "read requests per second"),
    "w_per_s": (F64, "write requests per second"),
    "d_per_s": (F64, "discard requests per second"),
    "f_per_s": (F64, "flush requests per second"),
    "rkb_per_s": (F64, "KiB read per second (rkB/s, kB_read/s; MB, GB and 512 B sectors converted)"),
    "wkb_per_s": (F64, "KiB written per second"),
    "dkb_per_s": (F64, "KiB discarded per second"),
    "kb_per_s": (F64, "KiB transferred per second (-s short extended report)"),
    "kb_wd_per_s": (F64, "KiB written + discarded per second (-s short basic report)"),
    "rrqm_per_s": (F64, "read requests merged per second"),
    "wrqm_per_s": (F64, "write requests merged per second"),
    "drqm_per_s": (F64, "discard requests merged per second"),
    "rqm_per_s": (F64, "requests merged per second (-s short extended report)"),
    "rrqm_pct": (F64, "percent of read requests merged"),
    "wrqm_pct": (F64, "percent of write requests merged"),
    "drqm_pct": (F64, "percent of discard requests merged"),
    "r_await_ms": (F64, "mean read response time, ms"),
    "w_await_ms": (F64, "mean write response time, ms"),
    "d_await_ms": (F64, "mean discard response time, ms"),
    "f_await_ms": (F64, "mean flush response time, ms"),
    "await_ms": (F64, "mean response time of all requests, ms"),
    "rareq_sz_kb": (F64, "mean read request size, KiB"),
    "wareq_sz_kb": (F64, "mean write request size, KiB"),
    "dareq_sz_kb": (F64, "mean discard request size, KiB"),
    "areq_sz_kb": (F64, "mean request size, KiB (-s short extended report)"),
    "avgrq_sz_kb": (F64, "mean request size, KiB (sysstat <= 10 avgrq-sz, printed in 512 B sectors)"),
    "aqu_sz": (F64, "mean queue length (aqu-sz, avgqu-sz)"),
    "svctm_ms": (F64, "mean service time, ms (sysstat < 12; deprecated by sysstat)"),
    "util_pct": (F64, "percent of time the device had I/O in flight"),
    "kb_read": (F64, "KiB read in the interval (basic report)"),
    "kb_wrtn": (F64, "KiB written in the interval (basic report)"),
    "kb_dscd": (F64, "KiB discarded in the interval (basic report)"),
    "kb_wd": (F64, "KiB written + discarded in the interval (-s short basic report)"),
    "src_line": (I64, "1-based line in the raw file"),
}

IOSTAT_CPU: dict[str, tuple] = {
    **_IOSTAT_KEYS,
    "user_pct": (F64, "%user"),
    "nice_pct": (F64, "%nice"),
    "system_pct": (F64, "%system"),
    "iowait_pct": (F64, "%iowait"),
    "steal_pct": (F64, "%steal"),
    "idle_pct": (F64, "%idle"),
    "src_line": (I64, "1-based line in the raw file"),
}

_VX_RATES: dict[str, tuple] = {
    "r_per_s": (F64, "reads / interval_s (null for the cumulative first report or an unknown interval)"),
    "w_per_s": (F64, "writes / interval_s"),
    "rkb_per_s": (F64, "read_kb / interval_s"),
    "wkb_per_s": (F64, "write_kb / interval_s"),
}

VXSTAT: dict[str, tuple] = {
    "report": (I32, "0-based index of the report (one per -i interval)"),
    "cumulative": (BOOL, "first report: totals since boot or the last vxstat -r, not an interval"),
    "ts": (TS, "time of the report's date line (UTC; local times converted with the tz option)"),
    "interval_s": (F64, "seconds covered by the report (from the date lines or the interval_s option)"),
    "dg": (STR, "disk group from the 'DG <name>' line (-o alldgs), else the -g option, else null"),
    "typ": (STR, "object type: vol, pl, sd, dm, ..."),
    "name": (STR, "object name"),
    "reads": (I64, "read operations in the report's interval"),
    "writes": (I64, "write operations in the report's interval"),
    "read_kb": (F64, "KiB read (BLOCKS column, 512 B blocks by default: option block_bytes)"),
    "write_kb": (F64, "KiB written"),
    "r_avg_ms": (F64, "mean read time, ms (AVG TIME(us) with -T converted)"),
    "w_avg_ms": (F64, "mean write time, ms"),
    **_VX_RATES,
    "src_line": (I64, "1-based line in the raw file"),
}

VXDMP: dict[str, tuple] = {
    "report": (I32, "0-based index of the report (one per interval)"),
    "cumulative": (BOOL, "first report: counts since 'vxdmpadm iostat start', not an interval"),
    "interval_s": (F64, "seconds per report (option interval_s, as given to vxdmpadm interval=)"),
    "group_by": (STR, "what a row is: pathname, dmpnodename, ctlrname, enclrname, portname, ..."),
    "name": (STR, "path, DMP node, controller, enclosure or port name"),
    "reads": (I64, "read operations"),
    "writes": (I64, "write operations"),
    "read_kb": (F64, "KiB read (BLOCKS of 512 B, or KBYTES/MBYTES/GBYTES with -u)"),
    "write_kb": (F64, "KiB written"),
    "r_avg_ms": (F64, "mean read time, ms"),
    "w_avg_ms": (F64, "mean write time, ms"),
    "queued_reads": (I64, "-q: reads queued in DMP"),
    "queued_writes": (I64, "-q: writes queued in DMP"),
    "pending_ios": (I64, "-q: I/Os pending"),
    **_VX_RATES,
    "cpu_usage_us": (I64, "'cpu usage' line of the report"),
    "per_cpu_memory_bytes": (I64, "'per cpu memory' of the report"),
    "src_line": (I64, "1-based line in the raw file"),
}

_LAT_STATS = ("min", "max", "mean", "stddev")
#: fio's default percentile_list; other percentiles go to fio_percentile only.
FIO_PERCENTILES: tuple[float, ...] = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)


def pct_name(p: float) -> str:
    """99.9 -> 'p99_9' (column-name form of a percentile)."""
    s = f"{p:g}".replace(".", "_")
    return f"p{s}"


FIO_JOB: dict[str, tuple] = {
    "doc": (I32, "0-based JSON document in the file (fio JSON), 0 for terse"),
    "job_index": (I32, "0-based job in the document, or terse line"),
    "hostname": (STR, "client host (fio --client output), else null"),
    "jobname": (STR, "job name"),
    "groupid": (I32, "group id"),
    "error": (I32, "fio error code of the job (0 = ok)"),
    "fio_version": (STR, "fio version string"),
    "timestamp": (TS, "run end time from the JSON (UTC)"),
    "dir": (STR, "read, write or trim (one row per job and direction)"),
    "rw": (STR, "rw option"),
    "bs": (STR, "bs option as written"),
    "bs_bytes": (I64, "bs in bytes when it is one size, else null"),
    "iodepth": (I32, "iodepth option"),
    "numjobs": (I32, "numjobs option"),
    "ioengine": (STR, "ioengine option"),
    "direct": (I32, "direct option"),
    "filename": (STR, "filename option"),
    "runtime_ms": (I64, "direction's runtime, ms"),
    "io_bytes": (I64, "bytes transferred (fio 2.x JSON and terse report KiB: converted)"),
    "total_ios": (I64, "I/Os completed"),
    "short_ios": (I64, "short I/Os"),
    "drop_ios": (I64, "dropped I/Os"),
    "iops": (F64, "mean IOPS"),
    "bw_bytes_per_s": (F64, "mean bandwidth, bytes/s"),
    "bw_min_bytes_per_s": (F64, "min of bandwidth samples, bytes/s"),
    "bw_max_bytes_per_s": (F64, "max of bandwidth samples, bytes/s"),
    "bw_mean_bytes_per_s": (F64, "mean of bandwidth samples, bytes/s"),
    "bw_dev_bytes_per_s": (F64, "stddev of bandwidth samples, bytes/s"),
    "iops_min": (F64, "min of IOPS samples"),
    "iops_max": (F64, "max of IOPS samples"),
    "iops_mean": (F64, "mean of IOPS samples"),
    "iops_stddev": (F64, "stddev of IOPS samples"),
    **{f"{k}_{s}_ns": (F64, f"{k} latency {s}, ns (fio 2.x and terse us converted)")
       for k in ("slat", "clat", "lat") for s in _LAT_STATS},
    **{f"clat_{pct_name(p)}_ns": (F64, f"completion latency {p:g}th percentile, ns") for p in FIO_PERCENTILES},
    "usr_cpu_pct": (F64, "user CPU percent"),
    "sys_cpu_pct": (F64, "system CPU percent"),
    "ctx": (I64, "context switches"),
    "src_line": (I64, "1-based line where the job's document or terse line starts"),
}

FIO_PERCENTILE: dict[str, tuple] = {
    "doc": (I32, "JSON document"),
    "job_index": (I32, "job in the document"),
    "dir": (STR, "read, write or trim"),
    "kind": (STR, "clat, lat or slat"),
    "pct": (F64, "percentile"),
    "latency_ns": (F64, "latency at that percentile, ns"),
    "src_line": (I64, "1-based line where the document or terse line starts"),
}

FIO_LAT_BUCKET: dict[str, tuple] = {
    "doc": (I32, "JSON document"),
    "job_index": (I32, "job in the document"),
    "bucket": (STR, "bucket label as printed, with its unit (e.g. '250us', '>=2000ms')"),
    "bucket_ns": (I64, "bucket bound, ns (upper bound, or lower bound for '>=')"),
    "pct": (F64, "percent of I/Os in the bucket"),
    "src_line": (I64, "1-based line where the document or terse line starts"),
}

FIO_CLAT_BINS: dict[str, tuple] = {
    "doc": (I32, "JSON document"),
    "job_index": (I32, "job in the document"),
    "dir": (STR, "read, write or trim"),
    "kind": (STR, "clat or lat"),
    "latency_ns": (I64, "bin value, ns (json+ bins; fio 2.x bin indexes decoded)"),
    "count": (I64, "I/Os in the bin"),
    "src_line": (I64, "1-based line where the document starts"),
}

FIO_DISK_UTIL: dict[str, tuple] = {
    "doc": (I32, "JSON document or terse line"),
    "name": (STR, "disk"),
    "read_ios": (I64, "reads completed"),
    "write_ios": (I64, "writes completed"),
    "read_merges": (I64, "reads merged"),
    "write_merges": (I64, "writes merged"),
    "read_ticks_ms": (I64, "time spent reading, ms"),
    "write_ticks_ms": (I64, "time spent writing, ms"),
    "in_queue_ms": (I64, "time in queue, ms"),
    "util_pct": (F64, "disk utilization, percent"),
    "src_line": (I64, "1-based line where the document or terse line starts"),
}

FIO_LOG: dict[str, tuple] = {
    "log_kind": (STR, "bw, iops, lat, clat or slat"),
    "job": (I32, "job number from the file name (<prefix>_<kind>.<job>.log)"),
    "time_ms": (I64, "ms since the job started"),
    "dir": (STR, "read, write or trim"),
    "bs_bytes": (I64, "block size, bytes (null in averaged logs, where fio writes 0)"),
    "offset_bytes": (I64, "offset, bytes (log_offset=1), else null"),
    "prio": (I32, "I/O priority (fio >= 3.18), else null"),
    "latency_ns": (I64, "latency, ns (lat, clat, slat logs; fio 2.x us converted)"),
    "bw_kib_per_s": (F64, "bandwidth, KiB/s (bw logs)"),
    "iops": (F64, "IOPS (iops logs)"),
    "src_line": (I64, "1-based line in the raw file"),
}

FIO_HIST: dict[str, tuple] = {
    "log_kind": (STR, "clat, lat or slat"),
    "job": (I32, "job number from the file name"),
    "time_ms": (I64, "ms since the job started (end of the histogram interval)"),
    "dir": (STR, "read, write or trim"),
    "bs_bytes": (I64, "block size, bytes"),
    "samples": (I64, "I/Os in the interval (sum of the bins)"),
    **{f"{pct_name(p)}_ns": (F64, f"{p:g}th percentile from the bins, ns") for p in (50, 90, 99, 99.9)},
    "counts": (pl.List(pl.Int64), "the raw bins (1216 in fio 2.x, 1856 in 3.x; FIO_IO_U_PLAT bucketing)"),
    "src_line": (I64, "1-based line in the raw file"),
}

IOMETER: dict[str, tuple] = {
    "result_block": (I32, "0-based 'Results block in the file (one per access specification run)"),
    "test_time": (TS, "the block's 'Time Stamp (local time as printed; read as UTC)"),
    "target_type": (STR, "ALL, MANAGER, PROCESSOR, WORKER or DISK"),
    "target_name": (STR, "target name"),
    "access_spec": (STR, "access specification name"),
    "managers": (I32, "# Managers"),
    "workers": (I32, "# Workers"),
    "disks": (I32, "# Disks"),
    "iops": (F64, "IOps"),
    "read_iops": (F64, "Read IOps"),
    "write_iops": (F64, "Write IOps"),
    "bytes_per_s": (F64, "MBps: 'MBps (Decimal)' x 10^6, 'MBps (Binary)' or the bare 'MBps' of older IOMeters x 2^20"),
    "read_bytes_per_s": (F64, "Read MBps in bytes/s"),
    "write_bytes_per_s": (F64, "Write MBps in bytes/s"),
    "avg_response_ms": (F64, "Average Response Time, ms"),
    "avg_read_response_ms": (F64, "Average Read Response Time, ms"),
    "avg_write_response_ms": (F64, "Average Write Response Time, ms"),
    "max_response_ms": (F64, "Maximum Response Time, ms"),
    "read_ios": (I64, "Read I/Os"),
    "write_ios": (I64, "Write I/Os"),
    "bytes_read": (I64, "Bytes Read"),
    "bytes_written": (I64, "Bytes Written"),
    "errors": (I64, "Errors"),
    "queue_depth": (I32, "Queue Depth (outstanding I/Os per target)"),
    "cpu_util_pct": (F64, "% CPU Utilization"),
    "src_line": (I64, "1-based line in the raw file"),
}

TABLES: dict[str, dict[str, tuple]] = {
    "iostat_device": IOSTAT_DEVICE,
    "iostat_device_boot": IOSTAT_DEVICE,
    "iostat_cpu": IOSTAT_CPU,
    "iostat_cpu_boot": IOSTAT_CPU,
    "vxstat": VXSTAT,
    "vxdmp": VXDMP,
    "fio_job": FIO_JOB,
    "fio_percentile": FIO_PERCENTILE,
    "fio_lat_bucket": FIO_LAT_BUCKET,
    "fio_clat_bins": FIO_CLAT_BINS,
    "fio_disk_util": FIO_DISK_UTIL,
    "fio_log": FIO_LOG,
    "fio_hist": FIO_HIST,
    "iometer": IOMETER,
}

#: Columns that hold the table's time, for the manifest's time span.
TIME_COLUMN: dict[str, str] = {
    "iostat_device": "ts", "iostat_device_boot": "ts", "iostat_cpu": "ts", "iostat_cpu_boot": "ts",
    "vxstat": "ts", "fio_job": "timestamp", "fio_log": "time_ms", "fio_hist": "time_ms", "iometer": "test_time",
}


def polars_schema(table: str) -> dict[str, pl.DataType]:
    return {c: t for c, (t, _) in TABLES[table].items()}


def arrow_schema(table: str) -> pa.Schema:
    """Arrow schema of a table with each column's unit/meaning as field metadata."""
    base = pl.DataFrame(schema=polars_schema(table)).to_arrow().schema
    return pa.schema([f.with_metadata({"unit": TABLES[table][f.name][1]}) for f in base])


def empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """The table's columns in order and type; columns the frame lacks become null."""
    schema = polars_schema(table)
    return df.select(
        (pl.col(c).cast(t) if c in df.columns else pl.lit(None, t).alias(c)) for c, t in schema.items()
    )
