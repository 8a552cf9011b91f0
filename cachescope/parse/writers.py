"""Writing a trace (a stream of Arrow record batches of the trace schema) in each output format:
Parquet, `commands` text, `monitor` text, and libCacheSim's `oracleGeneral` binary.

Values never reach an output: the text formats write `?` where a command sent a value, and the binary one
carries only sizes."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cachescope import _native
from cachescope.trace.arrow_views import strings, valid, values
from cachescope.parse.output_format import OUTPUT_FORMATS, output_format  # noqa: F401 (their home before)
from cachescope.output_file import write_failed
from cachescope.outputs import in_place, rename_target
from cachescope.parse.schema import SCHEMA

# Parquet min/max statistics only where a reader can prune row groups with them: time, command index and
# connection grow along the trace. Keys, fields, sizes and categories take all values in every row group;
# their statistics pruned nothing and took a third of the writing time (0.25 s -> 0.17 s for 2 M rows).
_STATISTICS = ("ts_ns", "req", "conn")
# Columns whose values nearly all differ (times, command indexes, latencies) are stored plain: a dictionary of
# them saved nothing, and without one the bench's 2 M rows were written 10% and read 12% faster, 2% smaller.
# Keys, fields and the categories keep theirs (the trace reader hashes each distinct key once per row group).
_PLAIN = ("ts_ns", "req", "latency_ns")
_DICTIONARY = [name for name in SCHEMA.names if name not in _PLAIN]


class TraceWriter:
    """Writes record batches to `path` in `fmt`; use as a context manager. The trace is written beside `path`
    and moved there only when the parse succeeded: a failed parse leaves no half-written trace behind, and
    never clobbers an earlier complete one. A FIFO, a device or /dev/stdout is written in place instead
    (renaming a file over it would replace it)."""

    def __init__(self, path: str, fmt: str):
        self.path, self.fmt = path, fmt
        self._in_place = in_place(path)
        if self._in_place:
            self._partial = path
        else:
            directory, name = os.path.split(rename_target(path))
            self._partial = os.path.join(directory, f".{name}.partial")
        self._parquet = None
        self._stream = None
        self._file = None
        self._oracle = _OracleGeneral() if fmt == "oracleGeneral" else None

    def __enter__(self):
        try:
            self._open()
        except BaseException as e:  # Ctrl-C or SIGTERM while opening: `with` will not call __exit__
            self.__exit__(*sys.exc_info())
            if isinstance(e, OSError):
                raise self._failed(e) from None
            raise
        return self

    def _failed(self, e: OSError):
        """A write failed (a full disk, a folder gone): one line naming the user's path, not the partial file."""
        return write_failed(self.path, "the trace", e, None if self._in_place else self._partial)

    def _open(self) -> None:
        if self.fmt == "parquet":
            where = self._partial
            if self._in_place:
                self._stream = pa.PythonFile(_Forward(open(self._partial, "wb")), mode="w")
                where = self._stream
            self._parquet = pq.ParquetWriter(where, SCHEMA, compression="zstd", write_statistics=list(_STATISTICS),
                                             use_dictionary=_DICTIONARY)
        elif self.fmt in ("commands", "monitor"):
            self._file = open(self._partial, "wb")

    def write(self, rb: pa.RecordBatch) -> None:
        try:
            self._write(rb)
        except OSError as e:
            raise self._failed(e) from None

    def _write(self, rb: pa.RecordBatch) -> None:
        if self._parquet is not None:
            self._parquet.write_batch(rb)
            return
        # The text and binary formats have no replies: a command answered with an error (a cluster's MOVED or
        # ASK attempt, retried elsewhere) would read as a lookup there. It is left out (parse stats count it) by both writers below.
        if self._oracle is not None:
            self._oracle.add(rb)
        else:
            self._file.write(text_lines(rb, self.fmt))

    def __exit__(self, *exc):
        try:
            self._close(exc[0] is not None)
        except OSError as e:
            # The last bytes go out as the writers close: a full disk shows here, and the partial file goes.
            if not self._in_place and os.path.exists(self._partial):
                os.remove(self._partial)
            if exc[0] is None:
                raise self._failed(e) from None

    def _close(self, failed: bool) -> None:
        if self._parquet is not None:
            self._parquet.close()
        if self._stream is not None:
            self._stream.close()
        if self._file is not None:
            self._file.close()
        if failed:
            if not self._in_place and os.path.exists(self._partial):
                os.remove(self._partial)
            return
        if self._oracle is not None:
            self._oracle.write(self._partial)
        if not self._in_place:
            os.replace(self._partial, rename_target(self.path))


def text_lines(rb: pa.RecordBatch, fmt: str) -> bytes:
    """The batch's commands as lines of the `commands` or `monitor` format, one per command (its rows share
    `req`), written by the Rust core (`src/parse/text_out.rs`); rows answered with an error are left out."""
    key_offsets, key_data, _ = strings(rb.column("key"))
    field_offsets, field_data, field_valid = strings(rb.column("field"))
    cmd, client, error = rb.column("cmd"), rb.column("client"), rb.column("error")
    clients = np.where(valid(client), values(client, np.int32), -1).astype(np.int32)
    return _native.text_lines(
        fmt, _contiguous(rb.column("ts_ns"), np.int64), _contiguous(rb.column("req"), np.uint64),
        _contiguous(cmd, np.int16), cmd.dictionary.to_pylist(), key_offsets, key_data, field_offsets, field_data,
        field_valid, clients, client.dictionary.to_pylist(), ~valid(error))


def _contiguous(arr: pa.Array, dtype) -> np.ndarray:
    return np.ascontiguousarray(values(arr, dtype))


class _Forward:
    """A file written front to back that counts its bytes: Parquet's writer asks where it is (tell), which a
    FIFO or a terminal cannot answer by seeking."""

    def __init__(self, f):
        self._f, self._n, self.closed = f, 0, False

    def write(self, data) -> int:
        self._n += len(data)
        return self._f.write(data)

    def tell(self) -> int:
        return self._n

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()
        self.closed = True


class _OracleGeneral:
    """libCacheSim's binary trace: 24-byte records (u32 time in s, u64 id, u32 size, i64 next access), reads
    only. The id is the cache key hash cachescope simulates; the next access is the position of the next
    read of that key (-1 for none), so Belady can run on it.

    Memory is bounded by the keys, not the reads: records go to a temporary file as they come (next access
    unknown), then a second pass reads the file backwards a chunk at a time and fills the next accesses in from
    a map of key -> its nearest later position, kept as two sorted arrays: 16 bytes per unique key read (and
    a copy of them while a chunk's new keys are merged in), plus a chunk of CHUNK records."""

    DTYPE = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    CHUNK = 1 << 18

    def __init__(self):
        import tempfile

        self._records = tempfile.TemporaryFile()
        self._count = 0
        self._ts0 = None

    def add(self, rb: pa.RecordBatch) -> None:
        """The batch's reads (rows answered with an error left out) as records, next access unknown."""
        reads = ~valid(rb.column("error")) & (values(rb.column("op"), np.int8) == 0)
        if not reads.any():
            return
        key_offsets, key_data, _ = strings(rb.column("key"))
        field_offsets, field_data, field_valid = strings(rb.column("field"))
        entities = _native.hash_string_column(key_offsets, key_data)
        ids = _native.hash_field_column(entities, field_offsets, field_data, field_valid)
        ts = values(rb.column("ts_ns"), np.int64)[reads]
        sizes = rb.column("value_size")
        sizes = np.where(valid(sizes), values(sizes, np.int32), 1)[reads]
        rec = np.zeros(len(ts), dtype=self.DTYPE)
        if self._ts0 is None:
            self._ts0 = int(ts[0])
        rec["time"] = (ts - self._ts0) // 10**9
        rec["id"] = ids[reads]
        rec["size"] = np.maximum(sizes.astype(np.uint32), 1)
        rec["next"] = -1
        self._records.write(rec.tobytes())
        self._count += len(rec)

    def write(self, path: str) -> None:
        """Fills in the next accesses, last chunk first, then copies the records to `path`."""
        f, size = self._records, self.DTYPE.itemsize
        keys, later = np.zeros(0, np.uint64), np.zeros(0, np.int64)  # sorted keys, nearest later read
        for start in range((self._count - 1) // self.CHUNK * self.CHUNK, -1, -self.CHUNK):
            n = min(self.CHUNK, self._count - start)
            f.seek(start * size)
            rec = np.frombuffer(f.read(n * size), dtype=self.DTYPE).copy()
            keys, later = _fill_next(rec, start, keys, later)
            f.seek(start * size)
            f.write(rec.tobytes())
        f.seek(0)
        import shutil

        with open(path, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        f.close()


def _fill_next(rec: np.ndarray, start: int, keys: np.ndarray, later: np.ndarray):
    """Sets rec["next"] (records at positions start..) from the reads after them in the chunk, else from the
    map (keys sorted, later[i] the first read of keys[i] after the chunk); returns the map updated with the
    chunk's first read of each key. In the Rust core (`policy::belady::next_access_chunk`): numpy's sort by
    key took ~0.5 s of the 1.8 M reads of a 270 MB capture."""
    nxt, keys, later = _native.next_access_chunk(np.ascontiguousarray(rec["id"]), start, keys, later)
    rec["next"] = nxt
    return keys, later
