"""How summaries and plots write capacities and caches: `LRU 100k`, `64 MiB`, `21.6k`."""

from __future__ import annotations

import math

from cachescope.simulate.registry import INFINITE, POLICIES


def label(policy: str, capacity, unit: str = "entries") -> str:
    """`LRU 100k` for entries, `LRU 64 MiB` for bytes."""
    spec = POLICIES.get(policy, INFINITE)
    if capacity is None or _missing(capacity):
        return spec.label
    return f"{spec.label} {capacity_bytes(capacity) if unit == 'bytes' else human_count(capacity)}"


def capacity_bytes(n) -> str:
    """A byte capacity as it was most likely written: `64 MiB`, `1 MB`, `1.5 GB`, `10 KB` (the unit of which it
    is a whole number, or one with two decimals at most, largest first); `human_bytes` otherwise."""
    n = int(n)
    for binary, suffix_i, decimal, suffix in ((40, "TiB", 12, "TB"), (30, "GiB", 9, "GB"), (20, "MiB", 6, "MB"),
                                             (10, "KiB", 3, "KB")):
        for unit, name in ((1 << binary, suffix_i), (10**decimal, suffix)):
            if n >= unit and (n * 100) % unit == 0:
                return f"{n / unit:g} {name}"
    return human_bytes(n)


def human_bytes(n) -> str:
    n = int(n)
    for shift, suffix in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift:
            return f"{n >> shift} {suffix}" if n % (1 << shift) == 0 else f"{n / (1 << shift):.1f} {suffix}"
    return f"{n} B"


def approx_count(n) -> str:
    """Three significant digits: `21.6k`, `5.85k`, `1.2M`; small numbers whole."""
    n = int(n)
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n}"


def human_count(n) -> str:
    n = int(n)
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div and (n * 100) % div == 0:  # 100k, 1.5M; not 12.244k
            return f"{n / div:g}{suffix}"
    return f"{n:,}"


def _missing(x) -> bool:
    """NaN, or pandas' NA (which no number can be made of)."""
    try:
        return math.isnan(float(x))
    except TypeError:
        return True
