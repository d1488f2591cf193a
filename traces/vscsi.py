"""CloudPhysics VMware vSCSI traces, binary version 1 (as shipped by libCacheSim).

32-byte little-endian records: u32 sn, u32 len (bytes), u32 nSG, u16 cmd (SCSI opcode),
u16 ver (0x0100 for v1), u64 lbn (512-byte blocks), u64 ts (microseconds, from an arbitrary
origin). READ(10/16/12) = 0x28/0x88/0xa8 are reads, WRITE(10/16/12) = 0x2a/0x8a/0xaa
writes; any other command (TEST UNIT READY 0x00, INQUIRY 0x12, ...) moves no data and is
skipped and counted per opcode (``scsi_0x12``). Records are decoded with a numpy structured
dtype over streamed byte blocks, never one by one in Python. ``src_line`` is the 1-based
record number; a rejected record's raw text is its 32 bytes in hex. The format has no volume
field: every request goes to one volume, ``vscsi`` unless ``-o volume=NAME``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import polars as pl

from traces.base import ReadBatch, TraceReader, scaled_int, with_reason
from traces.errors import TraceFormatError, excerpt
from traces.source import Source

RECORD = np.dtype(
    [
        ("sn", "<u4"),
        ("len", "<u4"),
        ("nsg", "<u4"),
        ("cmd", "<u2"),
        ("ver", "<u2"),
        ("lbn", "<u8"),
        ("ts", "<u8"),
    ]
)
VERSION_1 = 0x0100
READ_CMDS = (0x28, 0xA8, 0x88)
WRITE_CMDS = (0x2A, 0xAA, 0x8A)
SECTOR_BYTES = 512
US_NS = 1_000
BLOCK_RECORDS = 1 << 20  # 32 MiB of records per batch
SNIFF_RECORDS = 64
DEFAULT_VOLUME = "vscsi"


class VscsiReader(TraceReader):
    name = "vscsi"
    description = "CloudPhysics vSCSI v1 binary (32-byte records, 512 B blocks, µs)"
    binary = True
    option_help = {"volume": f"volume name for every request (default {DEFAULT_VOLUME!r})"}

    def __init__(self, volume: str = DEFAULT_VOLUME, **kw):
        super().__init__(**kw, **({"volume": volume} if volume != DEFAULT_VOLUME else {}))
        if not str(volume).strip():
            raise ValueError("vscsi: volume must not be empty")
        self.volume = str(volume)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        n = min(len(head) // RECORD.itemsize, SNIFF_RECORDS)
        if n == 0:
            return False
        rec = np.frombuffer(head[: n * RECORD.itemsize], dtype=RECORD)
        return bool(np.all(rec["ver"] == VERSION_1) and np.all(rec["cmd"] <= 0xFF))

    def batches(self, source: Source) -> Iterator[ReadBatch]:
        pending = b""
        first_record = 1
        for data in source.iter_bytes(BLOCK_RECORDS * RECORD.itemsize):
            buf = pending + data if pending else data
            whole = len(buf) - len(buf) % RECORD.itemsize
            pending = buf[whole:]
            if whole:
                if first_record == 1:
                    self._check_first_records(source, buf)
                yield self._decode(buf[:whole], first_record)
                first_record += whole // RECORD.itemsize
        if pending and first_record == 1:
            raise TraceFormatError(
                source.path, None,
                f"not a vSCSI trace: the file has {len(pending)} bytes, less than one {RECORD.itemsize}-byte record",
            )
        if pending:
            raise TraceFormatError(
                source.path,
                first_record,
                f"truncated record {first_record}: the file ends {len(pending)} bytes into a "
                f"{RECORD.itemsize}-byte vSCSI record",
            )

    @staticmethod
    def _check_first_records(source: Source, buf: bytes) -> None:
        """A file whose head is not mostly v1 records is another kind of file (a CSV, a JPEG:
        JFIF 1.01 happens to put 0x0100 where record 1 keeps its version), not a vSCSI trace
        with bad records: say so instead of rejecting every 32 bytes or reporting a cut record."""
        n = min(len(buf) // RECORD.itemsize, SNIFF_RECORDS)
        ver = np.frombuffer(buf[: n * RECORD.itemsize], dtype=RECORD)["ver"]
        good = int((ver == VERSION_1).sum())
        if ver[0] != VERSION_1:
            problem = f"record 1 has version 0x{int(ver[0]):04x}, expected 0x{VERSION_1:04x}"
        elif good * 2 <= n:
            problem = f"only {good} of the first {n} records have version 0x{VERSION_1:04x}"
        else:
            return
        raise TraceFormatError(source.path, 1, f"not a vSCSI v1 trace: {problem} (file starts with {excerpt(buf)})")

    def _decode(self, buf: bytes, first_record: int) -> ReadBatch:
        rec = np.frombuffer(buf, dtype=RECORD)
        cmd = rec["cmd"]
        is_read = np.isin(cmd, READ_CMDS)
        is_data = is_read | np.isin(cmd, WRITE_CMDS)
        good_version = rec["ver"] == VERSION_1
        skipped: Counter = Counter()
        other = good_version & ~is_data
        if other.any():
            ops, counts = np.unique(cmd[other], return_counts=True)
            skipped.update({f"scsi_0x{int(o):02x}": int(c) for o, c in zip(ops, counts, strict=True)})
        keep = np.flatnonzero(~other)
        sub = rec[keep]
        df = pl.DataFrame(
            {
                "_idx": keep.astype(np.int64),
                # u64 fields go through int64 only after the range check below
                "lbn": sub["lbn"],
                "ts": sub["ts"],
                "len": sub["len"].astype(np.int64),
                "ver": sub["ver"],
                "read": is_read[keep],
            }
        )
        # hex names of the (few) distinct version values, for reasons
        versions = {int(v): f"0x{int(v):04x}" for v in np.unique(sub["ver"])}
        ts, ts_reason = scaled_int("ts_i", US_NS, "timestamp (µs)")
        offset, off_reason = scaled_int("lbn_i", SECTOR_BYTES, "lbn (blocks)")
        i64_max = 2**63 - 1
        df = df.with_columns(
            ts_i=pl.when(pl.col("ts") <= i64_max).then(pl.col("ts").cast(pl.Int64, strict=False)),
            lbn_i=pl.when(pl.col("lbn") <= i64_max).then(pl.col("lbn").cast(pl.Int64, strict=False)),
            src_line=pl.col("_idx") + first_record,
            _reason=pl.when(pl.col("ver") != VERSION_1).then(
                pl.format(
                    "record version {} is not vSCSI v1 (0x0100)",
                    pl.col("ver").replace_strict(versions, return_dtype=pl.String),
                )
            ),
        )
        df = df.with_columns(
            ts_raw_ns=ts,
            volume=pl.lit(self.volume),
            op=pl.when(pl.col("read")).then(pl.lit("read")).otherwise(pl.lit("write")),
            offset=offset,
            size=pl.col("len"),
            latency_ns=pl.lit(None, pl.Int64),
        )
        df = with_reason(
            df,
            (pl.col("ts_i").is_null(), pl.format("timestamp {} µs is out of range", pl.col("ts"))),
            (pl.col("lbn_i").is_null(), pl.format("lbn {} is out of range", pl.col("lbn"))),
            ts_reason,
            off_reason,
        )

        def raw_of(idx, rec=rec) -> list[str]:
            return [rec[int(i) : int(i) + 1].tobytes().hex() for i in idx]

        return self.finish(df, raw_of, skipped)
