"""The progress bar on stderr (tqdm), imported only when a bar is wanted: without one (`--no-progress`, a
library call) tqdm's import is start-up time for nothing. A bar is drawn on a terminal only (or in a notebook):
redrawn with carriage returns, it would fill a redirected stderr (a log file, a CI job) with lines of bars."""

from __future__ import annotations

import sys


def progress_bar(total: int, desc: str, enabled: bool):
    """A bar of `total` bytes, shown only when reading takes more than a moment; a stand-in when disabled."""
    if not (enabled and on_terminal()):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, desc=desc, file=sys.stderr, delay=1.0, leave=False)


def on_terminal(stream=None) -> bool:
    """Whether a bar on `stream` (stderr) is seen as one: a terminal, or a Jupyter kernel's output."""
    stream = sys.stderr if stream is None else stream
    if type(stream).__module__.startswith("ipykernel"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


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
    if not (enabled and on_terminal()):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="task", desc=desc, file=sys.stderr, delay=1.0, leave=False)
