"""Several traces read as one, in time order: the captures (or MONITOR logs, or Parquet traces) of several
service hosts, merged into the stream of the whole fleet.

A streaming merge: each trace hands out batches in its own time order, and the merge holds the events of
each until every trace has gone past them, so memory is about one batch per trace. Each trace's commands
stay its own (`reqs` are kept apart), and each trace's client hosts stay distinct from another's even when
they share an address (a client is named `HOST:ADDRESS`, HOST named from the file as `parse.py` names it when
it merges captures, so both merges name a client alike).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from cachescope.errors import TraceFormatError, UsageError
from cachescope.parse.inputs import host_names
from cachescope.trace.readers import Batch, SourceRouting, TraceInfo, TraceSource

# A trace's command indices are kept apart from another's in the top bits.
_REQ_SHIFT = 48
# Connections are numbered per trace (uint32): trace k's are moved above the others'.
_CONN_SHIFT = 32


class MergedSource(SourceRouting):
    """Acts as a TraceSource over `sources`, whose batches it merges by `ts_ns`."""

    def __init__(self, sources: list[TraceSource]):
        super().__init__()
        if len(sources) < 2:
            raise UsageError("a merge needs at least two traces")
        self.sources = sources
        self.path = " + ".join(s.path for s in sources)
        formats = {s.format for s in sources}
        self.format = formats.pop() if len(formats) == 1 else "merged"
        self.granularity = sources[0].granularity
        self.ports = sources[0].ports
        self.size_bytes = sum(s.size_bytes or 0 for s in sources)
        self.info = TraceInfo(self.path, self.format)
        self.capture_stats: dict = {}
        self.rereadable = all(getattr(s, "rereadable", True) for s in sources)
        self.trace_hosts = host_names([s.path for s in sources])

    @property
    def bytes_read(self) -> int:
        return sum(s.bytes_read for s in self.sources)

    def batches(self, batch_events: int | None = None) -> Iterator[Batch]:
        for s in self.sources:
            s.want_clients, s.key_pattern = self.want_clients, self.key_pattern
        streams = [self._tagged(k, s, batch_events) for k, s in enumerate(self.sources)]
        held: list[list[Batch]] = [[] for _ in streams]
        last = [None] * len(streams)  # the time each trace has reached; None: nothing yet, or ended
        live = list(range(len(streams)))
        for k in live:
            self._pull(k, streams, held, last)
        while True:
            live = [k for k in range(len(streams)) if last[k] is not None]
            if not live:
                break
            horizon = min(last[k] for k in live)
            out = self._release(held, horizon)
            if out is not None:
                yield out
            # The trace that holds the horizon back reads on.
            for k in live:
                if last[k] == horizon:
                    self._pull(k, streams, held, last)
        out = self._release(held, None)
        if out is not None:
            yield out
        self._sum_info()

    def _tagged(self, k: int, source: TraceSource, batch_events) -> Iterator[Batch]:
        """The trace's batches with its commands and clients made distinct from the other traces'."""
        args = () if batch_events is None else (batch_events,)
        ids: list[int] = []
        commands = 0
        for batch in source.batches(*args):
            if "ts_ns" not in batch:
                raise UsageError(f"{source.path}: merging traces needs timestamps, and this {source.format} "
                                 "trace has none")
            if "reqs" not in batch:  # every event a command of its own
                batch["reqs"] = np.arange(commands, commands + len(batch["keys"]), dtype=np.uint64)
                commands += len(batch["keys"])
            batch["reqs"] = batch["reqs"] + np.uint64(k << _REQ_SHIFT)
            if "batches" in batch:
                batch["conns"] = batch["conns"] + np.uint64(k << _CONN_SHIFT)
            else:  # every command a round trip of its own, on the last connection number of the trace's range
                batch["conns"] = np.full(len(batch["keys"]), ((k + 1) << _CONN_SHIFT) - 1, dtype=np.uint64)
                batch["batches"] = batch["reqs"]
            if "clients" in batch:
                # The trace's host i is the merge's host ids[i], named HOST:ADDRESS.
                for host in source.hosts[len(ids):]:
                    ids.append(self.client_hosts.id(f"{self.trace_hosts[k]}:{host}"))
                batch["clients"] = np.array(ids, dtype=np.uint32)[batch["clients"]]
            yield batch

    @staticmethod
    def _pull(k, streams, held, last):
        batch = next(streams[k], None)
        if batch is None:
            last[k] = None
            return
        ts = batch["ts_ns"]
        if len(ts) > 1 and np.any(ts[1:] < ts[:-1]):
            raise TraceFormatError("a trace to merge is not in time order; parse it with this version first")
        held[k].append(batch)
        last[k] = int(ts[-1]) if len(ts) else (last[k] or 0)

    @staticmethod
    def _release(held, horizon) -> Batch | None:
        """Every held event at or before `horizon` (all, when None), merged in time order."""
        parts = []
        for k, batches in enumerate(held):
            keep = []
            for batch in batches:
                ts = batch["ts_ns"]
                cut = len(ts) if horizon is None else int(np.searchsorted(ts, horizon, side="right"))
                if cut:
                    parts.append({name: col[:cut] for name, col in batch.items()})
                if cut < len(ts):
                    keep.append({name: col[cut:] for name, col in batch.items()})
            held[k] = keep
        if not parts:
            return None
        columns = set.intersection(*(set(p) for p in parts))
        merged = {name: np.concatenate([p[name] for p in parts]) for name in columns}
        order = np.argsort(merged["ts_ns"], kind="stable")
        return {name: col[order] for name, col in merged.items()}

    def _sum_info(self) -> None:
        """The traces' counts added up (numbers, and counts by name)."""
        for name, value in vars(self.sources[0].info).items():
            if isinstance(value, bool) or name in ("path", "format"):
                continue
            if isinstance(value, int):
                setattr(self.info, name, sum(getattr(s.info, name) for s in self.sources))
            elif isinstance(value, dict):
                total: dict = {}
                for s in self.sources:
                    for key, n in getattr(s.info, name).items():
                        total[key] = total.get(key, 0) + n
                setattr(self.info, name, total)
        self.info.round_trips_known = all(s.info.round_trips_known for s in self.sources)
        self.unmatched_shards = sum(s.unmatched_shards for s in self.sources)
        self.capture_stats = {s.path: s.capture_stats for s in self.sources if s.capture_stats}
