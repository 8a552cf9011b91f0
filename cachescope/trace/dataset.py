"""A Parquet dataset (the parts `parse.py a.pcap b.pcap -o fleet/` writes, one per capture, partitioned by
host and time) read as one trace in time order, streaming: a folder, a glob of Parquet files, or an fsspec
URL (`s3://bucket/fleet/`, when the filesystem's package is installed).

The parts are merged by timemerge.py, each opened only when the merge reaches its first time (from its
Parquet statistics), so memory follows the parts that overlap in time, not the dataset's size. The merged
rows are those `parse.py ... -o fleet.parquet` writes to one file, so both simulate alike."""

from __future__ import annotations

import glob
import os
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from cachescope.errors import TraceFormatError, UsageError
from cachescope.threads import task_threads
from cachescope.trace.dataset_sequence import sequential_batches, sequential_parts
from cachescope.trace.parquet import parquet_file
from cachescope.trace.readers import SourceRouting, TraceInfo
from cachescope.trace.timemerge import Stream, merge_streams

# Rows read at a time from each part being merged (several are open at once).
PART_BATCH_ROWS = 1 << 15


def dataset_files(spec: str) -> tuple[object, list[str]]:
    """(filesystem or None for local files, the Parquet files of the dataset, sorted). Files and folders whose
    name starts with `.` or `_` are not data (a part being written, `_SUCCESS`)."""
    if "://" in spec:
        try:
            import fsspec

            fs, path = fsspec.core.url_to_fs(spec)
        except ImportError as e:
            raise UsageError(f"{spec}: reading a URL needs fsspec and the filesystem's package ({e})") from None
        except (ValueError, OSError) as e:
            raise UsageError(f"{spec}: {e}") from None
        files = fs.find(path) if fs.isdir(path) else fs.glob(path)
        files = [f for f in files if _is_data(f[len(path):] if fs.isdir(path) else os.path.basename(f))]
        return fs, sorted(files)
    if os.path.isdir(spec):
        files = []
        for folder, dirs, names in os.walk(spec):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            files += [os.path.join(folder, n) for n in names if _is_data(n)]
    else:
        files = [f for f in glob.glob(spec, recursive=True) if _is_data(os.path.basename(f))]
    if not files:
        what = "is a directory, with no Parquet files (.parquet) of a dataset" if os.path.isdir(spec) \
            else "no Parquet files (.parquet) match"
        raise TraceFormatError(f"{spec}: {what}")
    return None, sorted(files)


def _is_data(rel: str) -> bool:
    parts = [p for p in rel.replace("\\", "/").split("/") if p]
    return bool(parts) and parts[-1].endswith((".parquet", ".pq")) and not any(p.startswith((".", "_")) for p in parts)


def part_streams(files: list[str], fs=None, use_threads: bool = True) -> list[Stream]:
    """A stream per Parquet file, its start from the `ts_ns` statistics, in the merge's order: by start, then
    by file name (the order parse.py merges the same parts in, whatever folders they sit in). `use_threads`:
    pyarrow decodes the columns on its own threads."""
    streams = []
    for f in files:
        pf = _open_parquet(f, fs)
        streams.append(Stream(os.path.basename(f), _reader(f, fs, use_threads), _first_ts(pf, f)))
    return ordered(streams)


def ordered(streams: list[Stream]) -> list[Stream]:
    return sorted(streams, key=lambda s: (s.start is None, s.start or 0, s.name))


def _open_parquet(f: str, fs) -> pq.ParquetFile:
    try:
        return parquet_file(f, fs)
    except (pa.ArrowException, OSError) as e:
        raise TraceFormatError(f"{f}: not a readable Parquet file ({e})") from None


def _first_ts(pf: pq.ParquetFile, f: str) -> int | None:
    """The smallest `ts_ns` of the file from its row groups' statistics (None when they do not say)."""
    names = pf.schema_arrow.names
    if "ts_ns" not in names:
        raise TraceFormatError(f"{f}: a dataset's part needs the ts_ns column to be merged in time order")
    col = pf.schema_arrow.get_field_index("ts_ns")
    lows = []
    for g in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(g).column(col).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
    return min(lows) if lows else None


def _reader(f: str, fs, use_threads: bool = True):
    def read() -> Iterator[pa.RecordBatch]:
        pf = _open_parquet(f, fs)
        try:
            yield from pf.iter_batches(batch_size=PART_BATCH_ROWS, use_threads=use_threads)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise TraceFormatError(f"{f}: corrupt Parquet data ({e})") from None
        finally:
            pf.close()
    return read


class DatasetSource(SourceRouting):
    """Acts as a TraceSource over a dataset: the merged rows become event batches as a Parquet trace's do."""

    def __init__(self, spec, granularity: str = "field", files: list[str] | None = None):
        super().__init__()
        self.path = spec if isinstance(spec, str) else f"{len(files)} Parquet parts"
        self.format = "parquet"
        self.granularity = granularity
        self.ports = None
        if files is None:
            self._fs, self.files = dataset_files(spec)
        else:
            self._fs, self.files = None, list(files)
        self.size_bytes = sum(self._size(f) for f in self.files)
        self.info = TraceInfo(self.path, self.format)
        self.capture_stats: dict = {}
        self.rereadable = True
        self._bytes_read = 0

    def _size(self, f: str) -> int:
        return self._fs.size(f) if self._fs is not None else os.path.getsize(f)

    @property
    def bytes_read(self) -> int:
        return self._bytes_read

    def batches(self, batch_events: int | None = None) -> Iterator[dict]:
        from cachescope.trace.parquet import RecordBatchEvents

        self.info = TraceInfo(self.path, self.format)
        events = RecordBatchEvents(self)
        total = max(sum(_rows(f, self._fs) for f in self.files), 1)
        for rb in self._record_batches():
            batch = events.convert(rb)
            self._bytes_read = self.size_bytes * events.rows // total
            if batch is not None:
                yield batch
        if self.info.commands == 0:
            raise TraceFormatError(f"{self.path}: empty trace: no commands")

    def _record_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows in time order (`record_batches`), the columns the simulation uses."""
        from cachescope.trace.parquet import BATCH_ROWS, _COLUMNS

        columns = [*_COLUMNS, *(("client",) if self.want_clients else ())]
        # A task given one thread: pyarrow decodes on it alone (cachescope/threads.py).
        return record_batches(self.files, self._fs, columns, BATCH_ROWS, use_threads=task_threads() != 1)


def record_batches(files: list[str], fs, columns: list[str], batch_rows: int,
                   use_threads: bool = True) -> Iterator[pa.RecordBatch]:
    """The rows of a dataset's parts in time order: parts that follow one another in time read one after
    another, `columns` only (dataset_sequence.py: the same rows without the merge's copies); else merged, every
    column."""
    spans = sequential_parts(files, fs)
    if spans is None:
        return merge_streams(part_streams(files, fs, use_threads=use_threads))
    return sequential_batches(spans, columns, batch_rows, fs, use_threads=use_threads)


def _rows(f: str, fs) -> int:
    return _open_parquet(f, fs).metadata.num_rows
