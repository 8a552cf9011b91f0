"""Which format a trace file is in: from --format, else its extension, else its first bytes."""

from __future__ import annotations

import os

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError

TEXT_FORMATS = ("commands", "monitor", "keys")
FORMATS = (*TEXT_FORMATS, "parquet", "pcap")

_BY_EXTENSION = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".monitor": "monitor",
    ".keys": "keys",
    ".commands": "commands",
    ".cmds": "commands",
    ".pcap": "pcap",
    ".pcapng": "pcap",
}
_SNIFF_BYTES = 64 * 1024


def detect_format(path: str, forced: str | None = None) -> str:
    """The format to read `path` as; raises TraceFormatError for a file that is no trace at all."""
    if forced is not None and forced not in FORMATS:
        raise UsageError(f"unknown trace format {forced!r}; choose from {', '.join(FORMATS)}")
    if not os.path.exists(path):
        raise TraceFormatError(f"{path}: no such file")
    if os.path.isdir(path):
        raise TraceFormatError(f"{path}: is a directory, not a trace file")
    with open(path, "rb") as f:
        head = f.read(_SNIFF_BYTES)
    if forced is not None:
        return forced
    if head.startswith(b"PAR1"):
        return "parquet"
    if _native.is_capture(head):
        return "pcap"
    by_extension = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    if by_extension == "parquet":
        raise TraceFormatError(f"{path}: named .parquet but is not a Parquet file")
    if by_extension is not None:
        return by_extension
    try:
        return _native.sniff_format(head)
    except ValueError as e:
        raise TraceFormatError(f"{path}: {e}") from None
