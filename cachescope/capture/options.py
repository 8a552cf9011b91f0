"""Capture options as people write them: durations (`90s`, `15m`, `1h`), sizes (`64MiB`, `1GB`), port lists."""

from __future__ import annotations

import math
import re

from cachescope.errors import UsageError

_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_BYTES = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}
_NUMBER = r"([0-9]*\.?[0-9]+)\s*"


def parse_duration(text, what: str = "duration") -> float:
    """Seconds in `text`: `90s`, `15m`, `1h`, `1.5h`, or a bare number of seconds."""
    m = re.fullmatch(_NUMBER + r"([smhd]?)", str(text).strip().lower())
    if not m:
        raise UsageError(f"{what} {text!r} is not a duration (examples: 90s, 15m, 1h)")
    seconds = float(m.group(1)) * _SECONDS[m.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{what} {text!r} must be more than zero")
    return seconds


def parse_size(text, what: str = "size") -> int:
    """Bytes in `text`: `64MiB` (2^20), `500MB` (10^6), `1GiB`, `4096`; the case of the unit does not matter."""
    m = re.fullmatch(_NUMBER + r"([a-z]*)", str(text).strip().lower())
    if not m or m.group(2) not in _BYTES:
        raise UsageError(f"{what} {text!r} is not a size (examples: 64MiB, 500MB, 1GiB)")
    size = float(m.group(1)) * _BYTES[m.group(2)]
    if size < 1:
        raise UsageError(f"{what} {text!r} must be at least one byte")
    return int(size)


def parse_ports(values) -> tuple[int, ...]:
    """Ports from repeated options and comma lists (`["6379", "6380,6381"]`), in order, without duplicates."""
    ports = []
    for value in values:
        for item in str(value).split(","):
            item = item.strip()
            if not item.isdigit() or not 1 <= int(item) <= 65535:
                raise UsageError(f"port {item!r} is not a TCP port (1 to 65535)")
            ports.append(int(item))
    if not ports:
        raise UsageError("no port given")
    return tuple(dict.fromkeys(ports))


def human_bytes(n: int) -> str:
    """`3.2 MB`: what a person reads in a status line (decimal units, as disks are sold and `ls --si` counts)."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}"


def human_seconds(seconds: float) -> str:
    """`45s`, `12m30s`, `2h05m`."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
