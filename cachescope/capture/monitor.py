"""Records a Redis server's MONITOR stream into a file that reads exactly like `redis-cli MONITOR > FILE`.

The server formats each line itself (replicationFeedMonitors in Redis's server.c): the time, `[db addr]`, and
every argument through sdscatrepr, which double-quotes it and escapes `"`, `\\`, `\\n`, `\\r`, `\\t`, `\\a`,
`\\b` and any non-printable byte as `\\xNN`; it arrives as a simple-string reply, and redis-cli prints that
string as it is, after the `OK` that answers MONITOR. So the bytes of each reply are written unchanged, never
re-quoted here, and the file starts with `OK` as redis-cli's output does.

MONITOR has a cost on the server: every command is formatted and copied to each monitor (Redis's own
documentation measures a single monitor cutting throughput by more than half), hence the warning.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from cachescope.capture.options import human_bytes, human_seconds
from cachescope.capture.signals import StopSignals
from cachescope.capture.status import Status
from cachescope.capture.url import parse_redis_url
from cachescope.errors import CaptureError, UsageError

POLL = 0.2  # seconds between checks of the clock and of Ctrl-C while the server is quiet
FLUSH_EVERY = 1.0


@dataclass
class MonitorResult:
    lines: int  # commands recorded (the leading `OK` not counted)
    bytes: int
    seconds: float


def redacted(url: str) -> str:
    """The URL without its user, password and options, which must never reach a terminal or a log."""
    return parse_redis_url(url).redacted


def connect(url: str, timeout: float = 10.0):
    """A redis-py client for `url` (`redis://[[user]:password@]host[:port][/db]`, `rediss://`, `unix://`)."""
    parsed = parse_redis_url(url)
    try:
        import redis
    except ImportError:
        raise CaptureError("--monitor needs redis-py: pip install redis") from None
    try:
        # RESP2, as redis-cli speaks: MONITOR's lines are then plain simple-string replies.
        return redis.Redis.from_url(parsed.for_client, socket_connect_timeout=timeout, socket_timeout=timeout,
                                    protocol=2)
    except (ValueError, TypeError) as e:
        raise UsageError(f"--monitor {parsed.redacted}: {parsed.scrub(str(e))}") from None


def record_monitor(url: str, output: str, *, duration: float | None = None,
                   status: Status | None = None) -> MonitorResult:
    """Writes MONITOR's lines to `output` for `duration` seconds (or until Ctrl-C)."""
    import redis

    status = status or Status("capture")
    client = connect(url)
    parsed = parse_redis_url(url)
    where = parsed.redacted
    started = time.monotonic()
    try:
        client.ping()  # reach and authenticate first, so that a wrong address or password is the only line
        status.say(f"warning: MONITOR slows {where} down (every command is copied to this client; a single "
                   "monitor can halve the server's throughput): keep it short on a busy server, or capture packets")
        with client.monitor() as monitor, open(output, "wb") as out:
            out.write(b"OK\n")
            status.say(f"recording MONITOR of {where} into {output} "
                       + (f"for {human_seconds(duration)}" if duration else "until Ctrl-C"))
            lines, size = _record(monitor.connection, out, started, duration, status)
    except redis.RedisError as e:
        raise CaptureError(f"MONITOR on {where}: {parsed.scrub(str(e))}") from None
    finally:
        client.close()
    return MonitorResult(lines, size, time.monotonic() - started)


def _record(conn, out, started: float, duration, status: Status) -> tuple[int, int]:
    """Copies replies to the file until the deadline, Ctrl-C or SIGTERM."""
    lines = size = 0
    next_flush = started + FLUSH_EVERY
    with StopSignals() as stop:
        while not stop.requested:
            now = time.monotonic()
            left = None if duration is None else started + duration - now
            if left is not None and left <= 0:
                break
            if conn.can_read(timeout=POLL if left is None else min(POLL, left)):
                line = conn.read_response(disable_decoding=True)
                if isinstance(line, str):
                    line = line.encode("utf-8", "surrogateescape")
                out.write(line + b"\n")
                lines += 1
                size += len(line) + 1
            if now >= next_flush:
                out.flush()
                next_flush = now + FLUSH_EVERY
            status.tick(lambda: f"{human_seconds(now - started)}, {lines:,} commands, {human_bytes(size)}")
    return lines, size

