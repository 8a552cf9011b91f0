"""Hit-rate curves: the hit rate at every capacity from one pass, as DataFrames (LRU's exact from the core's
stack algorithm; sampled ones, SHARDS for LRU and miniature simulations for every policy, with an error band
from several salts), and which capacities a curve is asked for."""

from __future__ import annotations

import math

import numpy as np

from cachescope.errors import UsageError
from cachescope.simulate.capacity import MAX_BYTES, MAX_ENTRIES, parse_capacities, parse_capacity

EXACT = ("lru",)
"""Policies whose curve is exact in one pass (stack algorithms); every other policy's is sampled."""

AUTO_STEP = 1.02
"""`auto` capacities are log-spaced 2% apart, so that the capacity that reaches a target is known to 2%."""

MAX_CURVE_POINTS = 20_000

DEFAULT_SALTS = 4
"""Samples per sampled curve: disjoint samples of the keys, whose spread is the curve's error band."""

MINISIM_RATE = 0.01
"""Miniature simulations sample 1% of the keys unless told otherwise."""

MINISIM_MIN_ENTRIES = 100
"""A miniature cache smaller than this tells little about the full one (too few entries for the policy to
behave as it does at scale), and a SHARDS sample resolves depths of about 1 / rate keys: with `auto`
capacities, a sampled curve starts at 100 / rate entries."""

MINISIM_PER_DECADE = 6


def parse_curve_policies(value) -> list[str]:
    """`lru` or a comma list of registered policies; Belady (which needs the future) has no curve."""
    from cachescope.simulate.registry import POLICIES

    names = [n.strip().lower() for n in (value.split(",") if isinstance(value, str) else value)]
    if not names or any(not n for n in names):
        raise UsageError(f"curve policy list {value!r} has an empty item")
    for name in names:
        if name not in POLICIES or name == "belady":
            choices = ", ".join(n for n in POLICIES if n != "belady")
            raise UsageError(f"no curve for policy {name!r}: curves exist for {choices}")
    return list(dict.fromkeys(names))


def parse_sample(value) -> float | None:
    """`1%` or `0.01`: the share of keys a sampled curve keeps."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UsageError(f"sample rate {text!r} is not a share of the keys (1% or 0.01)") from None
    if not 0 < rate <= 1:
        raise UsageError(f"sample rate {text!r} must be above 0 and at most 100%")
    return rate


def minisim_capacities(rate: float, unit: str) -> list[int]:
    """`auto` capacities of a miniature simulation: 6 a decade from where the miniature cache holds 100 entries
    (or, in bytes, 100 KiB) up to the maximum; the result keeps those up to the unique keys."""
    low = math.ceil(MINISIM_MIN_ENTRIES / rate) * (1024 if unit == "bytes" else 1)
    high = MAX_BYTES if unit == "bytes" else MAX_ENTRIES
    return _log_spaced(low, high, int(math.log10(high / low) * MINISIM_PER_DECADE) + 1)


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
    # A set, not np.unique: that one imports numpy.ma on its first call (20 ms of a short run's start-up).
    return sorted({int(v) for v in np.round(np.geomspace(low, high, points))})


def curve_frames(native: list[dict], unit: str, unique_keys: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve (one row per capacity) and its timeline (one row per window and timeline capacity) from the
    core's counts; a fleet's curve has its `pods` and `route` (1 and None for a single cache). Capacities past the point where every capacity holds every unique key are dropped: the
    curve is flat there, at the infinite bound."""
    import pandas as pd
    rows, heat = [], []
    for curve in (c for c in native if c["method"] == "exact"):
        caps = np.asarray(curve["capacities"], dtype=np.int64)
        hits = np.asarray(curve["hits"], dtype=np.int64)
        keep = _useful(caps, hits, unit, unique_keys)
        lookups, commands, looked = curve["lookups"], curve["commands"], curve["bytes_looked_up"]
        pods, route = curve.get("pods", 1), curve.get("route")
        frame = pd.DataFrame({
            "policy": "lru",
            "pods": pods,
            "route": route,
            "capacity_unit": unit,
            "method": "exact",
            "sample_rate": 1.0,
            "capacity": caps[keep],
            "lookups": lookups,
            "hits": hits[keep],
            "hit_rate": hits[keep] / lookups if lookups else 0.0,
            "commands": commands,
            "commands_served": np.asarray(curve["commands_served"], dtype=np.int64)[keep],
            "round_trips": curve["round_trips"],
            "round_trips_saved": np.asarray(curve["round_trips_saved"], dtype=np.int64)[keep],
        })
        frame["command_hit_rate"] = frame["commands_served"] / commands if commands else 0.0
        trips = curve["round_trips"]
        frame["round_trips_saved_rate"] = frame["round_trips_saved"] / trips if trips else 0.0
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
            heat.append(pd.DataFrame({"policy": "lru", "pods": pods, "route": route, "capacity_unit": unit,
                                      "window": w, "capacity": columns, "hits": counts}))
    curves = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    timeline = pd.concat(heat, ignore_index=True) if heat else pd.DataFrame()
    return curves, timeline


def sampled_frames(native: list[dict], unit: str, unique_keys: int, lookups: int, bound: float) -> pd.DataFrame:
    """Sampled curves, one row per capacity (`sampled_columns`, one frame)."""
    import pandas as pd
    frames = [pd.DataFrame(c) for c in sampled_columns(native, unit, unique_keys, lookups, bound)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def sampled_columns(native: list[dict], unit: str, unique_keys: int, lookups: int, bound: float) -> list[dict]:
    """Sampled curves, one dict of columns per curve (the columns of `sampled_frames`; numpy, no pandas): the
    mean of the salts' estimates and a band of two standard deviations of them (`hit_rate_low`,
    `hit_rate_high`), each salt's own (`hit_rate_by_sample`), with `salts` and `sample_rate`. No cache beats the
    infinite one, whose hit rate `bound` is exact: estimates above it are sampling noise, and are cut to it."""
    curves = []
    for curve in native:
        if curve["method"] == "shards":
            policy, rate = "lru", float(np.mean(curve["sample_rates"]))
            per_salt = np.asarray(curve["hit_rates"], dtype=float)
        else:
            # As SHARDS_adj does: the misses of a sample, scaled by 1 / rate, estimate the misses of the full
            # stream, and the hit rate follows from the lookups the trace really made. The sample's own hit
            # ratio would swing with whether the few hottest keys (nearly all hits) fell in the sample or not.
            policy, rate = curve["policy"], float(curve["sample_rate"])
            misses = np.asarray(curve["lookups"], dtype=float) - np.asarray(curve["hits"], dtype=float)
            per_salt = np.clip(1 - misses / rate / max(lookups, 1), 0, 1)
        caps = np.asarray(curve["capacities"], dtype=np.int64)
        salts = len(per_salt)
        mean = np.minimum(per_salt.mean(axis=0), bound)
        spread = 2 * per_salt.std(axis=0, ddof=1) if salts > 1 else np.zeros_like(mean)
        keep = _useful(caps, np.round(mean * lookups).astype(np.int64), unit, unique_keys)
        curves.append({
            "policy": policy,
            "pods": curve.get("pods", 1),
            "route": curve.get("route"),
            "capacity_unit": unit,
            "method": curve["method"],
            "sample_rate": rate,
            "salts": salts,
            "capacity": caps[keep],
            "lookups": lookups,
            "hits": np.round(mean[keep] * lookups).astype(np.int64),
            "hit_rate": mean[keep],
            "hit_rate_low": np.clip(mean[keep] - spread[keep], 0, 1),
            "hit_rate_high": np.clip(mean[keep] + spread[keep], 0, bound),
            # Each sample's own estimate (uncut): the spread the band is made of, and what a benchmark averages
            # its error over (bench/scale/anchors.py).
            "hit_rate_by_sample": [row.tolist() for row in per_salt.T[keep]],
        })
    return curves


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
