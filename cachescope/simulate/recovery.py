"""How long a cache takes to warm up after a cold start (the trace's start, a deploy, a restart).

A run's steady hit rate is the median window hit rate over the second half of each stretch between cold
starts (by then the cache has warmed up, if it ever does). The recovery time of a cold start is the time
from it to the end of the first window whose hit rate is back within 5% of that steady rate (at least 95%
of it). Resolution is one window: a window of W lookups lasts W / lookup rate.
"""

from __future__ import annotations

import numpy as np

from cachescope.simulate.median import median

RECOVERY_FRACTION = 0.95


def recovery_columns(windows, summary: list[dict], first_ts: int, restarts: list[int]) -> list[dict]:
    """steady_hit_rate, warmup_s (from the trace's start) and recovery_s (mean over restarts; NaN without
    restarts or when the cache never recovered) for each summary row, from its timeline `windows` (the time
    of each window's end and its hit rate: `(times, rates)` per row). A row with `deploy_times` of its own (a
    fleet's rolling restarts: when each one began) recovers from those instead. Plain numpy on the core's
    arrays: a run's summary needs no pandas (0.3 s to import)."""
    columns = []
    for (times, rates), row in zip(windows, summary):
        own = row.get("deploy_times")
        starts = np.array([first_ts, *(own if isinstance(own, list) and own else restarts)], dtype=np.int64)
        steady = steady_hit_rate(times, rates, starts)
        recoveries = [recovery_time(times, rates, start, steady) for start in starts]
        after_restarts = [r for r in recoveries[1:] if r is not None]
        columns.append({
            "steady_hit_rate": steady,
            "warmup_s": _seconds(recoveries[0]),
            "recovery_s": _seconds(np.mean(after_restarts)) if after_restarts else np.nan,
            "recoveries_s": [_seconds(r) for r in recoveries[1:]],
        })
    return columns


def steady_hit_rate(times: np.ndarray, rates: np.ndarray, starts: np.ndarray) -> float:
    ends = np.append(starts[1:], times[-1] + 1 if len(times) else starts[-1])
    settled = np.zeros(len(times), dtype=bool)
    for start, end in zip(starts, ends):
        settled |= (times >= start + (end - start) // 2) & (times < end)
    return median(rates[settled]) if settled.any() else np.nan


def recovery_time(times: np.ndarray, rates: np.ndarray, start: int, steady: float):
    """ns from `start` to the end of the first later window within 5% of `steady`; None if none is."""
    if not steady > 0:
        return None
    later = np.flatnonzero((times > start) & (rates >= RECOVERY_FRACTION * steady))
    return int(times[later[0]] - start) if len(later) else None


def _seconds(ns):
    return np.nan if ns is None else float(ns) / 1e9
