"""A fleet simulated in parts put back together. A sweep on Dask splits a fleet of the sharded and client
routes (whose pods are independent) into tasks that each run the pods `p % of == part` (fleet.rs,
`only_pods`); this gives the dict one Simulation's `fleets()` gives for the whole fleet, exactly:

- each pod's counters are its part's, and the fleet's hits per window the parts' summed (every part routes
  every lookup, so the windows are cut at the same lookups);
- the spread of the pods' hit rates is recomputed from every pod's hits and lookups in each window, as the
  core's `Spread::summary` does (float64 rates, the median of an even count the mean of the middle two,
  float32 at the end);
- commands served and round trips saved are the fleet's, not sums: a sharded request is served only when
  every pod it reached hit. Each part says which requests would be served (the same in every part) and logs,
  one bit per request, those that missed on its pods; the logs ORed are the requests missed on any pod.
"""

from __future__ import annotations

import numpy as np

_SAME = ("policy", "capacity", "route", "rolling", "time_factor")


def merge_fleet_parts(parts: list[dict]) -> dict:
    """The whole fleet from the dicts of all its parts (each with `part`, `pod_ids`, `window_pods`,
    `served_parts`)."""
    parts = sorted(parts, key=lambda p: p["part"][0])
    of = parts[0]["part"][1]
    if [p["part"] for p in parts] != [(i, of) for i in range(of)]:
        raise ValueError(f"a fleet's parts must be 0 to {of - 1} of {of}, each once: {[p['part'] for p in parts]}")
    pods = parts[0]["pods"]
    per_pod: list = [None] * pods
    for p in parts:
        for pod, counters in zip(p["pod_ids"], p["per_pod"]):
            per_pod[pod] = counters
    if any(c is None for c in per_pod) or any(p["pods"] != pods for p in parts):
        raise ValueError("the parts of a fleet do not cover its pods once each")
    return {
        **{k: parts[0][k] for k in _SAME},
        "pods": pods,
        "per_pod": per_pod,
        "window_hits": np.sum([np.asarray(p["window_hits"], dtype=np.uint64) for p in parts], axis=0,
                              dtype=np.uint64),
        "window_spread": _spread(parts, pods),
        "served": _served([p["served_parts"] for p in parts]),
    }


def _spread(parts: list[dict], pods: int) -> np.ndarray:
    """[min, median, max] of the pods' hit rates in each window (float32[windows, 3]), among the pods with
    lookups in it; NaN where none had. The open window (the last row of every part) only if a pod had lookups."""
    counts = np.zeros((len(parts[0]["window_pods"]), pods, 2), dtype=np.uint64)
    for p in parts:
        counts[:, list(p["pod_ids"]), :] = p["window_pods"]
    if len(counts) and not counts[-1, :, 1].any():
        counts = counts[:-1]
    hits, lookups = counts[:, :, 0].astype(np.float64), counts[:, :, 1].astype(np.float64)
    busy = counts[:, :, 1] > 0
    rates = np.sort(np.divide(hits, lookups, out=np.full_like(hits, np.nan), where=busy), axis=1)  # NaN last
    n = busy.sum(axis=1)
    rows = np.arange(len(rates))
    at = lambda i: rates[rows, np.clip(i, 0, max(pods - 1, 0))]  # noqa: E731
    median = np.where(n % 2 == 1, at(n // 2), (at(n // 2 - 1) + at(n // 2)) / 2.0)
    out = np.stack([at(np.zeros_like(n)), median, at(n - 1)], axis=1) if len(rates) else np.zeros((0, 3))
    out[n == 0] = np.nan
    return out.astype(np.float32)


def _served(parts: list[dict]) -> dict:
    first = parts[0]
    commands_served = first["command_candidates"] - _missed([p["command_misses"] for p in parts]) \
        + sum(p["lone_hits"] for p in parts)
    if first["batched"]:
        round_trips = first["round_trips"]
        saved = first["round_trip_candidates"] - _missed([p["round_trip_misses"] for p in parts])
    else:  # every command a round trip of its own, as the core says
        round_trips, saved = first["commands"], commands_served
    return {"commands": first["commands"], "commands_served": commands_served, "round_trips": round_trips,
            "round_trips_saved": saved}


def _missed(logs: list) -> int:
    """Requests whose bit is set in any of the logs (uint64 words)."""
    words = max((len(log) for log in logs), default=0)
    union = np.zeros(words, dtype=np.uint64)
    for log in logs:
        union[: len(log)] |= np.asarray(log, dtype=np.uint64)
    return int(np.unpackbits(union.view(np.uint8)).sum())
