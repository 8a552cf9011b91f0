"""The trace's rows with their key and field text, for the report's anatomy of the traffic.

The simulation reads hashes (a reader holds no key text); the report's anatomy needs the text of two things
only: a key's prefix (its entity type, `st_`, `cx_`) and a field's id (to name the feature). So the report
reads the trace a second time, as rows of the trace schema: a capture through the parser, a Parquet trace
column by column (a dataset's parts as the simulation reads them), a text trace (MONITOR, commands, keys)
through the one reader of its format. Values are never read: only the names of commands, keys, fields,
sizes and times."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from cachescope.trace.dataset_spec import is_dataset

COLUMNS = ("ts_ns", "req", "op", "cmd", "key", "field", "value_size", "client", "error")
BATCH_ROWS = 1 << 16


def trace_columns(path: str, fmt: str, ports) -> Iterator[dict]:
    """Dicts of numpy / list columns (a subset of COLUMNS: what the format has), one batch at a time."""
    if fmt == "pcap":
        from cachescope.parse.capture_source import CaptureRows

        yield from (_arrow_columns(rb) for rb in CaptureRows(path, ports).record_batches())
    elif fmt == "parquet" and is_dataset(path):
        # A folder, glob or URL of parts, read as the simulation read them (in time order).
        from cachescope.trace.dataset import dataset_files, record_batches

        fs, files = dataset_files(path)
        yield from (_arrow_columns(rb) for rb in record_batches(files, fs, list(COLUMNS), BATCH_ROWS))
    elif fmt == "parquet":
        from cachescope.trace.parquet import parquet_file

        pf = parquet_file(path)
        names = [c for c in COLUMNS if c in pf.schema_arrow.names]
        yield from (_arrow_columns(rb) for rb in pf.iter_batches(batch_size=BATCH_ROWS, columns=names))
    else:
        from cachescope.parse.text_source import TextRows

        yield from (_arrow_columns(rb) for rb in TextRows(path, fmt).record_batches(BATCH_ROWS))


def _arrow_columns(rb) -> dict:
    """numpy columns of a record batch: numbers as they are, strings as object arrays (a dictionary column
    through its dictionary, so each distinct string is made once), `op` as 0 read, 1 write, 2 delete."""
    import pyarrow as pa

    out = {}
    for name in COLUMNS:
        if name not in rb.schema.names:
            continue
        column = rb.column(name)
        if name == "ts_ns" and column.null_count:
            continue  # a text trace without a clock (commands, keys)
        if pa.types.is_dictionary(column.type):
            # The entries this batch uses only: a column read as a dictionary carries its whole row group's
            # (a million keys), which every batch of the row group would otherwise turn into strings again.
            index = column.indices.fill_null(len(column.dictionary)).to_numpy(zero_copy_only=False)
            used, index = np.unique(index, return_inverse=True)
            named = used[used < len(column.dictionary)]  # the last, if there, stands for null
            text = column.dictionary.take(pa.array(named)).to_pylist()
            values = np.asarray(text + [None] * (len(used) - len(named)), dtype=object)
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
