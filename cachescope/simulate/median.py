"""The median of an array of numbers, as `np.median` gives it, without `np.median`: that one imports numpy.ma
on its first call (20 ms, a tenth of a short run's start-up), to ask whether its input is a masked array."""

from __future__ import annotations

import numpy as np


def median(values) -> float:
    """The middle value of `values` (the mean of the two middle ones for an even count); NaN when empty."""
    a = np.sort(np.asarray(values, dtype=float), kind="stable")
    n = len(a)
    if n == 0:
        return float("nan")
    return float((a[(n - 1) // 2] + a[n // 2]) / 2)
