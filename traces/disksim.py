"""DiskSim / MQSim ASCII traces: ``time dev lba size type``, space separated.

lba and size in 512-byte sectors; type 1 = read, 0 = write (bit 0 of DiskSim's flags; MQSim
reads "1" as read and "0" as write, any other value is rejected). The time unit differs
between the two simulators: DiskSim writes milliseconds as decimals (``0.000000``), MQSim
integer nanoseconds (its workload.xml says ``Time_Unit=NANOSECOND``). Option ``time_unit``:
``auto`` (default) decides once per file from its first record: a decimal point or exponent
means ms (DiskSim), an integer means ns (MQSim); the decision is recorded in the manifest's
reader metadata. ``ns``, ``us``, ``ms`` or ``s`` force it. Times are converted as exact
decimals (never binary floats). The volume is the device number.
"""

from __future__ import annotations

import polars as pl

from traces.base import decimal_scaled, op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field

SECTOR_BYTES = 512
#: time unit -> decimal digits of its ns value (1 ms = 10**6 ns)
UNIT_DIGITS = {"ns": 0, "us": 3, "ms": 6, "s": 9}


class DiskSimReader(DelimitedReader):
    name = "disksim"
    description = "DiskSim/MQSim ASCII (time dev lba size type; sectors; ns or ms)"
    separator = None
    option_help = {"time_unit": "auto (decimals = DiskSim ms, integers = MQSim ns), ns, us, ms or s"}
    fields = (
        Field("time", pl.String),
        Field("dev"),
        Field("lba"),
        Field("size"),
        Field("type", pl.String),
    )
    sniff_pattern = r"^\s*\d+(\.\d*)?([eE][-+]?\d+)?\s+\d+\s+\d+\s+\d+\s+[01]\s*$"

    def __init__(self, time_unit: str = "auto", **kw):
        super().__init__(**kw, **({"time_unit": time_unit} if time_unit != "auto" else {}))
        if time_unit != "auto" and time_unit not in UNIT_DIGITS:
            raise ValueError(f"disksim: time_unit must be auto, {', '.join(UNIT_DIGITS)}; got {time_unit!r}")
        self.time_unit = None if time_unit == "auto" else time_unit
        self.metadata["time_unit"] = self.time_unit
        self.metadata["time_unit_source"] = "option" if self.time_unit else None

    def _resolve_unit(self, df: pl.DataFrame) -> None:
        first = (
            df.filter(pl.col("time").is_not_null() & pl.col("_reason").is_null())["time"].head(1).to_list()
        )
        if not first:
            return
        text = first[0].strip()
        self.time_unit = "ms" if any(c in text for c in ".eE") else "ns"
        self.metadata["time_unit"] = self.time_unit
        self.metadata["time_unit_source"] = f"auto: first record's time {text!r}"

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        if self.time_unit is None:
            self._resolve_unit(df)
        digits = UNIT_DIGITS[self.time_unit or "ns"]
        ts, ts_reason = decimal_scaled("time", digits, f"time ({self.time_unit})")
        op, op_reason = op_from_codes("type", {"1": "read", "0": "write"})
        offset, off_reason = scaled_int("lba", SECTOR_BYTES, "lba (sectors)")
        size, size_reason = scaled_int("size", SECTOR_BYTES, "size (sectors)")
        df = df.with_columns(
            ts_raw_ns=ts,
            volume=pl.col("dev").cast(pl.String),
            op=op,
            offset=offset,
            size=size,
            latency_ns=pl.lit(None, pl.Int64),
        )
        return with_reason(df, ts_reason, op_reason, off_reason, size_reason)
