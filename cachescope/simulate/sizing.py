"""The sizing answer, arithmetic on a curve: the smallest capacity that reaches each target hit rate, the
knee of the curve, and what the cache saves there."""

from __future__ import annotations

import re

import numpy as np

from cachescope.errors import UsageError

CURVE_KEYS = ["policy", "pods", "route", "capacity_unit", "method"]
"""What tells one curve from another: a policy's, as one cache or as a fleet (pods, route), in a unit, and how
it was found."""

KNEE_GAIN = 0.01
"""The knee: the capacity from which on doubling the cache gains less than one point of hit rate."""


def parse_targets(value) -> list[float]:
    """`80%`, `80` or `0.8` (all 80%), or a comma list of them, as fractions in (0, 1]: a number above 1 is a
    percentage, one of at most 1 a fraction (so `1` is 100%, and 1% is written `1%`)."""
    items = value.split(",") if isinstance(value, str) else ([value] if isinstance(value, (int, float)) else list(value))
    targets = []
    for item in items:
        text = str(item).strip()
        m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(%?)", text)
        if not m:
            raise UsageError(f"target {text!r} is not a hit rate (80%, 80 or 0.8)")
        x = float(m.group(1))
        x = x / 100 if m.group(2) or x > 1 else x
        if not 0 < x <= 1:
            raise UsageError(f"target {text!r} must be a hit rate above 0 and at most 100%")
        targets.append(x)
    if not targets:
        raise UsageError("no target hit rate given")
    return list(dict.fromkeys(targets))


def sizing_frame(curves: pd.DataFrame, targets: list[float], bound_hit_rate: float, duration_s: float | None,
                 bytes_per_entry: float | None) -> pd.DataFrame:
    """One row per curve and target: the smallest capacity of the curve that reaches the target (None when
    none does: `reachable` is false and `bound_hit_rate` says how far the infinite cache goes), its hit rates,
    memory and savings, and the curve's knee. `bytes_per_entry` turns an entry capacity into bytes (the
    memory model's mean weight of an entry); `duration_s` turns counts into rates."""
    import pandas as pd
    rows = []
    if curves.empty:
        return pd.DataFrame()
    for (policy, pods, route, unit, method), curve in curves.groupby(CURVE_KEYS, sort=False, dropna=False):
        route = None if route is None or route != route else route
        curve = curve.sort_values("capacity")
        caps = curve["capacity"].to_numpy()
        rates = curve["hit_rate"].to_numpy()
        bend = knee(caps, rates)
        for target in targets:
            reached = np.nonzero(rates >= target - 1e-12)[0]
            row = {"policy": policy, "pods": int(pods), "route": route, "capacity_unit": unit, "method": method,
                   "target": target,
                   "reachable": bool(len(reached)), "bound_hit_rate": bound_hit_rate, "knee_capacity": bend}
            if len(reached):
                at = curve.iloc[reached[0]]
                # The curve's first capacity already reaches the target: a smaller cache might too.
                row["at_curve_start"] = bool(reached[0] == 0 and caps[0] > 1)
                row.update(capacity=int(at["capacity"]), hit_rate=float(at["hit_rate"]))
                for optional in ("command_hit_rate", "byte_hit_rate", "hit_rate_low", "hit_rate_high"):
                    if optional in at and not pd.isna(at[optional]):
                        row[optional] = float(at[optional])
                if unit == "bytes":
                    row["capacity_bytes"] = int(at["capacity"])
                elif bytes_per_entry is not None:
                    row["capacity_bytes"] = int(round(at["capacity"] * bytes_per_entry))
                if duration_s:
                    row["lookups_saved_per_s"] = float(at["hits"]) / duration_s
                    if "round_trips_saved" in at and not pd.isna(at["round_trips_saved"]):
                        row["round_trips_saved_per_s"] = float(at["round_trips_saved"]) / duration_s
            rows.append(row)
    return pd.DataFrame(rows)


def route_of(row: dict) -> str | None:
    """A row's route: None for a single cache (a frame holds it as NaN)."""
    route = row.get("route")
    return None if route is None or route != route else route


def records(frame) -> list[dict]:
    """A sizing or curve frame's rows as dicts, a single cache's route as None."""
    return [{**r, "route": route_of(r)} for r in frame.to_dict("records")]


def knee(caps: np.ndarray, rates: np.ndarray):
    """The smallest capacity C of the curve from which on doubling the cache (to the curve's largest capacity
    up to 2C) never gains a point of hit rate: past the knee, memory buys little. None for a curve too short
    to tell (its largest capacity still gains)."""
    knee = None
    for i in range(len(caps) - 1, -1, -1):
        j = np.searchsorted(caps, 2 * caps[i], side="right") - 1
        if j > i and rates[j] - rates[i] >= KNEE_GAIN:
            break
        if j > i:
            knee = int(caps[i])
    return knee


def add_warmup(sizing: pd.DataFrame, curve_timeline: pd.DataFrame, starts: list[int]) -> pd.DataFrame:
    """`warmup_s` at each exact answer, from the curve's timeline at `warmup_capacity`, the smallest of its
    capacities at or above the answer (the timeline keeps a few dozen of the curve's capacities): the time from
    the trace's start until the hit rate over a window is within 5% of the steady rate there
    (`recovery.py`). Needs a clock; sampled curves have no timeline."""
    from cachescope.simulate.recovery import recovery_time, steady_hit_rate

    if sizing.empty or curve_timeline.empty or "ts_ns" not in curve_timeline or not starts:
        return sizing
    sizing = sizing.copy()
    for i, row in sizing.iterrows():
        if row["method"] != "exact" or not row["reachable"]:
            continue
        same_cache = curve_timeline["route"].isna() if route_of(row) is None else \
            (curve_timeline["route"] == row["route"]) & (curve_timeline["pods"] == row["pods"])
        heat = curve_timeline[(curve_timeline["policy"] == row["policy"]) & same_cache
                              & (curve_timeline["capacity_unit"] == row["capacity_unit"])]
        columns = np.sort(heat["capacity"].unique())
        above = columns[columns >= row["capacity"]]
        column = above[0] if len(above) else columns[-1]
        at = heat[heat["capacity"] == column].sort_values("window")
        times, rates = at["ts_ns"].to_numpy(dtype=np.int64), at["hit_rate"].to_numpy(dtype=float)
        steady = steady_hit_rate(times, rates, np.array(starts, dtype=np.int64))
        warmup = recovery_time(times, rates, starts[0], steady)
        sizing.loc[i, "warmup_capacity"] = int(column)
        sizing.loc[i, "warmup_s"] = np.nan if warmup is None else warmup / 1e9
    return sizing
