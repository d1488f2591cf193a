"""blkparse default text output (blktrace): one event per line.

``maj,min cpu seq secs.nsecs pid action RWBS sector + nsectors [process]`` (for completions
the brackets hold the error code). A request passes through several events (Q queued,
G get-request, I inserted, D dispatched to the driver, C completed, ...); the reader keeps
one event per request: completions (``-o events=C``, the default: what the device finished)
or dispatches (``-o events=D``: what the host issued to the device). Times are seconds from
the start of the trace with nanoseconds; sectors are 512 bytes; the volume is ``"maj,min"``.

RWBS: ``D`` = discard (op trim), ``W`` write, ``R`` read, ``F`` flush (a leading F is a
pre-flush, a trailing F is FUA; an event with F or W and no sectors is a pure flush: op
flush, size 0, offset = its sector when it has one); S, M, A, B, E, N are flags. Events
with only flags (``N``: SCSI passthrough and the like) move no data and are skipped as
``non_data``.

Lines that are not requests are skipped and counted in the manifest's ``lines_skipped``:
``remap`` (A: partition -> disk remaps), ``message`` (m: scheduler messages), ``plug``
(P, U, UT), ``other_event`` (every other action, including the C or D events not selected),
``summary`` (the block blkparse prints at the end: ``CPU0 (8,16):``, ``Total (8,16):``,
Throughput, Events, Skips), ``banner`` (``Input file ... added``) and ``blank``.
Per-action counts are in the reader metadata. Any other line is rejected with its reason.

Latency (``-o latency=pair``, the default for C events): each completion is paired with the
latest earlier dispatch of the same device, sector and length (a backward as-of join in
Polars, carried across batches); a dispatch is used by one completion only, and pairs more
than 30 s apart are not made (30 s is the Linux SCSI disk command timeout, ``SD_TIMEOUT``,
after which the kernel aborts a command). Completions without a dispatch in the trace (it
began before the trace, or the request was merged differently) keep latency null.
``-o latency=none`` leaves every latency null. D events never carry a latency.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

import polars as pl
import pyarrow.compute as pc

from traces.base import ReadBatch, TraceReader, decimal_scaled, scaled_int, with_reason
from traces.delimited import _lines_series
from traces.source import LineBlock, Source

SECTOR_BYTES = 512
PAIR_WINDOW_NS = 30 * 1_000_000_000  # Linux sd command timeout (SD_TIMEOUT = 30 * HZ)
BLOCK_BYTES = 32 << 20

EVENT_RE = r"^\s*(\d+),(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*(.*?)\s*$"
# "sector + nsectors [proc]", "sector [err]", "[proc]"; the bracket is optional
REST_RE = r"^(?:(\d+)(?:\s+\+\s+(\d+))?)?\s*(?:\[(.*)\])?$"
SUMMARY_START_RE = r"^(?:CPU\d+|Total) \(.*\):\s*$"
BANNER_RE = r"^Input file .* added$"
PLUG_ACTIONS = ("P", "U", "UT")
SNIFF_RE = EVENT_RE


class BlkparseReader(TraceReader):
    name = "blkparse"
    description = "blkparse text (C or D events; RWBS; remap/message/plug/summary lines counted)"
    option_help = {
        "events": "C (completions, default) or D (dispatches)",
        "latency": "pair (C events: latency = C time - D time of the same request, default) or none",
    }

    def __init__(self, events: str = "C", latency: str = "pair", **kw):
        events = str(events).upper()
        opts = {}
        if events != "C":
            opts["events"] = events
        if latency != "pair":
            opts["latency"] = latency
        super().__init__(**kw, **opts)
        if events not in ("C", "D"):
            raise ValueError(f"blkparse: events must be C or D, got {events!r}")
        if latency not in ("pair", "none"):
            raise ValueError(f"blkparse: latency must be pair or none, got {latency!r}")
        self.events = events
        self.pair = latency == "pair" and events == "C"
        self._in_summary = False
        self._pending_d = pl.DataFrame(
            schema={
                "volume": pl.String,
                "sector": pl.Int64,
                "nsectors": pl.Int64,
                "d_ts": pl.Int64,
                "_used": pl.Boolean,
            }
        )
        self._by_action: Counter = Counter()
        self.metadata.update(events=events, latency_pairing=self.pair)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        text = head.decode("utf-8", errors="replace").splitlines()
        lines = [ln for ln in text[:-1] or text if ln.strip() and not re.match(BANNER_RE, ln)][:20]
        if not lines:
            return False
        hits = sum(bool(re.match(SNIFF_RE, ln)) for ln in lines)
        return hits * 2 > len(lines)

    def batches(self, source: Source) -> Iterator[ReadBatch]:
        for block in source.iter_line_blocks(BLOCK_BYTES):
            yield self._block(block)
        self.metadata["events_by_action"] = dict(sorted(self._by_action.items()))

    def _block(self, block: LineBlock) -> ReadBatch:
        lines, idx = _lines_series(block, None)
        df = _fields(lines).with_columns(_idx=pl.Series(idx), line=lines)
        line = pl.col("line")
        is_event = pl.col("_event")
        starts_summary = ~is_event & line.str.contains(SUMMARY_START_RE)
        df = df.with_columns(
            _summary=pl.when(starts_summary)
            .then(True)
            .when(is_event)
            .then(False)
            .otherwise(None)
            .forward_fill()
            .fill_null(self._in_summary)
        )
        if df.height:
            self._in_summary = bool(df["_summary"][-1])
        act = pl.col("action")
        rwbs = pl.col("rwbs")
        kind = (
            pl.when(~is_event & pl.col("_summary"))
            .then(pl.lit("summary"))
            .when(line.str.strip_chars() == "")
            .then(pl.lit("blank"))
            .when(~is_event & line.str.contains(BANNER_RE))
            .then(pl.lit("banner"))
            .when(~is_event)
            .then(pl.lit("bad"))
            .when(act == "A")
            .then(pl.lit("remap"))
            .when(act == "m")
            .then(pl.lit("message"))
            .when(act.is_in(PLUG_ACTIONS))
            .then(pl.lit("plug"))
            .when(act != self.events)
            .then(pl.lit("other_event"))
            .when(~rwbs.str.contains("[RWDF]"))
            .then(pl.lit("non_data"))
            .otherwise(pl.lit("record"))
        )
        df = df.with_columns(_kind=kind)
        self._by_action.update(dict(df.filter(is_event).group_by("action").len().iter_rows()))
        counts = dict(df.group_by("_kind").len().iter_rows())
        skipped = Counter({k: int(v) for k, v in counts.items() if k not in ("bad", "record")})
        dispatches = None
        if self.pair:
            d = _with_request(df.filter(is_event & (act == "D")))
            dispatches = d.filter(
                (pl.col("nsectors") > 0) & pl.col("sector").is_not_null() & pl.col("ts_raw_ns").is_not_null()
            ).select("volume", "sector", "nsectors", d_ts=pl.col("ts_raw_ns"))
        # only requests (and lines to reject) are parsed further
        df = _with_request(df.filter(pl.col("_kind").is_in(["bad", "record"])))
        _, ts_reason = decimal_scaled("_time", 9, "time (s)")

        offset, off_reason = scaled_int("sector", SECTOR_BYTES, "sector")
        size, size_reason = scaled_int("nsectors", SECTOR_BYTES, "nsectors")
        pure_flush = (pl.col("nsectors") == 0) & rwbs.str.contains("[WF]") & ~rwbs.str.contains("D")
        op = (
            pl.when(pure_flush)
            .then(pl.lit("flush"))
            .when(rwbs.str.contains("D"))
            .then(pl.lit("trim"))
            .when(rwbs.str.contains("W"))
            .then(pl.lit("write"))
            .when(rwbs.str.contains("R"))
            .then(pl.lit("read"))
            .when(rwbs.str.contains("F"))
            .then(pl.lit("flush"))
        )
        rest_unreadable = (
            pl.col("_rest").struct.field("1").is_null()
            & pl.col("_rest").struct.field("3").is_null()
            & (pl.col("rest") != "")
        )
        df = df.with_columns(
            op=op,
            offset=pl.when(pl.col("sector").is_null() & pure_flush)
            .then(pl.lit(0, pl.Int64))
            .otherwise(offset),
            size=size,
            src_line=pl.col("_idx") + block.first_line,
            _reason=pl.lit(None, pl.String),
        )
        df = with_reason(
            df,
            (line == "\x00INVALID", pl.lit("line is not valid UTF-8 text")),
            (line.str.contains("\x00", literal=True), pl.lit("line contains NUL bytes")),
            (pl.col("_kind") == "bad", pl.format("not a blkparse event line: '{}'", line.str.slice(0, 60))),
            (
                rest_unreadable,
                pl.format("cannot read 'sector + nsectors [...]' from '{}'", pl.col("rest").str.slice(0, 60)),
            ),
            (
                pl.col("_rest").struct.field("1").is_not_null() & pl.col("sector").is_null(),
                pl.format("sector {} is out of range", pl.col("_rest").struct.field("1").str.slice(0, 40)),
            ),
            (
                pl.col("_rest").struct.field("2").is_not_null() & pl.col("_nsec").is_null(),
                pl.format("nsectors {} is out of range", pl.col("_rest").struct.field("2").str.slice(0, 40)),
            ),
            (pl.col("sector").is_null() & ~pure_flush, pl.lit("sector missing")),
            ts_reason,
            off_reason,
            size_reason,
        )
        if self.events == "C":
            errors = df.filter(
                pl.col("_reason").is_null() & ~pl.col("_bracket").str.strip_chars().is_in(["0", ""])
            ).height
            if errors:
                self.metadata["completions_with_error"] = (
                    self.metadata.get("completions_with_error", 0) + errors
                )
        if dispatches is None:
            df = df.with_columns(latency_ns=pl.lit(None, pl.Int64))
        else:
            df = df.join(self._pair(dispatches, df), on="_idx", how="left", maintain_order="left")
        return self.finish(df, block.raw_lines, skipped)

    def _pair(self, dispatches: pl.DataFrame, records: pl.DataFrame) -> pl.DataFrame:
        """latency_ns per completion ``_idx``: its time minus the time of its dispatch.

        Carried to the next batch: per (device, sector, length) only the latest dispatch of
        the last 30 s and whether a completion already used it; an older one can never be the
        latest earlier dispatch of a later completion, so nothing else is needed.
        """
        key = ["volume", "sector", "nsectors"]
        d_all = (
            pl.concat([self._pending_d, dispatches.with_columns(_used=pl.lit(False))])
            .sort("d_ts")
            .with_row_index("_d")
        )
        c = (
            records.filter(
                pl.col("_reason").is_null() & (pl.col("nsectors") > 0) & pl.col("sector").is_not_null()
            )
            .select("_idx", *key, "ts_raw_ns")
            .sort("ts_raw_ns", "_idx")
        )
        j = c.join_asof(
            d_all,
            left_on="ts_raw_ns",
            right_on="d_ts",
            by=key,
            strategy="backward",
            tolerance=PAIR_WINDOW_NS,
            check_sortedness=False,
        )
        # a dispatch completes once: only its earliest completion keeps the pair
        first = (pl.int_range(pl.len()).over("_d") == 0) & ~pl.col("_used")
        j = j.with_columns(
            latency_ns=pl.when(pl.col("_d").is_not_null() & first).then(pl.col("ts_raw_ns") - pl.col("d_ts"))
        )
        used = j.filter(pl.col("_d").is_not_null())["_d"].implode()
        newest = max(int(d_all["d_ts"].max() or 0), int(c["ts_raw_ns"].max() or 0) if c.height else 0)
        self._pending_d = (
            d_all.with_columns(_used=pl.col("_used") | pl.col("_d").is_in(used))
            .filter(pl.col("d_ts") >= newest - PAIR_WINDOW_NS)
            .unique(subset=key, keep="last", maintain_order=True)
            .drop("_d")
        )
        return j.select("_idx", "latency_ns")


FIELD_NAMES = ("majmin", "cpu", "seq", "time", "pid", "action", "rwbs", "rest")


def _fields(lines: pl.Series) -> pl.DataFrame:
    """The eight whitespace-separated fields of every line (Arrow's C++ splitter: ~4x faster
    than one regex over the line) and whether the line is an event line:
    ``maj,min cpu seq secs.nsecs pid action rwbs [rest]`` with the numbers numeric."""
    trimmed = pc.ascii_ltrim_whitespace(lines.to_arrow())
    parts = pl.Series(pc.ascii_split_whitespace(trimmed, max_splits=len(FIELD_NAMES) - 1))
    df = pl.DataFrame({"_p": parts}).select(
        pl.col("_p").list.get(i, null_on_oob=True).alias(n) for i, n in enumerate(FIELD_NAMES)
    )
    digits = r"^[0-9]+$"
    mm = pl.col("majmin").str.split_exact(",", 1)
    tm = pl.col("time").str.split_exact(".", 1)
    df = df.with_columns(
        maj=mm.struct.field("field_0"),
        min=mm.struct.field("field_1"),
        secs=tm.struct.field("field_0"),
        frac=tm.struct.field("field_1"),
        rest=pl.col("rest").str.strip_chars(),
    )
    return df.with_columns(
        _event=(
            pl.col("maj").str.contains(digits)
            & pl.col("min").str.contains(digits)
            & pl.col("cpu").str.contains(digits)
            & pl.col("seq").str.contains(digits)
            & pl.col("secs").str.contains(digits)
            & pl.col("frac").str.contains(digits)
            & pl.col("pid").str.contains(digits)
            & pl.col("rwbs").is_not_null()
        ).fill_null(False)
    )


def _with_request(df: pl.DataFrame) -> pl.DataFrame:
    """Parse ``sector + nsectors [...]``, the time (exact ns) and the volume of event rows."""
    rest = pl.col("rest").fill_null("").str.extract_groups(REST_RE)
    df = df.with_columns(_rest=rest).with_columns(
        sector=pl.col("_rest").struct.field("1").cast(pl.Int64, strict=False),
        _nsec=pl.col("_rest").struct.field("2").cast(pl.Int64, strict=False),
        nsectors=pl.col("_rest").struct.field("2").cast(pl.Int64, strict=False).fill_null(0),
        _bracket=pl.col("_rest").struct.field("3"),
        _time=pl.concat_str(pl.col("secs"), pl.lit("."), pl.col("frac")),
        volume=pl.concat_str(pl.col("maj"), pl.lit(","), pl.col("min")),
    )
    ts, _ = decimal_scaled("_time", 9, "time (s)")
    return df.with_columns(ts_raw_ns=ts)
