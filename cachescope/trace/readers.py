"""Trace readers: any supported trace as a stream of event batches. A batch is a dict of numpy columns made
in Rust (the `Events` of the core: `keys` (hashed cache keys), `ops`, `entities`, `fields`, `key_bytes`,
`reqs`, and `ts_ns` / `value_sizes` when the trace has them), so a trace never becomes Python objects a
lookup at a time, and memory stays at one batch whatever the file's size.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterator

import numpy as np

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.trace.formats import TEXT_FORMATS, detect_format

BATCH_EVENTS = 1 << 20
GRANULARITIES = ("field", "entity")

Batch = Dict[str, np.ndarray]


@dataclass
class TraceInfo:
    """What a reader saw; complete once the batches are exhausted."""

    path: str
    format: str
    commands: int = 0
    lookups: int = 0
    writes: int = 0
    deletes: int = 0
    other_commands: int = 0
    # Commands answered with an error (a cluster's MOVED and ASK redirections, LOADING, WRONGTYPE, ...), by
    # code: not lookups nor writes, so their rows are dropped; `error_lookups` counts the lookups they held.
    error_replies: Dict[str, int] = field(default_factory=dict)
    error_lookups: int = 0
    # Lookups by the Redis server (ip:port) that answered them, when the trace names it (captures).
    lookups_by_server: Dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


class TraceSource:
    """One trace file opened for reading: iterate `batches()` once, then read `info`."""

    def __init__(self, path: str, format: str | None = None, granularity: str = "field", ports=(6379,)):
        if granularity not in GRANULARITIES:
            raise UsageError(f"unknown granularity {granularity!r}; choose field or entity")
        self.path = os.fspath(path)
        self.format = detect_format(self.path, format)
        self.granularity = granularity
        self.size_bytes = os.path.getsize(self.path)
        self.info = TraceInfo(self.path, self.format)
        if self.format == "pcap":
            from cachescope.parse.capture_source import check_ports
            from cachescope.parse.discover import find_redis_ports

            # Found once here when not given, so that every later pass over the capture uses the same ports.
            ports = find_redis_ports(self.path) if ports is None else check_ports(ports)
        self.ports = ports
        self.capture_stats: dict = {}
        self._bytes_read = 0

    @property
    def bytes_read(self) -> int:
        """How far reading has got, for progress bars."""
        return self._bytes_read

    def batches(self, batch_events: int = BATCH_EVENTS) -> Iterator[Batch]:
        if self.format in TEXT_FORMATS:
            return self._text_batches(batch_events)
        if self.format == "pcap":
            return self._capture_batches(batch_events)
        return self._parquet_batches(batch_events)

    def _text_batches(self, batch_events: int) -> Iterator[Batch]:
        reader = _native.TextReader(self.path, self.format, self.granularity)
        while True:
            try:
                batch = reader.next_batch(batch_events)
            except _native.NativeTraceError as e:
                raise TraceFormatError(f"{e} (read as {self.format}; --format overrides)") from None
            self._bytes_read = reader.bytes_read
            for k, v in reader.stats().items():
                setattr(self.info, k, v)
            if batch is None:
                return
            yield batch

    def _parquet_batches(self, batch_events: int) -> Iterator[Batch]:
        from cachescope.trace.parquet import read_parquet_batches

        yield from read_parquet_batches(self, batch_events)


    def _capture_batches(self, batch_events: int) -> Iterator[Batch]:
        """A capture parsed on the fly: its rows become events as a Parquet trace's would."""
        from cachescope.parse.capture_source import CaptureRows
        from cachescope.trace.parquet import RecordBatchEvents

        rows = CaptureRows(self.path, self.ports)
        events = RecordBatchEvents(self)
        for rb in rows.record_batches(batch_events):
            self._bytes_read = rows.bytes_read
            self.capture_stats = rows.stats
            batch = events.convert(rb)
            if batch is not None:
                yield batch
        self.capture_stats = rows.stats
        # The parser saw every command; the rows only those that read or change a cached value.
        self.info.commands = rows.stats.get("commands", self.info.commands)
        self.info.other_commands = sum(rows.stats.get("other_commands", {}).values())
        if self.info.lookups + self.info.writes + self.info.deletes == 0:
            raise TraceFormatError(f"{self.path}: no Redis commands on port(s) "
                                   f"{', '.join(map(str, rows.ports))} in this capture ({_summary(rows.stats)})")


def _summary(stats: dict) -> str:
    return f"{stats.get('packets', 0):,} packets, {stats.get('connections', 0):,} Redis connections"


def open_trace(path: str, format: str | None = None, granularity: str = "field", ports=(6379,)) -> TraceSource:
    """Opens a trace of any supported format (detected unless `format` is given); a packet capture is parsed
    on the fly, its Redis server on `ports`."""
    return TraceSource(path, format, granularity, ports)
