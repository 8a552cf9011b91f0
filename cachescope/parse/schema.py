"""The trace schema of DESIGN.md as Arrow, and the conversion of the parser's raw columns into it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

OPS = ["read", "write", "delete"]

SCHEMA = pa.schema([
    ("ts_ns", pa.int64()),
    ("conn", pa.uint32()),
    ("req", pa.uint64()),
    ("op", pa.dictionary(pa.int8(), pa.string())),
    ("cmd", pa.dictionary(pa.int16(), pa.string())),
    ("key", pa.large_string()),
    ("field", pa.large_string()),
    ("value_size", pa.int32()),
    ("found", pa.bool_()),
    ("latency_ns", pa.int64()),
    ("client", pa.dictionary(pa.int32(), pa.string())),
    ("server", pa.dictionary(pa.int32(), pa.string())),
])


def record_batch(cols: dict, cmd_names: list[str], conns: list[tuple[str, str]]) -> pa.RecordBatch:
    """Arrow columns from the parser's numpy columns (no copy of the key and field bytes).

    `value_size`, `found`, `latency_ns` use -1 for unknown; `cmd` indexes `cmd_names`; `conn` indexes `conns`
    ((client, server) as `ip:port`)."""
    n = len(cols["ts_ns"])
    conn = cols["conn"].astype(np.int32)
    clients = pa.array([c for c, _ in conns], pa.string())
    servers = pa.array([s for _, s in conns], pa.string())
    arrays = [
        pa.array(cols["ts_ns"], pa.int64()),
        pa.array(cols["conn"], pa.uint32()),
        pa.array(cols["req"], pa.uint64()),
        pa.DictionaryArray.from_arrays(pa.array(cols["op"].astype(np.int8)), pa.array(OPS)),
        pa.DictionaryArray.from_arrays(pa.array(cols["cmd"].astype(np.int16)), pa.array(cmd_names, pa.string())),
        _strings(cols["key_offsets"], cols["key_data"], None, n),
        _strings(cols["field_offsets"], cols["field_data"], cols["field_valid"], n),
        _nullable(cols["value_size"], pa.int32()),
        pa.array(cols["found"] == 1, pa.bool_(), mask=cols["found"] < 0),
        _nullable(cols["latency_ns"], pa.int64()),
        pa.DictionaryArray.from_arrays(pa.array(conn), clients),
        pa.DictionaryArray.from_arrays(pa.array(conn), servers),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def _strings(offsets: np.ndarray, data: np.ndarray, valid, n: int) -> pa.Array:
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = int(n - valid.sum())
    return pa.Array.from_buffers(pa.large_string(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=null_count)


def _nullable(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type_, mask=values < 0)
