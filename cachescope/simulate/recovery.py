"""How long a cache takes to warm up after a cold start (the trace's start, a deploy, a restart).

A run's steady hit rate is the median window hit rate over the second half of each stretch between cold
starts (by then the cache has warmed up, if it ever does). The recovery time of a cold start is the time
from it to the end of the first window whose hit rate is back within 5% of that steady rate (at least 95%
of it). Resolution is one window: a window of W lookups lasts W / lookup rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RECOVERY_FRACTION = 0.95


def recovery_columns(timeline: pd.DataFrame, summary: pd.DataFrame, first_ts: int, restarts: list[int]) -> pd.DataFrame:
    """steady_hit_rate, warmup_s (from the trace's start) and recovery_s (mean over restarts; NaN without
    restarts or when the cache never recovered) for each summary row. A row with `deploy_times` of its own (a
    fleet's rolling restarts: when each one began) recovers from those instead."""
    rows = []
    for index in range(len(summary)):
        own = summary["deploy_times"].iloc[index] if "deploy_times" in summary else None
        starts = np.array([first_ts, *(own if isinstance(own, list) and own else restarts)], dtype=np.int64)
        run = timeline[timeline["run"] == index]
        times = run["ts_ns"].to_numpy(dtype=np.int64)
        rates = run["hit_rate"].to_numpy(dtype=float)
        steady = steady_hit_rate(times, rates, starts)
        recoveries = [recovery_time(times, rates, start, steady) for start in starts]
        after_restarts = [r for r in recoveries[1:] if r is not None]
        rows.append({
            "steady_hit_rate": steady,
            "warmup_s": _seconds(recoveries[0]),
            "recovery_s": _seconds(np.mean(after_restarts)) if after_restarts else np.nan,
            "recoveries_s": [_seconds(r) for r in recoveries[1:]],
        })
    return pd.DataFrame(rows, index=summary.index)


def steady_hit_rate(times: np.ndarray, rates: np.ndarray, starts: np.ndarray) -> float:
    ends = np.append(starts[1:], times[-1] + 1 if len(times) else starts[-1])
    settled = np.zeros(len(times), dtype=bool)
    for start, end in zip(starts, ends):
        settled |= (times >= start + (end - start) // 2) & (times < end)
    return float(np.median(rates[settled])) if settled.any() else np.nan


def recovery_time(times: np.ndarray, rates: np.ndarray, start: int, steady: float):
    """ns from `start` to the end of the first later window within 5% of `steady`; None if none is."""
    if not steady > 0:
        return None
    later = np.flatnonzero((times > start) & (rates >= RECOVERY_FRACTION * steady))
    return int(times[later[0]] - start) if len(later) else None


def _seconds(ns):
    return np.nan if ns is None else float(ns) / 1e9
