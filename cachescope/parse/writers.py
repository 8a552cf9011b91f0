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

from cachescope.errors import UsageError
from cachescope.parse.keytext import key_bytes
from cachescope.outputs import in_place, rename_target
from cachescope.parse.schema import SCHEMA

OUTPUT_FORMATS = ("parquet", "commands", "monitor", "oracleGeneral")
_BY_EXTENSION = {".parquet": "parquet", ".pq": "parquet", ".txt": "commands", ".commands": "commands",
                 ".monitor": "monitor", ".oraclegeneral": "oracleGeneral", ".bin": "oracleGeneral"}
# Parquet min/max statistics only where a reader can prune row groups with them: time, command index and
# connection grow along the trace. Keys, fields, sizes and categories take all values in every row group;
# their statistics pruned nothing and took a third of the writing time (0.25 s -> 0.17 s for 2 M rows).
_STATISTICS = ("ts_ns", "req", "conn")
VALUE_PLACEHOLDER = "?"
# Commands whose rows are (key, field) pairs that the command writes as `field value`.
_FIELD_VALUE_WRITES = {"HSET", "HMSET"}
_KEY_VALUE_WRITES = {"SET", "SETNX", "GETSET", "APPEND", "MSET", "MSETNX"}
# Arguments after the key (or key and field) that are neither: a TTL, an increment, an offset.
_PLACEHOLDER_ARGS = {"EXPIRE": 1, "PEXPIRE": 1, "EXPIREAT": 1, "PEXPIREAT": 1, "SETEX": 2, "PSETEX": 2,
                     "INCRBY": 1, "DECRBY": 1, "INCRBYFLOAT": 1, "SETRANGE": 2, "HINCRBY": 1,
                     "HINCRBYFLOAT": 1, "HSETNX": 1}


def output_format(path: str, forced: str | None) -> str:
    if forced is not None:
        if forced not in OUTPUT_FORMATS:
            raise UsageError(f"unknown output format {forced!r}; choose from {', '.join(OUTPUT_FORMATS)}")
        return forced
    fmt = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise UsageError(f"{path}: cannot tell the output format from the extension; give --format "
                         f"({', '.join(OUTPUT_FORMATS)})")
    return fmt


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
        except BaseException:  # Ctrl-C or SIGTERM while opening: `with` will not call __exit__
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _open(self) -> None:
        if self.fmt == "parquet":
            where = self._partial
            if self._in_place:
                self._stream = pa.PythonFile(_Forward(open(self._partial, "wb")), mode="w")
                where = self._stream
            self._parquet = pq.ParquetWriter(where, SCHEMA, compression="zstd", write_statistics=list(_STATISTICS))
        elif self.fmt in ("commands", "monitor"):
            self._file = open(self._partial, "w", encoding="utf-8", newline="\n")

    def write(self, rb: pa.RecordBatch) -> None:
        if self._parquet is not None:
            self._parquet.write_batch(rb)
            return
        # The text and binary formats have no replies: a command answered with an error (a cluster's MOVED or
        # ASK attempt, retried elsewhere) would read as a lookup there. It is left out (parse stats count it).
        rb = rb.filter(rb.column("error").is_null())
        if self._oracle is not None:
            self._oracle.add(rb)
        else:
            self._file.write("".join(_text_lines(rb, monitor=self.fmt == "monitor")))

    def __exit__(self, *exc):
        if self._parquet is not None:
            self._parquet.close()
        if self._stream is not None:
            self._stream.close()
        if self._file is not None:
            self._file.close()
        if exc[0] is not None:
            if not self._in_place and os.path.exists(self._partial):
                os.remove(self._partial)
            return
        if self._oracle is not None:
            self._oracle.write(self._partial)
        if not self._in_place:
            os.replace(self._partial, rename_target(self.path))


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


def _text_lines(rb: pa.RecordBatch, monitor: bool):
    """One line per command (its rows share `req`)."""
    cols = {name: rb.column(name).to_pylist() for name in ("ts_ns", "req", "cmd", "key", "field", "client")}
    n = rb.num_rows
    i = 0
    while i < n:
        j = i
        while j < n and cols["req"][j] == cols["req"][i]:
            j += 1
        args = _command_args(cols["cmd"][i], cols["key"][i:j], cols["field"][i:j])
        if monitor:
            ts = cols["ts_ns"][i]
            quoted = " ".join(_redis_quote(a) for a in args)
            yield f"{ts // 10**9}.{ts % 10**9 // 1000:06d} [0 {cols['client'][i]}] {quoted}\n"
        else:
            yield " ".join(_bare(a) for a in args) + "\n"
        i = j


def _command_args(cmd: str, keys: list, fields: list) -> list[str]:
    """The command as a line of arguments, rebuilt from its rows (values replaced by the placeholder)."""
    if cmd == "HGETALL":
        return [cmd, keys[0]]
    extra = [VALUE_PLACEHOLDER] * _PLACEHOLDER_ARGS.get(cmd, 0)
    if fields[0] is not None:  # per-field rows of one key
        if cmd in _FIELD_VALUE_WRITES:
            return [cmd, keys[0], *(x for f in fields for x in (f, VALUE_PLACEHOLDER))]
        return [cmd, keys[0], *fields, *extra]
    if cmd in _KEY_VALUE_WRITES:
        return [cmd, *(x for k in keys for x in (k, VALUE_PLACEHOLDER))]
    return [cmd, *keys, *extra]


def _bare(arg: str) -> str:
    """An argument for the commands format: as is, or double-quoted when it holds spaces, quotes, control
    characters, a backslash (an escaped key: its bytes are written back) or nothing."""
    if arg and not any(c.isspace() or c in '"\\' or ord(c) < 0x20 or ord(c) == 0x7F for c in arg):
        return arg
    return _redis_quote(arg)


_REPR = {0x5C: "\\\\", 0x22: '\\"', 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x07: "\\a", 0x08: "\\b"}


def _redis_quote(arg: str) -> str:
    """The argument's bytes (`keytext.key_bytes`), double-quoted as Redis prints a string in MONITOR
    (`sdscatrepr`): the escapes above, printable ASCII as it is, any other byte as `\\xHH`. The text readers
    read exactly those bytes back, so distinct keys stay distinct (and a NUL never reaches the file)."""
    out = ['"']
    for b in key_bytes(arg):
        out.append(_REPR.get(b) or (chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}"))
    out.append('"')
    return "".join(out)


class _OracleGeneral:
    """libCacheSim's binary trace: 24-byte records (u32 time in s, u64 id, u32 size, i64 next access), reads
    only. The id is the cache key hash cachescope simulates; the next access is the position of the next
    read of that key (-1 for none), so Belady can run on it.

    Memory is bounded by the keys, not the reads: records go to a temporary file as they come (next access
    unknown), then a second pass reads the file backwards a chunk at a time and fills the next accesses in from
    a map of key -> its nearest later position, kept as two sorted arrays: 16 bytes per unique key read (and
    a copy of them while a chunk's new keys are merged in), plus a chunk of CHUNK records."""

    DTYPE = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    CHUNK = 1 << 20

    def __init__(self):
        import tempfile

        self._records = tempfile.TemporaryFile()
        self._count = 0
        self._ts0 = None

    def add(self, rb: pa.RecordBatch) -> None:
        from cachescope.trace.parquet import _hash_columns

        reads = np.asarray(rb.column("op").indices) == 0
        rb = rb.filter(pa.array(reads))
        if not rb.num_rows:
            return
        rec = np.zeros(rb.num_rows, dtype=self.DTYPE)
        ts = rb.column("ts_ns").to_numpy()
        if self._ts0 is None:
            self._ts0 = int(ts[0])
        rec["time"] = (ts - self._ts0) // 10**9
        rec["id"] = _hash_columns(rb, "field", "", 0)["keys"]
        rec["size"] = np.maximum(rb.column("value_size").fill_null(1).to_numpy().astype(np.uint32), 1)
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
    chunk's first read of each key."""
    ids = rec["id"]
    pos = np.arange(start, start + len(rec), dtype=np.int64)
    order = np.lexsort((pos, ids))  # by key, then position
    sorted_ids, sorted_pos = ids[order], pos[order]
    same = sorted_ids[1:] == sorted_ids[:-1]
    nxt = np.full(len(rec), -1, dtype=np.int64)
    nxt[order[:-1][same]] = sorted_pos[1:][same]
    last = np.ones(len(rec), dtype=bool)  # each key's last read in the chunk: its next one is after it
    last[:-1] = ~same
    if len(keys):
        at = np.minimum(np.searchsorted(keys, sorted_ids[last]), len(keys) - 1)
        known = keys[at] == sorted_ids[last]
        nxt[order[last][known]] = later[at[known]]
    rec["next"] = nxt
    first = np.ones(len(rec), dtype=bool)  # each key's first read in the chunk: the map's new entry
    first[1:] = ~same
    new_keys, new_pos = sorted_ids[first], sorted_pos[first]
    at = np.searchsorted(keys, new_keys)
    known = np.zeros(len(new_keys), dtype=bool)
    inside = at < len(keys)
    known[inside] = keys[at[inside]] == new_keys[inside]
    later[at[known]] = new_pos[known]
    return np.insert(keys, at[~known], new_keys[~known]), np.insert(later, at[~known], new_pos[~known])
