"""The Redis ports of a capture found by what is said on them (`src/parse/discover.rs`: the ports RESP
commands are sent to), for when no port is given: Redis listens on 6380, 16379 or a cluster's 7000-7005 as
often as on 6379, and a parse on the wrong port finds nothing."""

from __future__ import annotations

import os

from cachescope import _native
from cachescope.errors import TraceFormatError

SHOWN_PORTS = 10


def find_redis_ports(path) -> list[int]:
    """The ports Redis commands are sent to in the capture (one pass over it); when there are none, a
    TraceFormatError naming the ports that carry TCP traffic."""
    path = os.fspath(path)
    try:
        redis, servers, tls = _native.discover_ports(path)
    except _native.NativeTraceError as e:
        raise TraceFormatError(str(e)) from None
    if redis:
        return list(redis)
    if not servers:
        raise TraceFormatError(f"{path}: no TCP traffic in this capture, so no Redis commands")
    if tls:
        ports = ", ".join(str(port) for port, _ in tls[:SHOWN_PORTS])
        raise TraceFormatError(f"{path}: the traffic on port{'s' if len(tls) > 1 else ''} {ports} is TLS-encrypted; cachescope needs the plain "
                               "RESP stream: MONITOR (capture.py --monitor), or a capture where TLS ends")
    shown = ", ".join(f"{port} ({n:,} segments)" for port, n in servers[:SHOWN_PORTS])
    more = f" and {len(servers) - SHOWN_PORTS:,} more" if len(servers) > SHOWN_PORTS else ""
    raise TraceFormatError(f"{path}: no Redis commands on any port; TCP traffic on ports {shown}{more}; "
                           "give the Redis port with --port")
