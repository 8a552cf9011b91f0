"""The Parquet trace (schema in DESIGN.md) read in row groups: pyarrow decodes the columns, Rust hashes the
key and field columns straight from Arrow's buffers. Columns stored with a dictionary (parse.py writes keys,
fields and categories so) are read as dictionaries: each distinct key of a row group is hashed once, and no
row's string is copied out. numpy views come from Arrow's buffers (arrow_views.py): no pandas is imported."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.trace.arrow_views import integers, strings, valid, values

_COLUMNS = ("op", "key", "field", "ts_ns", "req", "conn", "batch", "value_size", "error", "server")
_OP_CODES = {"read": 0, "write": 1, "delete": 2}
UNKNOWN_SIZE = np.uint32(2**32 - 1)
# pyarrow's iter_batches holds about a batch's worth of decoded rows per column and then some: decoding alone
# the bench's 5 MB trace peaked at 290 MiB at 1 M rows a batch, at 150 MiB at parse.py's row group size. A
# fixed-size SHARDS curve over the 10^8-lookup dataset of bench/scale peaked 40 MiB lower at 2^16 rows than
# at 2^17, for 9% more CPU (each batch of a row group rebuilds its dictionary); at 2^15 another 22 MiB lower
# at 10^8 lookups but only 7 MiB at 10^9, for 7-20% more CPU again: not taken.
BATCH_ROWS = 1 << 16


def parquet_file(path, fs=None, read_dictionary=None) -> pq.ParquetFile:
    """`path` (on `fs`, an fsspec filesystem, when given) opened to read its batches, `read_dictionary` columns
    as dictionaries. Without pyarrow's `pre_buffer` (its default): its cache of the ranges read ahead kept every
    row group read so far until the file's end, so memory grew with the file (a 67 M-row part of the
    billion-lookup dataset: 6 bytes a row, 200 MiB by its 35 M-th row, against a flat 124 MiB without it)."""
    return pq.ParquetFile(fs.open(path, "rb") if fs is not None else path, read_dictionary=read_dictionary,
                          pre_buffer=False)


def trace_parquet_file(path, fs=None) -> pq.ParquetFile:
    """`parquet_file` with the key and field columns read as dictionaries where they are stored with one."""
    pf = parquet_file(path, fs)
    dictionaries = _dictionary_encoded(pf, ("key", "field"))
    return parquet_file(path, fs, dictionaries) if dictionaries else pf


def read_parquet_batches(src, batch_events: int, use_threads: bool = True) -> Iterator[dict]:
    """Yields event batches (see readers.py) for the read, write and delete rows of `src`'s Parquet file,
    and fills `src.info`; `use_threads`: pyarrow decodes the columns on its own threads."""
    path = src.path
    try:
        pf = trace_parquet_file(path)
    except (pa.ArrowException, OSError) as e:
        raise TraceFormatError(f"{path}: not a readable Parquet file ({e})") from None
    names = pf.schema_arrow.names
    if "key" not in names:
        raise TraceFormatError(f"{path}: Parquet trace has no 'key' column (it has: {', '.join(names)})")
    # The client column is read only when asked for (routing by client): a string column costs time to decode.
    columns = [c for c in (*_COLUMNS, *(("client",) if src.want_clients else ())) if c in names]
    _check_types(path, pf.schema_arrow)
    total_rows = max(pf.metadata.num_rows, 1)
    events = RecordBatchEvents(src)
    try:
        for rb in pf.iter_batches(batch_size=min(batch_events, BATCH_ROWS), columns=columns,
                                  use_threads=use_threads):
            batch = events.convert(rb)
            src._bytes_read = src.size_bytes * events.rows // total_rows
            if batch is not None:
                yield batch
    except (pa.ArrowException, OSError, ValueError) as e:  # a corrupt page: Arrow raises IO and value errors too
        raise TraceFormatError(f"{path}: corrupt Parquet data after row {events.rows} ({e})") from None
    if src.info.commands == 0:
        raise TraceFormatError(f"{path}: empty trace: no commands")


def _dictionary_encoded(pf: pq.ParquetFile, names) -> list[str]:
    """The string columns among `names` whose first row group is stored with a dictionary: read as
    dictionaries, they are decoded and hashed once per distinct value (a column without one would have to
    be dictionary-encoded on reading, for nothing)."""
    if pf.metadata.num_row_groups == 0:
        return []
    group, schema = pf.metadata.row_group(0), pf.schema_arrow
    found = []
    for j in range(group.num_columns):
        chunk = group.column(j)
        name = chunk.path_in_schema
        if name in names and chunk.has_dictionary_page and name in schema.names:
            t = schema.field(name).type
            if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
                    or pa.types.is_large_binary(t):
                found.append(name)
    return found


def _check_types(path: str, schema: pa.Schema) -> None:
    """Refuses columns of a type the trace schema cannot mean (a `req` of strings), naming file and column."""
    kinds = {"req": "integers", "conn": "integers", "batch": "integers", "ts_ns": "integers", "value_size": "integers", "key": "strings",
             "field": "strings", "op": "strings"}
    for name, kind in kinds.items():
        if name not in schema.names:
            continue
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        ok = (pa.types.is_integer(t) or pa.types.is_timestamp(t) and name == "ts_ns") if kind == "integers" \
            else (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                  or pa.types.is_large_binary(t) or pa.types.is_null(t))
        if not ok:
            raise TraceFormatError(f"{path}: column {name!r} holds {t}, not {kind} (see the trace schema)")


class RecordBatchEvents:
    """Turns record batches of the trace schema into event batches, counting into `src.info` as it goes."""

    def __init__(self, src):
        self.src = src
        self.rows = 0
        self.commands = _CommandCounter()
        self.last_error_req = None
        self.dictionaries = DictionaryHashes.for_keys_and_fields()

    def convert(self, rb: pa.RecordBatch) -> dict | None:
        src, info, row0 = self.src, self.src.info, self.rows
        self.rows += rb.num_rows
        reqs = self.commands.add(rb)
        info.commands = self.commands.count
        ops = _op_codes(rb)
        keep = ops <= 2
        if "error" in rb.schema.names:
            keep &= ~self._drop_errors(rb, ops, reqs)
        rows = row0
        if not keep.all():
            rb, ops, reqs = rb.filter(pa.array(keep)), ops[keep], reqs[keep]
            rows = row0 + np.flatnonzero(keep)
        if rb.num_rows == 0:
            return None
        info.lookups += int(np.count_nonzero(ops == 0))
        info.writes += int(np.count_nonzero(ops == 1))
        info.deletes += int(np.count_nonzero(ops == 2))
        if "server" in rb.schema.names:
            _count_by(info.lookups_by_server, rb.column("server"), ops == 0)
        batch = _hash_columns(rb, src.granularity, src.path, row0, self.dictionaries)
        batch.update(ops=ops, reqs=reqs)
        if "batch" in rb.schema.names and "conn" in rb.schema.names:
            # Round trips: a batch is named by its connection and its ordinal there.
            info.round_trips_known = True
            batch["conns"] = _integers(rb.column("conn"), "conn", src.path, rows)
            batch["batches"] = _integers(rb.column("batch"), "batch", src.path, rows)
        ts = _timestamps(rb, src.path)
        if ts is not None:
            batch["ts_ns"] = ts
        if "value_size" in rb.schema.names:
            batch["value_sizes"] = _value_sizes(rb.column("value_size"), src.path, rows)
        if src.want_clients and "client" in rb.schema.names:
            batch["clients"] = _client_ids(rb.column("client"), src)
        if src.key_pattern is not None:
            offsets, data, _ = _string_buffers(rb.column("key"))
            try:
                batch["shards"], unmatched = _native.shard_column(src.key_pattern, offsets, data)
            except ValueError as e:
                raise UsageError(str(e)) from None
            src.unmatched_shards += unmatched
        return batch

    def _drop_errors(self, rb: pa.RecordBatch, ops: np.ndarray, reqs: np.ndarray) -> np.ndarray:
        """The rows of commands answered with an error (the mask to drop), counted into `src.info`: each
        command once by its code (its rows share `req`, and may continue from the previous batch), and the
        lookups among them."""
        codes = _dictionary(rb.column("error"))
        bad = valid(codes)
        if not bad.any():
            return bad
        rows = np.flatnonzero(bad)
        index = integers(codes)[rows].astype(np.int64)
        r = reqs[rows]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = r[1:] != r[:-1]
        first[0] = r[0] != self.last_error_req
        self.last_error_req = r[-1]
        names = codes.dictionary.to_pylist()
        info = self.src.info
        for i, n in enumerate(np.bincount(index[first], minlength=len(names))):
            if n:
                info.error_replies[names[i]] = info.error_replies.get(names[i], 0) + int(n)
        info.error_lookups += int(np.count_nonzero(ops[rows] == 0))
        return bad


def _dictionary(column: pa.Array) -> pa.DictionaryArray:
    """A string column as a dictionary array (as parse.py writes the categories; any string column does)."""
    if pa.types.is_dictionary(column.type):
        return column
    return column.cast(pa.string()).dictionary_encode()


def _count_by(counts: dict, column: pa.Array, rows: np.ndarray) -> None:
    """Adds to `counts` the selected rows by their value in the (string) column, nulls left out."""
    values = _dictionary(column)
    index = np.where(valid(values), integers(values), -1).astype(np.int64)[rows]
    index = index[index >= 0]
    names = values.dictionary.to_pylist()
    for i, n in enumerate(np.bincount(index, minlength=len(names))):
        if n:
            counts[names[i]] = counts.get(names[i], 0) + int(n)


def _client_ids(column: pa.Array, src) -> np.ndarray:
    """The index of each row's client host in `src.hosts` (the `ip:port` less its port: one service host opens
    many connections), new hosts appended as they come."""
    encoded = (column.dictionary_decode() if pa.types.is_dictionary(column.type) else column).dictionary_encode()
    ids = np.empty(len(encoded.dictionary), dtype=np.uint32)
    for i, addr in enumerate(encoded.dictionary.to_pylist()):
        ids[i] = src.host_id(client_host(addr or ""))
    if len(ids) == 0:
        return np.full(len(column), src.host_id(""), dtype=np.uint32)
    return ids[np.where(valid(encoded), integers(encoded), 0)]


def client_host(addr: str) -> str:
    """`10.1.2.3:51234` -> `10.1.2.3`, `[::1]:6000` -> `[::1]`; anything else as it is."""
    host, sep, port = addr.rpartition(":")
    return host if sep and port.isdigit() and host else addr


class _CommandCounter:
    """Counts commands across batches from `req` (all rows of one command share it), or one per row."""

    def __init__(self):
        self.count = 0
        self.last = None

    def add(self, rb: pa.RecordBatch) -> np.ndarray:
        if "req" not in rb.schema.names:
            reqs = np.arange(self.count, self.count + rb.num_rows, dtype=np.uint64)
            self.count += rb.num_rows
            return reqs
        reqs = integers(rb.column("req")).astype(np.uint64)
        if len(reqs):
            self.count += int(np.count_nonzero(reqs[1:] != reqs[:-1])) + int(reqs[0] != self.last)
            self.last = reqs[-1]
        return reqs


def _row(rows, at: int) -> int:
    """The file's row number of a batch's row `at`: `rows` is the batch's first row, or, once rows that are no
    events were dropped from it, the file's row number of each row kept."""
    return int(rows + at) if isinstance(rows, int) else int(rows[at])


def _integers(column: pa.Array, name: str, path: str, rows) -> np.ndarray:
    """A column of non-negative integers as uint64; a null or negative value is an error."""
    if column.null_count:
        at = int(np.flatnonzero(~valid(column))[0])
        raise TraceFormatError(f"{path}: row {_row(rows, at)}: {name} is null")
    values = integers(column)
    if values.dtype.kind == "i" and len(values) and values.min() < 0:
        at = int(np.flatnonzero(values < 0)[0])
        raise TraceFormatError(f"{path}: row {_row(rows, at)}: {name} {values[at]} is negative")
    return values.astype(np.uint64)


def _op_codes(rb: pa.RecordBatch) -> np.ndarray:
    """0 read, 1 write, 2 delete, 3 anything else (dropped); all reads when the trace has no `op` column."""
    if "op" not in rb.schema.names:
        return np.zeros(rb.num_rows, dtype=np.uint8)
    op = _dictionary(rb.column("op"))
    # The code of each of the few distinct values, then each row's by its index; a null is "anything else".
    by_value = np.array([_OP_CODES.get(v, 3) for v in op.dictionary.to_pylist()] + [3], dtype=np.uint8)
    return by_value[np.where(valid(op), integers(op), len(by_value) - 1)]


def _hash_columns(rb: pa.RecordBatch, granularity: str, path: str, row0: int, dictionaries: dict | None = None
                  ) -> dict:
    """The key, entity and field hashes of a batch and its rows' key bytes; `dictionaries` (a `DictionaryHashes`
    for "key" and "field") carries the dictionaries' hashes over from the batch before, if given."""
    dictionaries = dictionaries or DictionaryHashes.for_keys_and_fields()
    key = rb.column("key")
    if key.null_count:
        raise TraceFormatError(f"{path}: row group at row {row0}: null key")
    entities, key_bytes = _hashed(key, dictionaries["key"])
    if "field" not in rb.schema.names:
        fields = np.zeros(len(entities), dtype=np.uint64)
        keys = entities
    else:
        field = rb.column("field")
        fields, field_bytes = _hashed(field, dictionaries["field"])
        key_bytes = key_bytes + field_bytes
        if granularity == "entity":
            keys = entities
        elif pa.types.is_dictionary(field.type):
            offsets, data, _ = strings(field.dictionary)
            present = valid(field)
            index = np.where(present, integers(field), 0).astype(np.int64)
            keys = _native.hash_field_by_index(entities, offsets, data, index, present)
        else:
            offsets, data, present = _string_buffers(field)
            keys = _native.hash_field_column(entities, offsets, data, present)
    return {"keys": keys, "entities": entities, "fields": fields,
            "key_bytes": np.minimum(key_bytes, 2**32 - 1).astype(np.uint32)}


def _hashed(column: pa.Array, dictionary: DictionaryHashes) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `key_hash` (0 for a null) and its length in bytes (0 for a null); a dictionary column's
    distinct values hashed once each (`dictionary` keeps them from the batch before)."""
    if not pa.types.is_dictionary(column.type):
        offsets, data, present = _string_buffers(column)
        return _native.hash_optional_column(offsets, data, present), np.diff(offsets)
    hashes, lengths = dictionary.of(column.dictionary)
    # A null row takes the entry past the dictionary's end: hash 0, no bytes (its index slot is arbitrary).
    index = np.where(valid(column), integers(column), len(hashes) - 1)
    return hashes[index], lengths[index]


class DictionaryHashes:
    """The hashes and byte lengths of a dictionary column's values, kept from one batch to the next, with an
    entry past the end for a null. pyarrow gives every batch of a row group its own copy of the row group's
    whole dictionary (92,729 keys beside each batch's 131,072 rows in the billion-lookup bench's dataset):
    hashing it again for each batch took a third of turning a batch into events. Values the dictionary
    before began with keep their hashes (Arrow compares them, byte for byte); only those past them are
    hashed."""

    def __init__(self):
        self.values: pa.Array | None = None
        self.hashes = np.zeros(1, dtype=np.uint64)
        self.lengths = np.zeros(1, dtype=np.int64)

    @staticmethod
    def for_keys_and_fields() -> dict:
        """One for each of the trace's dictionary columns, as `_hash_columns` takes them."""
        return {"key": DictionaryHashes(), "field": DictionaryHashes()}

    def of(self, values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        kept = len(self.values) if self.values is not None else 0
        if kept and not (len(values) >= kept and values.slice(0, kept).equals(self.values)):
            kept = 0
        if not kept or kept < len(values):
            offsets, data, _ = strings(values.slice(kept))
            hashes = _native.hash_optional_column(offsets, data, np.ones(len(offsets) - 1, dtype=bool))
            self.hashes = np.concatenate([self.hashes[:kept], hashes, [np.uint64(0)]])
            self.lengths = np.concatenate([self.lengths[:kept], np.diff(offsets), [0]])
        self.values = values
        return self.hashes, self.lengths


def _value_sizes(column: pa.Array, path: str, rows) -> np.ndarray:
    """uint32 sizes with nulls as UNKNOWN_SIZE; a negative or impossibly large size is an error."""
    raw = integers(column)
    # Unsigned sizes are capped before they are made signed: one past 2^63 must stay too large, not wrap.
    signed = np.minimum(raw, UNKNOWN_SIZE).astype(np.int64) if raw.dtype.kind == "u" else raw.astype(np.int64)
    sizes = np.where(valid(column), signed, -1)
    bad = np.flatnonzero((sizes < -1) | (sizes >= UNKNOWN_SIZE))
    if len(bad) or (column.null_count == 0 and (sizes == -1).any()):
        at = bad[0] if len(bad) else int(np.flatnonzero(sizes == -1)[0])
        raise TraceFormatError(f"{path}: row {_row(rows, at)}: value_size {raw[at]} is not a size in bytes")
    return np.where(sizes < 0, UNKNOWN_SIZE, sizes).astype(np.uint32)


def _timestamps(rb: pa.RecordBatch, path: str):
    if "ts_ns" not in rb.schema.names:
        return None
    ts = rb.column("ts_ns")
    if ts.null_count == len(ts):
        return None
    if ts.null_count:
        raise TraceFormatError(f"{path}: ts_ns is null in some rows but not others")
    # Times as stored (a timestamp column's integers, whatever its unit), without an Arrow cast.
    if pa.types.is_timestamp(ts.type):
        return values(ts, np.int64)
    raw = integers(ts)
    if raw.dtype == np.uint64 and len(raw) and raw.max() > np.iinfo(np.int64).max:
        raise TraceFormatError(f"{path}: ts_ns {raw.max()} is past 2262-04-11, beyond nanosecond timestamps")
    return raw.astype(np.int64)


def _string_buffers(arr: pa.Array):
    """(int64 offsets, uint8 data, bool validity) of a string or binary column (a column of nulls read as
    strings), without copying the data."""
    if pa.types.is_null(arr.type):
        arr = arr.cast(pa.large_string())
    return strings(arr)
