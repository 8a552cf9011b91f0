"""The memory batches free, given back to the system every ten seconds while a trace is simulated.

The core keeps what a batch frees for the next one (`keep_freed_memory` in src/python.rs): taken afresh from
the kernel, it cost a page fault every 4 KiB. But batches are not all alike (a Parquet row group's
dictionary, a batch's strings), and what the next ones cannot use stays free in the middle of the heap,
where glibc never returns it: over the 10^9-lookup Parquet dataset, 82 MB free beside 57 MB in use after two
minutes, and growing. Every ten seconds `malloc_trim` gives the free pages back: `--curve lru --sample-keys
32768` over that dataset peaked at 177 MiB instead of 193 (164 at 10^8 lookups), for 8.9 s of system time in
284 CPU s. Once a second gave the same peak for 19 s of system time (the page faults of reusing what was given
back); the peak itself is the batches in flight, not what piles up.
"""

from __future__ import annotations

import time
from typing import Iterator

from cachescope import _native

EVERY_S = 10.0


def giving_back_freed_memory(batches: Iterator) -> Iterator:
    """Yields what `batches` yields; between two of them, at most once every `EVERY_S` seconds, gives back
    the memory free in the heap."""
    last = time.monotonic()
    for batch in batches:
        yield batch
        now = time.monotonic()
        if now - last >= EVERY_S:
            _native.release_freed_memory()
            last = now
