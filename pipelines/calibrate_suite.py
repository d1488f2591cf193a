"""``tiercast calibrate-suite``: a short standard set of fio jobs, each run through ``capture``, that
together identify a ``[device]`` (``pipelines.device_calibration``).

The jobs (direct I/O, libaio, one job each, on one file laid out before the first):

=================  =====================  ========================================
job                what it identifies     why
=================  =====================  ========================================
randread QD1       read service, host     nothing queues: fio latency = host + service
randwrite QD1      write service          and whether writes are faster (a cache)
read 128 KiB QD1   read media rate        latency against size (with 4 KiB)
write 128 KiB QD1  write media rate
randread QD32      queue law              IOPS at depth against depth 1
randwrite QD32     queue law (writes)
read 128 KiB QD16  throughput cap         bandwidth at depth
randrw 50 % QD16   a check                a mix at depth, for --holdout
=================  =====================  ========================================

A target that is a block device with a file system (``blkid``) is refused unless ``i_know``: the
writes would destroy it. A directory gets a file ``tiercast-calibrate.dat`` (removed afterwards
unless ``keep``).
"""

from __future__ import annotations

import os
import shutil
import stat as stat_mod
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipelines.capture import INSTALL_HINT, capture, missing_tools
from pipelines.choices import CALIBRATE_SUITE_JOB_S

SUITE_FILE = "tiercast-calibrate.dat"
#: (name, fio rw, block size, iodepth, rwmixread)
JOBS = (  # reads first, depth 1 next to each other: the points of the size curve, close in time
    ("randread-4k-qd1", "randread", "4k", 1, None),
    ("randread-32k-qd1", "randread", "32k", 1, None),  # the middle of the size curve (read_size_exponent)
    ("read-128k-qd1", "read", "128k", 1, None),
    ("randread-4k-qd2", "randread", "4k", 2, None),  # the step to two requests (the queue law's low end)
    ("randread-4k-qd4", "randread", "4k", 4, None),
    ("randread-4k-qd32", "randread", "4k", 32, None),
    ("randread-32k-qd8", "randread", "32k", 8, None),  # how much transfers overlap (transfer_overlap)
    ("read-128k-qd16", "read", "128k", 16, None),
    ("randwrite-4k-qd1", "randwrite", "4k", 1, None),
    ("write-128k-qd1", "write", "128k", 1, None),
    ("randwrite-4k-qd32", "randwrite", "4k", 32, None),
    ("randrw50-4k-qd16", "randrw", "4k", 16, 50),
)
DEFAULT_JOB_S = CALIBRATE_SUITE_JOB_S
DEFAULT_SIZE_BYTES = 256 << 20
MIN_JOB_S = 3  # the host-time split needs two whole iostat intervals inside a depth-1 job


@dataclass
class SuiteResult:
    target: str
    file: str
    size_bytes: int
    block_device: bool
    job_seconds: int
    seconds: float
    captures: list[str]
    jobs: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return asdict(self)


def job_text(name: str, rw: str, bs: str, iodepth: int, mix: int | None, filename: str, size_bytes: int,
             seconds: int, block_device: bool) -> str:
    """One fio job of the suite."""
    lines = [f"[{name}]", f"filename={filename}", "direct=1", "ioengine=libaio", f"rw={rw}", f"bs={bs}",
             f"iodepth={iodepth}", f"runtime={seconds}", "time_based=1", "randrepeat=0", "norandommap=1"]
    lines.append(f"size={size_bytes}")
    if mix is not None:
        lines.append(f"rwmixread={mix}")
    return "\n".join(lines) + "\n"


def filesystem_on(dev: str) -> str | None:
    """The file system type ``blkid`` finds on block device ``dev`` (None: none found)."""
    blkid = shutil.which("blkid") or "/sbin/blkid"
    try:
        out = subprocess.run([blkid, "-p", "-o", "value", "-s", "TYPE", dev], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (blkid did not run)"
    if out.returncode == 2:  # blkid: nothing found
        return None
    return out.stdout.strip() or ("unknown (blkid: " + out.stderr.strip()[:100] + ")" if out.returncode else None)


def is_block_device(p: Path) -> bool:
    return p.exists() and stat_mod.S_ISBLK(p.stat().st_mode)


def resolve_target(target: str | Path, size_bytes: int, i_know: bool) -> tuple[Path, bool, bool]:
    """(file or device to run on, is a block device, created by the suite)."""
    p = Path(target)
    if is_block_device(p):
        fs = filesystem_on(str(p))
        if fs and not i_know:
            raise ValueError(f"{p} is a block device holding a file system ({fs}): the suite's writes would destroy "
                             "it. Give a directory or a file on it, or --i-know to write to the device anyway")
        return p, True, False
    if p.is_dir():
        return p / SUITE_FILE, False, not (p / SUITE_FILE).exists()
    if p.exists() and not p.is_file():
        raise ValueError(f"{p} is neither a directory, a regular file nor a block device")
    if not p.parent.is_dir():
        raise FileNotFoundError(f"{p.parent} does not exist (the target's folder)")
    return p, False, not p.exists()


def run_suite(target: str | Path, data_dir: str | Path, *, job_seconds: int = DEFAULT_JOB_S,
              size_bytes: int = DEFAULT_SIZE_BYTES, i_know: bool = False, keep: bool = False,
              validate: str = "off", jobs: tuple = JOBS, rounds: int = 1, fio: str = "fio", iostat: str = "iostat",
              log=None) -> SuiteResult:
    """Run the suite's jobs on ``target`` through ``capture`` (``rounds`` times over, one job after
    the other: on a shared machine the load drifts, and each kind of run then samples it twice as
    often); returns their capture ids."""
    if not 1 <= rounds <= 10:
        raise ValueError(f"--rounds must be 1 to 10, got {rounds}")
    if job_seconds < MIN_JOB_S:
        raise ValueError(f"--job-seconds must be at least {MIN_JOB_S} (the host-time split needs two whole iostat "
                         f"intervals inside each job), got {job_seconds}")
    if size_bytes < (16 << 20):
        raise ValueError(f"--size must be at least 16 MiB, got {size_bytes} B")
    missing = missing_tools(fio, iostat)
    if missing:
        raise LookupError(f"tiercast calibrate-suite needs {' and '.join(missing)}: {INSTALL_HINT}")
    path, is_dev, created = resolve_target(target, size_bytes, i_know)
    if not is_dev:
        free = shutil.disk_usage(path.parent).free
        have = path.stat().st_size if path.exists() else 0
        if size_bytes - have > free:
            raise ValueError(f"{path.parent} has {free / (1 << 20):,.0f} MiB free; the suite's file needs "
                             f"{size_bytes / (1 << 20):,.0f} MiB (--size)")
    say = log or (lambda _m: None)
    n = len(jobs) * rounds
    say(f"calibrate-suite: {n} fio jobs of {job_seconds} s on {path} ({size_bytes / (1 << 20):,.0f} MiB"
        + (", the block device's first bytes" if is_dev else ", removed afterwards" if created and not keep else "")
        + f"); about {n * (job_seconds + 3)} s")
    t0 = time.monotonic()
    res = SuiteResult(str(target), str(path), size_bytes, is_dev, job_seconds, 0.0, [])
    with tempfile.TemporaryDirectory(prefix="tiercast-suite-") as tmp:
        try:
            if not is_dev:  # lay the file out once, outside every capture
                lay = subprocess.run([fio, "--name=layout", f"--filename={path}", f"--size={size_bytes}",
                                      "--rw=write", "--bs=1m", "--direct=1", "--ioengine=psync", "--end_fsync=1"],
                                     capture_output=True, text=True)
                if lay.returncode != 0:
                    raise RuntimeError(f"fio could not lay out {path}: {(lay.stderr or lay.stdout).strip()[:300]}")
            for rnd, (name, rw, bs, depth, mix) in ((r, j) for r in range(rounds) for j in jobs):
                jf = Path(tmp) / f"{name}.fio"
                jf.write_text(job_text(name, rw, bs, depth, mix, str(path), size_bytes, job_seconds, is_dev))
                r = capture(jf, data_dir, validate=validate, fio=fio, iostat=iostat)
                if r.fio_returncode:
                    raise RuntimeError(f"fio job {name} failed (capture {r.capture_id}): {'; '.join(r.warnings)[:300]}")
                res.captures.append(r.capture_id)
                res.jobs.append({"job": name, "round": rnd + 1, "rw": rw, "bs": bs, "iodepth": depth,
                                 "rwmixread": mix, "capture_id": r.capture_id})
                res.warnings += [f"{name}: {w}" for w in r.warnings]
                say(f"  {name}: capture {r.capture_id}")
        finally:
            if created and not keep and path.exists():
                os.unlink(path)
    res.seconds = time.monotonic() - t0
    return res
