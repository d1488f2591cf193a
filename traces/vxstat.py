"""Veritas VxVM ``vxstat`` output (``vxstat``, ``-svd``, ``-p``, ``-i N``, ``-o alldgs``, ``-T``)
into one row per object per report.

Layout (VxVM admin guide, "Using I/O statistics"; DbxTune's captured ``vxstat -o alldgs -i 10``)::

                          OPERATIONS          BLOCKS           AVG TIME(ms)
    TYP NAME              READ     WRITE      READ     WRITE   READ  WRITE

    Wed Sep 29 15:29:34 2010
    DG tfkitmigrdg
    vol migrfs01      57405968 249832776 2481241207 798764918   0.00   0.02

- ``-i N`` prints a date line per report; the first report holds the totals since boot (or
  the last ``vxstat -r``) and is flagged ``cumulative``; later reports hold the counts of their
  interval, which become per-second rates over the interval: the seconds between the date
  lines, or the ``interval_s`` option (what was given to ``-i``) when set. Without date lines
  the file is one cumulative report.
- ``-o alldgs`` prints ``DG <name>`` lines: every row carries its disk group (else option ``dg``).
- BLOCKS are sectors of ``block_bytes`` (default 512) and become KiB; ``AVG TIME(us)`` (``-T``)
  becomes ms. ``-S`` prints per-second values instead of counts: pass ``per_second=true``.
- Date lines are local time printed by ctime (``Wed Sep 29 15:29:34 2010``, optionally with a
  zone abbreviation) or ISO; they are read in the ``tz`` option's zone (default UTC, said in
  the warnings).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import polars as pl

from traces.errors import TraceFormatError
from traces.measured import MeasuredBatch, MeasuredReader, iter_paragraph_blocks, lines_frame, reject_frame
from traces.source import LineBlock, Source

_MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
CTIME_RE = (r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+(\d{1,2})\s+"
            r"(\d{1,2}):(\d{2}):(\d{2})\s+(?:[A-Z]{2,5}\s+)?(\d{4})$")
ISO_RE = r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$"
GROUP_RE = r"^\s*OPERATIONS\s+BLOCKS\s+AVG\s+TIME\((ms|us)\)\s*$"
COLHDR_RE = r"^\s*TYP\s+NAME\s+READ\s+WRITE\s+READ\s+WRITE\s+READ\s+WRITE\s*$"
DG_RE = r"^\s*DG\s+(\S+)\s*$"
#: object types vxstat prints (volumes, plexes, subdisks, disks, cache objects, ...)
TYPES = ("vol", "pl", "sd", "dm", "co", "sv", "dc", "sp", "rv", "rl")

K_OTHER, K_BLANK, K_GROUP, K_COLHDR, K_DATE, K_DG = range(6)
BAD_TS = -(2**62)


class VxstatReader(MeasuredReader):
    name = "vxstat"
    description = "Veritas vxstat (-svd, -p, -i N, -o alldgs, -T)"
    tool = "Veritas vxstat"
    tables = ("vxstat",)
    option_help = {
        "interval_s": "seconds per report as given to -i (default: from the date lines)",
        "tz": "time zone of the date lines, e.g. Europe/Paris (default UTC)",
        "dg": "disk group of rows without a DG line (vxstat -g)",
        "block_bytes": "bytes per BLOCKS unit (default 512)",
        "per_second": "true when vxstat ran with -S (values per second, not per interval)",
    }
    block_bytes_read = 8 << 20

    def __init__(self, order: str = "sort", **options: Any):
        super().__init__(order, **options)
        self.interval_s = self.opt_float("interval_s")
        self.tz = self.opt_str("tz")
        self.sector_kb = (self.opt_float("block_bytes", 512.0) or 512.0) / 1024.0
        self.per_second = bool(self.opt_bool("per_second", False))
        if self.interval_s is not None and self.interval_s <= 0:
            raise ValueError("vxstat reader: interval_s must be > 0")
        self._st = {"report": -1, "ts": None, "prev_ts": None, "dg": self.opt_str("dg"), "unit": None,
                    "seen_header": False}

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        lines = head.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()[:10]
        return any(re.match(GROUP_RE, ln) for ln in lines) and any(re.match(COLHDR_RE, ln) for ln in lines)

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        for block in iter_paragraph_blocks(source, self.block_bytes_read):
            yield self._block(source, block)
        if not self._st["seen_header"]:
            raise TraceFormatError(source.path, 1, "no vxstat header (OPERATIONS BLOCKS AVG TIME / TYP NAME READ ...)")
        self.metadata["reports"] = self._st["report"] + 1
        self.metadata["time_unit"] = self._st["unit"]

    def _block(self, source: Source, block: LineBlock) -> MeasuredBatch:
        st = self._st
        batch = MeasuredBatch()
        df = lines_frame(block)
        line = pl.col("line")
        strip = line.str.strip_chars()
        k = pl.col("kind")
        df = df.with_columns(
            kind=pl.when(strip == "").then(K_BLANK)
            .when(line.str.contains(GROUP_RE)).then(K_GROUP)
            .when(line.str.contains(COLHDR_RE)).then(K_COLHDR)
            .when(strip.str.contains(CTIME_RE) | strip.str.contains(ISO_RE)).then(K_DATE)
            .when(line.str.contains(DG_RE)).then(K_DG)
            .otherwise(K_OTHER).cast(pl.Int8)
        )
        groups = df.filter(k == K_GROUP)
        if groups.height:
            st["seen_header"] = True
            units = set(groups.get_column("line").str.extract(GROUP_RE, 1).to_list())
            if st["unit"] is not None:
                units.add(st["unit"])
            if len(units) > 1:
                raise TraceFormatError(source.path, int(groups["src_line"][0]),
                                       f"vxstat reports mix AVG TIME units {sorted(units)}")
            st["unit"] = units.pop()
        elif (df.get_column("kind") == K_COLHDR).any():
            st["seen_header"] = True

        # reports start at date lines; their times and the seconds since the previous one
        dates = df.filter(k == K_DATE)
        ts = self._parse_dates(dates.get_column("line").str.strip_chars()) if dates.height else []
        reports = []
        prev = None if st["ts"] == BAD_TS else st["ts"]
        rep = st["report"]
        for t in ts:
            rep += 1
            if self.interval_s is not None:
                iv = self.interval_s
            elif prev is not None and t is not None and rep > 0:
                iv = (t - prev) / 1e6
            else:
                iv = None
            reports.append((rep, t, iv))
            prev = t
        # an invalid date line still starts its report: BAD_TS keeps the previous time from filling in
        rep_of_date = pl.DataFrame({"src_line": dates["src_line"], "_rep": [r[0] for r in reports],
                                    "_ts": [BAD_TS if r[1] is None else r[1] for r in reports],
                                    "_iv": [r[2] for r in reports]},
                                   schema={"src_line": pl.Int64, "_rep": pl.Int32, "_ts": pl.Int64, "_iv": pl.Float64})
        df = df.join(rep_of_date, on="src_line", how="left", maintain_order="left")
        first_rep = max(st["report"], 0)
        first_iv = self.interval_s if (self.interval_s is not None and first_rep > 0) else st.get("iv")
        df = df.with_columns(
            report=pl.col("_rep").forward_fill().fill_null(first_rep),
            ts=pl.col("_ts").forward_fill().fill_null(pl.lit(st["ts"], pl.Int64))
            if dates.height else pl.lit(st["ts"], pl.Int64),
            interval_s=pl.when(k == K_DATE).then(pl.col("_iv")).forward_fill()
            .fill_null(pl.lit(first_iv, pl.Float64)) if dates.height else pl.lit(first_iv, pl.Float64),
            # a date line starts a report: the disk group resets to the dg option ("\x00" = none)
            dg=pl.when(k == K_DG).then(line.str.extract(DG_RE, 1))
            .when(k == K_DATE).then(pl.lit(self.opt_str("dg") or "\x00"))
            .forward_fill().fill_null(pl.lit(st["dg"] or "\x00", pl.String)),
        ).with_columns(dg=pl.when(pl.col("dg") != "\x00").then(pl.col("dg")))
        if df.height:
            last = df.row(df.height - 1, named=True)
            st.update(report=int(last["report"]) if (dates.height or st["report"] >= 0) else st["report"],
                      ts=last["ts"], dg=last["dg"], iv=last["interval_s"])
            if dates.height:
                st["report"] = reports[-1][0]
        names = {K_BLANK: "blank", K_GROUP: "header", K_COLHDR: "header", K_DATE: "date", K_DG: "disk group"}
        for kd, n in df.group_by("kind").len().iter_rows():
            if kd in names:
                batch.skipped[names[kd]] += n

        rows = df.filter(k == K_OTHER)
        if not rows.height:
            return batch
        toks = rows.get_column("line").str.extract_all(r"\S+")
        rows = rows.with_columns(_t=toks).with_columns(_n=pl.col("_t").list.len())
        t = pl.col("_t")
        vals = [t.list.get(i, null_on_oob=True) for i in range(2, 8)]
        ints = [v.cast(pl.Int64, strict=False) for v in vals[:4]]
        floats = [v.cast(pl.Float64, strict=False) for v in vals[4:]]
        typ = t.list.get(0, null_on_oob=True)
        reason = (
            pl.when(pl.col("_n") != 8).then(pl.format("expected TYP NAME and 6 values, found {} fields", pl.col("_n")))
            .when(~typ.is_in(list(TYPES))).then(pl.format("unknown object type '{}' (expected one of "
                                                          + ", ".join(TYPES) + ")", typ.str.slice(0, 20)))
        )
        for name, v, x in zip(("READ ops", "WRITE ops", "READ blocks", "WRITE blocks"), vals[:4], ints, strict=True):
            reason = reason.when(x.is_null()).then(pl.format(f"{name} is not a whole number: '{{}}'", v.str.slice(0, 30)))
            reason = reason.when(x < 0).then(pl.format(f"negative {name}: {{}}", v))
        for name, v, x in zip(("READ avg time", "WRITE avg time"), vals[4:], floats, strict=True):
            reason = reason.when(x.is_null()).then(pl.format(f"{name} is not a number: '{{}}'", v.str.slice(0, 30)))
            reason = reason.when(x < 0).then(pl.format(f"negative {name}: {{}}", v))
        if not st["seen_header"]:
            reason = reason.when(pl.lit(True)).then(pl.lit("data line before the vxstat header"))
        time_div = 1000.0 if st["unit"] == "us" else 1.0
        rows = rows.with_columns(_reason=reason.otherwise(pl.lit(None, pl.String)))
        bad = rows.filter(pl.col("_reason").is_not_null())
        good = rows.filter(pl.col("_reason").is_null())
        cum = pl.col("report") == 0
        iv = pl.col("interval_s")
        if self.per_second:
            # -S prints per-second values: counts are value x interval
            r_ps, w_ps = ints[0].cast(pl.Float64), ints[1].cast(pl.Float64)
            rk_ps, wk_ps = ints[2] * self.sector_kb, ints[3] * self.sector_kb
            reads, writes = (r_ps * iv).round().cast(pl.Int64), (w_ps * iv).round().cast(pl.Int64)
            read_kb, write_kb = rk_ps * iv, wk_ps * iv
        else:
            reads, writes = ints[0], ints[1]
            read_kb, write_kb = ints[2] * self.sector_kb, ints[3] * self.sector_kb
            r_ps, w_ps, rk_ps, wk_ps = (x / iv for x in (reads, writes, read_kb, write_kb))
        good = good.with_columns(
            cumulative=cum, typ=typ, name=t.list.get(1), reads=reads, writes=writes, read_kb=read_kb,
            write_kb=write_kb, r_avg_ms=floats[0] / time_div, w_avg_ms=floats[1] / time_div,
            r_per_s=pl.when(~cum).then(r_ps), w_per_s=pl.when(~cum).then(w_ps),
            rkb_per_s=pl.when(~cum).then(rk_ps), wkb_per_s=pl.when(~cum).then(wk_ps),
            ts=pl.when(pl.col("ts") != BAD_TS).then(pl.col("ts")).cast(pl.Datetime("us", "UTC")),
        )
        if good.height and good.select(pl.col("interval_s").is_null() & ~cum).to_series().any():
            self.warn("vxstat interval unknown for some reports (no date lines): per-second rates left null "
                      "(pass --option interval_s=N as given to vxstat -i)")
        batch.add("vxstat", rows=good, rejects=reject_frame(bad["src_line"], bad["line"], bad["_reason"]))
        return batch

    def _parse_dates(self, text: pl.Series) -> list[int | None]:
        """Date lines -> µs since the Unix epoch (UTC), None when the date is invalid."""
        c = text.str.extract_groups(CTIME_RE).struct.unnest()
        c.columns = ["c_mon", "c_d", "c_H", "c_M", "c_S", "c_y"]
        i = text.str.extract_groups(ISO_RE).struct.unnest()
        i.columns = ["i_y", "i_m", "i_d", "i_H", "i_M", "i_S"]
        months = {k: f"{v:02d}" for k, v in _MONTHS.items()}
        both = pl.concat([c, i], how="horizontal")
        stamp = pl.format(
            "{}-{}-{} {}:{}:{}",
            pl.coalesce("i_y", "c_y"), pl.coalesce(pl.col("i_m"), pl.col("c_mon").replace_strict(months, default=None)),
            pl.coalesce("i_d", "c_d").str.zfill(2), pl.coalesce("i_H", "c_H").str.zfill(2),
            pl.coalesce("i_M", "c_M"), pl.coalesce("i_S", "c_S"),
        )
        naive = stamp.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
        if self.tz is None:
            self.warn("vxstat date lines carry no zone: read as UTC (pass --option tz=Area/City for local time)")
        try:
            out = both.select(naive.dt.replace_time_zone(self.tz or "UTC", ambiguous="earliest",
                                                         non_existent="null").dt.epoch("us")).to_series()
        except pl.exceptions.ComputeError as e:
            raise ValueError(f"vxstat reader: unknown time zone {self.tz!r} ({e})") from None
        if out.null_count():
            bad = text.filter(out.is_null()).to_list()[:3]
            self.warn(f"vxstat date line(s) {bad} are not valid dates: their reports have no time and no rate")
        return out.to_list()
