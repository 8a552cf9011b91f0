"""Any input parse.py takes, opened as a source of trace rows: a capture, a tcpflow output directory, or a
text trace (a MONITOR log, `commands`, `keys`). What `parse.py` and `cachescope.parse_capture` both read
through, so that an input gives the same rows and counters whichever of them reads it."""

from __future__ import annotations

import os

from cachescope import _native
from cachescope.errors import TraceFormatError
from cachescope.trace.formats import TEXT_FORMATS, sniff
from cachescope.trace.opened import OpenedInput

DEFAULT_PORTS = (6379,)


def open_rows(source: str, ports=DEFAULT_PORTS, anonymize: bool = False, salt: int | None = None,
              live: bool = False, head_start: bool = False):
    """The rows source of `source` (`record_batches()`, `stats`, `bytes_read`, `size_bytes`); `ports=None`
    finds a capture's Redis ports by content. `salt`: the anonymizing salt of a capture (several captures
    anonymized alike) instead of a fresh one. `live`: a capture read from a pipe ends cleanly on Ctrl-C or
    SIGTERM, its trace kept (`tcpdump -w - | parse.py - ...`; the rows' `stop`). `head_start`: a capture's
    first batches are parsed from now on (`CaptureRows`), its rows then read at their default batch size."""
    if os.path.isdir(source):
        from cachescope.parse.tcpflow_source import TcpflowRows

        return TcpflowRows(source, DEFAULT_PORTS if ports is None else ports, anonymize)
    opened = OpenedInput(source)
    kind = sniff(opened)
    if kind in TEXT_FORMATS:
        from cachescope.parse.text_source import TextRows

        return TextRows(source, kind, anonymize, opened=opened)
    if kind == "pcap":
        from cachescope.parse.capture_source import CaptureRows

        stop = _native.StopFlag() if live and not opened.regular else None
        return CaptureRows(source, ports, anonymize, opened=opened, salt=salt, stop=stop, head_start=head_start)
    opened.close()
    raise TraceFormatError(f"{source}: is a {kind} trace already, not a capture or a text trace")
