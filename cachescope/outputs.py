"""Where the commands write, checked before anything is read or written: an output never replaces an input or
another output, and a FIFO, a device or `/dev/stdout` is written in place, never replaced by a new file."""

from __future__ import annotations

import os
import stat

from cachescope.errors import UsageError


def _same(a: str, b: str) -> bool:
    """Whether two paths name the same file: the same inode when both exist, else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _is_regular_or_absent(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def check_outputs(inputs, outputs) -> None:
    """Refuses an output (flag, path) that is one of the inputs (flag, path) or another output. Only regular
    files (or files still to be made) count: two outputs to /dev/null or to the terminal destroy nothing."""
    # `-` is standard input, no file an output could overwrite.
    inputs = [(flag, os.fspath(p)) for flag, p in inputs if p is not None and os.fspath(p) != "-"]
    outputs = [(flag, os.fspath(p)) for flag, p in outputs if p is not None]
    for i, (flag, path) in enumerate(outputs):
        if not _is_regular_or_absent(path):
            continue
        for other_flag, other in inputs:
            if _same(path, other):
                raise UsageError(f"{path}: {flag} would overwrite the {other_flag} it reads; write elsewhere")
        for other_flag, other in outputs[:i]:
            if _same(path, other):
                raise UsageError(f"{path}: {flag} and {other_flag} would write the same file; give each its own")


def in_place(path: str) -> bool:
    """Whether `path` must be written where it is rather than beside it and renamed over it: a FIFO, a device,
    a socket, or a name under /dev or /proc (`/dev/stdout` is a link to whatever stdout is, even a file)."""
    full = os.path.abspath(path)
    if full.startswith(("/dev/", "/proc/")):
        return True
    return not _is_regular_or_absent(full)


def rename_target(path: str) -> str:
    """The file a write-beside-then-rename replaces: the file a symlink leads to, not the link itself."""
    return os.path.realpath(path)
