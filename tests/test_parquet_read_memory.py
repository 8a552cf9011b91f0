"""Reading a Parquet trace holds what one row group needs, not what the file has given so far: pyarrow's
`pre_buffer` (its default) kept every range it had read of a file until the file's end, so memory grew with a
file's length (a 67 M-row part of bench/scale's billion-lookup dataset: 200 MiB more by its 35 M-th row). Measured
in pyarrow's own memory pool, which holds the decoded and the buffered bytes, over a single file (a dataset's
parts are opened the same way, `trace/dataset.py` and `dataset_sequence.py`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cachescope.trace.readers import open_trace

ROW_GROUPS, ROWS = 40, 1 << 16


def _write(path, seed: int) -> None:
    """A trace of ROW_GROUPS row groups whose clock does not compress (8 bytes a row stored)."""
    rng = np.random.default_rng(seed)
    n = ROW_GROUPS * ROWS
    ts = np.cumsum(rng.integers(1, 1 << 40, n, dtype=np.int64)).astype(np.int64)
    keys = pa.DictionaryArray.from_arrays(rng.integers(0, 50_000, n).astype(np.int32),
                                          pa.array([f"user:{k}" for k in range(50_000)]))
    table = pa.table({"ts_ns": ts, "op": pa.array(["read"] * n).dictionary_encode(),
                      "cmd": pa.array(["GET"] * n).dictionary_encode(), "key": keys,
                      "req": np.arange(n, dtype=np.uint64), "conn": np.zeros(n, dtype=np.uint64)})
    pq.write_table(table, path, row_group_size=ROWS)


def _pool_after_each_batch(path) -> list[int]:
    source = open_trace(str(path), format="parquet")
    held = []
    for _ in source.batches(ROWS):
        held.append(pa.total_allocated_bytes())
    return held


def test_reading_a_parquet_trace_holds_no_more_at_its_end_than_early_on(tmp_path):
    path = tmp_path / "t.parquet"
    _write(path, 1)
    held = _pool_after_each_batch(path)
    assert len(held) >= ROW_GROUPS
    early, late = max(held[4:8]), max(held[-4:])
    # Buffered row groups would add 8 bytes a row of clock alone: 17 MB over the 36 row groups in between.
    assert late - early < 4 << 20, f"{(late - early) / 2**20:.1f} MiB more held after {len(held)} batches"
