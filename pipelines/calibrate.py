"""Calibration: back-end parameters of a device from its measured iostat rows, written as a
scenario fragment (a ``[drive_classes.<name>]`` section) and as a complete single-device scenario.

**Service time.** iostat's ``r_await`` / ``w_await`` are the kernel's total device time of the
interval's completed I/Os divided by their count (``rd_ticks / rd_ios``): queueing inside the
block layer and device plus service. Where ``aqu-sz`` (time-averaged I/Os in flight) is at most
``max_queue`` (default 1) the device held less than one request on average, so there was little
to queue behind and ``await`` is mostly service. The estimate is the **I/O-weighted mean over
those low-queue intervals**: ``S = sum(device time) / sum(I/Os)``, i.e. the mean device time of
every I/O in them (not a mean of per-interval means, which would let a quiet interval of 3 I/Os
weigh like one of 30,000). For a single synchronous stream (fio ``iodepth=1``) it is exactly the
service time: nothing ever waits. Iostat rates are per second over a fixed interval, so the
rates serve as the weights.

*Resolution.* iostat prints ``await`` and ``aqu-sz`` with two decimals. The device time of one
second is ``await x IOPS`` (uncertain by 0.005 ms x IOPS) or, by Little's law on the same kernel
counters, ``aqu-sz x 1000 ms`` (uncertain by 5 ms): above 1,000 IO/s the second is finer (a
virtio disk at 12,800 IO/s prints ``r_await 0.05`` for 0.0546 ms, a 9 % rounding, while
``aqu-sz 0.70`` is within 0.7 %). So per interval the device time comes from ``aqu-sz`` when the
rate of the kind being estimated exceeds :data:`LITTLE_MIN_IOPS`, minus the device time of the
interval's other I/Os (the other direction, discards, flushes: rate x their await) as long as
that is under half the total; else from ``await``.

*Window.* For a capture, only the iostat intervals that lie wholly inside fio's run (its epoch
to its end, placed on the wall clock as ``compare`` does) are used: iostat also records the
seconds before and after the job, and a start-up second holds fio's file layout and other
programs' I/O (seen: 3,400 reads at 0.96 ms while fio laid out its file, 152 reads at 2.6 ms
after it ended), which would weigh in the I/O-weighted mean. ``basis`` ``auto`` estimates
fio's directions (reads for a read job), else reads and writes together.

*Cross-check.* A weighted least-squares line of per-interval await on ``aqu-sz`` over all
intervals, extrapolated to an empty queue, is reported as ``service_ms_regression`` when the
queue lengths spread over at least 0.5. It is not the estimate: it assumes await grows linearly
with the time-averaged queue, which fails for a closed loop (a QD1 job has ``aqu-sz`` = busy
fraction and no queueing at all) and for devices that serve queued I/Os in parallel.

**Other parameters.** Read/write asymmetry = write / read service time. Max IOPS = the busiest
interval (with its queue and utilization). The queue-depth gain of the model
(``queue_gain_exponent``, ``replay.mech.backend.queueing``) is fitted from that interval when the device was
saturated (``%util >= 90`` and ``aqu-sz >= 2``): its per-I/O time against the QD1 positioning
time; otherwise the class default is kept and the report says it was not identified. The
split between fixed latency and transfer is not identifiable from one request size, so the
media rate is a parameter (``transfer_mb_per_s``; default 2000 MB/s for ``ssd``, an estimate for
flash and virtio devices, 150 MB/s for ``hdd`` as the drive-class default): the service time
at the measured mean request size is reproduced exactly either way.

**Host stack time.** For a capture, fio measured the same I/Os from the application side:
``fio mean latency - S`` is the time each I/O spent in the host's I/O stack (system call, block
layer, interrupt, wake-up) beyond the device. The array model has no host; the single-device
scenario carries it as the controller's per-I/O time (``[controller] overhead_us``, an FCFS
server: for one synchronous stream that is exactly a per-I/O delay), so that the model's
response time is the one fio sees. It is reported, never folded into the drive class.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.capture import captures_root, find_capture
from pipelines.choices import CALIBRATE_BASES as BASES
from pipelines.choices import CALIBRATE_KINDS as DRIVE_KINDS
from pipelines.choices import CALIBRATE_WINDOWS as WINDOWS
from pipelines.choices import MIN_RPM
from pipelines.ingest_logs import MeasuredRef, find_measured, list_measured
from replay.scenario import DriveClass

#: above this many I/Os per second aqu-sz x 1000 ms is a finer device time than await x IOPS
LITTLE_MIN_IOPS = 1000.0
#: est: media rate of flash / virtio devices when sizes do not vary (4 KiB = 2 us of transfer)
SSD_TRANSFER_MB_PER_S = 2000.0
#: est: the drive-class default, the media rate of a 10k SAS drive
HDD_TRANSFER_MB_PER_S = DriveClass("x").transfer_mb_per_s
#: saturation test for the queue-gain fit: the queue never emptied and held >= 2 I/Os on average
SATURATED_UTIL_PCT = 90.0
SATURATED_QUEUE = 2.0
#: the regression cross-check needs queue lengths this far apart
REGRESSION_MIN_SPREAD = 0.5


@dataclass
class Calibration:
    """What ``tiercast calibrate`` found; ``fragment_toml`` / ``scenario_toml`` are the outputs."""

    device: str
    name: str
    source: dict
    kind: str
    basis: str
    max_queue: float
    intervals: int
    intervals_with_io: int
    low_queue_intervals: int
    service_ms: float
    service_ms_read: float | None
    service_ms_write: float | None
    read_ios_per_s_sum: float
    write_ios_per_s_sum: float
    write_read_ratio: float | None
    request_kb: float
    little_intervals: int
    service_ms_regression: float | None
    regression_note: str
    max_iops: dict
    queue_gain_exponent: float
    queue_gain_note: str
    transfer_mb_per_s: float
    drive_class: dict
    host_overhead_us: float | None = None
    host_note: str = ""
    fio: dict = field(default_factory=dict)
    outstanding: int | None = None
    interval_s: float | None = None
    window: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fragment_toml: str = ""
    scenario_toml: str = ""

    def summary(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# per-interval device time
# --------------------------------------------------------------------------------------------
def _z(c: str) -> pl.Expr:
    return pl.col(c).fill_null(0.0)


def interval_ios(basis: str) -> pl.Expr:
    """I/Os per second of the interval counted for ``basis`` (reads, writes or both)."""
    if basis == "read":
        return _z("r_per_s")
    if basis == "write":
        return _z("w_per_s")
    return _z("r_per_s") + _z("w_per_s")


#: the I/O kinds iostat times: rate and await column of each
KINDS = {"read": ("r_per_s", "r_await_ms"), "write": ("w_per_s", "w_await_ms"), "discard": ("d_per_s", "d_await_ms"),
         "flush": ("f_per_s", "f_await_ms")}
BASIS_KINDS = {"read": ("read",), "write": ("write",), "all": ("read", "write")}


def _await_ms_per_s(kinds) -> pl.Expr:
    """Device time (ms per second) of ``kinds`` from their rate x await (sysstat <= 10 prints
    one ``await`` for all kinds); null when a kind with I/O has no await printed."""
    total = pl.lit(0.0)
    for k in kinds:
        rate, aw = KINDS[k]
        total = total + pl.when(_z(rate) > 0).then(pl.col(rate) * pl.coalesce(aw, "await_ms")).otherwise(0.0)
    return total


def _other_ms_per_s(basis: str) -> pl.Expr:
    return _await_ms_per_s([k for k in KINDS if k not in BASIS_KINDS[basis]])


def uses_little(basis: str) -> pl.Expr:
    """Whether the interval's device time for ``basis`` comes from aqu-sz: more than
    LITTLE_MIN_IOPS of them, and the other kinds' device time (subtracted, from their awaits)
    known and under half of the total."""
    aqu_ms = pl.col("aqu_sz") * 1000.0
    return ((interval_ios(basis) > LITTLE_MIN_IOPS) & pl.col("aqu_sz").is_not_null()
            & (_other_ms_per_s(basis) < 0.5 * aqu_ms)).fill_null(False)


def device_ms_per_s(basis: str) -> pl.Expr:
    """Device time (ms) per second of interval spent on the I/Os of ``basis``: aqu-sz x 1000
    minus the other kinds' await x rate when finer (see module doc), else rate x await."""
    n = interval_ios(basis)
    return (pl.when(n <= 0).then(0.0)
            .when(uses_little(basis)).then(pl.col("aqu_sz") * 1000.0 - _other_ms_per_s(basis))
            .otherwise(_await_ms_per_s(BASIS_KINDS[basis])))


# --------------------------------------------------------------------------------------------
# the estimator on rows (no files: tests feed it synthetic rows)
# --------------------------------------------------------------------------------------------
def _weighted_service(rows: pl.DataFrame, basis: str) -> tuple[float | None, float, int]:
    """(S ms or None, sum of I/O rates, intervals using aqu-sz) over ``rows`` for ``basis``."""
    sub = rows.with_columns(n=interval_ios(basis), d=device_ms_per_s(basis), little=uses_little(basis)) \
        .filter((pl.col("n") > 0) & pl.col("d").is_not_null())
    n = float(sub["n"].sum()) if sub.height else 0.0
    if n <= 0:
        return None, 0.0, 0
    return float(sub["d"].sum()) / n, n, int(sub["little"].sum())


def request_kb(basis: str) -> pl.Expr:
    """Mean request size (KiB) of the interval's ``basis`` I/Os: iostat's own size columns
    (``rareq-sz``/``wareq-sz``, or the combined ``avgrq-sz``/``areq-sz``) where printed, as they
    are exact to 0.01 KiB while ``-m`` rates are rounded to 0.01 MB/s; else KiB/s over IO/s."""
    r, w = _z("r_per_s"), _z("w_per_s")
    combined = pl.coalesce("avgrq_sz_kb", "areq_sz_kb")
    if basis == "read":
        return pl.coalesce("rareq_sz_kb", combined, _z("rkb_per_s") / r)
    if basis == "write":
        return pl.coalesce("wareq_sz_kb", combined, _z("wkb_per_s") / w)
    split = (r * _z("rareq_sz_kb") + w * _z("wareq_sz_kb")) / (r + w)
    has_split = pl.col("rareq_sz_kb").is_not_null() | pl.col("wareq_sz_kb").is_not_null()
    return pl.when(has_split).then(split).otherwise(
        pl.coalesce(combined, (_z("rkb_per_s") + _z("wkb_per_s")) / (r + w)))


def _request_kb(rows: pl.DataFrame, basis: str) -> float:
    """I/O-weighted mean request size (KiB) of ``basis`` over ``rows``."""
    s = rows.with_columns(n=interval_ios(basis)).filter(pl.col("n") > 0) \
        .select(kb=(request_kb(basis) * pl.col("n")).sum(), n=pl.col("n").sum()).row(0, named=True)
    return s["kb"] / s["n"] if s["n"] else 0.0


def _regression(rows: pl.DataFrame) -> tuple[float | None, str]:
    """Intercept of await on aqu-sz (weighted by I/Os) over all intervals with I/O."""
    sub = rows.with_columns(n=interval_ios("all"), d=device_ms_per_s("all")) \
        .filter((pl.col("n") > 0) & pl.col("aqu_sz").is_not_null() & pl.col("d").is_not_null())
    if sub.height < 3:
        return None, f"needs 3 intervals with I/O and aqu-sz, has {sub.height}"
    x = sub["aqu_sz"].to_numpy()
    spread = float(x.max() - x.min())
    if spread < REGRESSION_MIN_SPREAD:
        return None, f"aqu-sz spans only {spread:.2f} (< {REGRESSION_MIN_SPREAD}): nothing to extrapolate from"
    y = (sub["d"] / sub["n"]).to_numpy()
    # np.polyfit weights multiply the residuals: sqrt(I/Os) gives variance weights of I/Os
    slope, intercept = np.polyfit(x, y, 1, w=np.sqrt(sub["n"].to_numpy()))
    return float(intercept), f"await = {intercept:.4f} ms + {slope:.4f} ms x aqu-sz over {sub.height} intervals"


def build_drive_class(name: str, kind: str, service_ms: float, request_bytes: float, transfer_mb_per_s: float,
                      queue_gain_exponent: float, rpm: int | None = None) -> dict:
    """Drive-class parameters (as scenario.py reads them) whose QD1 service time at
    ``request_bytes`` is ``service_ms``.

    ssd: service(b) = 1000/planning_iops - 8 KiB transfer + b transfer (DriveClass.latency_ms), so
    planning_iops = 1000 / (service - b transfer + 8 KiB transfer). hdd: service = seek + half a
    rotation + b transfer, so avg_seek_ms = service - 30000/rpm - b transfer."""
    ms_per_byte = 1.0 / (transfer_mb_per_s * 1e3)
    fixed_ms = service_ms - request_bytes * ms_per_byte
    if fixed_ms <= 0:
        raise ValueError(f"service time {service_ms:.4f} ms is shorter than transferring {request_bytes / 1024:.1f} KiB "
                         f"at {transfer_mb_per_s:g} MB/s: give a larger --transfer-mb-per-s")
    dc = {"kind": kind}
    if kind == "ssd":
        dc["planning_iops"] = 1000.0 / (fixed_ms + 8192 * ms_per_byte)
    else:
        if not rpm:
            raise ValueError("--kind hdd needs --rpm (the half rotation is part of the service time)")
        half_rot = 30_000.0 / rpm
        seek = fixed_ms - half_rot
        if seek <= 0:
            raise ValueError(f"service time {service_ms:.3f} ms is shorter than half a rotation at {rpm} rpm "
                             f"({half_rot:.2f} ms) plus the transfer: not a {rpm} rpm disk (use --kind ssd)")
        dc["rpm"] = int(rpm)
        dc["avg_seek_ms"] = seek
        # est: DriveClass default track-to-track (0.5 ms), never above the seek itself
        dc["track_to_track_ms"] = min(DriveClass("x").track_to_track_ms, seek)
        dc["planning_iops"] = 1000.0 / (seek + half_rot + 8192 * ms_per_byte)
    dc["transfer_mb_per_s"] = float(transfer_mb_per_s)
    dc["queue_gain_exponent"] = float(queue_gain_exponent)
    return dc


def check_options(kind: str, rpm: int | None, transfer_mb_per_s: float | None, max_queue: float,
                  min_intervals: int) -> None:
    """Refuse option values no device has (NaN and infinities included) before any row is read;
    ``tiercast calibrate`` refuses them when parsing its options, naming the option."""
    if kind not in DRIVE_KINDS:
        raise ValueError(f"kind must be {' or '.join(DRIVE_KINDS)}, got {kind!r}")
    if kind == "hdd" and not rpm:
        raise ValueError("--kind hdd needs --rpm (the half rotation is part of the service time)")
    if rpm is not None and (kind != "hdd" or rpm < MIN_RPM):
        raise ValueError(f"--rpm is for --kind hdd, at least {MIN_RPM}; got {rpm} for {kind}")
    if transfer_mb_per_s is not None and not (math.isfinite(transfer_mb_per_s) and transfer_mb_per_s > 0):
        raise ValueError(f"--transfer-mb-per-s must be a finite number > 0, got {transfer_mb_per_s}")
    if not (math.isfinite(max_queue) and max_queue > 0):
        raise ValueError(f"--max-queue must be a finite number > 0, got {max_queue}")
    if min_intervals < 1:
        raise ValueError(f"--min-intervals must be >= 1, got {min_intervals}")


def estimate(rows: pl.DataFrame, device: str, *, name: str | None = None, kind: str = "ssd", rpm: int | None = None,
             transfer_mb_per_s: float | None = None, basis: str = "all", max_queue: float = 1.0,
             min_intervals: int = 3, source: dict | None = None) -> Calibration:
    """Calibrate from one device's iostat interval rows (``iostat_device`` columns)."""
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(BASES)}, got {basis!r}")
    check_options(kind, rpm, transfer_mb_per_s, max_queue, min_intervals)
    src = source or {}
    where = f"device {device!r}" + (f" in {src['iostat_dataset']}" if src.get("iostat_dataset") else "")
    if "aqu_sz" not in rows.columns or rows["aqu_sz"].null_count() == rows.height:
        raise ValueError(f"{where}: the iostat layout has no aqu-sz / avgqu-sz column: calibration needs the "
                         "extended report (iostat -x)")
    if all(c not in rows.columns or rows[c].null_count() == rows.height for c in ("r_await_ms", "w_await_ms", "await_ms")):
        raise ValueError(f"{where}: the iostat layout has no await columns: calibration needs iostat -x")
    with_io = rows.filter(interval_ios("all") > 0)
    if with_io.height < min_intervals:
        raise ValueError(f"{where}: {with_io.height} interval row(s) with I/O out of {rows.height}; calibration needs "
                         f"at least {min_intervals} (--min-intervals)")
    low = with_io.filter(pl.col("aqu_sz") <= max_queue)
    if low.height == 0:
        lo = with_io["aqu_sz"].min()
        raise ValueError(f"{where}: no low-queue-depth interval: all {with_io.height} intervals with I/O have aqu-sz > "
                         f"{max_queue:g} (lowest {lo:.2f}); rerun the workload at queue depth 1, or raise --max-queue "
                         "(await then includes queueing)")
    s_all, n_all, little_all = _weighted_service(low, "all")
    s_read, n_read, little_r = _weighted_service(low, "read")
    s_write, n_write, little_w = _weighted_service(low, "write")
    chosen = {"all": s_all, "read": s_read, "write": s_write}[basis]
    if chosen is None:
        raise ValueError(f"{where}: no {basis} I/O in the {low.height} low-queue-depth intervals (try --basis all)")
    if chosen <= 0:
        raise ValueError(f"{where}: the {basis} service time rounds to 0 ms (iostat prints await and aqu-sz to 0.01): "
                         "the device answered from a cache faster than iostat can show")
    little_n = {"all": little_all, "read": little_r, "write": little_w}[basis]
    req_kb = _request_kb(low, basis)
    reg, reg_note = _regression(with_io)

    # busiest interval
    busy = with_io.with_columns(iops=interval_ios("all"), req_kb=request_kb("all")) \
        .sort("iops", descending=True).row(0, named=True)
    max_iops = {"iops": busy["iops"], "ts": busy.get("ts").isoformat() if busy.get("ts") else None,
                "report": busy.get("report"), "aqu_sz": busy["aqu_sz"], "util_pct": busy.get("util_pct"),
                "request_kb": busy["req_kb"],
                "await_ms": busy["aqu_sz"] * 1000.0 / busy["iops"] if busy["aqu_sz"] is not None else None}

    if transfer_mb_per_s is None:
        transfer_mb_per_s = SSD_TRANSFER_MB_PER_S if kind == "ssd" else HDD_TRANSFER_MB_PER_S
    if transfer_mb_per_s <= 0:
        raise ValueError(f"--transfer-mb-per-s must be > 0, got {transfer_mb_per_s}")
    request_bytes = req_kb * 1024
    beta = DriveClass("x").queue_gain_exponent
    q, util = busy["aqu_sz"], busy.get("util_pct")
    if q is not None and util is not None and util >= SATURATED_UTIL_PCT and q >= SATURATED_QUEUE:
        pos = chosen - request_bytes / (transfer_mb_per_s * 1e3)  # QD1 positioning: what the queue law speeds up
        per_io = 1000.0 / busy["iops"] - busy["req_kb"] * 1024 / (transfer_mb_per_s * 1e3)
        gain = pos / per_io if per_io > 0 else float("inf")
        qmax = DriveClass("x").queue_depth_max
        beta = 0.0 if gain <= 1 else min(1.0, math.log(gain) / math.log(min(q, qmax)))
        beta_note = (f"fitted: {busy['iops']:.0f} IO/s at aqu-sz {q:.2f}, util {util:.0f} % = {gain:.2f}x the QD1 "
                     f"positioning rate -> gain(q) = q^{beta:.3f}")
    else:
        beta_note = (f"not identified (busiest interval: aqu-sz {q}, util {util} %; needs util >= "
                     f"{SATURATED_UTIL_PCT:g} % at aqu-sz >= {SATURATED_QUEUE:g}): drive-class default {beta}")

    cls_name = name or re.sub(r"[^A-Za-z0-9_-]", "_", device)
    dc = build_drive_class(cls_name, kind, chosen, request_bytes, transfer_mb_per_s, beta, rpm)
    ts = rows["ts"].drop_nulls().sort() if "ts" in rows.columns else pl.Series([])
    interval_s = float(np.median(np.diff(ts.dt.epoch("us").to_numpy())) / 1e6) if ts.len() > 1 else None
    return Calibration(
        device=device, name=cls_name, source=src, kind=kind, basis=basis, max_queue=max_queue,
        intervals=rows.height, intervals_with_io=with_io.height, low_queue_intervals=low.height,
        service_ms=chosen, service_ms_read=s_read, service_ms_write=s_write,
        read_ios_per_s_sum=n_read, write_ios_per_s_sum=n_write,
        write_read_ratio=(s_write / s_read) if s_read and s_write else None,
        request_kb=req_kb, little_intervals=little_n, service_ms_regression=reg, regression_note=reg_note,
        max_iops=max_iops, queue_gain_exponent=beta, queue_gain_note=beta_note,
        transfer_mb_per_s=float(transfer_mb_per_s), drive_class=dc, interval_s=interval_s,
    )


# --------------------------------------------------------------------------------------------
# fio's view (captures): host stack time, outstanding I/Os
# --------------------------------------------------------------------------------------------
def fio_view(fio: MeasuredRef) -> dict:
    """fio's own totals: I/Os, I/O-weighted mean latency per direction and overall, iodepth."""
    jobs = fio.scan("fio_job").filter((pl.col("error") == 0) & (pl.col("total_ios") > 0)).collect()
    if jobs.height == 0:
        return {}
    # fio's JSON lists only the options the job file set: iodepth, numjobs default to 1, direct to 0
    out: dict = {"jobs": jobs.select("doc", "job_index").unique().height,
                 "iodepth": int(jobs["iodepth"].fill_null(1).max()),
                 "numjobs": int(jobs["numjobs"].fill_null(1).max()),
                 "direct": int(jobs["direct"].fill_null(0).max())}
    for d in ("read", "write"):
        j = jobs.filter(pl.col("dir") == d)
        ios = int(j["total_ios"].sum())
        out[f"{d}_ios"] = ios
        out[f"{d}_lat_mean_ms"] = float((j["lat_mean_ns"] * j["total_ios"]).sum() / ios / 1e6) if ios else None
    ios = out["read_ios"] + out["write_ios"]
    out["lat_mean_ms"] = float((jobs["lat_mean_ns"] * jobs["total_ios"]).sum() / ios / 1e6)
    out["iops"] = float(jobs["iops"].sum())
    out["mb_per_s"] = float(jobs["bw_bytes_per_s"].sum()) / 1e6
    return out


def _host_overhead(cal: Calibration, fio: dict) -> tuple[float | None, str]:
    if not fio:
        return None, "no successful fio job in the capture"
    key = {"all": "lat_mean_ms", "read": "read_lat_mean_ms", "write": "write_lat_mean_ms"}[cal.basis]
    lat = fio.get(key)
    if lat is None:
        return None, f"fio did no {cal.basis} I/O"
    host_ms = lat - cal.service_ms
    if host_ms <= 0:
        return None, (f"fio's mean latency {lat:.4f} ms is not above the device service time {cal.service_ms:.4f} ms "
                      "(buffered I/O or page-cache hits?): no host stack time")
    return host_ms * 1000.0, f"fio mean latency {lat:.4f} ms - device service {cal.service_ms:.4f} ms"


# --------------------------------------------------------------------------------------------
# sources
# --------------------------------------------------------------------------------------------
def fio_doc(fio_json: Path) -> dict:
    text = fio_json.read_text(errors="replace")
    try:
        return json.loads(text[text.index("{"):])
    except ValueError as e:
        raise ValueError(f"{fio_json}: not fio JSON ({e}): cannot place the job in time") from None


def _job_start_ns(doc: dict, j: dict, where: Path) -> tuple[int, int, str]:
    """(start ns, runtime ms, anchor) of one job of a fio JSON document."""
    runtime = j.get("job_runtime")
    if runtime is None:  # older fio: the longest direction's runtime
        runtime = max(int((j.get(d) or {}).get("runtime", 0)) for d in ("read", "write", "trim"))
    runtime = int(runtime)
    if isinstance(j.get("job_start"), int) and j["job_start"] > 0:
        return j["job_start"] * 1_000_000, runtime, "fio job_start"
    if "timestamp_ms" in doc:
        return (int(doc["timestamp_ms"]) - runtime) * 1_000_000, runtime, "fio timestamp_ms - job_runtime"
    if "timestamp" in doc:
        return (int(doc["timestamp"]) * 1000 - runtime) * 1_000_000, runtime, "fio timestamp (s) - job_runtime"
    raise ValueError(f"{where}: no job_start, timestamp_ms or timestamp: cannot place the job in time")


def fio_job_start_ns(fio_json: Path, job: int) -> tuple[int, str]:
    """Wall-clock epoch (ns) of fio job ``job`` (1-based), the origin of its logs' times: fio's
    ``job_start`` (ms, fio >= 3.36) or else the report's ``timestamp_ms`` minus the job's
    ``job_runtime`` (ms from its epoch to its end; late by the teardown, milliseconds)."""
    doc = fio_doc(fio_json)
    jobs = doc.get("jobs") or []
    if not 1 <= job <= len(jobs):
        raise ValueError(f"{fio_json}: has {len(jobs)} job(s), the trace is job {job}")
    start, _, anchor = _job_start_ns(doc, jobs[job - 1], fio_json)
    return start, anchor


def fio_run_window_ns(fio_json: Path) -> tuple[int, int, str]:
    """(first job's epoch, last job's end, anchor) on the wall clock, ns."""
    doc = fio_doc(fio_json)
    spans = [_job_start_ns(doc, j, fio_json) for j in doc.get("jobs") or [] if isinstance(j, dict)]
    if not spans:
        raise ValueError(f"{fio_json}: no jobs")
    return min(s for s, _, _ in spans), max(s + r * 1_000_000 for s, r, _ in spans), spans[0][2]


def iostat_phase_ns(capture: dict, first_ts_ns: int | None = None) -> int:
    """iostat of a capture samples at ``started_at`` + k x interval (+ its start-up delay, ms),
    but prints whole seconds: a report stamped ``ts`` was taken at ``ts`` + this many ns. When
    the start-up delay carried the first sample past a whole second (``started_at`` just
    before one), the first report's stamp is a second later than ``started_at`` + interval
    predicts; then the phase is the fraction minus one second."""
    started = datetime.fromisoformat(capture["started_at"])
    phase = started.microsecond * 1000
    if first_ts_ns is not None:
        interval_ns = int(float(capture.get("iostat_interval_s") or 1) * 1e9)
        expected = int(started.timestamp()) * 10**9 + phase + interval_ns
        if first_ts_ns + phase - expected > 500_000_000:
            phase -= 1_000_000_000
    return phase


def _iso_ns(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="milliseconds")


def resolve_source(data_dir: str | Path, ref: str) -> tuple[MeasuredRef, dict | None]:
    """The iostat dataset named by ``ref``: a capture id (its linked iostat dataset) or a
    measured dataset id (or an unambiguous prefix of either)."""
    try:
        cap = find_capture(data_dir, ref)
    except LookupError:
        cap = None
    if cap is not None:
        if "iostat" not in cap.get("datasets", {}):
            raise LookupError(f"capture {cap['capture_id']} links no iostat dataset")
        return find_measured(data_dir, cap["datasets"]["iostat"]), cap
    try:
        return find_measured(data_dir, ref), None
    except LookupError:
        have = [m.dataset_id for m in list_measured(data_dir) if "iostat_device" in m.manifest["tables"]]
        raise LookupError(f"{ref!r} is neither a capture (see `tiercast captures`) nor a measured dataset in "
                          f"{data_dir}; iostat datasets: {', '.join(have) or 'none'}") from None


def calibrate(data_dir: str | Path, ref: str, device: str | None = None, *, name: str | None = None,
              kind: str = "ssd", rpm: int | None = None, transfer_mb_per_s: float | None = None,
              basis: str = "auto", window: str = "auto", max_queue: float = 1.0, min_intervals: int = 3) -> Calibration:
    """Calibrate ``device`` from the iostat rows of a capture or measured dataset ``ref``.
    ``basis`` auto: fio's directions for a capture, else all; ``window`` auto: a capture's fio
    run (whole iostat intervals inside it), else every interval."""
    check_options(kind, rpm, transfer_mb_per_s, max_queue, min_intervals)
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    if basis not in (*BASES, "auto"):
        raise ValueError(f"basis must be one of auto, {', '.join(BASES)}, got {basis!r}")
    ds, cap = resolve_source(data_dir, ref)
    if "iostat_device" not in ds.manifest["tables"]:
        raise ValueError(f"measured dataset {ds.dataset_id} ({ds.manifest['format']}) has no iostat_device table: "
                         "calibration reads iostat -x rows")
    rows_all = ds.scan("iostat_device").filter(~pl.col("is_group").fill_null(False)).collect()
    present = sorted(rows_all["device"].unique().to_list())
    if device is None:
        cands = [d for d in (cap or {}).get("devices", []) if d in present]
        if len(cands) != 1:
            raise ValueError(f"name the device with --device; devices in {ds.dataset_id}: {', '.join(present)}")
        device = cands[0]
    if device not in present:
        raise LookupError(f"device {device!r} is not in iostat dataset {ds.dataset_id}; devices present: "
                          f"{', '.join(present) or 'none'}")
    rows = rows_all.filter(pl.col("device") == device).sort("run", "report")
    source = {"kind": "capture" if cap else "measured", "ref": cap["capture_id"] if cap else ds.dataset_id,
              "iostat_dataset": ds.dataset_id,
              "tool_version": ds.manifest.get("tool_version") or (cap or {}).get("versions", {}).get("iostat"),
              "hosts": ds.manifest.get("hosts", []), "source_path": ds.manifest.get("source_path")}
    fio = {}
    if cap and "fio" in cap.get("datasets", {}):
        fio = fio_view(find_measured(data_dir, cap["datasets"]["fio"]))
    if basis == "auto":
        basis = ("read" if fio.get("read_ios") and not fio.get("write_ios") else
                 "write" if fio.get("write_ios") and not fio.get("read_ios") else "all")
    win: dict = {"kind": "all"}
    use_job = window == "job" or (window == "auto" and cap is not None)
    if use_job:
        if cap is None:
            raise ValueError("--window job needs a capture (fio's run places the window)")
        start, end, anchor = fio_run_window_ns(captures_root(data_dir) / cap["capture_id"] / "raw" / "fio.json")
        iv_ns = int(float(cap.get("iostat_interval_s") or 1) * 1e9)
        first = rows_all["ts"].min()
        phase = iostat_phase_ns(cap, int(first.timestamp() * 1e9) if first is not None else None)
        e = pl.col("ts").dt.epoch("ns") + phase
        inside = rows.filter((e - iv_ns >= start) & (e <= end))
        win = {"kind": "fio job", "start": _iso_ns(start), "end": _iso_ns(end), "anchor": anchor,
               "intervals": inside.height, "intervals_outside": rows.height - inside.height}
        if inside.filter(interval_ios("all") > 0).height < min_intervals:
            raise ValueError(f"device {device!r}: fio's run ({win['start']} to {win['end']}) holds only "
                             f"{inside.height} whole iostat interval(s); calibration needs at least {min_intervals}: "
                             "run the job longer, or use --window all")
        rows = inside
    cal = estimate(rows, device, name=name, kind=kind, rpm=rpm, transfer_mb_per_s=transfer_mb_per_s, basis=basis,
                   max_queue=max_queue, min_intervals=min_intervals, source=source)
    cal.window = win
    if cap and cap.get("iostat_interval_s"):
        cal.interval_s = float(cap["iostat_interval_s"])
    if fio:
        cal.fio = fio
        cal.host_overhead_us, cal.host_note = _host_overhead(cal, fio)
        cal.outstanding = fio["iodepth"]
        if fio["jobs"] > 1:
            cal.warnings.append(f"the capture ran {fio['jobs']} fio jobs; each per-I/O log is its own trace, "
                                f"the scenario's closed loop uses one job's iodepth ({cal.outstanding})")
    elif cap:
        cal.host_note = "the capture has no successful fio job"
    else:
        cal.host_note = "not a capture: no fio numbers to separate host time from device time"
    cal.fragment_toml = fragment_toml(cal)
    cal.scenario_toml = scenario_toml(cal)
    return cal


# --------------------------------------------------------------------------------------------
# TOML output
# --------------------------------------------------------------------------------------------
def _num(v: float) -> str:
    """A TOML float with 6 significant digits (the estimates are not more precise)."""
    s = f"{v:.6g}"
    return s if any(c in s for c in ".en") else s + ".0"


def _fmt(v) -> str:
    return _num(v) if isinstance(v, float) else (f'"{v}"' if isinstance(v, str) else str(v))


def fragment_toml(cal: Calibration) -> str:
    """The ``[drive_classes.<name>]`` section, commented with where each value comes from."""
    src = cal.source
    rd = f"{cal.service_ms_read:.4f} ms" if cal.service_ms_read is not None else "-"
    wr = f"{cal.service_ms_write:.4f} ms" if cal.service_ms_write is not None else "-"
    lines = [
        f"# tiercast calibrate: device {cal.device} of {src.get('kind', 'rows')} {src.get('ref', '-')} "
        f"(iostat {src.get('iostat_dataset', '-')}, {src.get('tool_version') or 'sysstat'})",
        f"# service time {cal.service_ms:.4f} ms ({cal.basis}) = I/O-weighted device time per I/O over "
        f"{cal.low_queue_intervals} of {cal.intervals_with_io} intervals with aqu-sz <= {cal.max_queue:g}",
        *([f"# window: fio's run {cal.window['start']} to {cal.window['end']} ({cal.window['intervals']} whole "
           f"iostat intervals)"] if cal.window.get("kind") == "fio job" else []),
        f"# read {rd}, write {wr}" + (f", write/read {cal.write_read_ratio:.2f}" if cal.write_read_ratio else "")
        + f"; mean request {cal.request_kb:.2f} KiB",
        f"# max observed {cal.max_iops['iops']:.0f} IO/s at aqu-sz {cal.max_iops['aqu_sz']}, util "
        f"{cal.max_iops['util_pct']} %",
        f"# queue gain {cal.queue_gain_note}",
        f"[drive_classes.{cal.name}]",
    ]
    notes = {
        "kind": "fixed latency + transfer" if cal.kind == "ssd" else "seek + half rotation + transfer",
        "planning_iops": f"QD1 rate at 8 KiB; at {cal.request_kb:.2f} KiB the service is {cal.service_ms:.4f} ms",
        "transfer_mb_per_s": "media rate: given or the kind's estimate (one request size cannot identify it)",
        "avg_seek_ms": "service - half rotation - transfer, over the span the workload covered",
    }
    for k, v in cal.drive_class.items():
        note = notes.get(k)
        lines.append(f"{k} = {_fmt(v)}" + (f"  # {note}" if note else ""))
    return "\n".join(lines) + "\n"


def scenario_toml(cal: Calibration) -> str:
    """A complete scenario of the measured device alone: one RAID 0 group of one drive of the
    calibrated class, a one-page cache (a direct-attached device has no array cache: reads miss,
    writes wait for their own flush), the host stack time as the controller's per-I/O time, and a
    replay interval a tenth of iostat's so model intervals can be apportioned to iostat's."""
    host = cal.host_overhead_us or 0.0
    interval_ms = max(1, int(round((cal.interval_s or 1.0) * 100)))
    mode = "closed" if cal.outstanding else "open"
    replay = [f'mode = "{mode}"' + ("  # fio ran a closed loop" if cal.outstanding else "")]
    if cal.outstanding:
        replay.append(f"outstanding = {cal.outstanding}  # fio iodepth")
    replay.append(f'interval = "{interval_ms}ms"  # a tenth of the iostat interval')
    return "\n".join([
        f'name = "measured-{cal.name}"',
        f'description = "device {cal.device} as measured ({cal.source.get("kind", "rows")} '
        f'{cal.source.get("ref", "-")}), tiercast calibrate"',
        "",
        "[controller]",
        f"overhead_us = {_num(host)}  # host I/O stack per I/O: {cal.host_note or 'unknown'}",
        "bandwidth_mb_per_s = 1000000.0  # no front-end limit: only the device was measured",
        "",
        "[dram]",
        'mode = "mcx"',
        'cache_bytes = "4KiB"  # one page: no array cache in front of a direct-attached device',
        'page_bytes = "4KiB"',
        'flush_unit_bytes = "256KiB"  # larger requests pay the fixed latency once per 256 KiB',
        "mirror_latency_us = 0.0",
        "flush_queue_depth = 1",
        "",
        cal.fragment_toml.rstrip("\n"),
        "",
        "[[raid_groups]]",
        f'name = "{cal.name}"',
        "level = 0",
        "width = 1",
        f'drive_class = "{cal.name}"',
        'stripe_element_bytes = "256KiB"',
        "",
        "[[pools]]",
        f'name = "{cal.name}"',
        f'raid_groups = ["{cal.name}"]',
        "",
        "[replay]",
        *replay,
        "",
    ])
