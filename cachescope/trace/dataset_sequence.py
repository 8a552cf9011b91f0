"""A dataset whose parts follow one another in time (a capture rotated into files, `parse.py redis.pcap0
redis.pcap1 ... -o fleet/`) read part after part, as one Parquet trace is: only the columns the simulation
uses, keys and fields as dictionaries, no merge.

The merge (timemerge.py) must hold, sort and copy every column of every row to interleave parts that overlap
in time; on parts that do not overlap it would hand out the same rows in the same order (by time, then by
part in the merge's order, then by place), so reading them in that order gives the same events. Only `conn`
and `req` need what the merge's renumbering gives them: each part's numbers kept apart from the other parts'
(a connection or a command of one capture file is not one of the next's). Each part's are shifted past the
largest of the parts before it, from the Parquet statistics, so the events name the same connections and
commands as the merge's (other numbers, the same identities)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cachescope.errors import TraceFormatError
from cachescope.parse.schema import _numbers
from cachescope.trace.arrow_views import integers, valid


@dataclass
class Span:
    """A part's rows in time and the largest `conn` and `req` it numbers."""

    file: str
    first_ts: int
    last_ts: int
    max_conn: int
    max_req: int


def sequential_parts(files: list[str], fs=None) -> list[Span] | None:
    """The parts in the merge's order (by first time, then name) when each part's last time is at most the
    next part's first, so that reading them one after another is the merge; None when some overlap in time,
    or when the statistics do not tell (a part without `ts_ns`, `conn` or `req` statistics, or empty)."""
    spans = []
    for f in files:
        span = _span(f, fs)
        if span is None:
            return None
        spans.append(span)
    spans.sort(key=lambda s: (s.first_ts, _name(s.file)))
    for before, after in zip(spans, spans[1:]):
        if before.last_ts > after.first_ts:
            return None
    return spans


def _name(f: str) -> str:
    return f.replace("\\", "/").rsplit("/", 1)[-1]  # the merge's tie-break: a part's file name


def _span(f: str, fs) -> Span | None:
    try:
        meta = pq.ParquetFile(fs.open(f, "rb") if fs is not None else f).metadata
    except (pa.ArrowException, OSError) as e:
        raise TraceFormatError(f"{f}: not a readable Parquet file ({e})") from None
    if meta.num_row_groups == 0 or meta.num_rows == 0:
        return None
    index = {meta.row_group(0).column(j).path_in_schema: j for j in range(meta.num_columns)}
    bounds = {}
    for name in ("ts_ns", "conn", "req"):
        if name not in index:
            return None
        lows, highs = [], []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index[name]).statistics
            if stats is None or not stats.has_min_max or not isinstance(stats.min, (int, np.integer)):
                return None
            lows.append(int(stats.min))
            highs.append(int(stats.max))
        if name != "ts_ns" and min(lows) < 0:
            return None  # a negative conn or req: left to the merge, whose reader names it
        bounds[name] = (min(lows), max(highs))
    return Span(f, bounds["ts_ns"][0], bounds["ts_ns"][1], bounds["conn"][1], bounds["req"][1])


def sequential_batches(spans: list[Span], columns: list[str], batch_rows: int, fs=None,
                       use_threads: bool = True) -> Iterator[pa.RecordBatch]:
    """Each part's record batches in turn, `columns` only (those it has), keys and fields read as dictionaries
    where they are stored with one, `conn` and `req` shifted past the parts before. `use_threads`: pyarrow
    decodes the columns on its own threads."""
    from cachescope.trace.parquet import trace_parquet_file

    conn_base = req_base = 0
    for span in spans:
        try:
            pf = trace_parquet_file(span.file, fs)
            names = pf.schema_arrow.names
            for rb in pf.iter_batches(batch_size=batch_rows, columns=[c for c in columns if c in names],
                                      use_threads=use_threads):
                yield _shifted(rb, conn_base, req_base)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise TraceFormatError(f"{span.file}: corrupt Parquet data ({e})") from None
        conn_base += span.max_conn + 1
        req_base += span.max_req + 1


def _shifted(rb: pa.RecordBatch, conn_base: int, req_base: int) -> pa.RecordBatch:
    for name, base in (("conn", conn_base), ("req", req_base)):
        i = rb.schema.get_field_index(name)
        if i < 0 or base == 0 or not pa.types.is_integer(rb.schema.field(i).type):
            continue  # a column of another type is left to the reader, which names it
        column = rb.column(i)
        shifted = integers(column).astype(np.uint64) + np.uint64(base)
        # A null stays null (the reader names the row that has it).
        rb = rb.set_column(i, name, _numbers(pa.uint64(), shifted, valid(column) if column.null_count else None))
    return rb
