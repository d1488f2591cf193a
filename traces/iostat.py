"""sysstat ``iostat`` logs, text (every layout) and ``-o JSON``, into per-device and CPU tables.

Text layouts handled (the header of each device section says which, so files that mix them,
e.g. several captures concatenated, are fine):

- sysstat <= 10 (``Device:`` with a colon; ``avgrq-sz`` in 512 B sectors, ``avgqu-sz``,
  ``svctm``), 11.x (``r/s w/s rkB/s ... %rrqm r_await aqu-sz rareq-sz``), 12.x (adds ``d/s``,
  ``dkB/s`` ... ``f/s f_await``, drops ``svctm``); the basic report (``tps kB_read/s ...``);
  ``-k`` (kB), ``-m`` (MB), ``-G`` / ``GB_*`` and sectors (``Blk_read/s``, ``rsec/s``) all
  become KiB; ``-s`` short reports; ``--pretty`` / ``--compact`` / ``-j`` (device name last);
  ``-g`` group rows (leading space, ``is_group``); ``-N`` / ``-p`` names as printed;
  ``--human`` values with unit suffixes (``222.1k``, ``1.5G``, ``1.5%``); ``--dec``;
  decimal commas of non-C numeric locales.
- ``-t`` report timestamps: ISO (``S_TIME_FORMAT=ISO``, with or without a zone offset) and
  the locale forms ``MM/DD/YY HH:MM:SS`` (C), ``MM/DD/YYYY HH:MM:SS AM`` (en_US),
  ``DD/MM/YY``, ``DD.MM.YYYY`` and ``YYYY/MM/DD``. The day/month order comes from the
  ``date_order`` option or the data (a field > 12 decides); when nothing decides, the C
  locale's month-first order is used and the manifest says so. Times without a zone are read
  in the ``tz`` option's zone (default UTC, with a warning).
- The first report of each run (a run starts at a banner line) holds averages since boot:
  it goes to the ``*_boot`` tables with ``since_boot = true``, never among the interval rows.
  When iostat ran with ``-y`` there is no such report: pass ``first_report=interval``.

Why not jc: jc 1.26's iostat parser handles the device-first layouts of sysstat 10-12, but
with ``-t`` it turns each timestamp line into a fake device row and loses the time, it
returns nothing for ``--pretty`` / ``-j`` (device name last) layouts, keeps ``--human``
suffixes unparsed, does not tell since-boot reports apart, and parses line by line in Python.
This reader classifies and splits every line with vectorized Polars string kernels
(benchmarks/logs.py measures both on the same 100 MB file); the tests use jc as an
independent oracle on the layouts jc does parse.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from traces.errors import TraceFormatError
from traces.measured import MeasuredBatch, MeasuredReader, iter_paragraph_blocks, lines_frame, reject_frame
from traces.source import LineBlock, Source

KB = 1.0
MB = 1024.0
GB = 1024.0 * 1024.0
SECTOR = 0.5  # 512 B sectors in KiB

# header token -> (column, scale to the column's unit, value kind). Value kinds say which
# --human suffixes a value may carry: size (KiB based), pct, time (ms), count (none).
_DEVICE_COLUMNS: dict[str, tuple[str, float, str]] = {
    "tps": ("tps", 1, "count"),
    "r/s": ("r_per_s", 1, "count"), "w/s": ("w_per_s", 1, "count"),
    "d/s": ("d_per_s", 1, "count"), "f/s": ("f_per_s", 1, "count"),
    "rrqm/s": ("rrqm_per_s", 1, "count"), "wrqm/s": ("wrqm_per_s", 1, "count"),
    "drqm/s": ("drqm_per_s", 1, "count"), "rqm/s": ("rqm_per_s", 1, "count"),
    "%rrqm": ("rrqm_pct", 1, "pct"), "%wrqm": ("wrqm_pct", 1, "pct"), "%drqm": ("drqm_pct", 1, "pct"),
    "r_await": ("r_await_ms", 1, "time"), "w_await": ("w_await_ms", 1, "time"),
    "d_await": ("d_await_ms", 1, "time"), "f_await": ("f_await_ms", 1, "time"),
    "await": ("await_ms", 1, "time"), "svctm": ("svctm_ms", 1, "time"),
    "rareq-sz": ("rareq_sz_kb", 1, "size"), "wareq-sz": ("wareq_sz_kb", 1, "size"),
    "dareq-sz": ("dareq_sz_kb", 1, "size"), "areq-sz": ("areq_sz_kb", 1, "size"),
    # sysstat <= 10: request size in 512 B sectors, queue length under its old name
    "avgrq-sz": ("avgrq_sz_kb", SECTOR, "size"),
    "aqu-sz": ("aqu_sz", 1, "count"), "avgqu-sz": ("aqu_sz", 1, "count"),
    "%util": ("util_pct", 1, "pct"),
}
for _unit, _scale in (("kB", KB), ("MB", MB), ("GB", GB)):
    for _d, _col in (("r", "rkb_per_s"), ("w", "wkb_per_s"), ("d", "dkb_per_s")):
        _DEVICE_COLUMNS[f"{_d}{_unit}/s"] = (_col, _scale, "size")
    for _word, _col in (("read", "rkb_per_s"), ("wrtn", "wkb_per_s"), ("dscd", "dkb_per_s"), ("w+d", "kb_wd_per_s")):
        _DEVICE_COLUMNS[f"{_unit}_{_word}/s"] = (_col, _scale, "size")
    for _word, _col in (("read", "kb_read"), ("wrtn", "kb_wrtn"), ("dscd", "kb_dscd"), ("w+d", "kb_wd")):
        _DEVICE_COLUMNS[f"{_unit}_{_word}"] = (_col, _scale, "size")
    _DEVICE_COLUMNS[f"{_unit}/s"] = ("kb_per_s", _scale, "size")
# reports in 512 B blocks/sectors (no -k on old sysstat, POSIXLY_CORRECT)
_DEVICE_COLUMNS.update({
    "Blk_read/s": ("rkb_per_s", SECTOR, "size"), "Blk_wrtn/s": ("wkb_per_s", SECTOR, "size"),
    "Blk_dscd/s": ("dkb_per_s", SECTOR, "size"),
    "Blk_read": ("kb_read", SECTOR, "size"), "Blk_wrtn": ("kb_wrtn", SECTOR, "size"),
    "Blk_dscd": ("kb_dscd", SECTOR, "size"),
    "rsec/s": ("rkb_per_s", SECTOR, "size"), "wsec/s": ("wkb_per_s", SECTOR, "size"),
})
#: -o JSON drops '%' from keys ("util", "rrqm" = %rrqm); "rrqm/s" keeps its meaning.
_JSON_DEVICE_KEYS = {**_DEVICE_COLUMNS, "util": _DEVICE_COLUMNS["%util"], "rrqm": _DEVICE_COLUMNS["%rrqm"],
                     "wrqm": _DEVICE_COLUMNS["%wrqm"], "drqm": _DEVICE_COLUMNS["%drqm"]}

_CPU_COLUMNS = {"%user": "user_pct", "%nice": "nice_pct", "%system": "system_pct", "%sys": "system_pct",
                "%iowait": "iowait_pct", "%steal": "steal_pct", "%idle": "idle_pct"}
_JSON_CPU_KEYS = {k.lstrip("%"): v for k, v in _CPU_COLUMNS.items()}

_SUFFIX_SCALE = {
    "size": {"": None, "B": 1 / 1024, "k": 1.0, "K": 1.0, "M": MB, "G": GB, "T": GB * 1024, "P": GB * MB},
    "pct": {"": None, "%": 1.0},
    "time": {"": None, "ms": 1.0, "s": 1000.0, "us": 0.001},
    "count": {"": None},
}

BANNER_RE = r"^\s*Linux\s+(\S+)\s+\(([^)]*)\)\s+(\S+)\s+_?([A-Za-z0-9_]+?)_?\s+\((\d+) CPU\)\s*$"
_ISO = r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|[+-]\d{2}:?\d{2})?"
_LOCAL = r"(\d{1,4})([./-])(\d{1,2})[./-](\d{1,4}),?\s+(\d{1,2}):(\d{2}):(\d{2})(?:\s*([AaPp][Mm]))?"
TS_RE = rf"^(?:{_ISO}|{_LOCAL})$"
DEV_HDR_RE = r"^(?:Device:?\s.*(?:tps|/s|%util|await).*|.*(?:tps|/s|%util|await).*\sDevice)$"
_DATE_RE = r"^(\d{1,4})([./-])(\d{1,2})[./-](\d{1,4})$"

#: report start without a timestamp line (ts forward-fill marker, never a real time)
NO_TS = -(2**62)
BAD_TS = -(2**62) + 1

# line kinds
K_OTHER, K_BLANK, K_BANNER, K_TS, K_CPU_HDR, K_DEV_HDR = range(6)


def _check_known(tokens: list[str], table: dict, source: Source, line: int | None, what: str) -> None:
    unknown = [t for t in tokens if t not in table]
    if unknown:
        raise TraceFormatError(
            source.path, line, f"unknown iostat {what} column(s) {', '.join(map(repr, unknown))}: "
            "this sysstat layout is not supported (please report it with a sample)"
        )


class IostatReader(MeasuredReader):
    name = "iostat"
    description = "sysstat iostat text (every layout, -t timestamps) or -o JSON"
    tool = "sysstat iostat"
    tables = ("iostat_device", "iostat_cpu", "iostat_device_boot", "iostat_cpu_boot")
    option_help = {
        "first_report": "since-boot (default: iostat without -y) or interval (iostat -y: no since-boot report)",
        "tz": "time zone of -t times without an offset, e.g. Europe/Paris (default UTC)",
        "date_order": "auto (default), mdy, dmy or ymd for -t dates",
        "host": "host name for files without a banner line",
    }
    block_bytes = 8 << 20

    def __init__(self, order: str = "sort", **options: Any):
        super().__init__(order, **options)
        self.first_is_boot = self.opt_choice("first_report", ("since-boot", "interval"), "since-boot") == "since-boot"
        self.tz = self.opt_str("tz")
        self.date_order = self.opt_choice("date_order", ("auto", "mdy", "dmy", "ymd"), "auto")
        self._state = {
            "run": -1, "report": -1, "rank": 3, "sect": "none", "hdr": None, "hdr_line": None,
            "cpu_hdr": None, "prev_cpu_hdr": False, "ts": None, "host": self.opt_str("host"),
            "run_first": {},
        }
        self._layouts: Counter = Counter()

    # -- detection ---------------------------------------------------------------------
    @classmethod
    def sniff(cls, head: bytes) -> bool:
        text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        if text.startswith("{"):
            return bool(re.match(r'\{\s*"sysstat"\s*:', text))
        lines = text.splitlines()[:40]
        if any(re.match(BANNER_RE, ln) for ln in lines[:3]):
            return True
        hdr = sum(bool(re.match(DEV_HDR_RE, ln.strip())) for ln in lines)
        cpu = sum(ln.startswith("avg-cpu:") for ln in lines)
        return hdr + cpu > 0

    # -- reading ----------------------------------------------------------------------
    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        head = source.head(1 << 16).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        if head.startswith("{"):
            # sysstat writes one disk entry per line: stream it; reformatted JSON is read whole
            native = re.search(r'^\s*\{"disk_device":.*\}\s*,?\s*$', head, re.M) is not None
            self.metadata["layout"] = "json (streamed)" if native else "json"
            if native:
                for block in source.iter_line_blocks(self.block_bytes):
                    yield self._json_block(source, block)
                self.metadata["first_report"] = "since-boot" if self.first_is_boot else "interval (-y)"
            else:
                yield self._json(source)
            return
        for block in iter_paragraph_blocks(source, self.block_bytes):
            yield self._text_block(source, block)
        self.metadata["layouts"] = dict(self._layouts)
        self.metadata["first_report"] = "since-boot" if self.first_is_boot else "interval (-y)"

    # -- text ---------------------------------------------------------------------------
    def _text_block(self, source: Source, block: LineBlock) -> MeasuredBatch:
        st = self._state
        batch = MeasuredBatch()
        df = lines_frame(block)
        line = pl.col("line")
        k = pl.col("kind")
        df = df.with_columns(kind=_classify(df.get_column("line")), _i=pl.int_range(pl.len(), dtype=pl.Int64))
        # A report is [timestamp] [avg-cpu header + values] [Device header + rows]: a section
        # whose rank is not above the previous section's starts a new report.
        rank = (pl.when(k == K_TS).then(0).when(k == K_CPU_HDR).then(1).when(k == K_DEV_HDR).then(2)
                .when(k == K_BANNER).then(3))
        df = df.with_columns(rank=rank)
        prev_rank = pl.col("rank").forward_fill().shift(1).fill_null(st["rank"])
        df = df.with_columns(new_report=(pl.col("rank").is_in([0, 1, 2]) & (pl.col("rank") <= prev_rank)).fill_null(False))
        df = df.with_columns(
            report=(st["report"] + pl.col("new_report").cum_sum()).cast(pl.Int32),
            _run_raw=st["run"] + (k == K_BANNER).cum_sum(),
        ).with_columns(run=pl.max_horizontal(pl.col("_run_raw"), pl.lit(0)).cast(pl.Int32))

        # banners: host, and the date (it helps decide the day/month order)
        banners = df.filter(k == K_BANNER).get_column("line")
        banner_dates: list[str] = []
        if banners.len():
            parts = banners.str.extract_groups(BANNER_RE).struct.unnest()
            parts.columns = ["kernel", "host", "date", "arch", "cpus"]
            self.metadata.setdefault("kernel", parts["kernel"][0])
            self.metadata.setdefault("arch", parts["arch"][0])
            self.metadata.setdefault("cpus", int(parts["cpus"][0]))
            self.metadata.setdefault("banner_date", parts["date"][0])
            hosts = self.metadata.setdefault("hosts", [])
            hosts.extend(h for h in dict.fromkeys(parts["host"].to_list()) if h not in hosts)
            banner_dates = parts["date"].to_list()
        if self.opt_str("host") is not None:
            df = df.with_columns(host=pl.lit(self.opt_str("host")))
        else:
            df = df.with_columns(
                host=pl.when(k == K_BANNER).then(line.str.extract(BANNER_RE, 2)).forward_fill()
                .fill_null(pl.lit(st["host"], pl.String))
            )

        # timestamps: parsed on the timestamp lines, carried to the rest of their report
        is_ts = df.get_column("kind") == K_TS
        ts_full = pl.Series("_ts", [None] * df.height, dtype=pl.Int64)
        if is_ts.any():
            parsed = self._parse_ts(df.get_column("line").filter(is_ts).str.strip_chars(), banner_dates)
            ts_full = ts_full.scatter(is_ts.arg_true(), parsed)
        df = df.with_columns(ts_full)
        marker = pl.when(k == K_TS).then(pl.col("_ts")).when(pl.col("new_report")).then(NO_TS)
        df = df.with_columns(ts_ff=marker.forward_fill().fill_null(pl.lit(st["ts"], pl.Int64)))

        # sections and headers
        sect = (pl.when(k == K_CPU_HDR).then(pl.lit("cpu")).when(k == K_DEV_HDR).then(pl.lit("dev"))
                .when(k.is_in([K_BLANK, K_BANNER, K_TS])).then(pl.lit("none")))
        df = df.with_columns(
            sect=sect.forward_fill().fill_null(st["sect"]),
            hdr=pl.when(k == K_DEV_HDR).then(line).forward_fill().fill_null(pl.lit(st["hdr"], pl.String)),
            hdr_line=pl.when(k == K_DEV_HDR).then(pl.col("src_line")).forward_fill()
            .fill_null(pl.lit(st["hdr_line"], pl.Int64)),
            cpu_hdr=pl.when(k == K_CPU_HDR).then(line).forward_fill().fill_null(pl.lit(st["cpu_hdr"], pl.String)),
            prev_cpu_hdr=(k == K_CPU_HDR).shift(1).fill_null(st["prev_cpu_hdr"]),
        )

        # since boot: the first report of each run
        run_first = dict(st["run_first"])
        starts = df.filter(pl.col("new_report")).group_by("run").agg(first=pl.col("report").min())
        for r, f in starts.iter_rows():
            run_first.setdefault(int(r), int(f))
        df = df.with_columns(
            since_boot=(pl.col("report") == pl.col("run").replace_strict(run_first, default=-2, return_dtype=pl.Int32))
            & pl.lit(self.first_is_boot)
        )

        # state for the next block
        if df.height:
            last = df.row(df.height - 1, named=True)
            ranks = df.get_column("rank").drop_nulls()
            st.update(
                run=int(last["_run_raw"]), report=int(last["report"]), sect=last["sect"], hdr=last["hdr"],
                hdr_line=last["hdr_line"], cpu_hdr=last["cpu_hdr"], prev_cpu_hdr=bool(last["kind"] == K_CPU_HDR),
                ts=last["ts_ff"], host=last["host"], run_first=run_first,
                rank=int(ranks[-1]) if ranks.len() else st["rank"],
            )

        names = {K_BLANK: "blank", K_BANNER: "banner", K_TS: "timestamp", K_CPU_HDR: "header", K_DEV_HDR: "header"}
        for kd, n in df.group_by("kind").len().iter_rows():
            if kd in names:
                batch.skipped[names[kd]] += n

        other = df.filter(k == K_OTHER).with_columns(
            ts=pl.when(pl.col("ts_ff") == NO_TS).then(None).otherwise(pl.col("ts_ff"))
        )
        is_dev = pl.col("sect") == "dev"
        is_cpu = (pl.col("sect") == "cpu") & pl.col("prev_cpu_hdr")
        stray = other.filter(~(is_dev | is_cpu))
        if stray.height:
            in_cpu = stray.get_column("sect") == "cpu"
            for table, part, reason in (
                ("iostat_cpu", stray.filter(in_cpu),
                 "unexpected line in the avg-cpu section (one value line follows the avg-cpu header)"),
                ("iostat_device", stray.filter(~in_cpu),
                 "line outside any report section (no Device or avg-cpu header before it)"),
            ):
                rej = reject_frame(part["src_line"], part["line"], reason).with_columns(since_boot=part["since_boot"])
                self._route(batch, table, part.clear(), rej)
        dev = other.filter(is_dev)
        if dev.height:
            self._devices(source, dev, batch, block)
        cpu = other.filter(is_cpu)
        if cpu.height:
            self._cpus(source, cpu, batch)
        return batch

    def _route(self, batch: MeasuredBatch, base: str, rows: pl.DataFrame, rejects: pl.DataFrame) -> None:
        """Since-boot rows go to ``<base>_boot``, interval rows to ``<base>``; a row whose
        report timestamp line could not be read is rejected."""
        if "ts" in rows.columns and rows.height:
            rows = rows.with_columns(pl.col("ts").cast(pl.Int64))
            bad_ts = rows.get_column("ts") == BAD_TS
            if bad_ts.any():
                b = rows.filter(bad_ts)
                rejects = pl.concat([rejects, reject_frame(
                    b["src_line"], b["line"], "the report's timestamp line is not a valid date/time"
                ).with_columns(since_boot=b["since_boot"])])
                rows = rows.filter(~bad_ts)
            rows = rows.with_columns(pl.col("ts").cast(pl.Datetime("us", "UTC")))
        for flag, table in ((False, base), (True, f"{base}_boot")):
            batch.add(table, rows=rows.filter(pl.col("since_boot") == flag) if rows.height else None,
                      rejects=rejects.filter(pl.col("since_boot") == flag).drop("since_boot"))

    def _devices(self, source: Source, dev: pl.DataFrame, batch: MeasuredBatch, block: LineBlock) -> None:
        tok: _Tokens | None = None
        invalid = dev.get_column("line") == "\x00INVALID"
        if invalid.any():
            bad = dev.filter(invalid)
            self._route(batch, "iostat_device", bad.clear(), reject_frame(
                bad["src_line"], bad["line"], "line is not valid UTF-8 text").with_columns(since_boot=bad["since_boot"]))
            dev = dev.filter(~invalid)
        for (hdr,), part in dev.partition_by("hdr", as_dict=True, maintain_order=True).items():
            hdr_line = int(part["hdr_line"][0])
            tokens = hdr.split()
            device_last = tokens[-1] == "Device"
            cols = tokens[:-1] if device_last else tokens[1:]
            _check_known(cols, _DEVICE_COLUMNS, source, hdr_line, "device")
            self._layouts[_layout_name(tokens)] += part.height
            n = len(cols)
            rows = part.get_column("_i").to_numpy()
            fast = _csv_rows(block, rows, cols, device_last)
            if fast is not None:
                group = (pl.col("line").str.contains(r"\s{2}\S+\s*$") if device_last
                         else pl.col("line").str.starts_with(" "))
                good = part.with_columns(fast, is_group=group)
                neg = pl.any_horizontal(pl.col(c) < 0 for c in fast.columns if c != "device")
                if good.select(neg.any()).item():
                    bad_rows = good.filter(neg)
                    reasons = []
                    for r in bad_rows.select(fast.columns).iter_rows(named=True):
                        tok_name = next(t for t in cols if r[_DEVICE_COLUMNS[t][0]] < 0)
                        reasons.append(f"negative value in '{tok_name}': {r[_DEVICE_COLUMNS[tok_name][0]] / _DEVICE_COLUMNS[tok_name][1]:.2f}")
                    rej = reject_frame(bad_rows["src_line"], bad_rows["line"], reasons).with_columns(
                        since_boot=bad_rows["since_boot"])
                    good = good.filter(~neg)
                else:
                    rej = reject_frame([], [], []).with_columns(since_boot=pl.lit(False))
                self._route(batch, "iostat_device", good, rej)
                continue
            tok = tok or _Tokens(block)
            ntok = tok.count[rows]
            first = tok.first[rows]
            ok = ntok >= n + 1
            # value tokens: the n after the name (device first) or the first n (device last)
            vstart = first + (0 if device_last else ntok - n)
            idx = (vstart[ok][:, None] + np.arange(n)[None, :]).ravel()
            values = tok.text(idx)
            name_one = np.where(device_last, first + n, first)
            multi = ok & (ntok > n + 1)  # names with spaces (-j LABEL): joined from their tokens
            names = tok.text(name_one[ok]).to_list()
            if multi.any():
                pos = {int(r): j for j, r in enumerate(np.flatnonzero(ok))}
                for r in np.flatnonzero(multi):
                    lo = first[r] + (n if device_last else 0)
                    names[pos[int(r)]] = " ".join(tok.text(np.arange(lo, lo + ntok[r] - n)).to_list())
            good = part.filter(pl.Series(ok))
            short = part.filter(pl.Series(~ok))
            if short.height:
                rej = reject_frame(short["src_line"], short["line"], [
                    f"expected a device name and {n} values (header at line {hdr_line}), found {c} fields"
                    for c in ntok[~ok].tolist()]).with_columns(since_boot=short["since_boot"])
                self._route(batch, "iostat_device", short.clear(), rej)
            if not good.height:
                continue
            group = (pl.col("line").str.contains(r"\s{2}\S+\s*$") if device_last
                     else pl.col("line").str.starts_with(" "))
            good = good.with_columns(device=pl.Series(names, dtype=pl.String), is_group=group)
            exprs, reason = _typed_matrix(values, good.height, cols, _DEVICE_COLUMNS)
            good = good.with_columns(*exprs, _reason=reason)
            bad = good.filter(pl.col("_reason").is_not_null())
            rej = reject_frame(bad["src_line"], bad["line"], bad["_reason"]).with_columns(since_boot=bad["since_boot"])
            self._route(batch, "iostat_device", good.filter(pl.col("_reason").is_null()), rej)

    def _cpus(self, source: Source, cpu: pl.DataFrame, batch: MeasuredBatch) -> None:
        for (hdr,), part in cpu.partition_by("cpu_hdr", as_dict=True, maintain_order=True).items():
            cols = hdr.split()[1:]
            _check_known(cols, _CPU_COLUMNS, source, int(part["src_line"][0]) - 1, "avg-cpu")
            spec = {c: (_CPU_COLUMNS[c], 1.0, "pct") for c in cols}
            n = len(cols)
            part = part.with_columns(_v=pl.col("line").str.extract_all(r"\S+")).with_columns(
                _n=pl.col("_v").list.len())
            reason = pl.when(pl.col("_n") != n).then(pl.format(f"expected {n} avg-cpu values, found {{}}", pl.col("_n")))
            self._typed_rows(batch, "iostat_cpu", part, cols, spec, reason)

    def _typed_rows(self, batch: MeasuredBatch, table: str, part: pl.DataFrame, cols: list[str], spec: dict,
                    reason: pl.Expr) -> None:
        exprs, reason = _typed_values(part, cols, spec, reason)
        part = part.with_columns(*exprs, _reason=reason.otherwise(pl.lit(None, pl.String)))
        bad = part.filter(pl.col("_reason").is_not_null())
        rej = reject_frame(bad["src_line"], bad["line"], bad["_reason"]).with_columns(since_boot=bad["since_boot"])
        self._route(batch, table, part.filter(pl.col("_reason").is_null()), rej)

    # -- timestamps -----------------------------------------------------------------------
    def _parse_ts(self, text: pl.Series, banner_dates: list[str]) -> pl.Series:
        """Report timestamp lines -> µs since the Unix epoch (UTC); BAD_TS for invalid dates."""
        g = pl.DataFrame({"t": text}).select(pl.col("t").str.extract_groups(TS_RE)).unnest("t")
        g.columns = ["iy", "im", "id", "iH", "iM", "iS", "iz", "a", "sep", "b", "c", "H", "M", "S", "ampm"]
        order = self._resolve_order(g.filter(pl.col("iy").is_null()), banner_dates)
        a, b, c = (pl.col(x).cast(pl.Int32, strict=False) for x in ("a", "b", "c"))
        y, m, d = {"ymd": (a, b, c), "dmy": (c, b, a), "mdy": (c, a, b)}[order]
        y = pl.when(y < 70).then(y + 2000).when(y < 100).then(y + 1900).otherwise(y)
        h = pl.col("H").cast(pl.Int32, strict=False)
        ampm = pl.col("ampm").str.to_lowercase()
        h = (pl.when(ampm == "pm").then(pl.when(h < 12).then(h + 12).otherwise(h))
             .when(ampm == "am").then(pl.when(h == 12).then(0).otherwise(h)).otherwise(h))
        iso = pl.col("iy").is_not_null()

        def pick(iso_col: str, other: pl.Expr, width: int) -> pl.Expr:
            v = pl.when(iso).then(pl.col(iso_col).cast(pl.Int32, strict=False)).otherwise(other)
            return v.cast(pl.String).str.zfill(width)

        stamp = pl.format("{}-{}-{} {}:{}:{}", pick("iy", y, 4), pick("im", m, 2), pick("id", d, 2),
                          pick("iH", h, 2), pick("iM", pl.col("M").cast(pl.Int32, strict=False), 2),
                          pick("iS", pl.col("S").cast(pl.Int32, strict=False), 2))
        naive = stamp.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
        z = pl.col("iz")
        digits = z.str.replace_all(r"[^0-9]", "")
        sign = pl.when(z.str.starts_with("-")).then(-1).otherwise(1)
        offset_us = sign * (digits.str.slice(0, 2).cast(pl.Int64, strict=False) * 60
                            + digits.str.slice(2, 2).cast(pl.Int64, strict=False)) * 60_000_000
        if self.tz is None and g.select(z.is_null().any()).item():
            self.warn("iostat -t times carry no zone: read as UTC (pass --option tz=Area/City for local time)")
        zone = self.tz or "UTC"
        try:
            local = naive.dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null").dt.epoch("us")
            out = g.select(
                pl.when(z == "Z").then(naive.dt.epoch("us"))
                .when(z.is_not_null()).then(naive.dt.epoch("us") - offset_us)
                .otherwise(local)
                .fill_null(BAD_TS)
                .alias("ts")
            )
        except pl.exceptions.ComputeError as e:
            raise ValueError(f"iostat reader: unknown time zone {zone!r} ({e})") from None
        return out.get_column("ts")

    def _resolve_order(self, g: pl.DataFrame, banner_dates: list[str]) -> str:
        if self.date_order != "auto":
            return self.date_order
        if "date_order" in self.metadata:
            return self.metadata["date_order"]
        a = g["a"].to_list()
        b = g["b"].to_list()
        sep = g["sep"].to_list()
        for bd in banner_dates:
            m = re.match(_DATE_RE, bd)
            if m:
                a.append(m.group(1))
                sep.append(m.group(2))
                b.append(m.group(3))
        if not a:
            return "mdy"
        if any(len(x) == 4 for x in a):
            order, why = "ymd", "four-digit first field"
        elif "." in sep:
            order, why = "dmy", "dotted dates"
        elif any(int(x) > 12 for x in a):
            order, why = "dmy", "a first field > 12"
        elif any(int(x) > 12 for x in b):
            order, why = "mdy", "a second field > 12"
        else:
            order, why = "mdy", "assumed (C locale; no field > 12 seen)"
            self.warn("iostat dates are ambiguous (no field > 12): read month first as in the C locale "
                      "(pass --option date_order=dmy for day-first locales)")
        self.metadata["date_order"] = order
        self.metadata["date_order_from"] = why
        return order

    # -- JSON ---------------------------------------------------------------------------
    def _json_block(self, source: Source, block: LineBlock) -> MeasuredBatch:
        """sysstat's own JSON layout, a block of lines at a time: the same report logic as the
        text (a "timestamp", "avg-cpu" or "disk" key not above the previous one starts a
        report; a "nodename" starts a run), each disk / avg-cpu object decoded from its line."""
        st = self._state
        batch = MeasuredBatch()
        df = lines_frame(block)
        s = pl.col("line").str.strip_chars()
        k = pl.col("kind")
        df = df.with_columns(kind=pl.when(s.str.starts_with('{"disk_device"')).then(K_OTHER)
                             .when(s.str.starts_with('"timestamp"')).then(K_TS)
                             .when(s.str.starts_with('"avg-cpu"')).then(K_CPU_HDR)
                             .when(s.str.starts_with('"disk"')).then(K_DEV_HDR)
                             .when(s.str.starts_with('"nodename"')).then(K_BANNER)
                             .otherwise(K_BLANK).cast(pl.Int8))
        rank = (pl.when(k == K_TS).then(0).when(k == K_CPU_HDR).then(1).when(k == K_DEV_HDR).then(2)
                .when(k == K_BANNER).then(3))
        df = df.with_columns(rank=rank).with_columns(
            new_report=(pl.col("rank").is_in([0, 1, 2]) & (pl.col("rank") <= pl.col("rank").forward_fill().shift(1)
                                                           .fill_null(st["rank"]))).fill_null(False))
        df = df.with_columns(
            report=(st["report"] + pl.col("new_report").cum_sum()).cast(pl.Int32),
            _run_raw=st["run"] + (k == K_BANNER).cum_sum(),
            host=pl.when(k == K_BANNER).then(pl.col("line").str.extract(r'"nodename":\s*"([^"]*)"', 1))
            .forward_fill().fill_null(pl.lit(st["host"], pl.String)),
        ).with_columns(run=pl.max_horizontal(pl.col("_run_raw"), pl.lit(0)).cast(pl.Int32))
        if self.opt_str("host") is not None:
            df = df.with_columns(host=pl.lit(self.opt_str("host")))
        hosts = self.metadata.setdefault("hosts", [])
        hosts.extend(h for h in df.filter(k == K_BANNER).get_column("host").unique(maintain_order=True).to_list()
                     if h not in hosts)
        is_ts = df.get_column("kind") == K_TS
        ts_full = pl.Series("_ts", [None] * df.height, dtype=pl.Int64)
        if is_ts.any():
            text = df.get_column("line").filter(is_ts).str.extract(r'"timestamp":\s*"([^"]*)"', 1).fill_null("")
            ts_full = ts_full.scatter(is_ts.arg_true(), self._parse_ts(text, []))
        df = df.with_columns(ts_full).with_columns(
            ts_ff=pl.when(k == K_TS).then(pl.col("_ts")).when(pl.col("new_report")).then(NO_TS).forward_fill()
            .fill_null(pl.lit(st["ts"], pl.Int64)))
        run_first = dict(st["run_first"])
        for r, f in df.filter(pl.col("new_report")).group_by("run").agg(pl.col("report").min()).iter_rows():
            run_first.setdefault(int(r), int(f))
        df = df.with_columns(
            since_boot=(pl.col("report") == pl.col("run").replace_strict(run_first, default=-2, return_dtype=pl.Int32))
            & pl.lit(self.first_is_boot),
            ts=pl.when(pl.col("ts_ff") == NO_TS).then(None).otherwise(pl.col("ts_ff")))
        if df.height:
            last = df.row(df.height - 1, named=True)
            ranks = df.get_column("rank").drop_nulls()
            st.update(run=int(last["_run_raw"]), report=int(last["report"]), ts=last["ts_ff"], host=last["host"],
                      run_first=run_first, rank=int(ranks[-1]) if ranks.len() else st["rank"])
        batch.skipped["json structure"] += int((df.get_column("kind") == K_BLANK).sum())
        batch.skipped["timestamp"] += int(is_ts.sum())
        batch.skipped["header"] += int((df.get_column("kind") == K_DEV_HDR).sum())
        batch.skipped["host"] += int((df.get_column("kind") == K_BANNER).sum())
        for table, rows, obj, key_map in (
            ("iostat_device", df.filter(k == K_OTHER), s.str.strip_chars_end(","), _JSON_DEVICE_KEYS),
            ("iostat_cpu", df.filter(k == K_CPU_HDR), s.str.extract(r'"avg-cpu":\s*(\{.*\})', 1),
             {k2: (v, 1.0, "pct") for k2, v in _JSON_CPU_KEYS.items()}),
        ):
            if rows.height:
                self._json_rows(source, batch, table, rows.with_columns(_obj=obj), key_map)
        return batch

    def _json_rows(self, source: Source, batch: MeasuredBatch, table: str, rows: pl.DataFrame, key_map: dict) -> None:
        try:
            dec = rows.get_column("_obj").str.json_decode(infer_schema_length=None)
        except pl.exceptions.PolarsError as e:
            # one bad line must not hide the others: decode line by line to find it
            good, bad = [], []
            for i, txt in enumerate(rows.get_column("_obj").to_list()):
                try:
                    json.loads(txt or "")
                    good.append(i)
                except json.JSONDecodeError as je:
                    bad.append((i, f"invalid JSON object: {je.msg} (column {je.colno})"))
            if not bad:
                raise TraceFormatError(source.path, int(rows["src_line"][0]), f"iostat JSON: {e}") from None
            b = rows[[i for i, _ in bad]]
            self._route(batch, table, rows.clear(), reject_frame(b["src_line"], b["line"], [r for _, r in bad])
                        .with_columns(since_boot=b["since_boot"]))
            rows = rows[good]
            if not rows.height:
                return
            dec = rows.get_column("_obj").str.json_decode(infer_schema_length=None)
        fields = dec.struct.unnest()
        name_key = "disk_device" if table == "iostat_device" else None
        _check_known([c for c in fields.columns if c != name_key], key_map, source, int(rows["src_line"][0]),
                     "JSON " + table.split("_")[1])
        reason = pl.lit(None, pl.String)
        exprs = []
        for c in reversed([c for c in fields.columns if c != name_key]):
            col, scale, _ = key_map[c]
            raw = pl.col(c)
            val = raw.cast(pl.Float64, strict=False) if fields.schema[c] != pl.Boolean else pl.lit(None, pl.Float64)
            reason = pl.when(raw.is_not_null() & val.is_null()).then(
                pl.format(f"'{c}' is not a number: {{}}", raw.cast(pl.String))).when(val < 0).then(
                pl.format(f"negative value in '{c}': {{}}", raw.cast(pl.String))).otherwise(reason)
            exprs.append((val * scale).alias(col))
        if name_key:
            name = pl.col(name_key)
            reason = pl.when(name.is_null() | (name.str.strip_chars() == "")).then(pl.lit("disk_device missing")) \
                .otherwise(reason)
            exprs += [name.str.strip_chars().alias("device"), name.str.starts_with(" ").alias("is_group")]
        typed = fields.select(*exprs, reason.alias("_reason"))
        rows = pl.concat([rows.drop("_obj"), typed], how="horizontal")
        bad = rows.filter(pl.col("_reason").is_not_null())
        rej = reject_frame(bad["src_line"], bad["line"], bad["_reason"]).with_columns(since_boot=bad["since_boot"])
        self._route(batch, table, rows.filter(pl.col("_reason").is_null()), rej)

    def _json(self, source: Source) -> MeasuredBatch:
        raw = b"".join(source.iter_bytes())
        text = raw.decode("utf-8-sig", errors="replace")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise TraceFormatError(source.path, e.lineno, f"invalid iostat JSON: {e.msg} (column {e.colno})") from None
        try:
            hosts = doc["sysstat"]["hosts"]
        except (KeyError, TypeError):
            raise TraceFormatError(source.path, 1, "JSON has no sysstat.hosts[] (not iostat -o JSON)") from None
        lines = text.splitlines()
        disk_lines = [i + 1 for i, ln in enumerate(lines) if '"disk_device"' in ln]
        cpu_lines = [i + 1 for i, ln in enumerate(lines) if '"avg-cpu"' in ln]
        ts_lines = [i + 1 for i, ln in enumerate(lines) if '"timestamp"' in ln]
        batch = MeasuredBatch()
        devs, cpus = [], []
        report = -1
        ts_text: list[str | None] = []
        for run, host in enumerate(hosts):
            name = self.opt_str("host") or host.get("nodename")
            self.metadata.setdefault("hosts", []).append(host.get("nodename"))
            for k in ("release", "machine", "number-of-cpus", "date"):
                if k in host:
                    self.metadata.setdefault({"release": "kernel", "machine": "arch", "number-of-cpus": "cpus",
                                              "date": "banner_date"}[k], host[k])
            for i, stat in enumerate(host.get("statistics", [])):
                report += 1
                since_boot = self.first_is_boot and i == 0
                ts_text.append(stat.get("timestamp"))
                base = {"host": name, "run": run, "report": report, "since_boot": since_boot, "_ts_i": report}
                if "avg-cpu" in stat:
                    cpus.append((base, stat["avg-cpu"]))
                for d in stat.get("disk", []):
                    devs.append((base, d))
        ts_series = pl.Series(ts_text, dtype=pl.String)
        has_ts = ts_series.is_not_null()
        ts_us = pl.Series([None] * len(ts_text), dtype=pl.Int64)
        if has_ts.any():
            parsed = self._parse_ts(ts_series.filter(has_ts).str.strip_chars(), [])
            ts_us = ts_us.scatter(has_ts.arg_true(), parsed)
        ts_list = ts_us.to_list()
        for table, entries, key_map, name_key, line_nos in (
            ("iostat_device", devs, _JSON_DEVICE_KEYS, "disk_device", disk_lines),
            ("iostat_cpu", cpus, {k: (v, 1.0, "pct") for k, v in _JSON_CPU_KEYS.items()}, None, cpu_lines),
        ):
            if not entries:
                continue
            known = set(key_map) | ({name_key} if name_key else set())
            for _base, d in entries:
                unknown = [k for k in d if k not in known]
                if unknown:
                    _check_known(unknown, {}, source, None, "JSON " + table.split("_")[1])
            lines_ok = len(line_nos) == len(entries)
            rows, bad = [], []
            for j, (base, d) in enumerate(entries):
                row = {k: v for k, v in base.items() if k != "_ts_i"}
                t = ts_list[base["_ts_i"]]
                row["ts"] = None if t is None or t == BAD_TS else t
                row["src_line"] = line_nos[j] if lines_ok else None
                problem = None
                if t == BAD_TS:
                    problem = f"invalid report timestamp {ts_text[base['_ts_i']]!r}"
                if name_key:
                    dev_name = d.get(name_key)
                    if not isinstance(dev_name, str) or not dev_name.strip():
                        problem = problem or f"{name_key} missing"
                    else:
                        row["device"] = dev_name.strip()
                        row["is_group"] = dev_name.startswith(" ")
                for key, val in d.items():
                    if key == name_key:
                        continue
                    col, scale, _ = key_map[key]
                    if isinstance(val, bool) or not isinstance(val, int | float):
                        problem = problem or f"'{key}' is not a number: {val!r}"
                        continue
                    if val < 0:
                        problem = problem or f"negative value in '{key}': {val}"
                    row[col] = float(val) * scale
                if problem:
                    raw = lines[row["src_line"] - 1].strip() if row["src_line"] else json.dumps(d)
                    bad.append((row["src_line"], raw, problem, base["since_boot"]))
                else:
                    rows.append(row)
            df = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame(
                schema={"since_boot": pl.Boolean})
            if "ts" in df.columns:
                df = df.with_columns(pl.col("ts").cast(pl.Int64))
            rej = pl.DataFrame(bad, schema={"src_line": pl.Int64, "raw": pl.String, "reason": pl.String,
                                            "since_boot": pl.Boolean}, orient="row")
            base_table = table
            self._route(batch, base_table, df, rej)
        self.metadata["json_timestamp_lines"] = len(ts_lines)
        self.metadata["first_report"] = "since-boot" if self.first_is_boot else "interval (-y)"
        return batch


def _classify(lines: pl.Series) -> pl.Series:
    """Line kinds. Cheap prefix tests pick the candidates; the exact regular expressions run
    only on those (a few lines per report), never on the device rows."""
    n = lines.len()
    kind = np.full(n, K_OTHER, dtype=np.int8)
    s = lines.str.strip_chars()
    first = s.str.slice(0, 1)
    cand = pl.DataFrame({"s": s, "line": lines}).with_columns(
        blank=pl.col("s") == "",
        banner=pl.col("line").str.starts_with("Linux "),
        ts=first.is_in(list("0123456789")) & pl.col("s").str.contains(":", literal=True),
        cpu=pl.col("s").str.starts_with("avg-cpu:"),
        dev=pl.col("s").str.starts_with("Device") | pl.col("s").str.ends_with("Device"),
    )
    for col, code, pattern, on in (("dev", K_DEV_HDR, DEV_HDR_RE, "s"), ("cpu", K_CPU_HDR, None, "s"),
                                   ("ts", K_TS, TS_RE, "s"), ("banner", K_BANNER, BANNER_RE, "line"),
                                   ("blank", K_BLANK, None, "s")):
        idx = np.flatnonzero(cand.get_column(col).to_numpy())
        if not len(idx):
            continue
        if pattern is not None:
            hit = cand.get_column(on).gather(idx).str.contains(pattern).to_numpy()
            idx = idx[hit]
        kind[idx] = code
    return pl.Series("kind", kind)


#: the source that keys the cache of :func:`_squeeze_kernel` (``replay.jit.cached_njit``)
KERNEL_MODULES = ("traces.iostat",)


@functools.cache
def _squeeze_kernel():
    """:func:`_squeeze_lines` compiled, cached where the replay kernels are (``replay.jit``); numba
    is imported when an iostat file is read, not when this module is (format detection imports
    every reader: ~1 s of numba for any trace)."""
    from replay.jit import cached_njit

    return cached_njit(KERNEL_MODULES)(_squeeze_lines)


def _squeeze_lines(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, out: np.ndarray) -> int:
    """Copy the given lines into ``out`` as CSV: runs of blanks become one comma, leading and
    trailing blanks go, each line ends with a newline. One pass over the bytes (numpy needs
    ten passes and Polars' regex split is slower still); returns the bytes written."""
    j = 0
    for r in range(len(starts)):
        pending = False
        started = False
        for i in range(starts[r], ends[r]):
            c = data[i]
            if c == 32 or c == 9 or c == 13:
                if started:
                    pending = True
            else:
                if pending:
                    out[j] = 44
                    j += 1
                    pending = False
                out[j] = c
                j += 1
                started = True
        out[j] = 10
        j += 1
    return j


def _csv_rows(block: LineBlock, rows: np.ndarray, cols: list[str], device_last: bool) -> pl.DataFrame | None:
    """The fast path for clean device rows: their bytes, runs of blanks squeezed to one comma,
    through Polars' CSV parser (multi-threaded, exact float parsing). None when any row does
    not fit (names with spaces, --human suffixes, bad values): the token path then says which
    field of which line is wrong."""
    starts, ends = block.starts[rows], block.ends[rows]
    out = np.empty(int((ends - starts).sum()) + len(rows), dtype=np.uint8)
    n_out = _squeeze_kernel()(np.frombuffer(block.data, dtype=np.uint8), starts, ends, out)
    squeezed = out[:n_out]
    names = [_DEVICE_COLUMNS[c][0] for c in cols]
    if len(set(names)) != len(names):
        return None
    order = [*names, "device"] if device_last else ["device", *names]
    schema = {c: (pl.String if c == "device" else pl.Float64) for c in order}
    try:
        df = pl.read_csv(squeezed.tobytes(), has_header=False, new_columns=order, schema=schema, quote_char=None,
                         comment_prefix=None, truncate_ragged_lines=False)
    except Exception:  # noqa: BLE001 - any problem sends these rows to the exact token path
        return None
    if df.height != len(rows) or df.select(pl.any_horizontal(pl.all().is_null()).any()).item():
        return None
    if df.select(pl.any_horizontal(~pl.col(pl.Float64).is_finite()).any()).item():
        return None  # 'nan' / 'inf' are not values: the token path rejects them with the reason
    scale = {c: _DEVICE_COLUMNS[t][1] for c, t in zip(names, cols, strict=True)}
    return df.select("device", *((pl.col(c) * scale[c]) if scale[c] != 1 else pl.col(c) for c in names))


class _Tokens:
    """Whitespace-separated tokens of a block without copying it: token j is the bytes from
    its first character to the next token's (trailing blanks are stripped when read), so one
    Arrow array over the block's buffer holds them all."""

    def __init__(self, block: LineBlock):
        a = np.frombuffer(block.data, dtype=np.uint8)
        ws = (a == 32) | (a == 9) | (a == 10) | (a == 13)
        starts = ~ws
        starts[1:] &= ws[:-1]
        start = np.flatnonzero(starts).astype(np.int64)
        line_of = np.searchsorted(block.starts, start, side="right") - 1
        self.count = np.bincount(line_of, minlength=block.n_lines).astype(np.int64)
        self.first = np.concatenate([[0], np.cumsum(self.count)[:-1]]).astype(np.int64)
        base = int(start[0]) if len(start) else 0
        offsets = np.append(start, len(block.data)) - base
        buf = pa.py_buffer(memoryview(block.data)[base:])
        self.series = pl.Series(pa.Array.from_buffers(pa.large_binary(), len(start),
                                                      [None, pa.py_buffer(offsets), buf]))

    def text(self, idx: np.ndarray) -> pl.Series:
        return self.series.gather(np.asarray(idx, dtype=np.int64)).cast(pl.String).str.strip_chars()


def _typed_matrix(values: pl.Series, n_rows: int, cols: list[str], spec: dict) -> tuple[list[pl.Series], pl.Series]:
    """Typed, unit-normalized columns from the row-major value tokens, and the reject reason
    (first unparsable or negative value). --human suffixes and decimal commas take a slower
    path only for the tokens that need it."""
    n = len(cols)
    num = values.cast(pl.Float64, strict=False)
    failed = num.is_null() & values.is_not_null()
    scales = np.tile(np.array([spec[c][1] for c in cols], dtype=np.float64), n_rows)
    out = num.to_numpy().astype(np.float64) * scales
    if failed.any():
        fi = np.flatnonzero(failed.to_numpy())
        kinds = np.tile(np.array([spec[c][2] for c in cols]), n_rows)[fi]
        frame = pl.DataFrame({"tok": values.gather(fi), "kind": kinds}).with_columns(
            m=pl.col("tok").str.extract_groups(r"^(-?\d*[.,]?\d+)([A-Za-z%]*)$"))
        base = frame.select(pl.col("m").struct.field("1").str.replace(",", ".", literal=True)
                            .cast(pl.Float64, strict=False)).to_series().to_numpy()
        suffix = frame.select(pl.col("m").struct.field("2")).to_series().to_list()
        fixed = np.full(len(fi), np.nan)
        for j, (b, sfx, kd, pos) in enumerate(zip(base, suffix, kinds, fi, strict=True)):
            if b != b or sfx is None:
                continue
            factor = spec[cols[pos % n]][1] if sfx == "" else _SUFFIX_SCALE[kd].get(sfx)
            if factor is not None:
                fixed[j] = b * factor
        out[fi] = fixed
    mat = out.reshape(n_rows, n)
    bad_num = ~np.isfinite(mat)
    neg = mat < 0
    reason = np.full(n_rows, None, dtype=object)
    if bad_num.any() or neg.any():
        toks = values.to_numpy().reshape(n_rows, n)
        for r in np.flatnonzero(bad_num.any(axis=1) | neg.any(axis=1)):
            c = int(np.flatnonzero(bad_num[r] | neg[r])[0])
            reason[r] = (f"column '{cols[c]}' is not a number: '{str(toks[r, c])[:30]}'" if bad_num[r, c]
                         else f"negative value in '{cols[c]}': {toks[r, c]}")
    series = {}
    for c, tok_name in enumerate(cols):
        col = spec[tok_name][0]
        series[col] = pl.Series(col, mat[:, c]).fill_nan(None)
    return list(series.values()), pl.Series("_reason", reason.tolist(), dtype=pl.String)


def _typed_values(part: pl.DataFrame, cols: list[str], spec: dict, reason: pl.Expr) -> tuple[list[pl.Expr], pl.Expr]:
    """Typed, unit-normalized value columns from the token list ``_v``, and the reject reason
    extended with the first unparsable or negative value. --human suffixes and decimal commas
    take a slower path only for the columns that need it."""
    exprs = []
    out_cols: dict[str, pl.Expr] = {}
    for i, tok_name in enumerate(cols):
        col, scale, vkind = spec[tok_name]
        tok = pl.col("_v").list.get(i, null_on_oob=True)
        fast = tok.cast(pl.Float64, strict=False)
        needs_slow = part.select((tok.is_not_null() & fast.is_null()).any()).item()
        if needs_slow:
            m = tok.str.extract_groups(r"^(-?\d*[.,]?\d+)([A-Za-z%]*)$")
            num = m.struct.field("1").str.replace(",", ".", literal=True).cast(pl.Float64, strict=False)
            suffix = m.struct.field("2")
            table = _SUFFIX_SCALE[vkind]
            factor = suffix.replace_strict({k: v for k, v in table.items() if v is not None}, default=None,
                                           return_dtype=pl.Float64)
            value = pl.when(suffix == "").then(num * scale).otherwise(num * factor)
        else:
            value = fast * scale
        reason = reason.when(tok.is_not_null() & value.is_null()).then(
            pl.format(f"column '{tok_name}' is not a number: '{{}}'", tok.str.slice(0, 30)))
        reason = reason.when(value < 0).then(pl.format(f"negative value in '{tok_name}': {{}}", tok))
        out_cols[col] = value
    for col, value in out_cols.items():
        exprs.append(value.alias(col))
    return exprs, reason


def _layout_name(tokens: list[str]) -> str:
    if tokens[0] == "Device:":
        family = "sysstat<=10"
    elif "d/s" in tokens or "dkB/s" in tokens or "kB_dscd/s" in tokens or "MB_dscd/s" in tokens or "f/s" in tokens:
        family = "sysstat>=12"
    elif "r_await" in tokens or "rareq-sz" in tokens or "areq-sz" in tokens:
        family = "sysstat>=11"
    else:
        family = "sysstat"
    extended = any(t in tokens for t in ("r/s", "await", "rqm/s"))
    short = "kB/s" in tokens or "MB/s" in tokens or any("w+d" in t for t in tokens)
    return f"{family} {'extended' if extended else 'basic'}{' short' if short else ''}" + (
        " device-last" if tokens[-1] == "Device" else "")
