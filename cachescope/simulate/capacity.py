"""Capacities as users write them: `100000`, `1e5`, `100k`, `1M`, or a comma list of those."""

from __future__ import annotations

import math
import re

from cachescope.errors import UsageError

MAX_ENTRIES = 2**32 - 2  # the Rust policies index nodes with u32
_SUFFIX = {"": 1, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6, "g": 10**9, "G": 10**9}
_BYTE_UNITS = re.compile(r"^[0-9.e+]+\s*([KMGT]i?B|B)$", re.IGNORECASE)


def parse_capacity(text) -> int:
    """One entry capacity; integers and floats (1e5) pass through the same checks as strings."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return _checked(float(text), str(text))
    s = str(text).strip()
    if _BYTE_UNITS.match(s):
        raise UsageError(f"capacity {s!r}: byte capacities are not supported yet; give a number of entries")
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][+]?[0-9]+)?)\s*([kKmMgG]?)", s)
    if not m:
        raise UsageError(f"capacity {s!r} is not a number of entries (examples: 100000, 1e5, 100k, 1M)")
    return _checked(float(m.group(1)) * _SUFFIX[m.group(2)], s)


def parse_capacities(value) -> list[int]:
    """A comma list (`1e4,1e5`), or an iterable of capacities, in the order given, without duplicates."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (int, float)):
        items = [value]
    else:
        items = list(value)
    if not items or any(str(i).strip() == "" for i in items):
        raise UsageError(f"capacity list {value!r} has an empty item")
    return list(dict.fromkeys(parse_capacity(i) for i in items))


def _checked(x: float, shown: str) -> int:
    if not math.isfinite(x) or x != int(x):
        raise UsageError(f"capacity {shown!r} is not a whole number of entries")
    if x < 1:
        raise UsageError(f"capacity {shown!r} must be at least 1 entry")
    if x > MAX_ENTRIES:
        raise UsageError(f"capacity {shown!r} is more than the maximum of {MAX_ENTRIES:,} entries")
    return int(x)
