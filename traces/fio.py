"""fio results and logs: JSON (2.x and 3.x, json+), terse v3, bw/iops/lat/clat/slat logs,
histogram logs, and a per-I/O latency log as a canonical block trace.

Units (fio HOWTO, "Output" and "Log file formats"; stat.c):

- JSON of fio 2.x: ``slat``/``clat``/``lat`` and their percentiles in microseconds,
  ``io_bytes`` in KiB (fio 2.x shifted it by 10 before printing); fio 3.x: ``slat_ns``/
  ``clat_ns``/``lat_ns`` in nanoseconds, ``io_bytes`` in bytes next to ``io_kbytes``. The keys
  say which, so the unit never depends on a guess. ``bw`` is KiB/s in both.
- terse (``--minimal``) v3: latencies in microseconds in every fio version, sizes in KiB.
- logs: bandwidth KiB/s, IOPS, latency in microseconds (fio 2.x) or nanoseconds (fio 3.x).
  A latency log does not say which: the unit comes from the ``fio_version`` or
  ``latency_unit`` option, and a latency log read without either is an error.
- histogram logs carry FIO_IO_U_PLAT_NR bins: 1216 (fio 2.x, microsecond values) or 1856
  (fio 3.x, nanosecond values); the bin count says which.

Tolerated around fio JSON: a UTF-8 BOM, text before the document (fio's warnings and error
messages, ``\\r`` progress lines of client/server runs), several concatenated documents (one per
``--output`` append), failed jobs (``error`` != 0: kept, flagged, listed in the warnings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schemas.measured import FIO_PERCENTILES, pct_name
from schemas.units import parse_size
from traces.base import op_from_codes, with_reason
from traces.delimited import DelimitedReader, Field
from traces.errors import TraceFormatError
from traces.measured import MeasuredBatch, MeasuredReader, lines_frame, reject_frame
from traces.source import LineBlock, Source

DIRS = ("read", "write", "trim")
#: FIO_IO_U_PLAT_BITS / _VAL (stat.h): 64 linear buckets per power-of-two group
PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
#: FIO_IO_U_PLAT_NR: 19 groups in fio 2.x (values in us), 29 groups in fio 3.x (values in ns)
HIST_BINS_UNIT_NS = {19 * PLAT_VAL: 1000, 29 * PLAT_VAL: 1}
LOG_NAME_RE = re.compile(r"_(bw|iops|lat|clat|slat)(_hist)?\.(\d+)\.log(?:\.[A-Za-z0-9]+)?$")
LAT_KINDS = ("lat", "clat", "slat")


def fio_major_minor(version: str | None) -> tuple[int, int] | None:
    """'fio-3.14-6-g97134' -> (3, 14); '2.18' -> (2, 18); None when unreadable."""
    m = re.search(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def latency_unit_ns(reader: MeasuredReader | DelimitedReader, required: bool, what: str) -> int | None:
    """ns per logged latency unit from the ``latency_unit`` or ``fio_version`` option."""
    opts = reader.options
    unit = opts.get("latency_unit")
    if unit is not None:
        unit = str(unit).strip().lower()
        if unit not in ("us", "ns"):
            raise ValueError(f"{reader.name} reader: latency_unit must be us or ns, got {unit!r}")
        return 1000 if unit == "us" else 1
    ver = opts.get("fio_version")
    if ver is not None:
        mm = fio_major_minor(str(ver))
        if mm is None:
            raise ValueError(f"{reader.name} reader: fio_version {ver!r} is not a version like 3.1 or fio-2.18")
        return 1000 if mm[0] < 3 else 1
    if required:
        raise ValueError(
            f"{what}: fio latency logs are in microseconds (fio 2.x) or nanoseconds (fio 3.x) and do not say "
            "which; pass --option fio_version=3.x (or latency_unit=us|ns)"
        )
    return None


def plat_idx_to_val(idx: np.ndarray) -> np.ndarray:
    """Value a histogram bin stands for (fio stat.c ``plat_idx_to_val``: the bucket's middle,
    truncated to an integer), in the histogram's own unit."""
    idx = np.asarray(idx, dtype=np.int64)
    out = idx.copy()
    big = idx >= (PLAT_VAL << 1)
    error_bits = (idx[big] >> PLAT_BITS) - 1
    base = np.left_shift(np.int64(1), error_bits + PLAT_BITS)
    k = idx[big] % PLAT_VAL
    out[big] = base + ((k + 0.5) * np.left_shift(np.int64(1), error_bits)).astype(np.int64)
    return out


def _num(v) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _int(v) -> int | None:
    x = _num(v)
    return None if x is None or x != x else int(x)


def _bs_for_dir(bs: str | None, d: str) -> int | None:
    """'4k' -> 4096; '4k,64k' gives the read and write sizes; ranges and splits -> None."""
    if not bs:
        return None
    parts = [p.strip() for p in str(bs).split(",")]
    i = DIRS.index(d)
    pick = parts[i] if i < len(parts) and parts[i] else parts[-1 if i >= len(parts) else 0]
    try:
        return parse_size(pick)
    except ValueError:
        return None


# -- fio JSON ------------------------------------------------------------------------------------
class FioJsonReader(MeasuredReader):
    name = "fio-json"
    description = "fio --output-format=json / json+ (2.x and 3.x), several documents, text around them"
    tool = "fio"
    tables = ("fio_job", "fio_percentile", "fio_lat_bucket", "fio_clat_bins", "fio_disk_util")

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        text = head.decode("utf-8", errors="replace")
        return bool(re.search(r'\{\s*"fio version"\s*:\s*"fio-', text))

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        raw = b"".join(source.iter_bytes())
        text = raw.decode("utf-8", errors="replace").replace("\ufeff", "")
        batch = MeasuredBatch()
        docs, messages = self._split(text, source)
        if not docs:
            raise TraceFormatError(source.path, None, "no fio JSON document found")
        if messages:
            batch.skipped["text"] += len(messages)
            self.metadata["messages"] = messages[:50]
        versions = []
        for d, (line, doc) in enumerate(docs):
            versions.append(doc.get("fio version"))
            self._doc(batch, d, line, doc)
        self.metadata["tool_version"] = versions[0]
        self.metadata["documents"] = len(docs)
        yield batch

    def _split(self, text: str, source: Source) -> tuple[list[tuple[int, dict]], list[str]]:
        """JSON documents (with the line each starts on) and the non-JSON text lines around them."""
        dec = json.JSONDecoder()
        docs: list[tuple[int, dict]] = []
        messages: list[str] = []
        pos = 0
        first_error: tuple[int, str] | None = None
        starts = [m.start() for m in re.finditer(r"(?:^|(?<=[\r\n]))[ \t]*\{", text)]
        i = 0
        while i < len(starts):
            s = starts[i]
            if s < pos:
                i += 1
                continue
            brace = text.index("{", s)
            try:
                doc, end = dec.raw_decode(text, brace)
            except json.JSONDecodeError as e:
                if first_error is None:
                    first_error = (e.lineno, e.msg)
                i += 1
                continue
            if not isinstance(doc, dict) or "fio version" not in doc:
                i += 1
                continue
            messages += [m.strip() for m in re.split(r"[\r\n]+", text[pos:brace]) if m.strip()]
            docs.append((text.count("\n", 0, brace) + 1, doc))
            pos = end
            i += 1
        messages += [m.strip() for m in re.split(r"[\r\n]+", text[pos:]) if m.strip()]
        if not docs and first_error:
            raise TraceFormatError(source.path, first_error[0], f"invalid fio JSON: {first_error[1]}")
        return docs, messages

    def _doc(self, batch: MeasuredBatch, d: int, line: int, doc: dict) -> None:
        version = doc.get("fio version")
        ts = doc.get("timestamp")
        when = datetime.fromtimestamp(ts, tz=UTC) if isinstance(ts, int | float) else None
        gopts = doc.get("global options") or {}
        jobs = doc.get("jobs")
        client = False
        if jobs is None and "client_stats" in doc:
            jobs, client = doc["client_stats"], True
        if not isinstance(jobs, list):
            batch.add("fio_job", rejects=reject_frame([line], [str(version)], "document has no jobs[] array"))
            return
        job_rows, pct_rows, bucket_rows, bin_rows, bad = [], [], [], [], []
        for j, job in enumerate(jobs):
            if not isinstance(job, dict):
                bad.append((line, json.dumps(job)[:200], f"job {j} is not an object"))
                continue
            opts = {**gopts, **(job.get("job options") or {})}
            name = job.get("jobname")
            err = _int(job.get("error"))
            if err:
                self.warn(f"fio job '{name}' (document {d}, line {line}) failed with error {err}")
                self.metadata.setdefault("failed_jobs", []).append({"doc": d, "job": name, "error": err})
            base = {
                "doc": d, "job_index": j, "hostname": job.get("hostname") if client else None, "jobname": name,
                "groupid": _int(job.get("groupid")), "error": err, "fio_version": version, "timestamp": when,
                "rw": opts.get("rw") or opts.get("readwrite"), "bs": opts.get("bs"),
                "iodepth": _int(opts.get("iodepth")), "numjobs": _int(opts.get("numjobs")),
                "ioengine": opts.get("ioengine"), "direct": _int(opts.get("direct")), "filename": opts.get("filename"),
                "usr_cpu_pct": _num(job.get("usr_cpu")), "sys_cpu_pct": _num(job.get("sys_cpu")),
                "ctx": _int(job.get("ctx")), "src_line": line,
            }
            if not name:
                bad.append((line, json.dumps({k: job.get(k) for k in ("jobname", "error")}), f"job {j} has no jobname"))
                continue
            present = [x for x in DIRS if isinstance(job.get(x), dict)]
            if not present:
                bad.append((line, str(name), f"job '{name}' has no read/write/trim section"))
                continue
            for direction in present:
                dd = job[direction]
                if direction == "trim" and not _int(dd.get("total_ios")) and "trim" not in str(base["rw"] or ""):
                    continue  # fio prints an empty trim section for every job
                row, problem = self._direction(base, direction, dd, pct_rows, bin_rows)
                if problem:
                    bad.append((line, f"{name} {direction}", problem))
                else:
                    job_rows.append(row)
            for unit, mult in (("ns", 1), ("us", 1000), ("ms", 1_000_000)):
                for label, pct in (job.get(f"latency_{unit}") or {}).items():
                    bound = re.sub(r"[^0-9]", "", str(label))
                    if not bound or _num(pct) is None:
                        continue
                    bucket_rows.append({"doc": d, "job_index": j, "bucket": f"{label}{unit}",
                                        "bucket_ns": int(bound) * mult, "pct": _num(pct), "src_line": line})
        disk_rows = []
        for du in doc.get("disk_util") or []:
            disk_rows.append({
                "doc": d, "name": du.get("name"), "read_ios": _int(du.get("read_ios")),
                "write_ios": _int(du.get("write_ios")), "read_merges": _int(du.get("read_merges")),
                "write_merges": _int(du.get("write_merges")), "read_ticks_ms": _int(du.get("read_ticks")),
                "write_ticks_ms": _int(du.get("write_ticks")), "in_queue_ms": _int(du.get("in_queue")),
                "util_pct": _num(du.get("util")), "src_line": line,
            })
        for table, rows in (("fio_job", job_rows), ("fio_percentile", pct_rows), ("fio_lat_bucket", bucket_rows),
                            ("fio_clat_bins", bin_rows), ("fio_disk_util", disk_rows)):
            if rows:
                batch.add(table, rows=pl.DataFrame(rows, infer_schema_length=None, strict=False))
        if bad:
            batch.add("fio_job", rejects=reject_frame([b[0] for b in bad], [b[1] for b in bad], [b[2] for b in bad]))

    def _direction(self, base: dict, direction: str, dd: dict, pct_rows: list, bin_rows: list) -> tuple[dict, str | None]:
        row = {**base, "dir": direction, "bs_bytes": _bs_for_dir(base["bs"], direction)}
        v3 = "clat_ns" in dd or "lat_ns" in dd
        if not v3 and "clat" not in dd and "lat" not in dd:
            return row, f"no latency section (clat/clat_ns) in {direction}"
        mult = 1 if v3 else 1000  # fio 2.x latencies are in us
        io = _int(dd.get("io_bytes"))
        if io is None and dd.get("io_kbytes") is None:
            return row, f"{direction}.io_bytes missing or not a number: {dd.get('io_bytes')!r}"
        # fio 2.x printed io_bytes in KiB; 3.x prints bytes and adds io_kbytes
        row["io_bytes"] = io if "io_kbytes" in dd else (io * 1024 if io is not None else None)
        for key, col in (("total_ios", "total_ios"), ("short_ios", "short_ios"), ("drop_ios", "drop_ios"),
                         ("runtime", "runtime_ms")):
            row[col] = _int(dd.get(key))
        row["iops"] = _num(dd.get("iops"))
        bw_b = _num(dd.get("bw_bytes"))
        bw_k = _num(dd.get("bw"))
        row["bw_bytes_per_s"] = bw_b if bw_b is not None else (bw_k * 1024 if bw_k is not None else None)
        for key in ("min", "max", "mean", "dev"):
            v = _num(dd.get(f"bw_{key}"))
            row[f"bw_{key}_bytes_per_s"] = v * 1024 if v is not None else None
        for key in ("min", "max", "mean", "stddev"):
            row[f"iops_{key}"] = _num(dd.get(f"iops_{key}"))
        for kind in LAT_KINDS:
            obj = dd.get(f"{kind}_ns" if v3 else kind)
            if not isinstance(obj, dict):
                continue
            for s in ("min", "max", "mean", "stddev"):
                v = _num(obj.get(s))
                row[f"{kind}_{s}_ns"] = v * mult if v is not None else None
            for p, val in (obj.get("percentile") or {}).items():
                pf, vf = _num(p), _num(val)
                if pf is None or vf is None or pf <= 0:  # fio 2.x pads the list with "0.00": 0
                    continue
                pct_rows.append({"doc": base["doc"], "job_index": base["job_index"], "dir": direction,
                                 "kind": kind, "pct": pf, "latency_ns": vf * mult, "src_line": base["src_line"]})
                if kind == "clat" and pf in FIO_PERCENTILES:
                    row[f"clat_{pct_name(pf)}_ns"] = vf * mult
            bins = obj.get("bins")
            if isinstance(bins, dict) and bins:
                self._bins(bins, v3, kind, direction, base, bin_rows)
        for k in ("total_ios", "io_bytes", "runtime_ms"):
            if row.get(k) is not None and row[k] < 0:
                return row, f"{direction}.{k} is negative: {row[k]}"
        return row, None

    @staticmethod
    def _bins(bins: dict, v3: bool, kind: str, direction: str, base: dict, out: list) -> None:
        """json+ bins: fio 3.x keys are latencies in ns; fio 2.x keys are bin indexes (values in us)."""
        pairs = [(k, _int(v)) for k, v in bins.items() if not k.startswith("FIO_")]
        pairs = [(k, v) for k, v in pairs if v]
        if not pairs:
            return
        keys = np.array([int(k) for k, _ in pairs], dtype=np.int64)
        lat_ns = keys if v3 else plat_idx_to_val(keys) * 1000
        for ns, (_, count) in zip(lat_ns.tolist(), pairs, strict=True):
            out.append({"doc": base["doc"], "job_index": base["job_index"], "dir": direction, "kind": kind,
                        "latency_ns": int(ns), "count": count, "src_line": base["src_line"]})


# -- fio terse v3 ------------------------------------------------------------------------------
#: per-direction fields of terse v3 (fio HOWTO "Terse output"): 4 status, slat 4, clat 4,
#: 20 clat percentiles, lat 4, bw 5
_TERSE_DIR_FIELDS = 41
_TERSE_FIXED = 5 + 2 * _TERSE_DIR_FIELDS + 5 + 7 + 10 + 12  # 121, then disk util groups of 9
_LAT_US_BUCKETS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")
_LAT_MS_BUCKETS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000")


class FioTerseReader(MeasuredReader):
    name = "fio-terse"
    description = "fio --minimal / --output-format=terse, version 3"
    tool = "fio"
    tables = ("fio_job", "fio_percentile", "fio_lat_bucket", "fio_disk_util")

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        lines = head.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()[:20]
        return any(re.match(r"^\d;fio-[^;]*;[^;]*;\d+;\d+;", ln) for ln in lines)

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        for block in source.iter_line_blocks(8 << 20):
            yield self._block(block)

    def _block(self, block: LineBlock) -> MeasuredBatch:
        batch = MeasuredBatch()
        df = lines_frame(block)
        jobs, pcts, buckets, disks, bad = [], [], [], [], []
        for idx, (line, src) in enumerate(df.iter_rows()):
            s = line.strip()
            if not s:
                batch.skipped["blank"] += 1
                continue
            if not re.match(r"^\d+;", s):
                batch.skipped["text"] += 1
                self.metadata.setdefault("messages", []).append(s[:200]) if len(
                    self.metadata.get("messages", [])) < 50 else None
                continue
            f = s.split(";")
            if f[0] != "3":
                bad.append((src, line, f"terse version {f[0]} is not supported (only version 3)"))
                continue
            if len(f) < _TERSE_FIXED:
                bad.append((src, line, f"terse v3 line has {len(f)} fields, expected at least {_TERSE_FIXED}"))
                continue
            try:
                self._line(f, src, idx, jobs, pcts, buckets, disks)
            except ValueError as e:
                bad.append((src, line, str(e)))
        for table, rows in (("fio_job", jobs), ("fio_percentile", pcts), ("fio_lat_bucket", buckets),
                            ("fio_disk_util", disks)):
            if rows:
                batch.add(table, rows=pl.DataFrame(rows, infer_schema_length=None, strict=False))
        if bad:
            batch.add("fio_job", rejects=reject_frame([b[0] for b in bad], [b[1] for b in bad], [b[2] for b in bad]))
        return batch

    def _line(self, f: list[str], src: int, idx: int, jobs: list, pcts: list, buckets: list, disks: list) -> None:
        def num(i: int, what: str) -> float:
            v = f[i].strip().rstrip("%")
            try:
                x = float(v)
            except ValueError:
                raise ValueError(f"field {i + 1} ({what}) is not a number: '{f[i][:30]}'") from None
            if x < 0:
                raise ValueError(f"field {i + 1} ({what}) is negative: {f[i]}")
            return x

        version, jobname, groupid, error = f[1], f[2], int(num(3, "groupid")), int(num(4, "error"))
        self.metadata.setdefault("tool_version", version)
        if error:
            self.warn(f"fio job '{jobname}' (line {src}) failed with error {error}")
            self.metadata.setdefault("failed_jobs", []).append({"line": src, "job": jobname, "error": error})
        cpu = 5 + 2 * _TERSE_DIR_FIELDS
        rows = []
        for di, direction in enumerate(("read", "write")):
            o = 5 + di * _TERSE_DIR_FIELDS
            row = {"doc": 0, "job_index": idx, "jobname": jobname, "groupid": groupid, "error": error,
                   "fio_version": version, "dir": direction, "src_line": src,
                   "io_bytes": int(num(o, "total KiB")) * 1024, "bw_bytes_per_s": num(o + 1, "bw KiB/s") * 1024,
                   "iops": num(o + 2, "iops"), "runtime_ms": int(num(o + 3, "runtime ms"))}
            row["total_ios"] = None  # terse v3 has no I/O count
            for k, kind in enumerate(("slat", "clat")):
                for s, stat in enumerate(("min", "max", "mean", "stddev")):
                    row[f"{kind}_{stat}_ns"] = num(o + 4 + 4 * k + s, f"{kind} {stat}") * 1000
            for p in range(20):
                cell = f[o + 12 + p]
                pk, _, pv = cell.partition("%=")
                if not _:
                    raise ValueError(f"field {o + 13 + p} is not a percentile 'P%=VALUE': '{cell[:30]}'")
                pf, vf = _num(pk), _num(pv)
                if pf is None or vf is None:
                    raise ValueError(f"field {o + 13 + p} is not a percentile 'P%=VALUE': '{cell[:30]}'")
                if pf <= 0:
                    continue
                pcts.append({"doc": 0, "job_index": idx, "dir": direction, "kind": "clat", "pct": pf,
                             "latency_ns": vf * 1000, "src_line": src})
                if pf in FIO_PERCENTILES:
                    row[f"clat_{pct_name(pf)}_ns"] = vf * 1000
            for s, stat in enumerate(("min", "max", "mean", "stddev")):
                row[f"lat_{stat}_ns"] = num(o + 32 + s, f"lat {stat}") * 1000
            row["bw_min_bytes_per_s"] = num(o + 36, "bw min") * 1024
            row["bw_max_bytes_per_s"] = num(o + 37, "bw max") * 1024
            row["bw_mean_bytes_per_s"] = num(o + 39, "bw mean") * 1024
            row["bw_dev_bytes_per_s"] = num(o + 40, "bw dev") * 1024
            row["usr_cpu_pct"] = num(cpu, "usr cpu")
            row["sys_cpu_pct"] = num(cpu + 1, "sys cpu")
            row["ctx"] = int(num(cpu + 2, "ctx"))
            rows.append(row)
        jobs.extend(rows)
        lat = cpu + 5 + 7
        for i, b in enumerate(_LAT_US_BUCKETS):
            buckets.append({"doc": 0, "job_index": idx, "bucket": f"{b}us", "bucket_ns": int(b) * 1000,
                            "pct": num(lat + i, f"latency <= {b}us"), "src_line": src})
        for i, b in enumerate(_LAT_MS_BUCKETS):
            buckets.append({"doc": 0, "job_index": idx, "bucket": f"{b}ms",
                            "bucket_ns": int(b.lstrip(">=")) * 1_000_000,
                            "pct": num(lat + 10 + i, f"latency <= {b}ms"), "src_line": src})
        rest = f[_TERSE_FIXED:]
        while len(rest) >= 9 and rest[0] and not re.match(r"^[\d.]+%?$", rest[0]):
            g = rest[:9]
            try:
                vals = [int(x) for x in g[1:8]]
            except ValueError:
                raise ValueError(f"disk util of '{g[0]}' is not numeric: {';'.join(g)[:60]}") from None
            disks.append({"doc": idx, "name": g[0], "read_ios": vals[0], "write_ios": vals[1], "read_merges": vals[2],
                          "write_merges": vals[3], "read_ticks_ms": vals[4], "write_ticks_ms": vals[5],
                          "in_queue_ms": vals[6], "util_pct": _num(g[8].rstrip("%")), "src_line": src})
            rest = rest[9:]


# -- fio logs -------------------------------------------------------------------------------------
def _log_name(path: Path) -> tuple[str | None, bool, int | None]:
    m = LOG_NAME_RE.search(path.name)
    return (m.group(1), bool(m.group(2)), int(m.group(3))) if m else (None, False, None)


class FioLogReader(MeasuredReader):
    """bw / iops / lat / clat / slat logs (``time_ms, value, dir, bs[, offset][, prio]``) and
    histogram logs (``time_ms, dir, bs, bin0..binN``)."""

    name = "fio-log"
    description = "fio write_bw/iops/lat/hist_log files (<prefix>_<kind>.<job>.log)"
    tool = "fio"
    tables = ("fio_log", "fio_hist")
    option_help = {
        "fio_version": "fio version that wrote the log, e.g. 3.1 (latency unit; meaning of a 5th field)",
        "latency_unit": "us or ns: the unit of latency values (instead of fio_version)",
        "log_kind": "bw, iops, lat, clat or slat when the file name does not say",
        "job": "job number when the file name does not say",
        "log_offset": "true/false: whether a 5-field log's 5th field is the offset (log_offset=1)",
    }

    def __init__(self, order: str = "sort", **options: Any):
        super().__init__(order, **options)
        self.log_offset = self.opt_bool("log_offset")
        if "fio_version" in self.options:
            self.metadata["tool_version"] = str(self.options["fio_version"])

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        lines = [ln for ln in head.decode("utf-8", errors="replace").splitlines()[:10] if ln.strip()]
        data = lines[:-1] or lines
        pat = re.compile(r"^\d+, -?\d+(\.\d+)?, [012], \d+(, \d+){0,3}$")
        hist = re.compile(r"^\d+, [012], \d+(, \d+){1000,}")
        return bool(data) and all(pat.match(ln.rstrip("\r")) or hist.match(ln) for ln in data)

    def batches(self, source: Source) -> Iterator[MeasuredBatch]:
        kind, is_hist, job = _log_name(source.path)
        kind = self.opt_str("log_kind", kind)
        if kind is not None and kind not in ("bw", "iops", *LAT_KINDS):
            raise ValueError(f"fio-log reader: log_kind must be bw, iops, lat, clat or slat, got {kind!r}")
        job = int(self.options["job"]) if "job" in self.options else job
        head = source.head(1 << 16).decode("utf-8", errors="replace")
        first = next((ln for ln in head.splitlines() if ln.strip()), "")
        n_fields = first.count(",") + 1
        is_hist = is_hist or n_fields > 1000
        if kind is None:
            raise TraceFormatError(source.path, None, "cannot tell the log kind from the file name "
                                   "(<prefix>_<bw|iops|lat|clat|slat>[_hist].<job>.log): pass --option log_kind=...")
        self.metadata.update(log_kind=kind, job=job, histogram=is_hist)
        if is_hist:
            yield from self._hist(source, kind, job)
        else:
            yield from self._log(source, kind, job, n_fields)

    def _layout(self, n: int, source: Source) -> list[str]:
        """Column names of a 4- to 6-field log line."""
        if n == 4:
            return ["time_ms", "value", "dir", "bs"]
        if n == 6:
            return ["time_ms", "value", "dir", "bs", "offset", "prio"]
        if n == 5:
            if self.log_offset is not None:
                return ["time_ms", "value", "dir", "bs", "offset" if self.log_offset else "prio"]
            mm = fio_major_minor(self.opt_str("fio_version"))
            if mm is None:
                raise TraceFormatError(source.path, 1, "5-field fio log: the 5th field is the offset (log_offset=1, "
                                       "fio < 3.18) or the priority (fio >= 3.18); pass --option log_offset=1|0 "
                                       "or fio_version=X.Y")
            return ["time_ms", "value", "dir", "bs", "prio" if mm >= (3, 18) else "offset"]
        raise TraceFormatError(source.path, 1, f"fio log lines have 4 to 6 fields, the first has {n}")

    def _log(self, source: Source, kind: str, job: int | None, n_fields: int) -> Iterator[MeasuredBatch]:
        cols = self._layout(n_fields, source)
        unit = latency_unit_ns(self, kind in LAT_KINDS, f"{source.path}: {kind} log") if kind in LAT_KINDS else None
        if unit is not None:
            self.metadata["latency_unit"] = "us" if unit == 1000 else "ns"
        schema = dict.fromkeys(cols, pl.Int64)
        if kind in ("bw", "iops"):
            schema["value"] = pl.Float64
        for block in source.iter_line_blocks(16 << 20):
            batch = MeasuredBatch()
            df = _csv_block(block, schema, batch)
            value = pl.col("value")
            df = df.with_columns(
                log_kind=pl.lit(kind), job=pl.lit(job, pl.Int32),
                dir=pl.col("dir").replace_strict({0: "read", 1: "write", 2: "trim"}, default=None, return_dtype=pl.String),
                bs_bytes=pl.when(pl.col("bs") > 0).then(pl.col("bs")),
                offset_bytes=pl.col("offset") if "offset" in cols else pl.lit(None, pl.Int64),
                prio=pl.col("prio") if "prio" in cols else pl.lit(None, pl.Int32),
                latency_ns=(value * unit) if unit is not None else pl.lit(None, pl.Int64),
                bw_kib_per_s=value if kind == "bw" else pl.lit(None, pl.Float64),
                iops=value if kind == "iops" else pl.lit(None, pl.Float64),
            )
            reason = (pl.when(pl.col("dir").is_null()).then(pl.format("direction {} is not 0, 1 or 2",
                                                                       pl.col("_dir_raw")))
                      .when(value < 0).then(pl.format("negative value {}", value))
                      .when(pl.col("time_ms") < 0).then(pl.format("negative time {}", pl.col("time_ms")))
                      .when(pl.col("bs") < 0).then(pl.format("negative block size {}", pl.col("bs"))))
            if "offset" in cols:
                reason = reason.when(pl.col("offset") < 0).then(pl.format("negative offset {}", pl.col("offset")))
            df = df.with_columns(_reason=pl.coalesce(pl.col("_reason"), reason.otherwise(pl.lit(None, pl.String))))
            _emit(batch, "fio_log", df, block)
            yield batch

    def _hist(self, source: Source, kind: str, job: int | None) -> Iterator[MeasuredBatch]:
        n_bins: int | None = None
        for block in source.iter_line_blocks(16 << 20):
            batch = MeasuredBatch()
            df = lines_frame(block).with_columns(_idx=pl.int_range(pl.len(), dtype=pl.Int64))
            blank = df.get_column("line").str.strip_chars() == ""
            batch.skipped["blank"] += int(blank.sum())
            df = df.filter(~blank)
            parts = df.get_column("line").str.split(",")
            counts = parts.list.len()
            if n_bins is None and df.height:
                n_bins = int(counts[0]) - 3
                if n_bins not in HIST_BINS_UNIT_NS:
                    raise TraceFormatError(source.path, int(df["src_line"][0]),
                                           f"histogram log line has {n_bins} bins; fio writes 1216 (2.x) or 1856 (3.x)")
                unit = HIST_BINS_UNIT_NS[n_bins]
                opt_unit = latency_unit_ns(self, False, "")
                if opt_unit is not None and opt_unit != unit:
                    raise TraceFormatError(source.path, int(df["src_line"][0]),
                                           f"{n_bins} histogram bins mean {'us' if unit == 1000 else 'ns'} values, "
                                           "which contradicts the fio_version/latency_unit option")
                self.metadata.update(bins=n_bins, latency_unit="us" if unit == 1000 else "ns")
                self._vals_ns = plat_idx_to_val(np.arange(n_bins)).astype(np.float64) * unit
            ok = (counts == n_bins + 3).to_numpy()
            bad_lines = df.filter(pl.Series(~ok))
            rej = reject_frame(bad_lines["src_line"], bad_lines["line"],
                               [f"expected time, direction, block size and {n_bins} bins, found {c} fields"
                                for c in counts.filter(pl.Series(~ok)).to_list()])
            good = df.filter(pl.Series(ok))
            if good.height:
                arr_txt = parts.filter(pl.Series(ok))
                mat = arr_txt.list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))
                flat = mat.explode().to_numpy()
                m = flat.reshape(good.height, n_bins + 3)
                invalid = np.isnan(m).any(axis=1) if m.dtype.kind == "f" else np.zeros(good.height, bool)
                m = np.nan_to_num(m).astype(np.int64) if m.dtype.kind == "f" else m
                neg = (m < 0).any(axis=1)
                bad_dir = ~np.isin(m[:, 1], (0, 1, 2))
                # counts whose sum does not fit in 64 bits are not I/O counts (seen in a fio 3.7 log)
                overflow = m[:, 3:].astype(np.float64).sum(axis=1) >= 2.0**63
                why = np.select(
                    [invalid, neg, bad_dir, overflow],
                    ["a field is not a whole number", "negative count or field", "direction is not 0, 1 or 2",
                     "bin counts sum beyond 2^63: not I/O counts (corrupt histogram line)"], "")
                keep = why == ""
                if (~keep).any():
                    gl = good.filter(pl.Series(~keep))
                    rej = pl.concat([rej, reject_frame(gl["src_line"], gl["line"], why[~keep].tolist())])
                m = m[keep]
                good = good.filter(pl.Series(keep))
                bins = m[:, 3:]
                total = bins.sum(axis=1)
                cum = np.cumsum(bins, axis=1)
                rows = {"log_kind": [kind] * len(m), "job": [job] * len(m), "time_ms": m[:, 0],
                        "dir": np.array(DIRS)[m[:, 1]], "bs_bytes": m[:, 2], "samples": total,
                        "counts": pl.Series(bins).cast(pl.List(pl.Int64)),
                        "src_line": good["src_line"]}
                for p in (50, 90, 99, 99.9):
                    need = total * (p / 100.0)
                    idx = (cum < need[:, None]).sum(axis=1)
                    val = self._vals_ns[np.minimum(idx, n_bins - 1)]
                    rows[f"{pct_name(p)}_ns"] = np.where(total > 0, val, np.nan)
                out = pl.DataFrame(rows).with_columns(pl.col(f"{pct_name(p)}_ns").fill_nan(None)
                                                      for p in (50, 90, 99, 99.9))
                batch.add("fio_hist", rows=out)
            batch.add("fio_hist", rejects=rej)
            yield batch


def _csv_block(block: LineBlock, schema: dict[str, pl.DataType], batch: MeasuredBatch) -> pl.DataFrame:
    """A comma-separated block with a fixed field count: Polars' CSV parser when the block is
    clean, else a per-line path that says which field of which line is wrong (``_reason``)."""
    n = len(schema)
    names = list(schema)
    try:
        df = pl.read_csv(block.data, has_header=False, new_columns=names, schema=schema, comment_prefix=None,
                         quote_char=None)
        if df.height == block.n_lines and not df.select(pl.any_horizontal(pl.all().is_null())).to_series().any():
            return df.with_columns(
                src_line=pl.int_range(block.first_line, block.first_line + df.height, dtype=pl.Int64),
                _idx=pl.int_range(df.height, dtype=pl.Int64), _reason=pl.lit(None, pl.String),
                _dir_raw=pl.col("dir").cast(pl.String))
    except Exception:  # noqa: BLE001 - any parse problem sends the block to the exact path
        pass
    lines = lines_frame(block).with_columns(_idx=pl.int_range(pl.len(), dtype=pl.Int64))
    blank = lines.get_column("line").str.strip_chars() == ""
    batch.skipped["blank"] += int(blank.sum())
    lines = lines.filter(~blank)
    parts = pl.col("line").str.split(",")
    lines = lines.with_columns(_p=parts).with_columns(_n=pl.col("_p").list.len())
    reason = pl.when(pl.col("line") == "\x00INVALID").then(pl.lit("line is not valid UTF-8 text")).when(
        pl.col("_n") != n).then(pl.format(f"expected {n} fields, found {{}}", pl.col("_n")))
    cols = []
    for i, (c, t) in enumerate(schema.items()):
        raw = pl.col("_p").list.get(i, null_on_oob=True).str.strip_chars()
        typed = raw.cast(t, strict=False)
        cols.append(typed.alias(c))
        reason = reason.when(raw.is_not_null() & typed.is_null()).then(
            pl.format(f"field '{c}' is not a number: '{{}}'", raw.str.slice(0, 30)))
    return lines.select(*cols, "src_line", "_idx", reason.otherwise(pl.lit(None, pl.String)).alias("_reason"),
                        pl.col("_p").list.get(2, null_on_oob=True).str.strip_chars().alias("_dir_raw"))


def _emit(batch: MeasuredBatch, table: str, df: pl.DataFrame, block: LineBlock) -> None:
    bad = df.filter(pl.col("_reason").is_not_null())
    if bad.height:
        raw = block.raw_lines(bad["_idx"].to_numpy())
        batch.add(table, rejects=reject_frame(bad["src_line"], raw, bad["_reason"]))
    batch.add(table, rows=df.filter(pl.col("_reason").is_null()))


# -- per-I/O latency log as a block trace ----------------------------------------------------------
class FioTraceReader(DelimitedReader):
    """A per-I/O fio latency log written with ``log_offset=1`` and no ``log_avg_msec``
    (``time_ms, latency, dir, bs, offset[, prio]``) as a canonical request trace.

    Each line is one completed I/O: ``size`` = bs, ``offset`` = the logged offset, ``latency_ns`` =
    the logged latency (unit from ``fio_version`` / ``latency_unit``). fio stamps the line when
    the I/O completes (ms resolution), so the request's arrival is completion - latency
    (``ts``). Averaged logs (block size 0) are rejected line by line with that reason.
    Option ``volume`` names the volume (default ``job<N>`` from the file name).
    """

    name = "fio-trace"
    description = "fio per-I/O latency log with offsets (log_offset=1) as a block trace"
    absolute_clock = False
    auto_detect = False
    fields = (Field("time_ms"), Field("value"), Field("dir"), Field("bs"), Field("offset"), Field("prio"))
    required_fields = 5
    may_have_header = False
    sniff_pattern = r"^\d+, \d+, [012], \d+, \d+(, \d+)?\s*$"
    _volume = "fio"

    option_help = {
        "fio_version": "fio version that wrote the log, e.g. 3.19 (us before 3.0, ns after; required or latency_unit)",
        "latency_unit": "us or ns: the unit of the logged latencies",
        "volume": "volume name (default job<N> from <prefix>_lat.<N>.log)",
    }

    def __init__(self, order: str = "sort", capacities: dict[str, int] | None = None, **options: Any):
        super().__init__(order=order, capacities=capacities, **options)
        self.unit_ns = latency_unit_ns(self, True, "fio-trace")
        mm = fio_major_minor(str(options.get("fio_version") or ""))
        #: fio >= 3.18 always logs the priority: a 5-field line then has no offset
        self.prio_always = mm is not None and mm >= (3, 18)

    def batches(self, source: Source):
        _, _, job = _log_name(source.path)
        self._volume = str(self.options.get("volume") or (f"job{job}" if job is not None else "fio"))
        self.metadata.update(volume=self._volume, latency_unit="us" if self.unit_ns == 1000 else "ns")
        yield from super().batches(source)

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        op, op_reason = op_from_codes("dir", {"0": "read", "1": "write", "2": "trim"})
        latency = pl.col("value") * self.unit_ns
        df = df.with_columns(pl.col("dir").cast(pl.String)).with_columns(
            ts_raw_ns=pl.col("time_ms") * 1_000_000 - latency,
            volume=pl.lit(self._volume),
            op=op,
            offset=pl.col("offset"),
            size=pl.col("bs"),
            latency_ns=latency,
        )
        reasons = [op_reason,
                   pl.when(pl.col("bs") == 0).then(pl.lit("block size 0: an averaged log (log_avg_msec) is not "
                                                          "a per-I/O trace"))]
        if self.prio_always:
            reasons.insert(0, pl.when(pl.col("prio").is_null()).then(pl.lit(
                "fio >= 3.18 writes 6 fields with log_offset=1: this line has no offset")))
        return with_reason(df, *reasons)
