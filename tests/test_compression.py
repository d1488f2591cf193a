"""Compressed input: gzip, zstd, xz and bzip2 read transparently, and a file cut anywhere fails
with the file, the byte offset and "truncated", a non-zero exit and nothing published."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from pipelines.catalog import list_traces, traces_root
from pipelines.ingest import ingest_file
from traces.errors import TraceFormatError
from traces.source import COMPRESSED_READ_BYTES, Source

ROOT = Path(__file__).resolve().parent.parent
T0 = 128166372003061629  # FILETIME, as in MSR Cambridge traces
ROWS = 100_000
# 100,000 MSR rows; offsets vary so the text does not compress to nothing (a cut must land
# inside data, not in a run of repeats)
RAW = "".join(f"{T0 + 10 * i},usr,{i % 3},{'Read' if i % 4 else 'Write'},{(i * 7919 % 100_003) * 4096},4096,{i % 977}\n"
              for i in range(ROWS)).encode()

COMPRESS = {
    "gzip": gzip.compress,
    "zstd": lambda b: zstandard.ZstdCompressor(level=3).compress(b),
    "xz": lzma.compress,
    "bzip2": bz2.compress,
}
UNIT = {"gzip": "member", "zstd": "frame", "xz": "stream", "bzip2": "stream"}


@pytest.fixture(scope="module")
def blobs() -> dict[str, bytes]:
    return {name: f(RAW) for name, f in COMPRESS.items()}


@pytest.mark.parametrize("compression", COMPRESS)
def test_whole_compressed_files_read_exactly(compression, blobs, tmp_path):
    p = tmp_path / f"usr.csv.{compression}"
    p.write_bytes(blobs[compression])
    src = Source(p)
    assert src.compression == compression
    assert b"".join(src.iter_bytes()) == RAW
    assert src.head(100) == RAW[:100]


@pytest.mark.parametrize("compression", COMPRESS)
@pytest.mark.parametrize("where", ["first-block", "60pct", "one-byte-short"])
def test_a_cut_file_fails_with_offset_and_publishes_nothing(compression, where, blobs, tmp_path):
    blob = blobs[compression]
    cut = {"first-block": 40, "60pct": len(blob) * 6 // 10, "one-byte-short": len(blob) - 1}[where]
    p = tmp_path / f"usr.csv.{compression}"
    p.write_bytes(blob[:cut])
    data = tmp_path / "data"
    with pytest.raises(TraceFormatError) as e:  # format detection reads the head: same error
        ingest_file(p, data, fmt=None, validate="off")
    assert str(e.value) == (f"{p}: truncated {compression} data: the file ends at byte {cut:,} inside the "
                            f"{UNIT[compression]} starting at byte 0")
    assert list_traces(data) == []
    assert not list(traces_root(data).glob(".tmp-*"))


def test_the_issue_case_a_zstd_cut_at_60pct_is_refused_by_the_cli(blobs, tmp_path):
    """Before: exit 0, rows_read 2,517 and a published trace. Now: exit 2, one JSON error."""
    p = tmp_path / "msr.csv.zst"
    cut = len(blobs["zstd"]) * 6 // 10
    p.write_bytes(blobs["zstd"][:cut])
    data = tmp_path / "data"
    r = subprocess.run([sys.executable, "-c", "from pipelines.cli import main; main()", "ingest", str(p),
                        "--data-dir", str(data), "--validate", "off", "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert f"truncated zstd data: the file ends at byte {cut:,}" in r.stdout + r.stderr
    assert list_traces(data) == []


@pytest.mark.parametrize("compression", ["gzip", "zstd", "xz", "bzip2"])
def test_concatenated_members_frames_and_streams_read_one_after_another(compression, tmp_path):
    half = len(RAW) // 2
    first = COMPRESS[compression](RAW[:half])
    p = tmp_path / f"two.{compression}"
    p.write_bytes(first + COMPRESS[compression](RAW[half:]))
    assert b"".join(Source(p).iter_bytes()) == RAW
    # cut inside the second unit: the offset names where that unit starts
    p.write_bytes(first + COMPRESS[compression](RAW[half:])[:50])
    with pytest.raises(TraceFormatError, match=rf"ends at byte {len(first) + 50:,} inside the "
                                                rf"{UNIT[compression]} starting at byte {len(first):,}"):
        b"".join(Source(p).iter_bytes())


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_trailing_garbage_after_the_last_unit_is_corrupt(compression, tmp_path):
    p = tmp_path / f"tail.{compression}"
    blob = COMPRESS[compression](RAW[:5000])
    p.write_bytes(blob + b"not compressed at all")
    with pytest.raises(TraceFormatError, match=rf"corrupt {compression} data in the {UNIT[compression]} "
                                                rf"starting at byte {len(blob):,}"):
        b"".join(Source(p).iter_bytes())


def test_cut_past_the_first_read_chunk_counts_bytes_across_chunks(tmp_path):
    """Offsets stay exact when the compressed file is longer than one raw read."""
    big = RAW * 12  # ~100 MB raw, several MB compressed: more than one raw read
    blob = zstandard.ZstdCompressor(level=1).compress(big)
    assert len(blob) > 2 * COMPRESSED_READ_BYTES
    cut = len(blob) - 1000
    p = tmp_path / "big.zst"
    p.write_bytes(blob[:cut])
    with pytest.raises(TraceFormatError, match=rf"ends at byte {cut:,} inside the frame starting at byte 0"):
        for _ in Source(p).iter_bytes():
            pass


def test_a_cut_measured_log_is_refused_too(tmp_path):
    """iostat/fio logs go through the same reader: a cut gzip log fails and publishes nothing."""
    lines = ["Linux 6.1.0 (host) \t11/22/2026 \t_x86_64_\t(2 CPU)", ""]
    for s in range(200):
        lines += [f"11/22/2026 10:00:{s % 60:02d} AM",
                  "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  "
                  "%wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  "
                  "aqu-sz  %util",
                  f"vda            {s}.00    {4 * s}.00     0.00   0.00    0.10     4.00    0.00      0.00     0.00"
                  "   0.00    0.00     0.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00"
                  "    0.00   1.00", ""]
    blob = gzip.compress("\n".join(lines).encode())
    p = tmp_path / "iostat.txt.gz"
    p.write_bytes(blob[: len(blob) // 2])
    data = tmp_path / "data"
    r = subprocess.run([sys.executable, "-c", "from pipelines.cli import main; main()", "ingest", str(p),
                        "--data-dir", str(data), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0, r.stdout
    assert f"truncated gzip data: the file ends at byte {len(blob) // 2:,}" in r.stdout + r.stderr
    assert not (data / "measured").exists() or not [d for d in (data / "measured").iterdir()
                                                      if not d.name.startswith((".", "_"))]
