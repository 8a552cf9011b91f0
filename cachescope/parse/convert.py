"""A capture (or a MONITOR log) to a trace file, streaming: what `parse.py` does."""

from __future__ import annotations

import os

from cachescope import _native
from cachescope.errors import TraceFormatError
from cachescope.outputs import check_outputs
from cachescope.parse.capture_source import DEFAULT_PORTS, CaptureRows
from cachescope.parse.output_format import output_format
from cachescope.parse.writers import TraceWriter
from cachescope.progress import progress_bar
from cachescope.trace.formats import sniff
from cachescope.trace.live import LiveStop
from cachescope.trace.opened import OpenedInput


def convert(source: str, output: str, fmt: str | None = None, ports=(6379,), anonymize: bool = False,
            progress: bool = False) -> dict:
    """Parses `source` (a capture, a MONITOR log, or a tcpflow output directory) into `output`; returns the
    counters (packets, connections, gaps, ...). `ports=None`: a capture's Redis ports are found by content."""
    out_fmt = output_format(output, fmt)
    check_outputs([("capture", source)], [("-o", output)])
    rows = open_rows(source, ports, anonymize, live=True)
    stop = getattr(rows, "stop", None)
    live = LiveStop(flag=stop, active=stop is not None)
    with live, progress_bar(rows.size_bytes, f"parsing {source}", progress and not live.active) as bar, \
            TraceWriter(output, out_fmt) as writer:
        for rb in rows.record_batches():
            writer.write(rb)
            bar.update(rows.bytes_read - bar.n)
    ended = {"live_end": live.reason} if live.reason else {}
    return {"input": source, "output": output, "format": out_fmt, **rows.stats, **ended}


def open_rows(source: str, ports=(6379,), anonymize: bool = False, salt: int | None = None, live: bool = False):
    """The rows of a capture, a MONITOR log or a tcpflow output directory, opened for reading (an object
    with `record_batches()`, `stats`, `size_bytes`, `bytes_read`). `salt`: the anonymizing salt to use
    (several captures anonymized alike), instead of a fresh one. `live`: a capture read from a pipe ends
    cleanly on Ctrl-C or SIGTERM, its trace kept (`tcpdump -w - | parse.py - ...`)."""
    if os.path.isdir(source):
        from cachescope.parse.tcpflow_source import TcpflowRows

        return TcpflowRows(source, DEFAULT_PORTS if ports is None else ports, anonymize)
    opened = OpenedInput(source)
    kind = sniff(opened)
    if kind == "monitor":
        from cachescope.parse.monitor_log import MonitorRows

        return MonitorRows(source, anonymize, opened=opened)
    if kind == "pcap":
        stop = _native.StopFlag() if live and not opened.regular else None
        return CaptureRows(source, ports, anonymize, opened=opened, salt=salt, stop=stop)
    opened.close()
    raise TraceFormatError(f"{source}: is a {kind} trace already, not a capture or a MONITOR log")
