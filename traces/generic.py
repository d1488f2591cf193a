"""Any CSV or Parquet block trace, described by a small TOML mapping instead of code.

Selected with ``--format generic -o mapping=spec.toml`` (never auto-detected). The mapping
names the columns (by header name or 1-based position), their units and the op values;
everything is validated when the mapping is loaded, so a typo fails before any data is read.
Example (docs/guide/ingest.md, "The generic reader", has the full reference)::

    [file]
    type = "csv"            # csv or parquet (default: parquet when the file starts with PAR1)
    separator = ","         # csv: one character, or "whitespace"
    header = true           # csv: the first line names the columns
    comment = "#"           # csv: optional comment prefix

    [columns]               # header name or 1-based position
    ts = "time_us"
    op = "rw"
    offset = "lba"
    size = "bytes"
    volume = "disk"         # or [constants] volume = "disk0"
    latency = "resp_us"     # optional

    [units]
    ts = "us"               # s, ms, us, ns, 100ns or filetime
    clock = "relative"      # relative (default) or unix (ts counts from 1970-01-01 UTC)
    offset = "sectors"      # bytes, sectors (512 B) or a whole number of bytes per unit
    size = "bytes"
    latency = "us"          # s, ms, us, ns or 100ns

    [ops]                   # value in the file -> read, write, trim or flush
    R = "read"
    W = "write"

    [capacities]            # optional: volume -> bytes or "100GiB"
    disk0 = "100GiB"

Times and latencies are decimal text converted exactly (``Decimal(38, k)``, no floats).
CSV fields are not unquoted (quote characters stay part of the value).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schemas.trace import OPS, READ_SCHEMA
from schemas.units import parse_size
from traces.base import ReadBatch, decimal_scaled, op_from_codes, scaled_int, with_reason
from traces.delimited import DelimitedReader, Field
from traces.errors import TraceFormatError
from traces.msr import FILETIME_TICK_NS, FILETIME_UNIX_EPOCH_TICKS
from traces.source import Source, open_parquet

#: time unit -> decimal digits of its value in ns
TIME_UNITS = {"s": 9, "ms": 6, "us": 3, "ns": 0, "100ns": 2}
SIZE_UNITS = {"bytes": 1, "sectors": 512}
ROLES = ("ts", "op", "offset", "size", "volume", "latency")
KEYS = {
    "file": ("type", "separator", "header", "comment"),
    "columns": ROLES,
    "units": ("ts", "clock", "offset", "size", "latency"),
    "constants": ("volume", "op"),
}
TABLES = (*KEYS, "ops", "capacities")
PARQUET_BATCH_ROWS = 1 << 20


class Mapping:
    """A validated mapping file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.raw_bytes = self.path.read_bytes()
            spec = tomllib.loads(self.raw_bytes.decode("utf-8"))
        except OSError as e:
            raise ValueError(f"generic mapping {path}: cannot read ({e.strerror or e})") from e
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ValueError(f"generic mapping {path}: not valid TOML ({e})") from e
        self.sha256 = hashlib.sha256(self.raw_bytes).hexdigest()
        self._check_keys(spec)
        file, cols, units = spec.get("file", {}), spec.get("columns", {}), spec.get("units", {})
        consts = spec.get("constants", {})

        self.type = file.get("type")
        if self.type not in (None, "csv", "parquet"):
            self._fail(f"file.type must be csv or parquet, got {self.type!r}")
        sep = file.get("separator", ",")
        if sep == "whitespace":
            self.separator = None
        elif isinstance(sep, str) and len(sep) == 1 and sep not in '\r\n"':
            self.separator = sep
        else:
            self._fail(f'file.separator must be one character or "whitespace", got {sep!r}')
        self.header = file.get("header", False)
        if not isinstance(self.header, bool):
            self._fail(f"file.header must be true or false, got {self.header!r}")
        self.comment = file.get("comment")
        if self.comment is not None and (not isinstance(self.comment, str) or not self.comment):
            self._fail(f"file.comment must be a non-empty string, got {self.comment!r}")

        self.columns: dict[str, str | int] = {}
        for role, ref in cols.items():
            if isinstance(ref, bool) or not isinstance(ref, str | int) or (isinstance(ref, int) and ref < 1):
                self._fail(f"columns.{role} must be a column name or a 1-based position, got {ref!r}")
            if isinstance(ref, str) and not ref:
                self._fail(f"columns.{role} must not be empty")
            self.columns[role] = ref
        for role in ("ts", "offset", "size"):
            if role not in self.columns:
                self._fail(f"columns.{role} is required")
        for role in ("volume", "op"):
            if (role in self.columns) == (role in consts):
                self._fail(f"give exactly one of columns.{role} and constants.{role}")
        self.volume_const = consts.get("volume")
        if self.volume_const is not None and (
            not isinstance(self.volume_const, str) or not self.volume_const
        ):
            self._fail(f"constants.volume must be a non-empty string, got {self.volume_const!r}")
        self.op_const = consts.get("op")
        if self.op_const is not None and self.op_const not in OPS:
            self._fail(f"constants.op must be one of {', '.join(OPS)}, got {self.op_const!r}")
        self.named = [r for r, c in self.columns.items() if isinstance(c, str)]
        if self.named and self.header is False and self.type == "csv":
            self._fail(self.names_need_header())

        self.ops: dict[str, str] = {}
        for value, op in spec.get("ops", {}).items():
            if op not in OPS:
                self._fail(f"ops.{value} must be one of {', '.join(OPS)}, got {op!r}")
            self.ops[str(value)] = op
        if "op" in self.columns and not self.ops:
            self._fail(
                "[ops] is required with columns.op: map each value in the file to read, write, trim or flush"
            )
        lowered = {k.lower() for k in self.ops}
        self.ops_case_sensitive = len(lowered) < len(self.ops)

        for role in ("ts", "offset", "size") + (("latency",) if "latency" in self.columns else ()):
            if role not in units:
                self._fail(f"units.{role} is required (no unit is guessed)")
        if "latency" in units and "latency" not in self.columns:
            self._fail("units.latency is given but columns.latency is not")
        self.ts_unit = units["ts"]
        if self.ts_unit not in (*TIME_UNITS, "filetime"):
            self._fail(f"units.ts must be one of {', '.join(TIME_UNITS)}, filetime; got {self.ts_unit!r}")
        self.clock = units.get("clock", "unix" if self.ts_unit == "filetime" else "relative")
        if self.clock not in ("relative", "unix"):
            self._fail(f"units.clock must be relative or unix, got {self.clock!r}")
        if self.ts_unit == "filetime" and self.clock != "unix":
            self._fail("units.ts = filetime is an absolute clock: units.clock must be unix (or left out)")
        self.offset_factor = self._size_unit(units, "offset")
        self.size_factor = self._size_unit(units, "size")
        self.latency_unit = units.get("latency")
        if self.latency_unit is not None and self.latency_unit not in TIME_UNITS:
            self._fail(f"units.latency must be one of {', '.join(TIME_UNITS)}, got {self.latency_unit!r}")

        self.capacities: dict[str, int] = {}
        for vol, cap in spec.get("capacities", {}).items():
            try:
                self.capacities[str(vol)] = parse_size(cap)
            except ValueError as e:
                self._fail(f"capacities.{vol}: {e}")
            if self.capacities[str(vol)] <= 0:
                self._fail(f"capacities.{vol} must be > 0")

    def names_need_header(self) -> str:
        return (
            f"columns {', '.join(self.named)} are given by name: set file.header = true, "
            "or use 1-based positions"
        )

    def _fail(self, problem: str) -> None:
        raise ValueError(f"generic mapping {self.path}: {problem}")

    def _check_keys(self, spec: dict) -> None:
        for key, value in spec.items():
            if key not in TABLES:
                self._fail(f"unknown key {key!r} (known tables: {', '.join(TABLES)})")
            if not isinstance(value, dict):
                self._fail(f"{key} must be a table ([{key}])")
            allowed = KEYS.get(key)
            if allowed is None:
                continue
            for sub in value:
                if sub not in allowed:
                    self._fail(f"unknown key {key}.{sub} (known: {', '.join(allowed)})")

    def _size_unit(self, units: dict, role: str) -> int:
        u = units[role]
        if isinstance(u, str) and u in SIZE_UNITS:
            return SIZE_UNITS[u]
        if isinstance(u, int) and not isinstance(u, bool) and u > 0:
            return u
        self._fail(f"units.{role} must be bytes, sectors or a whole number of bytes per unit, got {u!r}")
        raise AssertionError  # unreachable: _fail raises


class GenericReader(DelimitedReader):
    name = "generic"
    description = "any CSV/Parquet trace described by a TOML mapping (-o mapping=spec.toml)"
    auto_detect = False
    option_help = {"mapping": "TOML file mapping the file's columns, units and op values"}
    sniff_pattern = r"(?!)"  # never matches: the generic reader is only chosen by name

    def __init__(self, mapping: str | None = None, **kw):
        if mapping is None:
            raise ValueError("generic: -o mapping=spec.toml is required (see docs/guide/ingest.md, 'The generic reader')")
        super().__init__(**kw, mapping=str(mapping))
        self.map = Mapping(mapping)
        self.capacities = {**self.map.capacities, **self.capacities}
        self.absolute_clock = self.map.clock == "unix"
        self.separator = self.map.separator
        self.comment_prefix = self.map.comment
        self._role_field: dict[str, str] = {}  # role -> field name
        self._role_pos: dict[str, int] = {}  # role -> 1-based column
        self._ts_epoch_ns = False  # set when a Parquet ts column is a timestamp type
        self._latency_ns = False  # set when a Parquet latency column is a duration type
        self._path: Path | None = None
        self.metadata["mapping"] = {"path": str(Path(mapping).resolve()), "sha256": self.map.sha256}
        positions = [c for c in self.map.columns.values() if isinstance(c, int)]
        if not self.map.header and positions:
            # no header: fields up to the highest mapped position; later fields are ignored
            self._set_fields([f"c{i}" for i in range(1, max(positions) + 1)], extra=True, named=False)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return False

    def identity(self) -> dict[str, Any]:
        # the mapping's content decides the output, not where the file lies
        ident = {**super().identity(), "mapping_sha256": self.map.sha256}
        ident.pop("mapping")
        return ident

    def is_header(self, first_line: str) -> bool:
        """With ``header = true`` the first line is the header: resolve the mapped names here,
        from the first block the engine reads (so compressed-stream errors surface as such)."""
        if not self.map.header:
            return False
        parts = first_line.split() if self.separator is None else first_line.split(self.separator)
        names = [p.strip().strip('"') for p in parts]
        if not any(names):
            raise TraceFormatError(self._path, 1, "the header line is blank")
        self._resolve(self._path, names)
        return True

    # -- columns ---------------------------------------------------------------------------
    def _set_fields(self, names: list[str], extra: bool, named: bool) -> None:
        """One field per column, named as in the header (so reasons say "field 'lba' ...")
        unless the header names are unusable (duplicates, blanks, names the engine uses
        itself); then ``c1..cN``. The mapped offset and size are integers, the rest text."""
        reserved = set(READ_SCHEMA) | {"line"}
        usable = (
            named
            and len(set(names)) == len(names)
            and all(n and not n.startswith("_") and n not in reserved for n in names)
        )
        labels = list(names) if usable else [f"c{i}" for i in range(1, len(names) + 1)]
        self._role_pos, self._role_field = {}, {}
        for role, ref in self.map.columns.items():
            pos = ref if isinstance(ref, int) else names.index(ref) + 1
            if pos > len(names):
                raise ValueError(f"generic: columns.{role} = {ref} but the file has {len(names)} columns")
            self._role_pos[role] = pos
            self._role_field[role] = labels[pos - 1]
        ints = {self._role_field["offset"], self._role_field["size"]}
        self.fields = tuple(Field(n, pl.Int64 if n in ints else pl.String) for n in labels)
        self.allow_extra_fields = extra

    def _resolve(self, path: Path, names: list[str]) -> None:
        for role, ref in self.map.columns.items():
            if isinstance(ref, str) and ref not in names:
                raise TraceFormatError(
                    path,
                    1,
                    f"mapping column {ref!r} (for {role}) is not in the header: {', '.join(names)[:300]}",
                )
            if isinstance(ref, int) and ref > len(names):
                raise TraceFormatError(
                    path,
                    1,
                    f"mapping column {ref} (for {role}) is beyond the {len(names)} columns of the header",
                )
        self._set_fields(names, extra=False, named=True)

    # -- reading ---------------------------------------------------------------------------
    def batches(self, source: Source) -> Iterator[ReadBatch]:
        kind = self.map.type or ("parquet" if source.head(4) == b"PAR1" else "csv")
        self.metadata["file_type"] = kind
        if kind == "parquet":
            yield from self._parquet(source)
            return
        if self.map.named and not self.map.header:
            raise ValueError(
                f"generic mapping {self.map.path}: {self.map.names_need_header()} (the file is CSV)"
            )
        self._path = source.path
        yield from super().batches(source)

    def _parquet(self, source: Source) -> Iterator[ReadBatch]:
        pf = open_parquet(source.path)
        names = pf.schema_arrow.names
        self._resolve(source.path, names)
        wanted = sorted(set(self._role_pos.values()))
        cols = [names[p - 1] for p in wanted]
        labels = [f.name for f in self.fields]
        row0 = 1
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols):
            df = pl.from_arrow(batch)
            n = df.height
            typed = {}
            reasons = []
            for p, c in zip(wanted, cols, strict=True):
                s = df[c]
                field = labels[p - 1]
                if s.dtype == pl.Datetime:
                    # a Parquet timestamp is absolute: ns since the Unix epoch whatever units.ts says
                    s = s.dt.epoch("ns")
                    if field == self._role_field["ts"]:
                        self._ts_epoch_ns = self.absolute_clock = True
                        self.metadata["ts_from_parquet_timestamp"] = True
                elif s.dtype == pl.Duration:
                    # a Parquet duration is exact: ns whatever units.latency says
                    s = s.dt.total_nanoseconds()
                    if field == self._role_field.get("latency"):
                        self._latency_ns = True
                text = s.cast(pl.String)
                want = next(f.dtype for f in self.fields if f.name == field)
                if want == pl.Int64:
                    val = text.str.strip_chars().cast(pl.Int64, strict=False)
                    reasons.append(
                        (
                            pl.col(f"_{field}_raw").is_not_null() & pl.col(field).is_null(),
                            pl.format(
                                f"field '{c}' is not an integer: '{{}}'",
                                pl.col(f"_{field}_raw").str.slice(0, 40),
                            ),
                        )
                    )
                    typed[f"_{field}_raw"] = text
                    typed[field] = val
                else:
                    typed[field] = text
            frame = pl.DataFrame(typed).with_columns(
                _idx=pl.int_range(0, n, dtype=pl.Int64),
                src_line=pl.int_range(row0, row0 + n, dtype=pl.Int64),
                _reason=pl.lit(None, pl.String),
            )
            frame = self.canonical(with_reason(frame, *reasons))

            def raw_of(idx: np.ndarray, df=df) -> list[str]:
                return [json.dumps(r, default=str) for r in df[idx.tolist()].iter_rows(named=True)]

            yield self.finish(frame, raw_of)
            row0 += n

    def canonical(self, df: pl.DataFrame) -> pl.DataFrame:
        m, f = self.map, self._role_field
        reasons = []
        ts_unit = "ns" if self._ts_epoch_ns else m.ts_unit
        if ts_unit == "filetime":
            ticks, r1 = decimal_scaled(f["ts"], 0, "timestamp (FILETIME ticks)")
            df = df.with_columns(_ticks=ticks - FILETIME_UNIX_EPOCH_TICKS)
            ts, r2 = scaled_int("_ticks", FILETIME_TICK_NS, "timestamp (FILETIME ticks)")
            reasons += [r1, r2]
        else:
            ts, r = decimal_scaled(f["ts"], TIME_UNITS[ts_unit], f"timestamp ({ts_unit})")
            reasons.append(r)
        if "op" in f:
            op, r = op_from_codes(f["op"], m.ops, case_sensitive=m.ops_case_sensitive)
            reasons.append(r)
        else:
            op = pl.lit(m.op_const)
        offset, r = scaled_int(f["offset"], m.offset_factor, "offset")
        reasons.append(r)
        size, r = scaled_int(f["size"], m.size_factor, "size")
        reasons.append(r)
        if "latency" in f:
            unit = "ns" if self._latency_ns else m.latency_unit
            # an empty latency field means "not measured": null, not a reject
            df = df.with_columns(
                pl.col(f["latency"]).cast(pl.String).str.strip_chars().replace("", None).alias(f["latency"])
            )
            latency, r = decimal_scaled(f["latency"], TIME_UNITS[unit], f"latency ({unit})")
            reasons.append(r)
        else:
            latency = pl.lit(None, pl.Int64)
        volume = (
            pl.col(f["volume"]).cast(pl.String).str.strip_chars() if "volume" in f else pl.lit(m.volume_const)
        )
        df = df.with_columns(ts_raw_ns=ts, volume=volume, op=op, offset=offset, size=size, latency_ns=latency)
        return with_reason(df, *reasons)
