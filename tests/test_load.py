"""The DuckDB warehouse: tables from manifests and views over the Parquet datasets."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.ingest import ingest_file
from pipelines.load import load, query
from traces import synth


def test_load_and_query(tmp_path, data_dir):
    ids = {}
    for name, pat in (("a", "database"), ("b", "randread-4k")):
        p = tmp_path / f"{name}.parquet"
        synth.write(synth.pattern(pat, requests=3000, region_bytes=1 << 30, volume=f"lun-{name}"), p)
        ids[name] = ingest_file(p, data_dir, validate="off").trace_id
    counts = load(data_dir).counts()
    assert counts["traces"] == 2 and counts["trace_volumes"] == 2
    assert query(data_dir, "select count(*) from requests").rows() == [(6000,)]
    df = query(data_dir, "select trace_id, volume, count(*) n, sum(size) bytes from requests group by all order by 2")
    assert df.rows() == [(ids["a"], "lun-a", 3000, 3000 * 8192), (ids["b"], "lun-b", 3000, 3000 * 4096)]
    # the manifest's per-volume counts agree with the rows
    v = query(data_dir, "select requests, reads + writes as rw, bytes from trace_volumes where volume = 'lun-a'")
    assert v.row(0) == (3000, 3000, 3000 * 8192)
    # re-loading is idempotent
    again = load(data_dir)
    assert again.loaded == {} and again.unchanged == 2 and again.counts() == counts
    assert isinstance(df, pl.DataFrame)


def test_query_without_warehouse_is_a_clear_error(data_dir):
    with pytest.raises(LookupError, match="run `tiercast load` first"):
        query(data_dir, "select 1")
