"""A `redis-cli MONITOR` log as trace rows, so that logs recorded before cachescope keep their value.

MONITOR shows commands, never replies: rows have no `found` and no `latency_ns`, reads no `value_size`
(writes get the size of the value they sent). Connections are told apart by the client address MONITOR
prints. Each line is split and checked by the Rust core's own MONITOR reader (`monitor_line`, what
simulate.py reads these logs with), so both commands accept and refuse the same lines with the same words;
only the rows are made here, in Python: MONITOR logs are small next to captures."""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np
import pyarrow as pa

from cachescope._native import monitor_line
from cachescope.errors import TraceFormatError
from cachescope.parse.keytext import key_text
from cachescope.parse.schema import SCHEMA

_READS = {"HMGET": "fields", "HGET": "fields", "HGETALL": "key", "GET": "key", "MGET": "keys"}
_WRITES = {"HSET": "field_values", "HMSET": "field_values", "SET": "key_value", "SETEX": "key_ttl_value",
           "MSET": "key_values", "HDEL": "fields", "DEL": "keys", "UNLINK": "keys", "EXPIRE": "key"}
_DELETES = {"HDEL", "DEL", "UNLINK"}
BATCH_ROWS = 1 << 16
# Longest line read, as simulate.py's text reader (src/trace/reader.rs): a file without newlines is refused
# instead of being read into memory whole.
MAX_LINE_BYTES = 64 << 20


class MonitorRows:
    def __init__(self, path: str, anonymize: bool = False, opened=None):
        """`opened`: the input's OpenedInput when its first bytes were already read (a FIFO, a pipe)."""
        if anonymize:
            raise TraceFormatError(f"{path}: --anonymize is for captures; anonymize a MONITOR log after parsing it")
        self.path = path
        self._opened = opened
        self.size_bytes = opened.size_bytes if opened is not None else os.path.getsize(path)
        self.bytes_read = 0
        self.stats = {"lines": 0, "commands": 0, "rows": 0, "connections": 0, "other_commands": {}}

    def record_batches(self) -> Iterator[pa.RecordBatch]:
        clients: dict[str, int] = {}
        rows: list[tuple] = []
        with (self._opened.python_file() if self._opened is not None else open(self.path, "rb")) as f:
            for lineno, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
                if len(line) > MAX_LINE_BYTES:
                    raise TraceFormatError(f"{self.path}: line {lineno}: line longer than {MAX_LINE_BYTES >> 20} "
                                           "MiB: not a text trace")
                self.bytes_read += len(line)
                line = line.rstrip(b"\r\n")
                if line.strip() == b"OK" and self.stats["commands"] == 0:
                    continue
                try:
                    parsed = monitor_line(line)
                except ValueError as e:
                    raise TraceFormatError(f"{self.path}: line {lineno}: {e}") from None
                if parsed is None:
                    continue
                ts, client, args = parsed
                client = client.decode("utf-8", "replace")
                conn = clients.setdefault(client, len(clients))
                req = self.stats["commands"]
                self.stats["commands"] += 1
                rows.extend(self._rows(ts, conn, req, args))
                if len(rows) >= BATCH_ROWS:
                    yield self._batch(rows, clients)
                    rows = []
        self.stats["connections"] = len(clients)
        if rows:
            yield self._batch(rows, clients)

    def _rows(self, ts, conn, req, raw):
        """`raw`: the command's arguments as bytes (name first). A written value's size is its bytes' count,
        not that of its text (`key_text` escapes bytes that are not UTF-8)."""
        cmd = key_text(raw[0]).upper()
        a = [key_text(x) for x in raw[1:]]
        n = [len(x) for x in raw[1:]]
        shape = _READS.get(cmd) or _WRITES.get(cmd)
        if shape is None or not a:
            other = self.stats["other_commands"]
            other[cmd] = other.get(cmd, 0) + 1
            return []
        op = 0 if cmd in _READS else (2 if cmd in _DELETES else 1)
        pairs = {
            "fields": lambda: [(a[0], f, None) for f in a[1:]],
            "key": lambda: [(a[0], None, None)],
            "keys": lambda: [(k, None, None) for k in a],
            "field_values": lambda: [(a[0], f, v) for f, v in zip(a[1::2], n[2::2])],
            "key_value": lambda: [(a[0], None, n[1] if len(a) > 1 else None)],
            "key_ttl_value": lambda: [(a[0], None, n[2] if len(a) > 2 else None)],
            "key_values": lambda: [(k, None, v) for k, v in zip(a[0::2], n[1::2])],
        }[shape]()
        self.stats["rows"] += len(pairs)
        return [(ts, conn, req, op, cmd, k, f, size) for k, f, size in pairs]

    def _batch(self, rows, clients) -> pa.RecordBatch:
        cols = list(zip(*rows))
        names = list(clients)
        n = len(rows)
        conn = np.array(cols[1], dtype=np.int32)
        return pa.RecordBatch.from_arrays([
            pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.uint32()), pa.array(cols[2], pa.uint64()),
            pa.DictionaryArray.from_arrays(pa.array(np.array(cols[3], np.int8)), pa.array(["read", "write", "delete"])),
            pa.array(cols[4], pa.string()).dictionary_encode().cast(SCHEMA.field("cmd").type),
            pa.array(cols[5], pa.large_string()), pa.array(cols[6], pa.large_string()),
            pa.array(cols[7], pa.int32()), pa.nulls(n, pa.bool_()), pa.nulls(n, pa.int64()),
            pa.DictionaryArray.from_arrays(pa.array(conn), pa.array(names, pa.string())),
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["unknown"], pa.string())),
            # MONITOR shows no replies: no row is known to have been answered with an error.
            pa.nulls(n, SCHEMA.field("error").type),
            # MONITOR shows no replies, so no round trips: each command is a batch of its own.
            pa.array(cols[2], pa.uint64()),
        ], schema=SCHEMA)
