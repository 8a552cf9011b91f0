"""The trace schema of DESIGN.md as Arrow, and the conversion of the parser's raw columns into it.

Arrays are assembled from buffers (`pa.Array.from_buffers`), never with `pa.array`: the numeric columns are
then shared with numpy without a copy, and `pa.array` imports pandas the first time it is called, which would
add 0.2-0.4 s to every `parse.py` run."""

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
    # The code of the error that answered the row's command (MOVED, ASK, WRONGTYPE, LOADING, ...): the command
    # was no lookup and no write. Null when the reply was no error, or is unknown.
    ("error", pa.dictionary(pa.int16(), pa.string())),
    # The round trip the command was sent in: its ordinal among its connection's batches (the commands a
    # client sent before it waited for replies). Traces without replies make each command a batch of its own.
    ("batch", pa.uint64()),
])


def record_batch(cols: dict, cmd_names: list[str], conns: list[tuple[str, str]] | None = None) -> pa.RecordBatch:
    """Arrow columns from the parser's numpy columns (no copy of the numbers, keys and fields).

    `value_size`, `found`, `latency_ns` use -1 for unknown; `cmd` indexes `cmd_names`, `error` (-1: none)
    indexes `cols["error_names"]`. Each row's endpoints
    ((client, server) as `ip:port`) come from `conns`, indexed by `conn`, or when it is None from the batch
    itself (`conn_ids`, sorted, with their `clients` and `servers`: a capture's batches name only their own
    connections, so that nothing grows with every connection the capture ever held)."""
    n = len(cols["ts_ns"])
    conn, found = cols["conn"], cols["found"]
    if conns is None:
        conn_ids = cols["conn_ids"]
        index = np.searchsorted(conn_ids, conn) if len(conn) else conn
        conns, conn = list(zip(cols["clients"], cols["servers"])), index
    arrays = [
        # Text traces without a clock have no times: `ts_valid` all false.
        _numbers(pa.int64(), cols["ts_ns"], cols.get("ts_valid")),
        _numbers(pa.uint32(), cols["conn"]),
        _numbers(pa.uint64(), cols["req"]),
        # Views, not copies: op codes are 0-2 and command codes index a few hundred names.
        _dictionary(pa.int8(), cols["op"].view(np.int8), OPS),
        _dictionary(pa.int16(), cols["cmd"].view(np.int16), cmd_names),
        _strings(cols["key_offsets"], cols["key_data"], None, n),
        _strings(cols["field_offsets"], cols["field_data"], cols["field_valid"], n),
        _numbers(pa.int32(), cols["value_size"], cols["value_size"] >= 0),
        _booleans(found == 1, found >= 0),
        _numbers(pa.int64(), cols["latency_ns"], cols["latency_ns"] >= 0),
        _endpoint_column(conn, [c for c, _ in conns]),
        _endpoint_column(conn, [s for _, s in conns]),
        _dictionary(pa.int16(), cols["error"], cols["error_names"], cols["error"] >= 0),
        _numbers(pa.uint64(), cols["batch"]),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def _endpoint_column(conn: np.ndarray, per_conn: list[str]) -> pa.Array:
    """`ip:port` of each row's connection, dictionary-encoded over the distinct addresses."""
    distinct = list(dict.fromkeys(per_conn))
    position = {a: i for i, a in enumerate(distinct)}
    index = np.array([position[a] for a in per_conn], dtype=np.int32)
    rows = index[conn] if len(conn) else np.zeros(0, np.int32)
    return pa.DictionaryArray.from_arrays(_numbers(pa.int32(), rows), _small_strings(distinct))


def _validity(valid) -> tuple:
    """Arrow's validity bitmap of a boolean mask (True = present) and its null count; None when all are."""
    if valid is None or valid.all():
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int(len(valid) - np.count_nonzero(valid))


def _numbers(type_: pa.DataType, values: np.ndarray, valid=None) -> pa.Array:
    """A numpy column of the Arrow type's layout, shared without a copy."""
    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(type_, len(values), [bitmap, pa.py_buffer(values)], null_count=nulls)


def _booleans(values: np.ndarray, valid) -> pa.Array:
    bitmap, nulls = _validity(valid)
    data = pa.py_buffer(np.packbits(values, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(values), [bitmap, data], null_count=nulls)


def _dictionary(index_type: pa.DataType, indices: np.ndarray, names: list[str], valid=None) -> pa.Array:
    return pa.DictionaryArray.from_arrays(_numbers(index_type, indices, valid), _small_strings(names))


def _small_strings(items: list[str]) -> pa.Array:
    """A short list of strings (a dictionary) as an Arrow string array."""
    encoded = [s.encode() for s in items]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    offsets[1:] = np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)))
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets),
                                                             pa.py_buffer(b"".join(encoded))])


def _strings(offsets: np.ndarray, data: np.ndarray, valid, n: int) -> pa.Array:
    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(pa.large_string(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=nulls)
