"""A text trace (a `redis-cli MONITOR` log, a `commands` or a `keys` trace) read as trace rows, by the Rust
core's one reader of each text format (`_native.TextRows`): the reader simulate.py takes the same file with,
and the row builder and command table of captures. So parse.py, simulate.py and the Python API accept and
refuse the same lines with the same words, and count the same commands.

Text traces show commands, never replies: rows have no `found`, `latency_ns` nor `error`, reads no
`value_size` (writes get the size of the value they sent). A MONITOR log's connections are the client
addresses it prints; `commands` and `keys` traces have no clock (`ts_ns` null) and one connection."""

from __future__ import annotations

import os
import secrets
from typing import Iterator

import numpy as np
import pyarrow as pa

from cachescope import _native
from cachescope.errors import TraceFormatError
from cachescope.parse.schema import record_batch

BATCH_ROWS = 1 << 17
NO_ENDPOINT = "unknown"


class TextRows:
    """One text trace opened for parsing. Iterate `record_batches()` once; `stats` is complete afterwards."""

    def __init__(self, path: str, format: str, anonymize: bool = False, opened=None):
        self.path = os.fspath(path)
        self.format = format
        self.size_bytes = opened.size_bytes if opened is not None else os.path.getsize(self.path)
        native_args = opened.native_args() if opened is not None else {}
        salt = secrets.randbits(64) if anonymize else None
        self._rows = _native.TextRows(self.path, format, salt, **native_args)
        self.stats: dict = {}

    @property
    def bytes_read(self) -> int:
        return self._rows.bytes_read

    def record_batches(self, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                cols = self._rows.next_batch(batch_rows)
            except _native.NativeTraceError as e:
                raise TraceFormatError(str(e)) from None
            finally:
                self.stats = self._rows.stats()
            if cols is None:
                return
            if not self._rows.has_clock:
                cols["ts_valid"] = np.zeros(len(cols["ts_ns"]), bool)
            clients = self._rows.clients() or [NO_ENDPOINT]
            yield record_batch(cols, self._rows.cmd_names(), [(c, NO_ENDPOINT) for c in clients])
