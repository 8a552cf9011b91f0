"""Writing one output the user named: beside it, then renamed over it once complete (a FIFO, a device or
/dev/stdout in place), and a failure to write it (a full disk, a folder gone) one line naming the user's path,
never the temporary file's. A failed write leaves nothing that looks complete: no empty or half-written file
where the output should be, and an earlier complete one untouched."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

from cachescope.errors import CachescopeError
from cachescope.outputs import in_place, rename_target


class OutputError(CachescopeError):
    """An output could not be written (exit status 2, like bad input: the run's answer is not there)."""


def partial_path(final: str) -> str:
    """Where `final` is written before the rename: beside it, hidden, its extension kept (matplotlib and
    pandas choose the format by it)."""
    directory, name = os.path.split(final)
    return os.path.join(directory, f".partial.{name}")


def write_failed(path: str, what: str, e: OSError, temporary: str | None = None) -> OutputError:
    """The one line for an output `path` (`what`: its flag) that could not be written."""
    reason = e.strerror or (os.strerror(e.errno) if e.errno else str(e))
    # pyarrow's errors carry the system's reason in their text only: "... Detail: [errno 28] No space left".
    detail = re.search(r"\[errno \d+\] ([^\n]+)", reason)
    if detail:
        reason = detail.group(1)
    if temporary:
        reason = reason.replace(temporary, path)
    return OutputError(f"{path}: cannot write {what}: {reason}")


@contextmanager
def output_file(path, what: str):
    """Yields the path to write `path` to; on success it is in place. Any OSError becomes an `OutputError`."""
    target = os.fspath(path)
    if in_place(target):
        try:
            yield target
        except OSError as e:
            raise write_failed(target, what, e) from None
        return
    final = rename_target(target)
    partial = partial_path(final)
    try:
        yield partial
        os.replace(partial, final)
    except OSError as e:
        raise write_failed(target, what, e, partial) from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)
