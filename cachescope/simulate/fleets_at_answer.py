"""Fleets asked for with curves but no capacity of their own (`--curve lru --target 70% --pods 1,8`): each
fleet runs at the size per pod that its own curve and confirming runs answer for the first target, so the
fleet comparison is of the caches one would deploy.

Where a fleet has no answer (the target is out of reach, or no target was given), it runs at its curve's knee
(past which doubling the cache gains less than a point), else at the capacity where its curve stops growing;
a fleet without a curve of its own takes the single cache's. The sharded what-if of one pod's capture
(`--one-pod-of N`) runs at the single cache's size: it is an estimate on its own clock, with no curve.
The trace is read at least twice: once for the curves, then for the confirming runs and for the fleets at
their sizes."""

from __future__ import annotations

from cachescope.errors import UsageError
from cachescope.simulate.answers import best_rows
from cachescope.simulate.confirm import Ask
from cachescope.simulate.fleet import parse_pods
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.sizing import knee, records


def answer_sizes(result, targets: list[float], shapes=((1, None),)) -> list[dict]:
    """{"policy", "pods", "route", "capacity", "why"} for each curve policy of `result` in entries and each
    fleet shape (pods, route; (1, None) is the single cache)."""
    curves = None if result.curves.empty else result.curves[result.curves["capacity_unit"] == "entries"]
    answers = {} if result.sizing.empty else {
        (r["policy"], r["pods"], r["route"]): r for r in records(result.sizing)
        if r["capacity_unit"] == "entries" and targets and r["target"] == targets[0]}
    sizes = []
    # The policies with a curve, and those sized by full runs alone (no curve models their options).
    for policy in dict.fromkeys([*([] if curves is None else curves["policy"]), *(p for p, _, _ in answers)]):
        label = POLICIES[policy].label
        single = _curve_size(curves, policy, 1, None, targets, label)
        for pods, route in shapes:
            name = label if route is None else f"{label} x{pods} {route}"
            answer = answers.get((policy, pods, route))
            if answer is not None and answer.get("reached"):
                size = {"capacity": int(answer["capacity"]), "why": f"the size {name} needs for {targets[0]:.0%}"}
            else:
                size = _curve_size(curves, policy, pods, route, targets, name)
            if size is None and answer is not None and answer.get("capacity") is not None:
                # Out of reach, and no curve of its own to find a knee on: where every key fits.
                size = {"capacity": int(answer["capacity"]),
                        "why": f"{targets[0]:.0%} is out of reach; {name} at the size where every key fits"}
            size = size or single
            if size is not None:
                sizes.append({"policy": policy, "pods": pods, "route": route, **size})
    return sizes


def _curve_size(curves, policy: str, pods: int, route, targets: list[float], name: str) -> dict | None:
    """The size a curve gives without confirming runs: its knee, else where it stops growing."""
    if curves is None:
        return None
    mine = curves[(curves["policy"] == policy) & (curves["pods"] == pods)
                  & (curves["route"].isna() if route is None else curves["route"] == route)]
    if mine.empty:
        return None
    method = "exact" if (mine["method"] == "exact").any() else mine["method"].iloc[0]
    mine = mine[mine["method"] == method].sort_values("capacity")
    caps, rates = mine["capacity"].to_numpy(), mine["hit_rate"].to_numpy()
    reached = [i for i, rate in enumerate(rates) if targets and rate >= targets[0] - 1e-12]
    bend = knee(caps, rates)
    if reached:
        return {"capacity": int(caps[reached[0]]), "why": f"the size {name} needs for {targets[0]:.0%}"}
    if bend is not None:
        out_of_reach = f"{targets[0]:.0%} is out of reach; " if targets else ""
        return {"capacity": int(bend), "why": f"{out_of_reach}{name}'s knee, past which doubling gains less than a point"}
    return {"capacity": int(caps[int(rates.argmax())]), "why": f"the smallest size at which {name}'s curve stops growing"}


def fleets_at_the_answer(call: dict, same_trace: dict, targets: list[float], simulate, shapes: list) -> object:
    """The result of `call`: its curves and sizing, and its fleets at the sizes they answer. `same_trace`: the
    trace as it can be read again; `simulate`: simulate_trace; `shapes`: the fleets (pods, route)."""
    keep = {k: v for k, v in call.items() if k != "capacities"}
    reread = {"trace": same_trace["trace"], "format": same_trace["format"], "ports": same_trace["ports"]}
    what_if = call["one_pod_of"] is not None
    curves = simulate(**{**keep, **reread, "pods": None, "route": "random", "one_pod_of": None,
                         "rolling_restart_every": None, "key_pattern": call["key_pattern"],
                         "_shapes": [] if what_if else shapes})
    sizes = answer_sizes(curves, targets, [(1, None)] + ([] if what_if else shapes))
    if not sizes:
        raise UsageError("fleets need a capacity per pod: the curves gave no size in entries (give one, e.g. "
                         "--lru 10000)")
    if what_if:
        capacities = {}
        for s in sizes:
            capacities.setdefault(POLICIES[s["policy"]].keyword, []).append(s["capacity"])
        params = {kw: v for kw, v in (keep["params"] or {}).items() if kw in capacities}
        fleets = simulate(**{**keep, **reread, "curve": None, "target": None, "sample": None, "params": params},
                          **capacities)
        sizes = [s for s in sizes if s["route"] is None]
    else:
        asks = [Ask(s["policy"], s["capacity"], "entries", s["pods"], s["route"])
                for s in sizes if s["route"] is not None]
        if not asks:
            raise UsageError("no fleet to run: give --pods N (more than 1) or --route client")
        fleets = simulate(**{**keep, **reread, "curve": None, "target": None, "sample": None, "_asks": asks})
        sizes = [s for s in sizes if s["route"] is not None]
    fleets.curves, fleets.curve_timeline, fleets.sizing = curves.curves, curves.curve_timeline, curves.sizing
    fleets.answer_timeline, fleets.confirming_passes = curves.answer_timeline, curves.confirming_passes
    # The single cache competes for the cheapest answer only when it was asked for (`--pods 1,8`).
    fleets.best = best_rows(curves.sizing, targets, call["pods"] is not None and 1 in parse_pods(call["pods"]))
    fleets.fleet_sizes = sizes
    fleets.request = {**fleets.request, "curve": curves.request["curve"], "targets": targets,
                      "sample": call["sample"]}
    return fleets
