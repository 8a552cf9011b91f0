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
from cachescope.threads import task_threads
from cachescope.trace.formats import FORMATS, OBJECT_FORMATS, TEXT_FORMATS, sniff
from cachescope.trace.opened import OpenedInput

BATCH_EVENTS = 1 << 20
# A live input (standard input, a FIFO) in small batches: its progress line moves while the traffic is slow.
LIVE_BATCH_EVENTS = 1 << 12
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
    # The trace tells which commands a connection sent together (a capture's batches); otherwise (no replies:
    # MONITOR and text traces) every command counts as a round trip of its own.
    round_trips_known: bool = False
    # Object traces (oracleGeneral, CSV with sizes): requests of size 0, left out as libCacheSim leaves them out.
    zero_size_requests: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class ClientHosts:
    """Client hosts by the index a `clients` column holds, numbered as they first come."""

    def __init__(self):
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, host: str) -> int:
        if host not in self._ids:
            self._ids[host] = len(self.names)
            self.names.append(host)
        return self._ids[host]


class SourceRouting:
    """What every trace source (a file, a merge of files, a dataset) carries for the fleets' routes: set
    before reading, and found while reading."""

    def __init__(self):
        self.want_clients = False
        """Whether batches should carry `clients` (routing by client): set before reading."""
        self.key_pattern: str | None = None
        """With the key-pattern route: the regular expression whose first group is each key's shard id."""
        self.unmatched_shards = 0
        """Lookups, writes and deletes whose key the pattern did not match (each key its own shard)."""
        self.client_hosts = ClientHosts()

    @property
    def hosts(self) -> list[str]:
        """Client hosts by the index the `clients` column holds."""
        return self.client_hosts.names

    def host_id(self, host: str) -> int:
        """The index of a client host, new ones appended."""
        return self.client_hosts.id(host)


class TraceSource(SourceRouting):
    """One trace file opened for reading: iterate `batches()` once, then read `info`."""

    def __init__(self, path: str, format: str | None = None, granularity: str = "field", ports=(6379,),
                 stop=None, csv_spec: str | None = None):
        """`path`: a file, a FIFO, or `-` for standard input; compressed or not. `stop`: a `_native.StopFlag`
        ending a live input (standard input, a FIFO, a pipe) as if it had ended (`cachescope.trace.live`).
        `csv_spec`: the columns of a CSV trace, as libCacheSim's `-t csv` params (`time-col=1,obj-id-col=2,
        obj-size-col=3,...`) or a preset's name (`twitter`)."""
        super().__init__()
        if granularity not in GRANULARITIES:
            raise UsageError(f"unknown granularity {granularity!r}; choose field or entity")
        if format is not None and format not in FORMATS:
            sniff(None, format)  # the one-line error naming the formats
        self._opened = OpenedInput(os.fspath(path))
        self.path = self._opened.name
        self.compression = self._opened.compression
        self.format = sniff(self._opened, format)
        self.stop = None if self._opened.regular else (_native.StopFlag() if stop is None else stop)
        if self.format == "twitter":
            self.format, csv_spec = "csv", csv_spec or "twitter"
        if self.format == "csv" and not csv_spec:
            raise UsageError(f"{self.path}: a CSV trace needs its columns: --csv-spec 'time-col=1,obj-id-col=2,"
                             "obj-size-col=3' (libCacheSim's -t csv params) or a preset (--format twitter)")
        self.csv_spec = csv_spec
        self.granularity = granularity
        self.size_bytes = self._opened.size_bytes
        self.info = TraceInfo(self.path, self.format)
        if self.format == "pcap":
            from cachescope.parse.capture_source import check_ports
            from cachescope.parse.discover import find_redis_ports

            if ports is None and not self._opened.regular:
                raise UsageError(f"{self.path}: a capture read from a stream needs --port (finding Redis by its "
                                 "content reads the capture twice)")
            # Found once here when not given, so that every later pass over the capture uses the same ports.
            ports = find_redis_ports(self.path) if ports is None else check_ports(ports)
        self.ports = ports
        self.capture_stats: dict = {}
        self._bytes_read = 0

    @property
    def bytes_read(self) -> int:
        """How far reading has got, for progress bars."""
        return self._bytes_read

    @property
    def rereadable(self) -> bool:
        """Whether the trace can be read a second time (a regular file; not a FIFO or a pipe)."""
        return self._opened.regular

    @property
    def live(self) -> bool:
        """Whether the input is a live stream that a signal or a duration ends."""
        return self.stop is not None

    def _native_args(self) -> dict:
        args = self._opened.native_args()
        if self.stop is not None:
            args["stop"] = self.stop
        return args

    def batches(self, batch_events: int = BATCH_EVENTS) -> Iterator[Batch]:
        if self.live:
            batch_events = min(batch_events, LIVE_BATCH_EVENTS)
        if self.format in TEXT_FORMATS:
            batches = self._text_batches(batch_events)
        elif self.format in OBJECT_FORMATS:
            batches = self._object_batches(batch_events)
        elif self.format == "pcap":
            batches = self._capture_batches(batch_events)
        else:
            batches = self._parquet_batches(batch_events)
        return self._closing(batches)

    def _closing(self, batches: Iterator[Batch]) -> Iterator[Batch]:
        try:
            yield from batches
        finally:
            self._opened.close()

    def _text_batches(self, batch_events: int) -> Iterator[Batch]:
        try:
            reader = _native.TextReader(self.path, self.format, self.granularity, **self._native_args(),
                                        threads=task_threads())
        except OSError as e:
            raise TraceFormatError(str(e)) from None
        if self.key_pattern is not None:
            try:
                reader.set_key_pattern(self.key_pattern)
            except ValueError as e:
                raise UsageError(str(e)) from None
        for batch in self._native_batches(reader, batch_events):
            if self.want_clients and "clients" in batch:
                # The reader numbers its hosts as they first come, as ClientHosts does.
                for host in reader.hosts()[len(self.hosts):]:
                    self.host_id(host)
            else:
                batch.pop("clients", None)
            self.unmatched_shards += batch.pop("unmatched_shards", 0)
            if self.format == "keys":
                # Every line is a read and a command of its own, which is what no `ops` and no `reqs` mean:
                # without them the simulation takes its plain path (no per-event bookkeeping), twice as fast.
                batch.pop("ops", None)
                batch.pop("reqs", None)
            yield batch
        # What parse.py reports of this input, for simulate.py to report it the same way.
        self.capture_stats = reader.input_stats()

    def _native_batches(self, reader, batch_events: int) -> Iterator[Batch]:
        """A native reader's batches, its counters copied into `info` after each."""
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

    def feed_sampled(self, sim, batch_events: int = BATCH_EVENTS) -> Iterator[None]:
        """An oracleGeneral trace fed to `sim`, a simulation of sampled curves alone (`sim.sampled_only`), in
        the core: the records of each batch hashed on the simulation's threads and only the sampled lookups
        passed on (`src/simulation/sampled_scan.rs`); the same simulation as feeding it `batches()`. Yields
        after each batch of `batch_events` records."""
        if self.format != "oracleGeneral":
            raise ValueError(f"only an oracleGeneral trace is fed a sample of its records, not {self.format}")
        return self._closing(self._sampled_feed(sim, batch_events))

    def _sampled_feed(self, sim, batch_events: int) -> Iterator[None]:
        # A plain file is scanned where the page cache holds it, not copied out first (src/input/mapped.rs).
        reader = self._object_reader(mapped=True)
        while True:
            try:
                more = sim.feed_sampled(reader, batch_events)
            except _native.NativeTraceError as e:
                raise TraceFormatError(f"{e} (read as {self.format}; --format overrides)") from None
            self._bytes_read = reader.bytes_read
            for k, v in reader.stats().items():
                setattr(self.info, k, v)
            if not more:
                return
            yield

    def _object_reader(self, mapped: bool = False):
        if self.key_pattern is not None or self.want_clients:
            raise UsageError(f"{self.path}: an object trace has object ids, not Redis keys and clients: the "
                             "key-pattern and client routes need a Redis trace")
        try:
            return _native.ObjectReader(self.path, self.format, self.csv_spec, **self._native_args(),
                                        **({"mapped": True} if mapped else {}), threads=task_threads())
        except ValueError as e:
            raise UsageError(f"{self.path}: {e}") from None
        except OSError as e:
            raise TraceFormatError(str(e)) from None

    def _object_batches(self, batch_events: int) -> Iterator[Batch]:
        reader = self._object_reader()
        for batch in self._native_batches(reader, batch_events):
            # oracleGeneral's batches come without ops (every record a read of its own: the native reader's
            # lean batches); a CSV's say which requests are reads.
            if "ops" in batch and not (batch["ops"] != 0).any():
                # All reads, each a request of its own: the simulation's plain path, as for a keys trace.
                batch.pop("ops")
                batch.pop("reqs")
            yield batch

    def _parquet_batches(self, batch_events: int) -> Iterator[Batch]:
        from cachescope.trace.parquet import read_parquet_batches
        from cachescope.trace.read_ahead import read_ahead

        if not self._opened.regular:
            raise TraceFormatError(f"{self.path}: a Parquet trace must be a regular file (Parquet is read from "
                                   "its end, a pipe cannot be); save it to a file first")
        threads = task_threads()
        batches = read_parquet_batches(self, batch_events, use_threads=threads != 1)
        if threads == 1:  # a task given one thread: decoding and simulating take turns (threads.py)
            yield from batches
            return
        # Decoding the next row group overlaps simulating this one (read_ahead.py).
        yield from read_ahead(batches)

    def _capture_batches(self, batch_events: int) -> Iterator[Batch]:
        """A capture parsed on the fly: its rows become events as a Parquet trace's would."""
        from cachescope.parse.capture_source import BATCH_ROWS, CaptureRows
        from cachescope.trace.parquet import RecordBatchEvents

        rows = CaptureRows(self.path, self.ports, opened=self._opened, stop=self.stop)
        events = RecordBatchEvents(self)
        # Rows carry their key and field bytes (an MGET of long keys: hundreds of bytes a row), and the parser
        # holds one batch ahead: parse.py's smaller batches keep that to tens of MiB, not a GiB.
        for rb in rows.record_batches(min(batch_events, BATCH_ROWS)):
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
            raise TraceFormatError(f"{self.path}: {_nothing_cached(rows)}")


def _nothing_cached(rows) -> str:
    """Why a capture gives nothing to simulate: no Redis commands at all, or only commands that touch no
    cached value (PING, INFO, AUTH ...), said with their counts."""
    ports = ", ".join(map(str, rows.ports))
    other = rows.stats.get("other_commands") or {}
    commands = rows.stats.get("commands", 0) or sum(other.values())
    if not commands:
        return f"no Redis commands on port(s) {ports} in this capture ({_summary(rows.stats)})"
    top = sorted(other.items(), key=lambda kv: -kv[1])
    listed = ", ".join(f"{name} x {n:,}" for name, n in top[:6]) + (", ..." if len(top) > 6 else "")
    return (f"{commands:,} Redis command{'s' if commands != 1 else ''} on port(s) {ports}, none of them a "
            f"lookup, write or delete ({listed}): nothing to simulate")


def _summary(stats: dict) -> str:
    return f"{stats.get('packets', 0):,} packets, {stats.get('connections', 0):,} Redis connections"


def open_trace(path: str, format: str | None = None, granularity: str = "field", ports=(6379,),
               stop=None, csv_spec: str | None = None) -> TraceSource:
    """Opens a trace of any supported format (detected unless `format` is given), compressed or not, `-` for
    standard input; a packet capture is parsed on the fly, its Redis server on `ports`."""
    return TraceSource(path, format, granularity, ports, stop, csv_spec)


def input_reports(source) -> list:
    """What reading each input found (a capture's or text trace's counters), for the same report parse.py
    gives; a merge's inputs each their own."""
    return [{"input": s.path, **s.capture_stats} for s in getattr(source, "sources", [source]) if s.capture_stats]
