"""A packet capture read as trace rows: the Rust parser streams batches of rows, turned here into Arrow
record batches of the trace schema (DESIGN.md) without copying keys and fields."""

from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING, Iterator

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.parse.discover import find_redis_ports
from cachescope.threads import task_threads

# pyarrow (and numpy) are imported when the first batch is turned into Arrow, not here: parse.py starts the
# parser first and imports them while it runs (`head_start`).
if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_PORTS = (6379,)
# Rows per record batch (and per Parquet row group): small enough that a batch's columns (about 90 bytes a
# row) are reused from one batch to the next instead of being faulted in afresh, large enough that the
# per-batch work in Python does not count (measured: 1 Mi rows parse 30% slower, in twice the memory).
BATCH_ROWS = 1 << 17
# Batches parsed ahead while parse.py imports numpy and pyarrow (~0.2 s): two, as many as the parser holds
# ahead of Python anyway, so parse.py's peak stays where it was (four made it 20 MiB higher for little more).
# parse.py on the bench's 270 MB captures: 4-5% faster on average, best runs 6-10%.
HEAD_START_BATCHES = 2


def check_ports(ports) -> list[int]:
    ports = [ports] if isinstance(ports, (int, str)) else list(ports)
    out = []
    for p in ports:
        for part in str(p).split(","):
            if not part.strip().isdigit() or not 0 < int(part) < 65536:
                raise UsageError(f"port {part.strip()!r} is not a TCP port number")
            out.append(int(part))
    if not out:
        raise UsageError("no Redis port given")
    return out


class CaptureRows:
    """One capture opened for parsing. Iterate `record_batches()` once; `stats` is complete afterwards."""

    def __init__(self, path: str, ports=DEFAULT_PORTS, anonymize: bool = False, opened=None,
                 salt: int | None = None, stop=None, head_start: bool = False):
        """`ports`: the Redis server ports; None finds them by content (`discover.find_redis_ports`), which
        reads the capture once more, so a stream must name them. `opened`: the input's OpenedInput when its
        first bytes were already read (a FIFO, a pipe, standard input). `salt`: with `anonymize`, the salt to
        use (several captures of one run anonymized alike) instead of a fresh one. `stop`: a
        `_native.StopFlag` that ends a live input (`cachescope.trace.live`). `head_start`: the first batches
        are parsed from now on, on the parser's thread, while the caller goes on (parse.py imports numpy and
        pyarrow meanwhile); `record_batches()` must then be read at its default batch size. Not for a live
        input, whose reading a signal may end before the caller is ready for it."""
        self.path = opened.name if opened is not None else os.fspath(path)
        self.found_ports = ports is None
        if ports is None and opened is not None and opened.stream is not None:
            raise UsageError(f"{self.path}: a capture read from a stream needs --port (finding Redis by its "
                             "content reads the capture twice)")
        self.ports = find_redis_ports(self.path) if ports is None else check_ports(ports)
        self.size_bytes = opened.size_bytes if opened is not None else os.path.getsize(self.path)
        native_args = opened.native_args() if opened is not None else {}
        self.stop = stop
        if stop is not None:
            native_args["stop"] = stop
        elif head_start:
            native_args["head_start"] = (BATCH_ROWS, HEAD_START_BATCHES)
        # A fresh salt per parse: anonymized keys are consistent within the trace and useless outside it.
        salt = (secrets.randbits(64) if salt is None else salt) if anonymize else None
        try:
            # A task given one thread parses on it, as it asks for each batch (threads.py).
            self._parser = _native.CaptureParser(self.path, self.ports, salt, **native_args, threads=task_threads())
        except (_native.NativeTraceError, OSError) as e:
            raise TraceFormatError(str(e)) from None
        self.stats: dict = {}

    @property
    def bytes_read(self) -> int:
        return self._parser.bytes_read

    def record_batches(self, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        from cachescope.parse.schema import record_batch

        while True:
            try:
                cols = self._parser.next_batch(batch_rows)
            except _native.NativeTraceError as e:
                raise TraceFormatError(str(e)) from None
            finally:
                self.stats = {**self._parser.stats(), "redis_ports": self.ports, "ports_found": self.found_ports}
            if cols is None:
                return
            batch = record_batch(cols, self._parser.cmd_names())
            del cols  # the raw columns the batch does not share are freed before the next batch is parsed
            yield batch


def parse_capture(path: str, ports=DEFAULT_PORTS, anonymize: bool = False):
    """The whole trace of a capture (or of a tcpflow output directory, or of a text trace: a MONITOR log,
    `commands`, `keys`) as a pandas DataFrame (the trace schema of DESIGN.md), read as parse.py reads it;
    `ports=None` finds a capture's Redis ports by content. For inputs larger than memory, write a Parquet
    trace with `parse.py` instead."""
    import pyarrow as pa

    from cachescope.parse.input_rows import open_rows
    from cachescope.parse.schema import SCHEMA

    rows = open_rows(path, ports, anonymize)
    table = pa.Table.from_batches(list(rows.record_batches()), schema=SCHEMA)
    df = table.to_pandas()
    df.attrs["stats"] = rows.stats
    return df
