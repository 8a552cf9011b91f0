"""Which format a trace file is in: from --format, else its extension, else its first bytes."""

from __future__ import annotations

import os

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.trace.opened import OpenedInput
from cachescope.trace.text_formats import TEXT_FORMATS

# Object traces, as cache simulators write them (src/trace/objects.rs): libCacheSim's binary, CSV with a column
# spec (--csv-spec), and Twitter's cache-trace CSV layout.
OBJECT_FORMATS = ("oracleGeneral", "csv", "twitter")
FORMATS = (*TEXT_FORMATS, "parquet", "pcap", *OBJECT_FORMATS)

_BY_EXTENSION = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".monitor": "monitor",
    ".keys": "keys",
    ".commands": "commands",
    ".cmds": "commands",
    ".pcap": "pcap",
    ".pcapng": "pcap",
    ".csv": "csv",
}


def detect_format(path: str, forced: str | None = None) -> str:
    """The format to read `path` as; raises TraceFormatError for a file that is no trace at all."""
    opened = OpenedInput(path) if forced is None or forced in FORMATS else None
    try:
        return sniff(opened, forced)
    finally:
        if opened is not None:
            opened.close()


def sniff(opened: OpenedInput | None, forced: str | None = None) -> str:
    """The format to read an input as, from --format, else its first bytes and its name."""
    if forced is not None and forced not in FORMATS:
        raise UsageError(f"unknown trace format {forced!r}; choose from {', '.join(FORMATS)}")
    if forced is not None:
        return forced
    path, head = opened.name, opened.plain
    if head.startswith(b"PAR1"):
        if opened.compression is not None:
            raise TraceFormatError(f"{path}: a {opened.compression}-compressed Parquet file; Parquet is read from "
                                   "its end, so decompress it first (Parquet compresses its columns itself)")
        return "parquet"
    if _native.is_capture(head):
        return "pcap"
    if "oraclegeneral" in os.path.basename(opened.base_name).lower():
        return "oracleGeneral"  # libCacheSim's names: x.oracleGeneral, x.oracleGeneral.bin, x.oracleGeneral.zst
    by_extension = _BY_EXTENSION.get(os.path.splitext(opened.base_name)[1].lower())
    if by_extension == "parquet":
        raise TraceFormatError(f"{path}: named .parquet but is not a Parquet file")
    if by_extension is not None:
        return by_extension
    try:
        return _native.sniff_format(head)
    except ValueError as e:
        raise TraceFormatError(f"{path}: {e}") from None
