"""Every reader by format name, and format detection from a file's first bytes."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from traces.errors import TraceFormatError, excerpt

if TYPE_CHECKING:  # the names in READERS are cheap (`tiercast ingest --help` lists them)
    from traces.source import Source

#: format name -> "module:Class". Detection tries them in this order (most specific first).
READERS: dict[str, str] = {
    "tiercast-parquet": "traces.parquet_canonical:CanonicalParquetReader",
    "vscsi": "traces.vscsi:VscsiReader",
    # measured logs (kind="measured": tiercast ingest routes them to pipelines.ingest_logs)
    "iostat": "traces.iostat:IostatReader",
    "vxstat": "traces.vxstat:VxstatReader",
    "vxdmp": "traces.vxdmp:VxdmpReader",
    "fio-json": "traces.fio:FioJsonReader",
    "fio-terse": "traces.fio:FioTerseReader",
    "fio-log": "traces.fio:FioLogReader",
    "iometer": "traces.iometer:IometerReader",
    # a per-I/O fio latency log with offsets as a block trace (chosen only by --format fio-trace)
    "fio-trace": "traces.fio:FioTraceReader",
    "msr": "traces.msr:MsrReader",
    "alibaba": "traces.alibaba:AlibabaReader",
    "tencent": "traces.tencent:TencentReader",
    "spc": "traces.spc:SpcReader",
    "blkparse": "traces.blkparse:BlkparseReader",
    "fiu": "traces.fiu:FiuReader",
    "disksim": "traces.disksim:DiskSimReader",
    "generic": "traces.generic:GenericReader",
}


def reader_class(name: str):
    try:
        target = READERS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known formats: {', '.join(READERS)}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def detect(source: Source) -> str:
    """Name of the first format whose sniffer accepts the file's head."""
    head = source.head()
    if not head:
        raise TraceFormatError(source.path, None, "file is empty (or its compressed stream is unreadable)")
    for name in READERS:
        cls = reader_class(name)
        if getattr(cls, "auto_detect", True) and cls.sniff(head):
            return name
    raise TraceFormatError(
        Path(source.path),
        1,
        f"unknown format (the file starts with {excerpt(head)}, which matches none of: {', '.join(READERS)}); "
        "name it with --format",
    )
