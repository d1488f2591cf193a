"""Live capture: run a fio job while iostat records, then ingest both, linked by a capture id.

``capture()`` runs Debian's ``fio`` on the user's job file with JSON output and per-I/O latency
logs with offsets (a ``[global]`` section prepended to a copy of the job file:
``write_lat_log``, ``log_offset=1``), while ``iostat -o JSON -t -x -y N`` records with
``S_TIME_FORMAT=ISO`` and ``LC_ALL=C`` (zone-qualified ISO times, C numbers: nothing left to
guess). iostat starts first and is stopped (SIGINT, so it closes its JSON) one interval after
fio ends, so every interval fio was active in is recorded. Then:

- the iostat JSON becomes a measured dataset (``iostat_device``, ``iostat_cpu``),
- fio's JSON a measured dataset (``fio_job``, ...),
- each per-I/O ``lat`` log a measured dataset (``fio_log``) and a canonical trace
  (``fio-trace``: replayable, with measured latencies),

and ``captures/<capture_id>/capture.json`` links them, with the raw files kept beside it, the
commands, tool versions, start/end times and the block devices under the job's files.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import stat as stat_mod
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipelines.catalog import find_by_prefix, write_json_atomic
from pipelines.choices import MAX_IOSTAT_INTERVAL_S
from pipelines.ingest import ingest_file
from pipelines.ingest_logs import ingest_log_file

INSTALL_HINT = "install them with: sudo apt-get install fio sysstat"


@dataclass
class CaptureResult:
    capture_id: str
    path: str
    fio_returncode: int
    devices: list[str]
    datasets: dict[str, str]
    traces: dict[str, str]
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return asdict(self)


def captures_root(data_dir: str | Path) -> Path:
    return Path(data_dir) / "captures"


def missing_tools(fio: str = "fio", iostat: str = "iostat") -> list[str]:
    return [t for t in (fio, iostat) if shutil.which(t) is None]


def block_devices_of(path: str | Path) -> list[str]:
    """Kernel names of the block device holding ``path`` (and its parent disk for a
    partition), as iostat prints them; [] when the file system has no block device (tmpfs,
    overlay)."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        st = p.parent.stat()
    dev = st.st_rdev if stat_mod.S_ISBLK(st.st_mode) else st.st_dev
    sys_dir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sys_dir.exists():
        return []
    real = sys_dir.resolve()
    names = [real.name]
    if (real / "partition").exists():
        names.append(real.parent.name)
    return names


def _job_paths(job_text: str, job_dir: Path) -> list[Path]:
    """filename= / directory= values of a fio job file (relative to the job file's folder)."""
    out = []
    for _key, value in re.findall(r"^\s*(filename|directory)\s*=\s*(.+?)\s*$", job_text, re.M):
        for part in value.split(":"):
            if part:
                p = Path(part)
                out.append(p if p.is_absolute() else job_dir / p)
    return out


def _version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


#: iostat prints its reports this long after each whole interval from its start, at most (process
#: start-up; its alarm does not drift)
IOSTAT_REPORT_MARGIN_S = 0.25


def until_report_s(elapsed_s: float, interval_s: int) -> float:
    """Seconds to wait, ``elapsed_s`` after iostat started, until it has printed the report of the
    interval running now (the one in which fio ended): the next whole interval plus a margin, not a
    whole interval more (a capture was 1.5 s longer than its job; ~0.75 s on average now)."""
    return math.ceil(elapsed_s / interval_s) * interval_s + IOSTAT_REPORT_MARGIN_S - elapsed_s


def capture(
    jobfile: str | Path,
    data_dir: str | Path,
    iostat_interval_s: int = 1,
    validate: str = "auto",
    fio: str = "fio",
    iostat: str = "iostat",
) -> CaptureResult:
    """Run ``jobfile`` under fio with iostat recording; ingest and link everything."""
    if not 1 <= iostat_interval_s <= MAX_IOSTAT_INTERVAL_S:
        raise ValueError(f"--iostat-interval must be a whole number of seconds from 1 (iostat's resolution) to "
                         f"{MAX_IOSTAT_INTERVAL_S}, got {iostat_interval_s}")
    missing = missing_tools(fio, iostat)
    if missing:
        raise LookupError(f"tiercast capture needs {' and '.join(missing)}: {INSTALL_HINT}")
    jobfile = Path(jobfile).resolve()
    if not jobfile.is_file():
        raise FileNotFoundError(f"fio job file {jobfile} not found")
    job_text = jobfile.read_text()
    if re.search(r"^\s*log_avg_msec\s*=\s*[1-9]", job_text, re.M):
        raise ValueError(f"{jobfile}: log_avg_msec averages the latency log; a capture needs per-I/O logs "
                         "(remove log_avg_msec)")
    capture_id = f"{datetime.now(tz=UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    root = captures_root(data_dir) / capture_id
    raw = root / "raw"
    raw.mkdir(parents=True)
    job_copy = raw / jobfile.name
    job_copy.write_text(f"[global]\nwrite_lat_log={raw / 'fio'}\nlog_offset=1\n\n" + job_text)
    fio_json = raw / "fio.json"
    iostat_json = raw / "iostat.json"
    fio_cmd = [fio, "--output-format=json", f"--output={fio_json}", str(job_copy)]
    iostat_cmd = [iostat, "-o", "JSON", "-t", "-x", "-y", str(iostat_interval_s)]
    env = {**os.environ, "S_TIME_FORMAT": "ISO", "LC_ALL": "C"}
    warnings: list[str] = []

    started = datetime.now(tz=UTC)
    with open(iostat_json, "wb") as out, open(raw / "iostat.stderr", "wb") as err:
        t0 = time.monotonic()
        recorder = subprocess.Popen(iostat_cmd, stdout=out, stderr=err, env=env)
        try:
            time.sleep(0.3)  # iostat reads its first counters before fio starts
            run = subprocess.run(fio_cmd, cwd=jobfile.parent, capture_output=True, text=True)
            (raw / "fio.stderr").write_text(run.stderr or "")
            time.sleep(until_report_s(time.monotonic() - t0, iostat_interval_s))
        finally:
            recorder.send_signal(signal.SIGINT)  # iostat closes its JSON document on SIGINT
            try:
                recorder.wait(timeout=10)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait()
                warnings.append("iostat did not stop on SIGINT and was killed")
    ended = datetime.now(tz=UTC)
    if run.returncode != 0:
        warnings.append(f"fio exited with {run.returncode}: {(run.stderr or '').strip()[:300]}")
    if not fio_json.is_file() or fio_json.stat().st_size == 0:
        raise RuntimeError(f"fio wrote no JSON (exit {run.returncode}): {(run.stderr or '').strip()[:500]}")

    datasets: dict[str, str] = {}
    traces: dict[str, str] = {}
    r = ingest_log_file(iostat_json, data_dir, fmt="iostat", options={"first_report": "interval"}, validate=validate)
    datasets["iostat"] = r.dataset_id
    warnings += r.warnings
    r = ingest_log_file(fio_json, data_dir, fmt="fio-json", validate=validate)
    datasets["fio"] = r.dataset_id
    warnings += r.warnings
    fio_version = json.loads((Path(r.path) / "manifest.json").read_text()).get("tool_version")
    for log in sorted(raw.glob("fio_lat.*.log")):
        if log.stat().st_size == 0:
            continue
        opts = {"fio_version": fio_version or "3"}
        r = ingest_log_file(log, data_dir, fmt="fio-log", options=opts, validate=validate)
        datasets[log.name] = r.dataset_id
        t = ingest_file(log, data_dir, fmt="fio-trace", options=opts, validate=validate)
        traces[log.name] = t.trace_id

    devices = sorted({d for p in _job_paths(job_text, jobfile.parent) for d in block_devices_of(p)})
    if not devices:
        warnings.append("no block device found under the job's files (tmpfs/overlay, or no filename=/directory=): "
                        "name the device when comparing")
    manifest = {
        "capture_id": capture_id,
        "jobfile": str(jobfile),
        "commands": {"fio": fio_cmd, "iostat": iostat_cmd, "iostat_env": {"S_TIME_FORMAT": "ISO", "LC_ALL": "C"}},
        "versions": {"fio": fio_version or _version([fio, "--version"]), "iostat": _version([iostat, "-V"])},
        "iostat_interval_s": iostat_interval_s,
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat(),
        "fio_returncode": run.returncode,
        "devices": devices,
        "datasets": datasets,
        "traces": traces,
        "warnings": warnings,
    }
    write_json_atomic(root / "capture.json", manifest)
    return CaptureResult(capture_id, str(root), run.returncode, devices, datasets, traces, warnings)


def list_captures(data_dir: str | Path) -> list[dict]:
    root = captures_root(data_dir)
    out = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            m = d / "capture.json"
            if m.is_file():
                out.append(json.loads(m.read_text()))
    return out


def find_capture(data_dir: str | Path, ref: str) -> dict:
    caps = {c["capture_id"]: c for c in list_captures(data_dir)}
    return find_by_prefix(caps, ref, "capture", captures_root(data_dir), "see `tiercast captures`")
