"""Format auto-detection as a matrix: every real sample and fixture is claimed by its own
reader's sniffer and by no other one (so the order in READERS is a tie-break that never has
to decide), also compressed, with CRLF line ends, and with a header line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import zstandard
from conftest import shared_path

from traces.errors import TraceFormatError
from traces.registry import READERS, detect, reader_class
from traces.source import Source
from traces.vscsi import RECORD

FIX = Path(__file__).parent / "fixtures"

SAMPLES = {
    "blkparse-sample": ("blkparse", ("traces", "blkparse", "mbpar_blktrace_first20000.txt")),
    "disksim-sample": ("disksim", ("traces", "disksim", "tpcc-small.trace")),
    "vscsi-sample": ("vscsi", ("traces", "vscsi", "cloudPhysicsIO.vscsi")),
}
FIXTURES = {
    "msr": ("msr", FIX / "msr_usr.csv"),
    "alibaba": ("alibaba", FIX / "alibaba" / "io_traces.csv"),
    "tencent": ("tencent", FIX / "tencent_cbs.csv"),
    "fiu": ("fiu", FIX / "fiu_homes.txt"),
    "spc": ("spc", FIX / "spc_financial.spc"),
    "blkparse": ("blkparse", FIX / "blkparse_flags.txt"),
    "disksim-ms": ("disksim", FIX / "disksim_ms.trace"),
}
HEADERS = {
    "msr": "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
    "alibaba": "device_id,opcode,offset,length,timestamp",
    "tencent": "Timestamp,Offset,Size,IOType,VolumeID",
    "fiu": "ts pid process lba size rw major minor md5",
    "spc": "ASU,LBA,Size,Opcode,Timestamp",
}


def sniffers_claiming(head: bytes) -> list[str]:
    return [
        n for n in READERS if getattr(reader_class(n), "auto_detect", True) and reader_class(n).sniff(head)
    ]


def _file(tmp_path: Path, case: str) -> tuple[str, Path]:
    if case in SAMPLES:
        fmt, parts = SAMPLES[case]
        return fmt, shared_path(*parts)
    if case == "canonical-parquet":
        p = tmp_path / "synth.parquet"
        pl.DataFrame(
            {
                "ts_ns": [0, 5],
                "volume": ["a", "a"],
                "op": ["read", "write"],
                "offset": [0, 4096],
                "size": [4096, 4096],
            }
        ).write_parquet(p)
        return "tiercast-parquet", p
    if case == "vscsi-generated":
        p = tmp_path / "gen.vscsi"
        p.write_bytes(
            np.array([(1, 512, 1, 0x28, 0x100, 8, 10), (2, 0, 0, 0x12, 0x100, 0, 20)], RECORD).tobytes()
        )
        return "vscsi", p
    return FIXTURES[case]


CASES = [*SAMPLES, *FIXTURES, "canonical-parquet", "vscsi-generated"]


@pytest.mark.parametrize("case", CASES)
def test_each_file_is_claimed_by_its_own_reader_only(case, tmp_path):
    fmt, path = _file(tmp_path, case)
    assert sniffers_claiming(Source(path).head()) == [fmt]
    assert detect(Source(path)) == fmt


WRAPPED = [
    (case, wrap)
    for case in CASES
    if case != "canonical-parquet"
    for wrap in ("gzip", "zstd", "crlf")
    if not (wrap == "crlf" and "vscsi" in case)  # binary: no line ends
]


@pytest.mark.parametrize(("case", "wrap"), WRAPPED)
def test_detection_through_compression_and_crlf(case, wrap, tmp_path):
    fmt, path = _file(tmp_path, case)
    data = path.read_bytes()
    if wrap == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif wrap == "gzip":
        data = gzip.compress(data)
    else:
        data = zstandard.ZstdCompressor().compress(data)
    p = tmp_path / f"wrapped-{case}"
    p.write_bytes(data)
    assert detect(Source(p)) == fmt


@pytest.mark.parametrize("fmt", sorted(HEADERS))
def test_detection_with_a_header_line(fmt, tmp_path):
    p = tmp_path / f"{fmt}-with-header"
    p.write_text(HEADERS[fmt] + "\n" + FIXTURES[fmt][1].read_text())
    assert detect(Source(p)) == fmt


@pytest.mark.parametrize(
    "content",
    [
        b"hello world\nthis is not a trace\n",
        b"a,b,c\n1,2,3\n4,5,6\n",
        b"device_id,capacity\n419,10737418240\n",  # Alibaba's companion file is not a trace
        b"0 1 2 3 4 5 6\n7 8 9 10 11 12 13\n",
        bytes(range(256)) * 4,
    ],
)
def test_unknown_content_is_a_clear_error(content, tmp_path):
    p = tmp_path / "mystery.bin"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError, match=r"mystery.bin:1: unknown format .* name it with --format"):
        detect(Source(p))


def test_generic_is_never_auto_detected():
    assert reader_class("generic").auto_detect is False
    assert not reader_class("generic").sniff(FIXTURES["alibaba"][1].read_bytes())
