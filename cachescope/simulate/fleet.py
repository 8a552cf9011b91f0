"""Fleets of pods: which fleets to simulate (pod counts x routes) and what a fleet reports: its totals, each
pod's share, the spread across pods and the memory of the whole fleet.

What each route assumes (the README says the same):
- `random` and `round-robin`: replicated pods behind a load balancer; every request (here, one command) goes
  to one pod, whose cache holds whatever its own requests brought in. A capture taken on one service pod
  holds only that pod's share of a replicated fleet's traffic: simulate it with `--pods 1`.
- `entity`: sharded pods; every entity (the Redis key) has one owner pod (jump consistent hash), and each
  lookup goes to its owner, so the fleet's capacity adds up instead of being replicated.
- `key-pattern`: sharded like `entity`, by an application id that a regular expression's first group takes
  from each key (`^mer_(\\d+):` puts every key of one merchant on one pod); a key it does not match is its own
  shard, and is counted.
- `client`: one pod per client host of the trace (the `client` column of a capture or Parquet trace, the
  client address of a MONITOR line, less its port): each service host's cache sees exactly that host's
  lookups. A capture taken on the Redis host, or MONITOR on the server, holds every host's.
Writes and deletes reach every pod (an invalidation is broadcast).

From one pod's capture (`one_pod_of=N`): the replicated fleet's hit rate is this pod's (one pod of the
capacity), and the sharded what-if shards this pod's lookups by entity over N pods, each on a clock N times
faster: a shard of a real sharded fleet takes the lookups of its 1/N of the entities from all N pods, about N
times this pod's share of them, at N times the rate. That is an estimate: it assumes the other pods' traffic
looks like this one's (same popularity, independent timing).
"""

from __future__ import annotations

import numpy as np

from cachescope.errors import UsageError
from cachescope.simulate.median import median

ROUTES = ("random", "round-robin", "entity", "key-pattern", "client")
MAX_PODS = 10_000


def parse_pods(value) -> list[int]:
    """`8` or `8,16,32` (or an iterable of ints): pod counts, each at least 1."""
    items = value.split(",") if isinstance(value, str) else ([value] if isinstance(value, int) else list(value))
    pods = []
    for item in items:
        try:
            n = int(str(item).strip())
        except ValueError:
            raise UsageError(f"pod count {item!r} is not a whole number") from None
        if not 1 <= n <= MAX_PODS:
            raise UsageError(f"pod count {n} must be from 1 to {MAX_PODS:,}")
        pods.append(n)
    if not pods:
        raise UsageError("no pod count given")
    return list(dict.fromkeys(pods))


def parse_routes(value) -> list[str]:
    names = [r.strip().lower() for r in (value.split(",") if isinstance(value, str) else value)]
    for name in names:
        if name not in ROUTES:
            raise UsageError(f"unknown route {name!r}: choose from {', '.join(ROUTES)}")
    if not names:
        raise UsageError("no route given")
    return list(dict.fromkeys(names))


def fleet_totals(fleet: dict) -> dict:
    """The fleet's counters as one run's (summed over its pods), for the summary row."""
    pods = fleet["per_pod"]
    counters = [k for k, v in (pods[0] if pods else {}).items() if isinstance(v, int) and k != "capacity"]
    total = {k: sum(p[k] for p in pods) for k in counters} if pods else {
        k: 0 for k in ("lookups", "hits", "bytes_looked_up", "bytes_hit", "resident", "evictions",
                       "invalidations", "refresh_evictions", "expirations", "stale_reads", "uncacheable",
                       "restarts")}
    # A sharded request reaches several pods: the fleet counts it once, served when every pod hit.
    total.update(fleet["served"])
    total.update(policy=fleet["policy"], capacity=fleet["capacity"],
                 restart_times=sorted({t for p in pods for t in p["restart_times"]}))
    return total


def fleet_columns(fleet: dict, unit: str, hosts=()) -> dict:
    """What a fleet adds to its summary row: pods, route, per_pod, the spread of the pods' hit rates, the load
    imbalance (the busiest pod's lookups over the mean) and the memory of all pods together."""
    pods = fleet["per_pod"] or [{"lookups": 0, "hits": 0, "resident": 0, "restart_times": []}]
    lookups = np.array([p["lookups"] for p in pods], dtype=float)
    hits = np.array([p["hits"] for p in pods], dtype=float)
    rates = np.divide(hits, lookups, out=np.zeros_like(hits), where=lookups > 0)
    busy = rates[lookups > 0] if (lookups > 0).any() else rates
    out = {
        "pods": fleet["pods"],
        "route": fleet["route"],
        "per_pod": [{"pod": i, "lookups": int(p["lookups"]), "hits": int(p["hits"]), "hit_rate": float(r),
                     "resident": int(p["resident"]),
                     # The requests this pod received (under a sharded route, its part of each batch).
                     "round_trips": int(p.get("round_trips", 0)), "round_trips_saved": int(p.get("round_trips_saved", 0)),
                     **({"resident_bytes_peak": int(p["resident_bytes_peak"])} if "resident_bytes_peak" in p else {}),
                     **({"client": hosts[i]} if fleet["route"] == "client" and i < len(hosts) else {})}
                    for i, (p, r) in enumerate(zip(pods, rates))],
        "pod_hit_rate_min": float(busy.min()),
        "pod_hit_rate_median": median(busy),
        "pod_hit_rate_max": float(busy.max()),
        "load_imbalance": float(lookups.max() / lookups.mean()) if lookups.mean() > 0 else 1.0,
        "resident_total": int(sum(p["resident"] for p in pods)),
    }
    out["fleet_capacity_bytes" if unit == "bytes" else "fleet_capacity_entries"] = fleet["pods"] * fleet["capacity"]
    if fleet.get("time_factor", 1) > 1:
        out["estimate"] = (f"sharded what-if: each of {fleet['pods']} shards takes its entities' lookups from "
                           f"{fleet['pods']} pods like this one (this capture's, on a clock {fleet['pods']}x faster)")
    if fleet.get("rolling"):
        # Each rolling deployment begins with the first pod's restart.
        out["deploy_times"] = list(pods[0]["restart_times"])
    return out
