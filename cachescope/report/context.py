"""What every section reads: the result, the feature dictionary, the anatomy (read from the trace again), the
size the per-type and per-feature hit rates are given at, and that cache simulated again per feature."""

from __future__ import annotations

from dataclasses import dataclass

from cachescope.report.markup import is_missing
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.sizing import records


@dataclass
class Context:
    result: object
    names: dict | None
    anatomy: object  # anatomy.Anatomy, or None
    anatomy_missing: str  # why there is none
    chosen: dict | None  # {"policy", "capacity", "why"}: the size the per-type and per-feature hit rates are at
    run: object = None  # chosen_run.ChosenRun: the chosen cache's hits and refresh costs per feature
    run_missing: str = ""  # why there is none

    @classmethod
    def build(cls, result, names):
        from cachescope.report.anatomy import anatomy_of
        from cachescope.report.chosen_run import apply_to_features, chosen_run

        chosen = _chosen_size(result)
        anatomy, missing = anatomy_of(result, chosen and chosen["capacity"], names)
        ctx = cls(result, names, anatomy, missing, chosen)
        if anatomy is not None and anatomy.by_feature is not None and chosen is not None:
            ctx.run, ctx.run_missing = chosen_run(result, chosen)
            if ctx.run is not None:
                apply_to_features(anatomy.by_feature, ctx.run, bool(result.request.get("refresh_schedule")))
        return ctx


def _chosen_size(result):
    """The size an engineer would pick from this run: the first sizing answer (an LRU curve's first), else the
    largest single cache simulated in entries."""
    rows = [r for r in records(result.sizing) if r.get("reached", r.get("reachable")) and r["route"] is None
            and r["capacity_unit"] == "entries"] if len(result.sizing) else []
    rows.sort(key=lambda r: r["policy"] != "lru")
    if rows:
        r = rows[0]
        return {"policy": r["policy"], "capacity": int(r["capacity"]),
                "why": f"the size {POLICIES[r['policy']].label} needs for {r['target']:.0%}"}
    # No target reached: the knee, past which doubling the cache gains less than a point.
    knees = [r for r in records(result.sizing) if not r.get("reached", r.get("reachable")) and r["route"] is None
             and r["capacity_unit"] == "entries" and not is_missing(r.get("knee_capacity"))] if len(result.sizing) else []
    knees.sort(key=lambda r: r["policy"] != "lru")
    if knees:
        r = knees[0]
        return {"policy": r["policy"], "capacity": int(r["knee_capacity"]),
                "why": f"{POLICIES[r['policy']].label}'s knee, as {r['target']:.0%} is out of reach"}
    # A fleet of one pod is a single cache.
    runs = [r for r in result.summary_records() if r["capacity_unit"] == "entries" and r.get("pods", 1) == 1]
    if runs:
        r = max(runs, key=lambda r: r["capacity"])
        return {"policy": r["policy"], "capacity": int(r["capacity"]), "why": "the largest cache simulated"}
    return None
