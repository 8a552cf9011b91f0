"""How many threads a task may take.

On one machine a sweep uses every core: the core simulates each cache on a thread of its own, text traces are
read by several threads, a Parquet trace's next row group is decoded while this one is simulated, a capture's
next batch parsed. A Dask worker is started with a number of threads (`--nthreads`), one per task it runs at
once, and the cluster is sized by them: a task that starts threads of its own takes the cores of the other
workers, and adding workers adds nothing (a sweep of 8 tasks took as long on 2 single-threaded workers as on
1). So inside a Dask worker a task takes its worker's threads, no more, and the share the sweep that
submitted it gave it (the cluster's threads over its tasks) when that is less; everywhere else, no limit.

The readers and the simulation ask `task_threads()` on the thread that runs the task, when they start (a
thread they start themselves is not inside the task: the answer is taken before)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from contextvars import ContextVar

_share: ContextVar[int | None] = ContextVar("cachescope_task_threads", default=None)


def task_threads() -> int | None:
    """The threads the running task may take: None (no limit) outside a Dask worker and without a share;
    else at least 1."""
    share = _share.get()
    worker = _worker_threads()
    if worker is None:
        return share
    return worker if share is None else max(1, min(worker, share))


@contextmanager
def limited_to(threads: int | None):
    """What runs inside takes at most `threads` threads (None: as before)."""
    token = _share.set(threads if threads is None else max(1, int(threads)))
    try:
        yield
    finally:
        _share.reset(token)


def _worker_threads() -> int | None:
    """The threads of the Dask worker running this task, None outside one. Dask is imported only by what
    runs on it: a process that never imported it runs no task."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:  # not a task of a worker: a client, or the serial path in a process that has Dask
        return None
    state = getattr(worker, "state", worker)
    return max(1, int(state.nthreads))
