"""An input file opened once, its first bytes read to tell its format.

A FIFO or a `<(...)` pipe (`/dev/fd/N`) can be read only once: sniffing it by one open and parsing it by a
second loses the sniffed bytes (a false "empty file") or waits forever for a second writer. So a stream stays
open after its first bytes are read, and the readers take that same open file and the bytes already read,
put back in front. Regular files are reopened by path (they can be read again, and seeked)."""

from __future__ import annotations

import io
import os
import stat

from cachescope.errors import TraceFormatError

SNIFF_BYTES = 64 * 1024


class OpenedInput:
    """`head`: the first bytes (up to SNIFF_BYTES). `stream`: the open file of a FIFO, pipe or device,
    positioned after `head`; None for a regular file."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise TraceFormatError(f"{self.path}: no such file") from None
        if stat.S_ISDIR(st.st_mode):
            raise TraceFormatError(f"{self.path}: is a directory, not a trace file")
        self.regular = stat.S_ISREG(st.st_mode)
        self.size_bytes = st.st_size if self.regular else None
        f = open(self.path, "rb", buffering=0)
        try:
            self.head = _read_up_to(f, SNIFF_BYTES)
        except BaseException:
            f.close()
            raise
        if self.regular:
            f.close()
            self.stream = None
        else:
            self.stream = f

    def native_args(self) -> dict:
        """What the Rust readers take to read the stream on from where the sniffing left it."""
        if self.stream is None:
            return {}
        return {"fd": self.stream.fileno(), "head": self.head}

    def python_file(self):
        """A binary file reading the whole input from its start (the head put back for a stream)."""
        if self.stream is None:
            return open(self.path, "rb")
        return io.BufferedReader(_HeadThenRest(self.head, self.stream), 1 << 20)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def _read_up_to(f, n: int) -> bytes:
    """Up to `n` bytes: a pipe hands out what its writer has written so far, so read until `n` or the end."""
    parts, got = [], 0
    while got < n:
        chunk = f.read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class _HeadThenRest(io.RawIOBase):
    """A raw binary stream: the bytes of `head`, then what `rest` reads."""

    def __init__(self, head: bytes, rest):
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(buf)
