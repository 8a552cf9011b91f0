"""A capture (or a text trace: a MONITOR log, `commands`, `keys`) to a trace file, streaming: what
`parse.py` does."""

from __future__ import annotations

from cachescope.outputs import check_outputs
from cachescope.parse.input_rows import open_rows
from cachescope.parse.output_format import output_format
from cachescope.progress import progress_bar
from cachescope.trace.live import LiveStop


def convert(source: str, output: str, fmt: str | None = None, ports=(6379,), anonymize: bool = False,
            progress: bool = False) -> dict:
    """Parses `source` (a capture, a text trace, or a tcpflow output directory) into `output`; returns the
    counters (packets, connections, gaps, ...). `ports=None`: a capture's Redis ports are found by content."""
    out_fmt = output_format(output, fmt)
    check_outputs([("capture", source)], [("-o", output)])
    # A capture's first batches are parsed while numpy and the writers' pyarrow are imported (~0.2 s): the
    # writers are imported after the parser has started, on purpose.
    rows = open_rows(source, ports, anonymize, live=True, head_start=True)
    from cachescope.parse.writers import TraceWriter

    stop = getattr(rows, "stop", None)
    live = LiveStop(flag=stop, active=stop is not None)
    with live, progress_bar(rows.size_bytes, f"parsing {source}", progress and not live.active) as bar, \
            TraceWriter(output, out_fmt) as writer:
        for rb in rows.record_batches():
            writer.write(rb)
            bar.update(rows.bytes_read - bar.n)
    ended = {"live_end": live.reason} if live.reason else {}
    return {"input": source, "output": output, "format": out_fmt, **rows.stats, **ended}
