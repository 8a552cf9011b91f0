"""Batches read ahead on a thread come out in order, an error after the batches before it, and a reader
abandoned early stops its thread."""

import threading

import pytest

from cachescope.errors import TraceFormatError
from cachescope.trace.read_ahead import read_ahead


def test_batches_come_in_order_then_the_error_where_it_happened():
    def batches():
        yield from range(5)
        raise TraceFormatError("t.parquet: corrupt Parquet data after row 5")

    got = []
    with pytest.raises(TraceFormatError, match="after row 5"):
        for b in read_ahead(batches()):
            got.append(b)
    assert got == [0, 1, 2, 3, 4]


def test_a_reader_left_early_stops_its_thread():
    read = []

    def batches():
        for i in range(1000):
            read.append(i)
            yield i

    reader = read_ahead(batches(), depth=2)
    assert next(reader) == 0
    reader.close()
    assert not any(t.name == "trace-read-ahead" for t in threading.enumerate())
    assert len(read) <= 5  # it read at most the queue's depth past what was taken, not the whole trace
