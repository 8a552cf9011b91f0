"""Reads `redis-cli MONITOR` lines back into their arguments, undoing Redis's sdscatrepr quoting independently
of cachescope: `1700000000.123456 [0 127.0.0.1:51234] "HSET" "st_1" "2496559762" "\\x00\\r\\n"`."""

from __future__ import annotations

import re

_HEAD = re.compile(rb"^(\d+\.\d{6}) \[(\d+) ([^\]]+)\] ")
_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("a"): b"\a", ord("b"): b"\b",
            ord('"'): b'"', ord("\\"): b"\\"}


def parse_line(line: bytes):
    """(seconds, db, client address, [argument bytes]) of one line."""
    m = _HEAD.match(line)
    if not m:
        raise ValueError(f"not a MONITOR line: {line[:80]!r}")
    return float(m.group(1)), int(m.group(2)), m.group(3).decode(), _arguments(line, m.end())


def _arguments(line: bytes, i: int) -> list[bytes]:
    args = []
    while i < len(line):
        if line[i] != ord('"'):
            raise ValueError(f"expected a quote at {i}: {line[:80]!r}")
        i += 1
        out = bytearray()
        while line[i] != ord('"'):
            if line[i] == ord("\\"):
                nxt = line[i + 1]
                if nxt == ord("x"):
                    out.append(int(line[i + 2:i + 4], 16))
                    i += 4
                    continue
                out += _ESCAPES[nxt]
                i += 2
                continue
            out.append(line[i])
            i += 1
        args.append(bytes(out))
        i += 2  # the closing quote and the space before the next argument
    return args


def read_file(path) -> tuple[bytes, list]:
    """The first line (redis-cli prints `OK`) and the parsed lines after it."""
    lines = open(path, "rb").read().split(b"\n")
    assert lines[-1] == b"", "the file ends with a newline"
    return lines[0], [parse_line(line) for line in lines[1:-1]]
