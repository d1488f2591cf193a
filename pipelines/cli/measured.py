"""``tiercast measured``: the ingested measured logs; and how ``tiercast ingest`` reports one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli.common import (
    DataDirOpt,
    JsonOpt,
    WideOpt,
    app,
    console,
    data_dir_of,
    decision_table,
    out,
    print_json,
)
from pipelines.cli.examples import epilog
from pipelines.dataset import is_current

if TYPE_CHECKING:
    from pipelines.ingest_logs import MeasuredIngestResult


def print_ingested(path: Path, r: MeasuredIngestResult) -> None:
    """What ``tiercast ingest`` says of one ingested measured log: its tables and warnings."""
    state = "already ingested (no-op)" if r.already_ingested else "ingested"
    tables = ", ".join(f"{t} {s['rows_accepted']:,}" + (f" (+{s['rows_rejected']:,} rejected)" if s["rows_rejected"] else "")
                       for t, s in r.tables.items())
    out.print(f"{path}: {state} as measured {r.dataset_id} [{r.format}]: read {r.rows_read:,}, "
              f"accepted {r.rows_accepted:,}, rejected {r.rows_rejected:,}; {tables}")
    for w in r.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)


@app.command(epilog=epilog("measured"))
def measured(data_dir: DataDirOpt = None, wide: WideOpt = False, as_json: JsonOpt = False) -> None:
    """List the ingested measured logs (iostat, vxstat, vxdmpadm, fio, IOMeter)."""
    from pipelines.ingest_logs import list_measured

    rows = []
    for m in list_measured(data_dir_of(data_dir)):
        man = m.manifest
        rows.append({
            "dataset_id": m.dataset_id,
            "format": man["format"],
            "tool_version": man.get("tool_version"),
            "hosts": man.get("hosts", []),
            "devices": len(man.get("devices", [])),
            "intervals": man.get("intervals"),
            "rows_accepted": man["rows_accepted"],
            "rows_rejected": man["rows_rejected"],
            "tables": {t: s["rows_accepted"] for t, s in man["tables"].items()},
            "first": next((s["first"] for s in man["tables"].values() if s.get("first") is not None), None),
            "source_path": man["source_path"],
            "reader_version": man.get("reader_version"),
            "current": is_current(man),
        })
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no measured logs ingested yet: run `tiercast ingest LOGFILE`")
        return
    out.print(decision_table(
        [("dataset_id", True), ("format", True), ("intervals", True), ("source", True), ("host", False),
         ("tables (rows)", False), ("rejected", False), ("first", False)],
        [[r["dataset_id"], r["format"] + (f" {r['tool_version']}" if r["tool_version"] else ""),
          str(r["intervals"] or "-"), Path(r["source_path"]).name, ",".join(h for h in r["hosts"] if h) or "-",
          ", ".join(f"{t} {n:,}" for t, n in r["tables"].items()), f"{r['rows_rejected']:,}", str(r["first"] or "-")]
         for r in rows], wide, wrap=(3, 5)))
