"""Several traces' rows (Arrow record batches of the trace schema) merged by time into one trace: what
`parse.py a.pcap b.pcap -o fleet.parquet` writes and what `simulate.py fleet/` reads of a dataset.

A streaming merge, as merge.py's over event batches: each stream is read in its own time order and its rows
are held until every stream has gone past them. A stream whose first time is known (a Parquet part, from its
statistics) is opened only when the merge reaches that time, so a week of captures holds only those that
overlap in time. Rows of equal time are let out together, ordered by stream, then by their order in it: the
merged rows do not depend on how the streams were cut into batches (a serial run and one on a cluster write
the same rows). `conn` and `req` are renumbered across the streams, in order of first appearance, so that
each stays unique in the merged trace; a command's rows keep one `req`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from cachescope.parse.schema import SCHEMA

# Rows per merged batch handed out (and so per Parquet row group of a merged trace).
OUT_ROWS = 1 << 17


@dataclass
class Stream:
    """One trace to merge: `open()` gives its record batches in time order; `start`, when known, is its first
    time (the stream is opened only once the merge gets there)."""

    name: str
    open: Callable[[], Iterator[pa.RecordBatch]]
    start: int | None = None


class _Open:
    def __init__(self, batches: Iterator[pa.RecordBatch]):
        self.batches = batches
        self.held: list[tuple[pa.RecordBatch, np.ndarray]] = []  # batches with their order times
        self.last: int | None = None  # the order time reached
        self.order_max: int | None = None


def merge_streams(streams: list[Stream]) -> Iterator[pa.RecordBatch]:
    """The rows of `streams` merged in time order, as record batches of the trace schema."""
    opened: dict[int, _Open] = {}
    ended: set[int] = set()
    numbering = _Renumbering()
    pending: list[pa.Table] = []
    pending_rows = 0
    # Streams of unknown start are opened at once; the others in order of their start, when reached.
    waiting = sorted((k for k, s in enumerate(streams) if s.start is not None), key=lambda k: (streams[k].start, k))
    next_waiting = 0
    for k, s in enumerate(streams):
        if s.start is None:
            _pull(k, streams, opened, ended)
    while True:
        live = [k for k in opened if k not in ended]
        unread = [k for k in live if opened[k].last is None]
        if unread:  # opened, nothing read yet (empty batches so far)
            for k in unread:
                _pull(k, streams, opened, ended)
            continue
        bounds = [opened[k].last for k in live]
        if next_waiting < len(waiting):
            bounds.append(streams[waiting[next_waiting]].start)
        if not bounds:
            break
        horizon = min(bounds)
        table = _release(opened, ended, horizon)
        if table is not None:
            pending.append(numbering.apply(table))
            pending_rows += table.num_rows
            if pending_rows >= OUT_ROWS:
                yield from _batches(pending)
                pending, pending_rows = [], 0
        for k in live:
            if opened[k].last == horizon:
                _pull(k, streams, opened, ended)
        while next_waiting < len(waiting) and streams[waiting[next_waiting]].start == horizon:
            _pull(waiting[next_waiting], streams, opened, ended)
            next_waiting += 1
    table = _release(opened, ended, None)
    if table is not None:
        pending.append(numbering.apply(table))
    yield from _batches(pending)


def _pull(k, streams, opened, ended) -> None:
    """Reads stream k's next batch (opening it first), or marks it ended."""
    s = opened.get(k)
    if s is None:
        s = opened[k] = _Open(iter(streams[k].open()))
    rb = next(s.batches, None)
    if rb is None:
        ended.add(k)
        if not s.held:
            opened.pop(k, None)
        return
    if rb.num_rows == 0:
        return
    ts = rb.column("ts_ns").to_numpy(zero_copy_only=False).astype(np.int64)
    # A row the parser let out after a later one (`rows_out_of_order`) keeps its place in its stream.
    order = np.maximum.accumulate(ts if s.order_max is None else np.maximum(ts, s.order_max))
    s.order_max = int(order[-1])
    s.held.append((rb, order))
    s.last = s.order_max


def _release(opened: dict, ended: set, horizon: int | None) -> pa.Table | None:
    """Every held row before `horizon` (all, when None), merged by time, then stream, then place; with the
    stream of each row in a `__stream` column (for the renumbering)."""
    parts, orders, ks = [], [], []
    for k in sorted(opened):
        s = opened[k]
        keep = []
        for rb, order in s.held:
            cut = len(order) if horizon is None else int(np.searchsorted(order, horizon, side="left"))
            if cut:
                parts.append(_conform(rb.slice(0, cut)))
                orders.append(order[:cut])
                ks.append(np.full(cut, k, np.int64))
            if cut < len(order):
                keep.append((rb.slice(cut), order[cut:]))
        s.held = keep
        if k in ended and not keep:
            del opened[k]  # ended, and nothing held: its parser's or file's memory goes
    if not parts:
        return None
    table = pa.Table.from_batches(parts).unify_dictionaries().combine_chunks()
    streams = np.concatenate(ks)
    # lexsort: the last key is the primary one; the position keeps each stream's own order.
    position = np.lexsort((np.arange(len(streams)), streams, np.concatenate(orders)))
    table = table.take(pa.array(position))
    return table.append_column("__stream", pa.array(streams[position]))


def _conform(rb: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of the trace schema (a Parquet part read back may have plain strings where it had categories)."""
    return rb if rb.schema.equals(SCHEMA) else rb.select(SCHEMA.names).cast(SCHEMA)


def _batches(tables: list[pa.Table]) -> Iterator[pa.RecordBatch]:
    if not tables:
        return
    table = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    for rb in table.to_batches(max_chunksize=OUT_ROWS):
        yield rb


class _Renumbering:
    """`conn` and `req` of the merged rows, numbered in order of first appearance across the streams."""

    def __init__(self):
        self.conns: dict[tuple[int, int], int] = {}
        self.last_req: dict[int, tuple[int, int]] = {}  # stream -> (its req, the merged req) of its last row
        self.reqs = 0

    def apply(self, table: pa.Table) -> pa.Table:
        streams = table.column("__stream").to_numpy()
        table = table.drop_columns(["__stream"])
        conn = table.column("conn").to_numpy().astype(np.uint64)
        req = table.column("req").to_numpy().astype(np.uint64)
        new_conn = self._conns(streams, conn)
        new_req = self._reqs(streams, req)
        table = table.set_column(table.schema.get_field_index("conn"), "conn", pa.array(new_conn, pa.uint32()))
        return table.set_column(table.schema.get_field_index("req"), "req", pa.array(new_req, pa.uint64()))

    def _conns(self, streams: np.ndarray, conn: np.ndarray) -> np.ndarray:
        both = (streams.astype(np.uint64) << np.uint64(32)) | conn
        distinct, first, inverse = np.unique(both, return_index=True, return_inverse=True)
        ids = np.empty(len(distinct), np.uint32)
        for i in np.argsort(first, kind="stable"):
            key = (int(distinct[i] >> np.uint64(32)), int(distinct[i] & np.uint64(0xFFFFFFFF)))
            if key not in self.conns:
                self.conns[key] = len(self.conns)
            ids[i] = self.conns[key]
        return ids[inverse.reshape(-1)]

    def _reqs(self, streams: np.ndarray, req: np.ndarray) -> np.ndarray:
        """A command's rows are together in its stream (not in the merge, where another stream's rows of the
        same time may come between): a row starts a command when its req differs from its stream's previous
        row's."""
        starts = np.zeros(len(req), dtype=bool)
        rows_of = {}
        for k in np.unique(streams):
            rows = np.flatnonzero(streams == k)
            r = req[rows]
            prev = np.empty_like(r)
            prev[1:] = r[:-1]
            last = self.last_req.get(int(k))
            first_new = last is None or int(r[0]) != last[0]
            prev[0] = r[0] + np.uint64(1) if first_new else r[0]
            starts[rows] = r != prev
            rows_of[int(k)] = rows
        new = self.reqs + np.cumsum(starts, dtype=np.int64) - 1
        out = np.empty(len(req), np.int64)
        for k, rows in rows_of.items():
            ids = np.where(starts[rows], new[rows], -1)
            last = self.last_req.get(k)
            if ids[0] < 0:
                ids[0] = last[1]
            ids = np.maximum.accumulate(ids)
            out[rows] = ids
            self.last_req[k] = (int(req[rows[-1]]), int(ids[-1]))
        self.reqs += int(np.count_nonzero(starts))
        return out.astype(np.uint64)
