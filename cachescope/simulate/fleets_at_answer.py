"""Fleets asked for with curves but no capacity of their own (`--curve lru --target 70% --pods 1,8`): the pods
run at the size the curves answer, so the fleet comparison is of the cache one would deploy.

Each curve policy in entries gives its size per pod: the smallest capacity that reaches the first target
(where the curve is exact rather than sampled, the exact one), else the curve's knee (past which doubling
the cache gains less than a point), else the capacity where the curve stops growing (the trace's unique keys
at most). The trace is read twice: once for the curves, once for the fleets at their sizes."""

from __future__ import annotations

from cachescope.errors import UsageError
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.sizing import knee


def answer_sizes(result, targets: list[float]) -> list[dict]:
    """{"policy", "capacity", "why"} for each curve policy of `result` in entries."""
    if result.curves.empty:
        return []
    curves = result.curves[result.curves["capacity_unit"] == "entries"]
    sizes = []
    for policy, curve in curves.groupby("policy", sort=False):
        # The exact curve where there is one: a sampled one is an estimate of it.
        method = "exact" if (curve["method"] == "exact").any() else curve["method"].iloc[0]
        curve = curve[curve["method"] == method].sort_values("capacity")
        caps, rates = curve["capacity"].to_numpy(), curve["hit_rate"].to_numpy()
        label = POLICIES[policy].label
        reached = [i for i, rate in enumerate(rates) if targets and rate >= targets[0] - 1e-12]
        bend = knee(caps, rates)
        if reached:
            size, why = int(caps[reached[0]]), f"the size {label} needs for {targets[0]:.0%}"
        elif bend is not None:
            out_of_reach = f"{targets[0]:.0%} is out of reach; " if targets else ""
            size, why = int(bend), f"{out_of_reach}{label}'s knee, past which doubling gains less than a point"
        else:
            top = int(caps[int(rates.argmax())])
            size, why = top, f"the smallest size at which {label}'s curve stops growing"
        sizes.append({"policy": policy, "capacity": size, "why": why})
    return sizes


def fleets_at_the_answer(call: dict, same_trace: dict, targets: list[float], simulate) -> object:
    """The result of `call` (its curves, and its fleets at the sizes the curves answer). `same_trace`: the
    trace as it can be read again; `simulate`: simulate_trace."""
    keep = {k: v for k, v in call.items() if k != "capacities"}
    reread = {"trace": same_trace["trace"], "format": same_trace["format"], "ports": same_trace["ports"]}
    curves = simulate(**{**keep, **reread, "pods": None, "route": "random", "one_pod_of": None,
                         "rolling_restart_every": None, "key_pattern": None})
    sizes = answer_sizes(curves, targets)
    if not sizes:
        raise UsageError("fleets need a capacity per pod: the curves gave no size in entries (give one, e.g. "
                         "--lru 10000)")
    capacities = {}
    for s in sizes:
        capacities.setdefault(POLICIES[s["policy"]].keyword, []).append(s["capacity"])
    # Each policy's params travel with it; the curves' own policies without a fleet keep none.
    params = {kw: v for kw, v in (keep["params"] or {}).items() if kw in capacities}
    fleets = simulate(**{**keep, **reread, "curve": None, "target": None, "sample": None, "params": params},
                      **capacities)
    fleets.curves, fleets.curve_timeline, fleets.sizing = curves.curves, curves.curve_timeline, curves.sizing
    fleets.fleet_sizes = sizes
    fleets.request = {**fleets.request, "curve": curves.request["curve"], "targets": targets,
                      "sample": call["sample"]}
    return fleets
