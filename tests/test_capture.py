"""Live capture with the real tools (Debian's fio and sysstat; .ci/run installs them): a short
direct-I/O random-read job on a temporary file, then fio's own numbers against iostat's. Option
values are refused before any tool runs (those tests need neither)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import require
from typer.testing import CliRunner

from pipelines.capture import block_devices_of, capture, find_capture, list_captures, missing_tools
from pipelines.catalog import find_trace
from pipelines.cli import app
from pipelines.ingest_logs import find_measured

MISSING = missing_tools()


@pytest.fixture
def _tools():
    require(not MISSING, f"needs {' and '.join(MISSING)}: sudo apt-get install fio sysstat (.ci/run does)")

JOB = """[global]
ioengine=psync
direct=1
bs=4k
size=16m
runtime={runtime}
time_based=1

[rr]
rw=randread
filename={file}
"""


@pytest.mark.serial  # fio's and iostat's IOPS must agree: no other test may share the device
@pytest.mark.usefixtures("_tools")
def test_capture_fio_and_iostat_agree(blockdir, data_dir):
    tmp_path = blockdir  # tmp_path, or another directory on a block device (conftest)
    devices = block_devices_of(tmp_path)
    job = tmp_path / "rr.fio"
    job.write_text(JOB.format(runtime=3, file=tmp_path / "data.bin"))
    t0 = time.time()
    r = capture(job, data_dir, iostat_interval_s=1, validate="off")
    assert time.time() - t0 < 20 and r.fio_returncode == 0
    assert r.devices == devices and set(r.datasets) == {"iostat", "fio", "fio_lat.1.log"}
    man = find_capture(data_dir, r.capture_id[:12])
    assert man["commands"]["iostat_env"] == {"S_TIME_FORMAT": "ISO", "LC_ALL": "C"}
    assert [c["capture_id"] for c in list_captures(data_dir)] == [r.capture_id]

    fio = find_measured(data_dir, r.datasets["fio"]).scan("fio_job").collect()
    fio_reads = fio.filter(pl.col("dir") == "read")["total_ios"].item()
    assert fio_reads > 1000

    # every I/O is in the per-I/O log once: the trace has exactly fio's count, with offsets
    trace = find_trace(data_dir, r.traces["fio_lat.1.log"]).scan().collect()
    assert trace.height == fio_reads
    assert trace["offset"].max() < 16 << 20 and trace["size"].unique().to_list() == [4096]
    assert trace["latency_ns"].min() > 0

    # iostat, ISO times with zone, every interval fio ran in (started before, stopped after)
    dev = find_measured(data_dir, r.datasets["iostat"]).scan("iostat_device").collect()
    assert dev["ts"].null_count() == 0 and dev["since_boot"].sum() == 0
    mine = dev.filter(pl.col("device") == devices[-1])
    start = fio["timestamp"][0]  # fio's timestamp is when it ended
    assert mine["ts"].min() <= start and mine["ts"].max() >= start
    # iostat counts every read the disk completed in the capture (1 s intervals, r/s with two
    # decimals: sum(r/s x 1 s) is exact to ~0.01 per interval). fio's direct, random 4 KiB
    # reads are not merged (rrqm/s stays ~0), so each is one device read: the disk saw at least
    # fio's reads (1 % for the intervals' rounding) and, on a machine that may run other work,
    # at most fio's plus a little background (5 %, or 100 reads).
    disk_reads = (mine["r_per_s"] * 1.0).sum()
    assert disk_reads >= 0.99 * fio_reads, (disk_reads, fio_reads)
    assert disk_reads <= fio_reads + max(0.05 * fio_reads, 100), (disk_reads, fio_reads)
    assert mine["rrqm_per_s"].sum() <= 0.01 * fio_reads
    # the fio JSON's mean completion latency and the trace's agree (same I/Os, ns both)
    clat = fio.filter(pl.col("dir") == "read")["clat_mean_ns"].item()
    assert abs(trace["latency_ns"].mean() / fio.filter(pl.col("dir") == "read")["lat_mean_ns"].item() - 1) < 0.02
    assert clat > 0
    raw = Path(r.path) / "raw"
    assert json.loads((raw / "fio.json").read_text())["jobs"][0]["read"]["total_ios"] == fio_reads


@pytest.mark.usefixtures("_tools")
def test_capture_errors_are_clear(tmp_path, data_dir):
    with pytest.raises(FileNotFoundError, match="job file"):
        capture(tmp_path / "none.fio", data_dir)
    job = tmp_path / "avg.fio"
    job.write_text(JOB.format(runtime=1, file=tmp_path / "d.bin") + "log_avg_msec=500\n")
    with pytest.raises(ValueError, match="log_avg_msec averages the latency log"):
        capture(job, data_dir)
    with pytest.raises(LookupError, match="apt-get install fio sysstat"):
        capture(job, data_dir, fio="no-such-fio-binary")


@pytest.mark.parametrize("args, message", [
    (["--iostat-interval", "0"], "Invalid value for '--iostat-interval': must be an integer from 1 to 3600, got 0"),
    (["--iostat-interval", "-1"], "Invalid value for '--iostat-interval': must be an integer from 1 to 3600, got -1"),
    (["--iostat-interval", "3601"],
     "Invalid value for '--iostat-interval': must be an integer from 1 to 3600, got 3601"),
    (["--iostat-interval", "1.5"], "Invalid value for '--iostat-interval': Input should be a valid integer"),
    (["--validate", "most"], "Invalid value for '--validate': must be one of auto, full, sample, off; got 'most'"),
])
def test_capture_refuses_bad_option_values_before_running_anything(args, message, tmp_path):
    """Refused when the options are read: before the tools are looked for (so also where fio is
    missing), the job file read or the data directory created; exit 2, one line naming the option."""
    job = tmp_path / "rr.fio"
    job.write_text(JOB.format(runtime=1, file=tmp_path / "d.bin"))
    r = CliRunner().invoke(app, ["capture", "--fio", str(job), "--data-dir", str(tmp_path / "data"), *args],
                           handle_errors=True)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["rr.fio"]


def test_capture_refuses_an_iostat_interval_out_of_range_before_looking_for_the_tools(tmp_path):
    with pytest.raises(ValueError, match="--iostat-interval must be a whole number of seconds from 1"):
        capture(tmp_path / "none.fio", tmp_path, iostat_interval_s=0, fio="no-such-fio-binary")
