"""The progress bar on stderr (tqdm), imported only when a bar is wanted: without one (`--no-progress`, a
library call) tqdm's import is start-up time for nothing."""

from __future__ import annotations

import sys


def progress_bar(total: int, desc: str, enabled: bool):
    """A bar of `total` bytes, shown only when reading takes more than a moment; a stand-in when disabled."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, desc=desc, file=sys.stderr, delay=1.0, leave=False)


class _NoBar:
    """What the commands use of a tqdm bar: a context manager with a position `n` and `update`."""

    n = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int) -> None:
        self.n += n


def count_bar(total: int, desc: str, enabled: bool):
    """A bar of `total` pieces of work (tasks done on a cluster), shown only when it takes more than a moment."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="task", desc=desc, file=sys.stderr, delay=1.0, leave=False)
