"""``tiercast load`` and ``tiercast sql``: the DuckDB warehouse over the data directory."""

from __future__ import annotations

from typing import Annotated

import polars as pl
import typer

from pipelines.cli.common import DataDirOpt, JsonOpt, app, data_dir_of, out, print_json
from pipelines.load import db_path, load, query


@app.command("load")
def load_cmd(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Refresh tiercast.duckdb: tables from manifests, views over every Parquet dataset."""
    dd = data_dir_of(data_dir)
    counts = load(dd)
    if as_json:
        print_json({"database": str(db_path(dd)), "tables": counts})
        return
    out.print(f"{db_path(dd)}:")
    for name, n in counts.items():
        out.print(f"  {name:<28} {n:>14,} rows")


@app.command("sql")
def sql_cmd(
    statement: Annotated[str, typer.Argument(help="SQL to run (read-only), e.g. \"select * from traces\".")],
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
    refresh: Annotated[bool, typer.Option(help="Run `tiercast load` first.")] = True,
) -> None:
    """Query the warehouse with DuckDB SQL."""
    dd = data_dir_of(data_dir)
    if refresh:
        load(dd)
    df = query(dd, statement)
    if as_json:
        print_json(df.to_dicts())
    else:
        with pl.Config(tbl_rows=50, tbl_cols=20, fmt_str_lengths=60, tbl_width_chars=160):
            out.print(str(df))
