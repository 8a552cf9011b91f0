"""One capture of several parsed into a Parquet part: the unit of work of `parse.py a.pcap b.pcap ...`, run
in this process or as a Dask task (so everything here is picklable and returns plain data).

A part holds the capture's rows as parsed, each client named by its host (`HOST:ip:port`, so that two hosts
stay two clients whatever their addresses), its own `conn` and `req` (the merge renumbers them). It is
written beside its final name and renamed there once complete: a task killed mid-way and run again leaves
no half part, and a part written is never rewritten."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cachescope.errors import CachescopeError
from cachescope.parse.clock_offset import ConnectionSignatures
from cachescope.parse.inputs import Capture
from cachescope.parse.schema import SCHEMA
from cachescope.trace.dataset_spec import PART_HOST_KEY


def part_path(root: str, capture: Capture, first_ts: int, partitioned: bool) -> str:
    """Where a capture's part goes: in a dataset, under its host and its first row's hour (UTC), as Hive
    partitions (`host=web1/date=2024-05-21/hour=14/web1-redis.pcap.parquet`); else flat in `root`."""
    name = f"{capture.name}.parquet"
    if not partitioned:
        return os.path.join(root, name)
    t = datetime.datetime.fromtimestamp(first_ts / 1e9, tz=datetime.timezone.utc)
    return os.path.join(root, f"host={capture.host}", f"date={t:%Y-%m-%d}", f"hour={t:%H}", name)


def partial_path(root: str, capture: Capture) -> str:
    """The name a part is written under until complete (dot-named: dataset readers skip it)."""
    return os.path.join(root, f".{capture.name}.partial")


def parse_part(capture: Capture, root: str, partitioned: bool, ports, anonymize: bool, salt: int | None) -> dict:
    """Parses `capture` into a part under `root`; returns its counters with `input`, `host`, `name`,
    `part` (None when it had no rows), `first_ts`, `last_ts` and `signatures` (for the clock offsets), or
    `{"input", "host", "name", "error"}` when the capture cannot be parsed (the one line to report)."""
    from cachescope.parse.input_rows import open_rows

    partial = partial_path(root, capture)
    head = {"input": capture.path, "host": capture.host, "name": capture.name}
    signatures = ConnectionSignatures()
    first_ts = last_ts = None
    rows_written = 0
    writer = None
    try:
        rows = open_rows(capture.path, ports, anonymize, salt)
        for rb in rows.record_batches():
            if rb.num_rows == 0:
                continue
            signatures.add(rb)
            ts = rb.column("ts_ns").to_numpy(zero_copy_only=False)
            first_ts = int(ts[0]) if first_ts is None else first_ts
            last_ts = int(np.max(ts)) if last_ts is None else max(last_ts, int(np.max(ts)))
            if writer is None:
                schema = SCHEMA.with_metadata({PART_HOST_KEY: capture.host.encode()})
                writer = pq.ParquetWriter(partial, schema, compression="zstd",
                                          write_statistics=["ts_ns", "req", "conn"])
            writer.write_batch(label_clients(rb, capture.host))
            rows_written += rb.num_rows
        if writer is not None:
            writer.close()
            writer = None
    except (CachescopeError, OSError) as e:
        _discard(writer, partial)
        where = f"{e.filename}: " if isinstance(e, OSError) and e.filename else ""
        message = str(e) if isinstance(e, CachescopeError) else f"{where}{e.strerror or e}"
        return {**head, "error": message if capture.path in message else f"{capture.path}: {message}"}
    except BaseException:
        _discard(writer, partial)
        raise
    final = None
    if rows_written:
        final = part_path(root, capture, first_ts, partitioned)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(partial, final)
    return {**head, **rows.stats, "rows_written": rows_written, "part": final, "first_ts": first_ts,
            "last_ts": last_ts, "signatures": signatures.signatures}


def _discard(writer, partial: str) -> None:
    if writer is not None:
        writer.close()
    if os.path.exists(partial):
        os.remove(partial)


def label_clients(rb: pa.RecordBatch, host: str) -> pa.RecordBatch:
    """The batch with each client `ip:port` named `HOST:ip:port` (the host part of a client is what routing
    by client keys on: `HOST:ip`)."""
    i = rb.schema.get_field_index("client")
    col = rb.column(i)
    names = pa.array([f"{host}:{c}" for c in col.dictionary.to_pylist()], pa.string())
    return rb.set_column(i, "client", pa.DictionaryArray.from_arrays(col.indices, names))
