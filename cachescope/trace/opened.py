"""An input opened once, its first bytes read to tell its format (and its compression).

A FIFO, a `<(...)` pipe (`/dev/fd/N`) or standard input (`-`) can be read only once: sniffing it by one open
and parsing it by a second loses the sniffed bytes (a false "empty file") or waits forever for a second
writer. So a stream stays open after its first bytes are read, and the readers take that same open file and
the bytes already read, put back in front. Regular files are reopened by path (they can be read again, and
seeked).

A compressed input (gzip, zstd, xz, lz4: told by its magic number, whatever its name) is sniffed by what its
first bytes decode to; the Rust readers decode it as a stream (`src/input/`)."""

from __future__ import annotations

import io
import os
import stat
import sys

from cachescope import _native
from cachescope.errors import TraceFormatError

SNIFF_BYTES = 64 * 1024
# A compressed block decodes only whole (lz4 blocks are up to 4 MiB, xz's and zstd's can be larger): so much
# compressed input may be read to see the first plain bytes.
MAX_COMPRESSED_HEAD = 16 << 20
# Lines enough to tell a text format from a live stream without waiting for SNIFF_BYTES of it.
SNIFF_LINES = 100
# The longest magic number looked at (xz's); a capture's is 4.
MAGIC_BYTES = 6
STDIN = "-"
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd", ".xz", ".lz4")


class OpenedInput:
    """`head`: the first bytes read (raw, compressed or not). `plain`: what they decode to, up to SNIFF_BYTES
    (the head itself when not compressed), to tell the format by. `compression`: "gzip", "zstd", "xz", "lz4"
    or None. `stream`: the open file of a FIFO, pipe, device or standard input, positioned after `head`; None
    for a regular file."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.is_stdin = self.path == STDIN
        if self.is_stdin:
            f = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
            self.regular = False
            self.size_bytes = None
        else:
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
            self._sniff(f)
        except BaseException:
            f.close()
            raise
        if self.regular:
            f.close()
            self.stream = None
        else:
            self.stream = f

    @property
    def name(self) -> str:
        """The input as messages name it."""
        return "standard input" if self.is_stdin else self.path

    @property
    def base_name(self) -> str:
        """The path without a compression suffix (`a.pcap.gz` -> `a.pcap`), for telling a format by its name."""
        if self.compression is not None and self.path.lower().endswith(COMPRESSED_SUFFIXES):
            return os.path.splitext(self.path)[0]
        return self.path

    def _sniff(self, f) -> None:
        """Reads as little as tells the format: a live pipe may take minutes to fill SNIFF_BYTES."""
        self.head, ended = _read_some(f, b"", MAGIC_BYTES)
        self.compression = _native.compression(self.head)
        while True:
            self.plain = _native.plain_head(self.head, SNIFF_BYTES) if self.compression else self.head[:SNIFF_BYTES]
            if ended or len(self.plain) >= SNIFF_BYTES or _told(self.plain):
                return
            if self.compression and len(self.head) >= MAX_COMPRESSED_HEAD:
                return
            self.head, ended = _read_some(f, self.head, len(self.head) + 1)

    def native_args(self) -> dict:
        """What the Rust readers take to read the stream on from where the sniffing left it."""
        if self.stream is None:
            return {}
        return {"fd": self.stream.fileno(), "head": self.head}

    def python_file(self):
        """A binary file reading the whole input from its start, decoded (the head put back for a stream)."""
        if self.compression is not None:
            args = self.native_args()
            return io.BufferedReader(_NativeRaw(_native.PlainInput(self.path, **args)), 1 << 20)
        if self.stream is None:
            return open(self.path, "rb")
        return io.BufferedReader(_HeadThenRest(self.head, self.stream), 1 << 20)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def _told(plain: bytes) -> bool:
    """Whether these first plain bytes already tell the format: a binary magic, or enough text lines."""
    return (plain.startswith(b"PAR1") or _native.is_capture(plain) or plain.count(b"\n") >= SNIFF_LINES)


def _read_some(f, have: bytes, want: int) -> tuple[bytes, bool]:
    """`have` and what more reads give until there are at least `want` bytes or the input ends; each read
    takes what the input holds (a pipe: what its writer has written so far), so this does not wait for a full
    buffer. Also whether the input has ended."""
    parts, got = [have], len(have)
    while True:
        chunk = f.read(SNIFF_BYTES)
        if not chunk:
            return b"".join(parts), True
        parts.append(chunk)
        got += len(chunk)
        if got >= want:
            return b"".join(parts), False


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


class _NativeRaw(io.RawIOBase):
    """A raw binary stream over the Rust core's decoded input; a corrupt or cut-short compressed stream is a
    TraceFormatError naming the file and the compressed byte."""

    def __init__(self, native):
        super().__init__()
        self._native = native

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            data = self._native.read(len(buf))
        except OSError as e:
            raise TraceFormatError(str(e)) from None
        buf[:len(data)] = data
        return len(data)
