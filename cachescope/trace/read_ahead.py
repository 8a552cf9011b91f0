"""A trace's batches read one step ahead, on a thread of their own.

Decoding a Parquet row group and turning it into events (pyarrow, numpy, the core's column hashing) takes
about as long as simulating it, and the core simulates without holding the GIL: reading the next batch
while this one is simulated overlaps the two, as the capture parser's own thread does for captures."""

from __future__ import annotations

import queue
import threading
from typing import Iterator

_END = object()
_POLL_S = 0.1  # how often a blocked side looks whether the other has gone (and Ctrl-C gets through)


def read_ahead(batches: Iterator, depth: int = 2) -> Iterator:
    """Yields what `batches` yields, read up to `depth` batches ahead; its errors are raised here, in order."""
    ready: queue.Queue = queue.Queue(maxsize=depth)
    gone = threading.Event()

    def hand(item) -> bool:
        while not gone.is_set():
            try:
                ready.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in batches:
                if not hand((None, batch)):
                    return
            hand((None, _END))
        except BaseException as e:  # noqa: BLE001  (handed to the reader's caller, who raises it)
            hand((e, None))

    thread = threading.Thread(target=read, name="trace-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            try:
                error, batch = ready.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if error is not None:
                raise error
            if batch is _END:
                return
            yield batch
    finally:
        gone.set()
        thread.join()
