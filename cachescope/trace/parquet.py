"""The Parquet trace (schema in DESIGN.md) read in row groups: pyarrow decodes the columns, Rust hashes the
key and field columns straight from Arrow's buffers."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cachescope import _native
from cachescope.errors import TraceFormatError

_COLUMNS = ("op", "key", "field", "ts_ns", "req")


def read_parquet_batches(src, batch_lookups: int) -> Iterator[tuple]:
    """Yields (keys, ts_ns or None) for the read rows of `src`'s Parquet file and fills `src.info`."""
    path = src.path
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise TraceFormatError(f"{path}: not a readable Parquet file ({e})") from None
    names = pf.schema_arrow.names
    if "key" not in names:
        raise TraceFormatError(f"{path}: Parquet trace has no 'key' column (it has: {', '.join(names)})")
    columns = [c for c in _COLUMNS if c in names]
    total_rows = max(pf.metadata.num_rows, 1)
    rows_seen = 0
    last_req = None
    info = src.info
    try:
        for rb in pf.iter_batches(batch_size=batch_lookups, columns=columns):
            row0 = rows_seen
            rows_seen += rb.num_rows
            src._bytes_read = src.size_bytes * rows_seen // total_rows
            if "req" in columns:
                req = rb.column("req").to_numpy(zero_copy_only=False)
                changes = int(np.count_nonzero(req[1:] != req[:-1])) if len(req) else 0
                info.commands += changes + int(len(req) > 0 and req[0] != last_req)
                last_req = req[-1] if len(req) else last_req
            else:
                info.commands += rb.num_rows
            reads = _count_ops(rb, info) if "op" in columns else None
            if reads is not None:
                rb = rb.filter(reads)
            if rb.num_rows == 0:
                continue
            info.lookups += rb.num_rows
            yield _cache_keys(rb, src.granularity, path, row0), _timestamps(rb, path)
    except pa.ArrowException as e:
        raise TraceFormatError(f"{path}: corrupt Parquet data after row {rows_seen} ({e})") from None
    if info.commands == 0:
        raise TraceFormatError(f"{path}: empty trace: no commands")


def _count_ops(rb: pa.RecordBatch, info) -> pa.Array:
    """Counts writes and deletes into `info`; returns the mask of read rows."""
    op = rb.column("op")
    if pa.types.is_dictionary(op.type):
        op = op.dictionary_decode()
    info.writes += pc.sum(pc.equal(op, "write")).as_py() or 0
    info.deletes += pc.sum(pc.equal(op, "delete")).as_py() or 0
    return pc.fill_null(pc.equal(op, "read"), False)


def _cache_keys(rb: pa.RecordBatch, granularity: str, path: str, row0: int) -> np.ndarray:
    key = rb.column("key")
    if key.null_count:
        raise TraceFormatError(f"{path}: row group at row {row0}: null key in a read row")
    offsets, data, _ = _string_buffers(key)
    keys = _native.hash_string_column(offsets, data)
    if granularity == "entity" or "field" not in rb.schema.names:
        return keys
    offsets, data, valid = _string_buffers(rb.column("field"))
    return _native.hash_field_column(keys, offsets, data, valid)


def _timestamps(rb: pa.RecordBatch, path: str):
    if "ts_ns" not in rb.schema.names:
        return None
    ts = rb.column("ts_ns")
    if ts.null_count == len(ts):
        return None
    if ts.null_count:
        raise TraceFormatError(f"{path}: ts_ns is null in some read rows but not others")
    return ts.cast(pa.int64()).to_numpy().astype(np.int64, copy=False)


def _string_buffers(arr: pa.Array):
    """(int64 offsets, uint8 data, bool validity) of a string or binary column, without copying the data."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    else:
        arr = arr.cast(pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(offsets), data, np.ascontiguousarray(valid, dtype=bool)
