"""How summaries and plots write capacities and caches: `LRU 100k`, `64 MiB`, `21.6k`."""

from __future__ import annotations

import math

from cachescope.simulate.registry import INFINITE, POLICIES


def label(policy: str, capacity, unit: str = "entries") -> str:
    """`LRU 100k` for entries, `LRU 64 MiB` for bytes."""
    spec = POLICIES.get(policy, INFINITE)
    if capacity is None or _missing(capacity):
        return spec.label
    return f"{spec.label} {human_bytes(capacity) if unit == 'bytes' else human_count(capacity)}"


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
