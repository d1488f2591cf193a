"""Reading a Parquet trace keeps memory bounded by a row group, not by the file
(``traces.source.open_parquet``): with pyarrow's default pre-buffering, ``iter_batches`` kept the
column chunks of every row group it had read, and a 1 G-row ingest peaked at 8.5 GiB."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from traces.errors import TraceFormatError
from traces.source import open_parquet

ROW_GROUPS, ROWS = 40, 100_000  # 40 x 1.6 MB of incompressible int64: 64 MB on disk


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    path = tmp_path_factory.mktemp("pq") / "random.parquet"
    rng = np.random.default_rng(7)
    with pq.ParquetWriter(path, pa.schema([("a", pa.int64()), ("b", pa.int64())]), compression="zstd") as w:
        for _ in range(ROW_GROUPS):
            w.write_table(pa.table({"a": rng.integers(0, 2**62, ROWS), "b": rng.integers(0, 2**62, ROWS)}))
    return path


def _peak_pool_bytes(pf: pq.ParquetFile) -> tuple[int, int]:
    rows, peak = 0, 0
    for batch in pf.iter_batches(batch_size=ROWS):
        rows += batch.num_rows
        peak = max(peak, pa.total_allocated_bytes())
        del batch
    return rows, peak


def test_streaming_a_parquet_trace_holds_about_one_row_group(big):
    base = pa.total_allocated_bytes()
    rows, peak = _peak_pool_bytes(open_parquet(big))
    assert rows == ROW_GROUPS * ROWS
    # one decoded batch is 1.6 MB; the file is 64 MB: the pool stays within a few batches
    assert peak - base < 8 * 2 * 8 * ROWS


def test_the_default_pre_buffering_is_what_grew_with_the_file(big):
    """Pins the pyarrow behaviour ``open_parquet`` works around: should pyarrow stop keeping the
    pre-buffered chunks, this fails and the comment there can go."""
    base = pa.total_allocated_bytes()
    _, peak = _peak_pool_bytes(pq.ParquetFile(big))
    assert peak - base > 0.5 * ROW_GROUPS * 2 * 8 * ROWS


def test_a_corrupt_parquet_file_names_itself(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(TraceFormatError, match="bad.parquet.*not a readable Parquet file"):
        open_parquet(bad)
