"""Veritas DMP ``vxdmpadm [-q] iostat show ...`` output into one row per path (or DMP node,
controller, enclosure, port) per report.

No real capture was available; the layout follows the Veritas Volume Manager administrator's
guides ("Administering DMP using vxdmpadm", 4.1 to InfoScale 8)::

                       cpu usage = 7952us    per cpu memory = 8192b
                       OPERATIONS            BLOCKS           AVG TIME(ms)
    PATHNAME         READS    WRITES     READS    WRITES     READS    WRITES
    c0t65536d0s2     1088       0        57049      0        0.009542 0.000000

- every report starts with its ``cpu usage`` line; with ``interval=N count=M`` there are M
  reports. The first one counts since ``vxdmpadm iostat start`` (``cumulative``); later ones
  count their interval, turned into per-second rates with the ``interval_s`` option (the
  output has no timestamps, so without the option rates stay null);
- the first column names what a row is (``PATHNAME``, ``DMPNODENAME`` with
  ``groupby=dmpnode``, ``CTLRNAME``, ``ENCLRNAME``, ``PORTNAME``, ...);
- sizes come as ``BLOCKS`` (512 B; option ``block_bytes``) or, in older releases and with
  ``-u``, ``KBYTES`` / ``MBYTES`` / ``GBYTES``; all become KiB. ``AVG TIME(us)`` becomes ms;
- ``-q`` adds ``QUEUED I/Os`` (reads, writes) and ``PENDING I/Os`` (one value).
The group line decides how many values a row has; a row with another count is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import polars as pl

from traces.errors import TraceFormatError
from traces.measured import MeasuredBatch, MeasuredReader, iter_paragraph_blocks, lines_frame, reject_frame
from traces.source import LineBlock, Source

CPU_RE = r"^\s*cpu usage\s*=\s*(\d+)\s*us\s+per cpu memory\s*=\s*(\d+)\s*b\s*$"
GROUP_TOKEN_RE = r"OPERATIONS|[KMG]?BYTES|BLOCKS|AVG TIME\((?:ms|us|s)\)|QUEUED I/Os|PENDING I/Os"
GROUP_RE = rf"^\s*(?:(?:{GROUP_TOKEN_RE})\s*)+$"
NAME_COLUMNS = ("PATHNAME", "DMPNODENAME", "CTLRNAME", "ENCLRNAME", "PORTNAME", "ARRAYPORTNAME", "LUNNAME", "NAME")
COLHDR_RE = rf"^\s*(?:{'|'.join(NAME_COLUMNS)})(?:\s+(?:READS|WRITES))+\s*$"
SIZE_KB = {"KBYTES": 1.0, "MBYTES": 1024.0, "GBYTES": 1024.0 * 1024.0, "BYTES": 1 / 1024}
TIME_MS = {"ms": 1.0, "us": 0.001, "s": 1000.0}

K_OTHER, K_BLANK, K_CPU, K_GROUP, K_COLHDR = range(5)


def _layout(group_line: str, block_kb: float) -> list[tuple[str, float]]:
    """(column, scale) for each value of a row under this group line."""
    cols: list[tuple[str, float]] = []
    for tok in re.findall(GROUP_TOKEN_RE, group_line):
        if tok == "OPERATIONS":
            cols += [("reads", 1.0), ("writes", 1.0)]
        elif tok == "BLOCKS":
            cols += [("read_kb", block_kb), ("write_kb", block_kb)]
        elif tok in SIZE_KB:
            cols += [("read_kb", SIZE_KB[tok]), ("write_kb", SIZE_KB[tok])]
        elif tok.startswith("AVG TIME"):
            unit = tok[tok.index("(") + 1 : -1]
            cols += [("r_avg_ms", TIME_MS[unit]), ("w_avg_ms", TIME_MS[unit])]
        elif tok == "QUEUED I/Os":
            cols += [("queued_reads", 1.0), ("queued_writes", 1.0)]
        elif tok == "PENDING I/Os":
            cols += [("pending_ios", 1.0)]
    return cols


_INT_COLUMNS = {"reads", "writes", "queued_reads", "queued_writes", "pending_ios"}


class VxdmpReader(MeasuredReader):
    name = "vxdmp"
    description = "Veritas vxdmpadm [-q] iostat show (paths, DMP nodes, controllers, ...)"
    tool = "Veritas vxdmpadm iostat"
    tables = ("vxdmp",)
    option_help = {
        "interval_s": "seconds per report as given to interval= (the output has no timestamps)",
        "block_bytes": "bytes per BLOCKS unit (default 512)",
    }
    block_bytes_read = 8 << 20

    def __init__(self, order: str = "sort", **options: Any):
        super().__init__(order, **options)
        self.interval_s = self.opt_float("interval_s")
        if self.interval_s is not None and self.interval_s <= 0:
            raise ValueError("vxdmp reader: interval_s must be > 0")
        self.block_kb = (self.opt_float("block_bytes", 512.0) or 512.0) / 1024.0
        self._st = {"report": -1, "cpu_us": None, "mem_b": None, "group": None, "group_line": None, "name_col": None}

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        lines = head.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()[:20]
        return any(re.match(CPU_RE, ln) for ln in lines) or (
            any(re.match(GROUP_RE, ln) and "OPERATIONS" in ln for ln in lines)
            and any(re.match(COLHDR_RE, ln) for ln in lines))

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        for block in iter_paragraph_blocks(source, self.block_bytes_read):
            yield self._block(source, block)
        self.metadata["reports"] = max(self._st["report"], 0) + 1
        if self._st["report"] > 0 and self.interval_s is None:
            self.warn("vxdmpadm output has no timestamps: per-second rates left null "
                      "(pass --option interval_s=N as given to interval=)")

    def _block(self, source: Source, block: LineBlock) -> MeasuredBatch:
        st = self._st
        batch = MeasuredBatch()
        df = lines_frame(block)
        line = pl.col("line")
        k = pl.col("kind")
        df = df.with_columns(
            kind=pl.when(line.str.strip_chars() == "").then(K_BLANK)
            .when(line.str.contains(CPU_RE)).then(K_CPU)
            .when(line.str.contains(GROUP_RE)).then(K_GROUP)
            .when(line.str.contains(COLHDR_RE)).then(K_COLHDR)
            .otherwise(K_OTHER).cast(pl.Int8)
        )
        # each report opens with its cpu usage line; lines before the first one belong to report 0
        df = df.with_columns(_rep_raw=st["report"] + (k == K_CPU).cum_sum()).with_columns(
            report=pl.max_horizontal(pl.col("_rep_raw"), pl.lit(0)).cast(pl.Int32))
        df = df.with_columns(
            cpu_usage_us=pl.when(k == K_CPU).then(line.str.extract(CPU_RE, 1).cast(pl.Int64)).forward_fill()
            .fill_null(pl.lit(st["cpu_us"], pl.Int64)),
            per_cpu_memory_bytes=pl.when(k == K_CPU).then(line.str.extract(CPU_RE, 2).cast(pl.Int64)).forward_fill()
            .fill_null(pl.lit(st["mem_b"], pl.Int64)),
            group=pl.when(k == K_GROUP).then(line.str.strip_chars()).forward_fill()
            .fill_null(pl.lit(st["group"], pl.String)),
            group_line=pl.when(k == K_GROUP).then(pl.col("src_line")).forward_fill()
            .fill_null(pl.lit(st["group_line"], pl.Int64)),
            name_col=pl.when(k == K_COLHDR).then(line.str.extract(r"^\s*(\S+)", 1)).forward_fill()
            .fill_null(pl.lit(st["name_col"], pl.String)),
        )
        if df.height:
            last = df.row(df.height - 1, named=True)
            st.update(report=int(last["_rep_raw"]), cpu_us=last["cpu_usage_us"], mem_b=last["per_cpu_memory_bytes"], group=last["group"],
                      group_line=last["group_line"], name_col=last["name_col"])
        names = {K_BLANK: "blank", K_CPU: "cpu usage", K_GROUP: "header", K_COLHDR: "header"}
        for kd, n in df.group_by("kind").len().iter_rows():
            if kd in names:
                batch.skipped[names[kd]] += n

        rows = df.filter(k == K_OTHER)
        if not rows.height:
            return batch
        no_header = rows.filter(pl.col("group").is_null() | pl.col("name_col").is_null())
        if no_header.height:
            batch.add("vxdmp", rejects=reject_frame(no_header["src_line"], no_header["line"],
                                                    "data line before the vxdmpadm iostat header"))
        rows = rows.filter(pl.col("group").is_not_null() & pl.col("name_col").is_not_null())
        for (group,), part in rows.partition_by("group", as_dict=True, maintain_order=True).items():
            cols = _layout(group, self.block_kb)
            if not any(c == "reads" for c, _ in cols) and not any(c == "queued_reads" for c, _ in cols):
                raise TraceFormatError(source.path, int(part["group_line"][0]),
                                       f"vxdmpadm header {group!r} has no OPERATIONS or QUEUED I/Os columns")
            n = len(cols)
            part = part.with_columns(_t=pl.col("line").str.extract_all(r"\S+")).with_columns(_n=pl.col("_t").list.len())
            t = pl.col("_t")
            reason = pl.when(pl.col("_n") != n + 1).then(
                pl.format(f"expected a name and {n} values (header at line {int(part['group_line'][0])}), "
                          "found {} fields", pl.col("_n")))
            exprs = []
            for i, (col, scale) in enumerate(cols):
                tok = t.list.get(i + 1, null_on_oob=True)
                typ = pl.Int64 if col in _INT_COLUMNS else pl.Float64
                v = tok.cast(typ, strict=False)
                word = "a whole number" if typ == pl.Int64 else "a number"
                reason = reason.when(tok.is_not_null() & v.is_null()).then(
                    pl.format(f"{col} is not {word}: '{{}}'", tok.str.slice(0, 30)))
                reason = reason.when(v < 0).then(pl.format(f"negative {col}: {{}}", tok))
                exprs.append((v * scale if scale != 1.0 else v).alias(col))
            part = part.with_columns(*exprs, _reason=reason.otherwise(pl.lit(None, pl.String)))
            bad = part.filter(pl.col("_reason").is_not_null())
            good = part.filter(pl.col("_reason").is_null())
            cum = pl.col("report") == 0
            iv = pl.lit(self.interval_s, pl.Float64)
            rate = {}
            for src, dst in (("reads", "r_per_s"), ("writes", "w_per_s"), ("read_kb", "rkb_per_s"),
                             ("write_kb", "wkb_per_s")):
                if src in good.columns:
                    rate[dst] = pl.when(~cum).then(pl.col(src) / iv)
            good = good.with_columns(
                cumulative=cum, interval_s=pl.when(~cum).then(iv), name=t.list.get(0),
                group_by=pl.col("name_col").str.to_lowercase(), **rate,
            )
            batch.add("vxdmp", rows=good, rejects=reject_frame(bad["src_line"], bad["line"], bad["_reason"]))
        return batch
