"""Capacities as users write them: entries (`100000`, `1e5`, `100k`, `1M`) or bytes (`64MiB`, `1.5GB`,
`10 KB`), one or a comma list. A lower-case `b` after `k`, `m`, `g` or `t` (`10kb`, `64Mb`) is refused in one
line: where `k` alone means a thousand entries, it may be a typo for `10k` (or mean bits); `10KB` and `10KiB`
(`10kib`) are bytes whatever their case. (Sizes that can only be bytes, capture.py's `--buffer` and
`--rotate-size`, take `10kb` as bytes.)"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from cachescope.errors import UsageError

MAX_ENTRIES = 2**32 - 2  # the Rust policies index nodes with u32
MAX_BYTES = 2**48
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_BYTE_SUFFIX = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_AMBIGUOUS = ("kb", "mb", "gb", "tb")  # with a lower-case b: `10kb`, `10Mb`
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][+]?[0-9]+)?)"


class Capacity(NamedTuple):
    value: int
    unit: str  # "entries" or "bytes"


def parse_capacity(text) -> Capacity:
    """One capacity; ints and floats (1e5) are entry counts and pass the same checks as strings."""
    if isinstance(text, Capacity):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return Capacity(_checked(float(text), str(text), MAX_ENTRIES, "entries"), "entries")
    s = str(text).strip()
    m = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]*)", s)
    suffix = m.group(2).lower() if m else ""
    if m and suffix in _COUNT_SUFFIX:
        return Capacity(_checked(float(m.group(1)) * _COUNT_SUFFIX[suffix], s, MAX_ENTRIES, "entries"), "entries")
    if m and suffix in _AMBIGUOUS and m.group(2).endswith("b"):
        n, x, k = m.group(1), float(m.group(1)), suffix[0]
        entries = f"{n}{k} for {x * _COUNT_SUFFIX[k]:,.0f} entries, or " if k in _COUNT_SUFFIX else ""
        raise UsageError(f"capacity {s!r} is ambiguous: write {entries}{n}{suffix.upper()} "
                         f"({x * _BYTE_SUFFIX[suffix]:,.0f} bytes) or {n}{k.upper()}iB "
                         f"({x * _BYTE_SUFFIX[k + 'ib']:,.0f} bytes) for a byte budget")
    if m and suffix in _BYTE_SUFFIX:
        return Capacity(_checked(float(m.group(1)) * _BYTE_SUFFIX[suffix], s, MAX_BYTES, "bytes"), "bytes")
    raise UsageError(f"capacity {s!r} is not a number of entries (100000, 1e5, 100k, 1M) nor of bytes (64MiB, 2GB)")


def parse_capacities(value) -> list[Capacity]:
    """A comma list (`1e4,1e5`, `64MiB,256MiB`), or an iterable of capacities, in order, without duplicates."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (int, float)):
        items = [value]
    else:
        items = list(value)
    if not items or any(str(i).strip() == "" for i in items):
        raise UsageError(f"capacity list {value!r} has an empty item")
    return list(dict.fromkeys(parse_capacity(i) for i in items))


def _checked(x: float, shown: str, maximum: int, unit: str) -> int:
    if not math.isfinite(x) or x != int(x):
        raise UsageError(f"capacity {shown!r} is not a whole number of {unit}")
    if x < 1:
        raise UsageError(f"capacity {shown!r} must be at least 1")
    if x > maximum:
        raise UsageError(f"capacity {shown!r} is more than the maximum of {maximum:,} {unit}")
    return int(x)
