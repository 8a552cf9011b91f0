"""Hit-rate curves: the hit rate at every capacity from one pass (the exact LRU stack algorithm of the core),
as DataFrames, and which capacities a curve is asked for."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cachescope.errors import UsageError
from cachescope.simulate.capacity import MAX_BYTES, MAX_ENTRIES, parse_capacities, parse_capacity

CURVE_POLICIES = ("lru",)
"""Policies with a curve. LRU's is exact (a stack algorithm); the others need sampled miniature simulations,
which are not built yet."""

AUTO_STEP = 1.02
"""`auto` capacities are log-spaced 2% apart, so that the capacity that reaches a target is known to 2%."""

MAX_CURVE_POINTS = 20_000


def parse_curve_policies(value) -> list[str]:
    """`lru` or a comma list; each must have a curve."""
    names = [n.strip().lower() for n in (value.split(",") if isinstance(value, str) else value)]
    if not names or any(not n for n in names):
        raise UsageError(f"curve policy list {value!r} has an empty item")
    for name in names:
        if name not in CURVE_POLICIES:
            raise UsageError(f"no curve for policy {name!r}: curves exist for {', '.join(CURVE_POLICIES)} "
                             "(exact, in one pass); run other policies at single capacities")
    return list(dict.fromkeys(names))


def curve_capacities(spec, unit: str = "entries") -> tuple[list[int], str]:
    """The capacities of a curve, sorted, and their unit: `auto` (log-spaced 2% apart from 1 entry, or 1 KiB,
    up to the maximum, and the round sizes 1, 2, 5 x 10^k; points past the trace's unique keys are dropped
    from the result), `C1,C2,...`, or
    `MIN:MAX:N` (N log-spaced points)."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "auto"):
        low, high = (1, MAX_ENTRIES) if unit == "entries" else (1024, MAX_BYTES)
        spaced = _log_spaced(low, high, int(math.log(high / low) / math.log(AUTO_STEP)) + 1)
        # The round sizes people pick (1, 2, 5 x 10^k) are on the curve too, so a summary can show them.
        round_sizes = [m * 10**k for k in range(19) for m in (1, 2, 5) if low <= m * 10**k <= high]
        return sorted(set(spaced) | set(round_sizes)), unit
    if isinstance(spec, str) and spec.count(":") == 2:
        lo, hi, n = spec.split(":")
        low, high = parse_capacity(lo), parse_capacity(hi)
        if low.unit != high.unit:
            raise UsageError(f"curve capacities {spec!r}: both ends must be entries, or both bytes")
        try:
            points = int(n)
        except ValueError:
            raise UsageError(f"curve capacities {spec!r}: N must be a whole number of points") from None
        if not 2 <= points <= MAX_CURVE_POINTS or high.value <= low.value:
            raise UsageError(f"curve capacities {spec!r}: need MIN < MAX and 2 to {MAX_CURVE_POINTS:,} points")
        return _log_spaced(low.value, high.value, points), low.unit
    caps = parse_capacities(spec)
    units = {c.unit for c in caps}
    if len(units) > 1:
        raise UsageError(f"curve capacities {spec!r} mix entries and bytes")
    if len(caps) > MAX_CURVE_POINTS:
        raise UsageError(f"curve capacities: at most {MAX_CURVE_POINTS:,} points")
    return sorted(c.value for c in caps), units.pop()


def _log_spaced(low: int, high: int, points: int) -> list[int]:
    values = np.unique(np.round(np.geomspace(low, high, points)).astype(np.int64))
    return [int(v) for v in values]


def curve_frames(native: list[dict], unit: str, unique_keys: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve (one row per capacity) and its timeline (one row per window and timeline capacity) from the
    core's counts. Capacities past the point where every capacity holds every unique key are dropped: the
    curve is flat there, at the infinite bound."""
    rows, heat = [], []
    for curve in native:
        caps = np.asarray(curve["capacities"], dtype=np.int64)
        hits = np.asarray(curve["hits"], dtype=np.int64)
        keep = _useful(caps, hits, unit, unique_keys)
        lookups, commands, looked = curve["lookups"], curve["commands"], curve["bytes_looked_up"]
        frame = pd.DataFrame({
            "policy": "lru",
            "capacity_unit": unit,
            "method": "exact",
            "sample_rate": 1.0,
            "capacity": caps[keep],
            "lookups": lookups,
            "hits": hits[keep],
            "hit_rate": hits[keep] / lookups if lookups else 0.0,
            "commands": commands,
            "round_trips_saved": np.asarray(curve["commands_served"], dtype=np.int64)[keep],
        })
        frame["command_hit_rate"] = frame["round_trips_saved"] / commands if commands else 0.0
        if looked:
            frame["bytes_looked_up"] = looked
            frame["bytes_hit"] = np.asarray(curve["bytes_hit"], dtype=np.int64)[keep]
            frame["byte_hit_rate"] = frame["bytes_hit"] / looked
        rows.append(frame)
        window_hits = np.asarray(curve["window_hits"])
        columns = np.asarray(curve["window_capacities"], dtype=np.int64)
        shown = columns <= caps[keep].max() if keep.any() else columns < 0
        columns, window_hits = columns[shown], window_hits[:, shown] if window_hits.size else window_hits
        for w, counts in enumerate(window_hits):
            heat.append(pd.DataFrame({"policy": "lru", "capacity_unit": unit, "window": w,
                                      "capacity": columns, "hits": counts}))
    curves = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    timeline = pd.concat(heat, ignore_index=True) if heat else pd.DataFrame()
    return curves, timeline


def _useful(caps: np.ndarray, hits: np.ndarray, unit: str, unique_keys: int) -> np.ndarray:
    """Every capacity up to the first that holds all unique keys (entries) or reaches the final hits."""
    if len(caps) == 0:
        return np.zeros(0, dtype=bool)
    if unit == "entries":
        last = np.searchsorted(caps, max(unique_keys, 1))
    else:
        last = int(np.argmax(hits == hits[-1]))
    keep = np.zeros(len(caps), dtype=bool)
    keep[: min(last, len(caps) - 1) + 1] = True
    return keep
