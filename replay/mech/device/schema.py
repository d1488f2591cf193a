"""``[device]`` as data: the back end as one measured device (``replay.mech.device.kernel``): an SSD, a
virtual disk or a LUN seen from the host, with internal parallelism and a queue, asymmetric reads
and writes, a write cache that drains at the media rate and a throughput cap. ``tiercast calibrate``
writes it from fio captures (``pipelines.calibrate``)."""

from __future__ import annotations

from replay.schema import Param, Section

_POS = {"minimum": 0, "strict_min": True}
#: the request size at and above which a read's transfer is size / read_mib_per_s (read_size_exponent)
TRANSFER_REF_BYTES = 128 << 10
_NONNEG = {"minimum": 0}

DEVICE = Section("device", (
    Param("enabled", "bool", True, "", "false: the section is kept but the array has its DRAM cache and drives",
          "choice"),
    Param("host_us", "float", 0.0, "us", "host I/O stack time per I/O, a read's (system call, block layer, interrupt, "
          "wake-up): a delay before the device, not a server (many I/Os pay it at once)", "measured",
          "tiercast calibrate: fio mean latency - iostat device time at queue depth 1", **_NONNEG),
    Param("write_host_us", "float", None, "us", "host I/O stack time of a write, when it differs from a read's "
          "(None: host_us)", "measured", "tiercast calibrate: a depth-1 write capture's fio latency - iostat "
          "device time", optional=True, **_NONNEG),
    Param("read_latency_us", "float", 100.0, "us", "a read's fixed service time at queue depth 1, transfer "
          "excluded", "estimate", "SAS/NVMe SSD data sheets 50-150 us", **_POS),
    Param("read_mib_per_s", "float", 2000.0, "MiB/s", "media rate of one read (its transfer: size / this)",
          "estimate", "NVMe / virtio devices 1-3 GiB/s", **_POS),
    Param("read_size_exponent", "float", 1.0, "", "below 128 KiB (TRANSFER_REF_BYTES) a read's transfer takes "
          "(128 KiB / read_mib_per_s) x (size / 128 KiB) ** this: 1, size / rate at every size; below 1, small "
          "reads pay more per byte than large ones (a virtual disk: 4 / 32 / 128 KiB at QD1 lie on a concave curve, "
          "not a line); from 128 KiB up, size / rate", "measured",
          "tiercast calibrate: depth-1 reads at three or more sizes", minimum=0.2, maximum=1),
    Param("write_latency_us", "float", 100.0, "us", "a write's fixed service time at queue depth 1 (acknowledged "
          "from the write cache when there is one and it has room)", "estimate", "as reads", **_POS),
    Param("write_mib_per_s", "float", 2000.0, "MiB/s", "transfer rate of one write", "estimate", "as reads",
          **_POS),
    Param("parallelism", "int", 32, "I/Os", "N: requests the device works on at once; the speed-up stops "
          "growing at N queued", "estimate", "NVMe: 32-256 internal queues and dies; SAS SSD 32", minimum=1,
          maximum=1024),
    Param("parallel_exponent", "float", 1.0, "", "with q <= N requests queued the device serves them q ** this "
          "times faster than one (1: N independent channels; below 1: channels that share a controller or host "
          "thread)", "estimate", "1: ideal channels", minimum=0, maximum=1),
    Param("read_gain_at_2", "float", None, "", "g(2) of reads, when two requests in the device gain less (or more) "
          "over one than min(2, N) ** e: the host's time per I/O, a delay the model hides behind the other request "
          "from two on, is not all hidden on a virtual disk (None: the law's)", "measured",
          "tiercast calibrate: depth-2 reads, with reads at two deeper depths for the law", optional=True,
          minimum=1, maximum=2),
    Param("write_parallel_exponent", "float", None, "", "the exponent of writes when they share the channels "
          "differently from reads (None: parallel_exponent)", "estimate", "as reads", minimum=0, maximum=1,
          optional=True),
    Param("transfer_overlap", "float", 1.0, "", "how much of the transfer (size / rate) the channels overlap: "
          "it is divided by g(q) ** this, the fixed latency by g(q) (1: the whole service is served in parallel; "
          "0: the transfers of the requests in the device go one at a time, one link or one copy thread; between: "
          "links that overlap partly)", "estimate", "1: NVMe data moves over many lanes", minimum=0, maximum=1),
    Param("max_mib_per_s", "float", 0.0, "MiB/s", "throughput cap of the device (its link or controller; 0: "
          "none)", "estimate", "none known", **_NONNEG),
    Param("write_cache_bytes", "size", 0, "B", "write cache: writes are acknowledged at write_latency_us while "
          "it has room, and it drains at drain_mib_per_s; full, a write waits for room (0: no cache, "
          "writes are served at their own service time)", "estimate", "none known"),
    Param("drain_mib_per_s", "float", 0.0, "MiB/s", "rate the write cache drains to the media (0: "
          "read_mib_per_s, the media rate the reads show)", "estimate", "the read media rate", **_NONNEG),
    Param("drain_latency_us", "float", 0.0, "us", "media time of each cached write's drain, beyond its transfer "
          "at drain_mib_per_s (both divided by the reads' gain g(q)): the media drains before it serves a read, so "
          "reads wait behind the writes the cache took (0: the drain runs beside the reads at no cost to them)",
          "measured", "tiercast calibrate: the read/write mix the cache-path writes alone make too fast", **_NONNEG),
    Param("holdout_iops_error_pct", "float", None, "%", "not used by the model: the calibration's mean "
          "out-of-sample IOPS error (tiercast calibrate --holdout), reported with every run", "measured",
          "tiercast calibrate --holdout", optional=True, **_NONNEG),
    Param("holdout_latency_error_pct", "float", None, "%", "not used by the model: the calibration's mean "
          "out-of-sample mean-latency error", "measured", "tiercast calibrate --holdout", optional=True,
          **_NONNEG),
), doc="The back end as one device measured from the host: N-way internal parallelism behind one queue, "
       "asymmetric reads and writes, a write cache that absorbs bursts and drains at the media rate, a throughput "
       "cap, and the host stack's time per I/O.")


class Device(DEVICE.base("Device")):
    """A device (``replay.mech.device.schema.DEVICE``; ``replay.mech.device.kernel``)."""

    @property
    def holdout_error_pct(self) -> dict | None:
        """``calibration.holdout_error_pct`` of runs on it: the mean out-of-sample errors, if known."""
        if self.holdout_iops_error_pct is None and self.holdout_latency_error_pct is None:
            return None
        return {"iops": self.holdout_iops_error_pct, "latency": self.holdout_latency_error_pct}


def parse(w, t: dict, sc) -> Device:
    """``[device]``: a device runs none of the array's other mechanisms but a cloud volume's token
    buckets (``[cloud]``: the device serves what the buckets let through)."""
    sec = "device"
    d = Device(**w.read(sec, DEVICE, t))
    if d.enabled:
        for name, what in (("ssd_cache", "SSD cache"), ("tiering", "FAST VP tiers"), ("snapshots", "snapshots"),
                           ("flash", "all-flash array")):
            other = sc.sections.get(name)
            if other is not None and other.enabled:
                raise w.error(sec, "enabled", f"a device runs no {what}: switch [{name}] off")
    return d


def feature(s: Device) -> str:
    """What ``tiercast scenarios`` lists for it."""
    return f"device:{s.parallelism}-way" + (":write_cache" if s.write_cache_bytes else "")
