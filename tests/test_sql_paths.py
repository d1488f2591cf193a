"""Paths in DuckDB SQL: a data directory with quotes, spaces and non-ASCII works end to end
(re-sort, ordered reads, warehouse views, queries), and the one quoting helper escapes."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.catalog import find_trace
from pipelines.ingest import ingest_file
from pipelines.load import load, query
from pipelines.sql import identifier, literal, path_list

T0 = 128166372003061629
LINES = [
    f"{T0 + 100},usr,0,Read,0,512,1",
    f"{T0 + 50},usr,0,Write,512,512,1",  # backwards: the volume is re-sorted by DuckDB
    f"{T0 + 60},usr,1,Read,512,512,1",
    f"{T0 + 200},usr,0,Read,1024,512,1",
    f"{T0 + 210},usr,0,Read,abc,512,1",  # rejected: a rejects view is made too
]


def test_quoting_helper():
    assert literal("o'brien") == "'o''brien'"
    assert literal("a''b") == "'a''''b'"
    assert identifier('my "view"') == '"my ""view"""'
    assert path_list(["/d/o'b/x.parquet", "/d/é s.parquet"]) == "['/d/o''b/x.parquet', '/d/é s.parquet']"


@pytest.mark.parametrize("name", ["o'brien", "with space", "données ü", "a'';--b"])
def test_a_data_dir_with_quotes_spaces_and_non_ascii(tmp_path, name):
    data = tmp_path / name / "tiercast-data"
    src = tmp_path / "ooo.csv"
    src.write_text("\n".join(LINES) + "\n")
    r = ingest_file(src, data, validate="off")
    assert (r.rows_accepted, r.rows_rejected, r.sorted_rows) == (4, 1, 1)
    t = find_trace(data, r.trace_id)
    ordered = pl.concat(list(t.iter_ordered(columns=["ts_ns", "volume", "src_line"])))
    assert ordered["src_line"].to_list() == [2, 3, 1, 4]
    assert load(data).loaded == {"trace": 1}
    df = query(data, "select trace_id, count(*) n from requests group by all")
    assert df.rows() == [(r.trace_id, 4)]
    assert query(data, "select src_line from rejects").rows() == [(5,)]
