"""Alibaba cloud block traces (2020): ``device_id,opcode,offset,length,timestamp``.

opcode ``R``/``W``; offset and length in bytes; timestamp in microseconds since the Unix epoch
(an absolute clock). One volume per ``device_id``. Volume capacities come from the dataset's
companion ``device_size.csv`` (``device_id,capacity``, capacity in bytes): given with
``-o device_sizes=PATH``, or picked up automatically when a file of that name lies next to the
trace. With capacities known, a request ending beyond its volume is rejected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from traces.base import ReadBatch, op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field
from traces.errors import TraceFormatError
from traces.source import Source

US_NS = 1_000
DEVICE_SIZES_NAME = "device_size.csv"


def read_device_sizes(path: Path) -> dict[str, int]:
    """``device_id,capacity`` lines (an optional header) -> {device_id: capacity bytes}.

    The file is small (one line per volume); any bad line is an error naming file and line,
    since a wrong capacity would silently reject good requests.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(path, None, f"cannot read device sizes ({e})") from e
    sizes: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",")]
        if n == 1 and not parts[0].lstrip("+-").isdigit() and not parts[-1].isdigit():
            continue  # header, e.g. "device_id,capacity"
        if len(parts) != 2:
            raise TraceFormatError(path, n, f"expected 2 fields (device_id,capacity), found {len(parts)}")
        dev, cap = parts
        if not cap.isdigit() or int(cap) <= 0:
            raise TraceFormatError(path, n, f"capacity must be a positive whole number of bytes, got {cap!r}")
        if dev in sizes:
            raise TraceFormatError(path, n, f"device {dev!r} listed twice")
        sizes[dev] = int(cap)
    if not sizes:
        raise TraceFormatError(path, None, "no device sizes in file")
    return sizes


class AlibabaReader(DelimitedReader):
    name = "alibaba"
    description = "Alibaba cloud block 2020 CSV (R/W, bytes, µs since epoch)"
    absolute_clock = True
    option_help = {
        "device_sizes": f"device_id,capacity CSV (default: {DEVICE_SIZES_NAME} next to the trace, if any)",
    }
    fields = (
        Field("device_id", pl.String),
        Field("opcode", pl.String),
        Field("offset"),
        Field("length"),
        Field("timestamp"),
    )
    sniff_pattern = r"^\s*\d+,\s*[RWrw]\s*,\s*\d+,\s*\d+,\s*\d{1,17}\s*$"

    def __init__(self, device_sizes: str | None = None, **kw):
        super().__init__(**kw, **({"device_sizes": device_sizes} if device_sizes else {}))
        if device_sizes:
            path = Path(device_sizes)
            if not path.is_file():
                raise ValueError(f"alibaba: device_sizes file {device_sizes!r} does not exist")
            self._load_capacities(path, "option")

    def identity(self) -> dict[str, Any]:
        # the capacities' content (capacities_sha256) identifies them, not the file's path
        ident = super().identity()
        ident.pop("device_sizes", None)
        return ident

    def batches(self, source: Source) -> Iterator[ReadBatch]:
        if "device_sizes" not in self.metadata:
            beside = source.path.parent / DEVICE_SIZES_NAME
            if beside.is_file():
                self._load_capacities(beside, "found next to the trace")
            else:
                self.metadata["device_sizes"] = None
        yield from super().batches(source)

    def _load_capacities(self, path: Path, how: str) -> None:
        sizes = read_device_sizes(path)
        # capacities given directly (programmatic use) override the file
        self.capacities = {**sizes, **self.capacities}
        self.metadata["device_sizes"] = {
            "path": str(path.resolve()),
            "how": how,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "devices": len(sizes),
        }

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        op, op_reason = op_from_codes("opcode", {"R": "read", "W": "write"})
        ts, ts_reason = scaled_int("timestamp", US_NS, "timestamp (µs)")
        df = df.with_columns(
            ts_raw_ns=ts,
            volume=pl.col("device_id").str.strip_chars(),
            op=op,
            offset=pl.col("offset"),
            size=pl.col("length"),
            latency_ns=pl.lit(None, pl.Int64),
        )
        return with_reason(df, op_reason, ts_reason)
