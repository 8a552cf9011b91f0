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
    for flag, path in outputs:
        check_writable(flag, path)
    for i, (flag, path) in enumerate(outputs):
        if not _is_regular_or_absent(path):
            continue
        for other_flag, other in inputs:
            if _same(path, other):
                raise UsageError(f"{path}: {flag} would overwrite the {other_flag} it reads; write elsewhere")
        for other_flag, other in outputs[:i]:
            if _same(path, other):
                raise UsageError(f"{path}: {flag} and {other_flag} would write the same file; give each its own")


def check_writable(flag: str, path: str) -> None:
    """Refuses an output that cannot be written, before any work is done: its folder is missing, is no folder,
    or cannot be written in (an output is made there and renamed); a FIFO or a device that cannot be opened
    for writing. Otherwise a long parse or simulation would run first, then fail on its last step."""
    full = os.path.abspath(path)
    if in_place(full):
        if os.path.exists(full) and not os.access(full, os.W_OK):
            raise UsageError(f"{path}: {flag} cannot be written (permission denied)")
        return
    folder = os.path.dirname(os.path.realpath(full.rstrip(os.sep) or os.sep))
    if not os.path.exists(folder):
        raise UsageError(f"{path}: {flag}: the folder {folder} does not exist")
    if not os.path.isdir(folder):
        raise UsageError(f"{path}: {flag}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: {flag}: cannot write in the folder {folder} (permission denied)")


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
