"""The trace's rows with their key and field text, for the report's anatomy of the traffic.

The simulation reads hashes (a reader holds no key text); the report's anatomy needs the text of two things
only: a key's prefix (its entity type, `st_`, `cx_`) and a field's id (to name the feature). So the report
reads the trace a second time, as rows of the trace schema: a capture through the parser, a Parquet trace
column by column, a MONITOR log through parse.py's reader, a commands or keys text by splitting its lines.
Values are never read: only the names of commands, keys, fields, sizes and times."""

from __future__ import annotations

import shlex
from typing import Iterator

import numpy as np

COLUMNS = ("ts_ns", "req", "op", "cmd", "key", "field", "value_size", "client", "error")
BATCH_ROWS = 1 << 16


def trace_columns(path: str, fmt: str, ports) -> Iterator[dict]:
    """Dicts of numpy / list columns (a subset of COLUMNS: what the format has), one batch at a time."""
    if fmt == "pcap":
        from cachescope.parse.capture_source import CaptureRows

        yield from (_arrow_columns(rb) for rb in CaptureRows(path, ports).record_batches())
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        names = [c for c in COLUMNS if c in pf.schema_arrow.names]
        yield from (_arrow_columns(rb) for rb in pf.iter_batches(batch_size=BATCH_ROWS, columns=names))
    elif fmt == "monitor":
        from cachescope.parse.monitor_log import MonitorRows

        yield from (_arrow_columns(rb) for rb in MonitorRows(path).record_batches())
    else:
        yield from _text_columns(path, fmt)


def _arrow_columns(rb) -> dict:
    """numpy columns of a record batch: numbers as they are, strings as object arrays (a dictionary column
    through its dictionary, so each distinct string is made once), `op` as 0 read, 1 write, 2 delete."""
    import pyarrow as pa

    out = {}
    for name in COLUMNS:
        if name not in rb.schema.names:
            continue
        column = rb.column(name)
        if pa.types.is_dictionary(column.type):
            values = np.asarray(column.dictionary.to_pylist() + [None], dtype=object)
            index = column.indices.fill_null(len(column.dictionary)).to_numpy(zero_copy_only=False)
            out[name] = values[index]
        elif name in ("key", "field", "op", "cmd", "client", "error"):
            out[name] = column.to_numpy(zero_copy_only=False).astype(object)
        else:
            out[name] = column.to_numpy(zero_copy_only=False)
    if "op" in out:
        codes = {"read": 0, "write": 1, "delete": 2}
        kinds, index = np.unique(out["op"].astype(str), return_inverse=True)
        out["op"] = np.array([codes.get(k, 3) for k in kinds], dtype=np.int8)[index]
    return out


def _text_columns(path: str, fmt: str) -> Iterator[dict]:
    """A commands trace split as its reader splits it (double-quoted arguments), through the MONITOR reader's
    command table; a keys trace is one lookup a line."""
    from cachescope.parse.monitor_log import MonitorRows

    table = MonitorRows.__new__(MonitorRows)
    table.stats = {"rows": 0, "other_commands": {}}
    rows: list[tuple] = []
    with open(path, "rb") as f:
        for req, line in enumerate(f):
            text = line.decode("utf-8", "surrogateescape").strip()
            if not text:
                continue
            if fmt == "keys":
                rows.append((req, 0, "GET", text, None))
            else:
                try:
                    args = [a.encode("utf-8", "surrogateescape") for a in shlex.split(text, posix=True)]
                except ValueError:
                    args = [a.encode("utf-8", "surrogateescape") for a in text.split()]
                rows.extend((req, op, cmd, k, f_) for _, _, req, op, cmd, k, f_, _ in table._rows(0, 0, req, args))
            if len(rows) >= BATCH_ROWS:
                yield _columns_of(rows)
                rows = []
    if rows:
        yield _columns_of(rows)


def _columns_of(rows: list[tuple]) -> dict:
    req, op, cmd, key, field = zip(*rows)
    return {"req": np.array(req, dtype=np.int64), "op": np.array(op, dtype=np.int8),
            "cmd": np.array(cmd, dtype=object), "key": np.array(key, dtype=object),
            "field": np.array(field, dtype=object)}
