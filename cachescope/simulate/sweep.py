"""A sweep's simulations as Dask tasks: every single cache (a policy at a capacity) and every fleet (pods x
route) of the sweep is a task that streams the trace itself, and the curves one more; their outputs are put
back together into the result the serial run gives.

Each task runs `simulate_trace` with the caller's own arguments on its part of the work (`_subset`), so a
task simulates exactly what the serial run does for that cache: the runs of one pass are independent (a
random route draws from a fixed seed), and the infinite bound, the timeline's windows and the trace's counts
are the same in every task (taken from the first). The price is reading the trace once per task instead of
once; it pays when the workers outnumber what one machine's threads give, or the sweep is larger than one
machine's memory (memory per task: its own caches plus one batch of the trace)."""

from __future__ import annotations

import numpy as np

from cachescope.errors import CachescopeError, UsageError
from cachescope.simulate.result import SimulationResult


def task_outputs(source, sim, first_ts, with_curves: bool) -> dict:
    """What a task sends back: the core's outputs and the trace's counts, as plain data."""
    return {
        "results": sim.results(),
        "fleets": sim.fleets(),
        "timeline": sim.timeline(),
        "unique_reads": sim.unique_reads,
        "curves": sim.curves() if with_curves else [],
        "info": source.info,
        "hosts": list(getattr(source, "hosts", [])),
        "capture_stats": dict(source.capture_stats),
        "unmatched_shards": getattr(source, "unmatched_shards", 0),
        "first_ts": first_ts,
    }


class _Combined:
    """The tasks' outputs, answering as one Simulation does (the runs in the serial order, the bound last)."""

    def __init__(self, parts: list[dict]):
        self.parts = parts
        self.unique_reads = parts[0]["unique_reads"]

    def results(self) -> list:
        return [r for p in self.parts for r in p["results"][:-1]] + [self.parts[0]["results"][-1]]

    def fleets(self) -> list:
        return [f for p in self.parts for f in p["fleets"]]

    def curves(self) -> list:
        return [c for p in self.parts for c in p["curves"]]

    def timeline(self):
        ends, ts, _ = self.parts[0]["timeline"]
        hits = [p["timeline"][2] for p in self.parts]
        return ends, ts, np.vstack([h[:-1] for h in hits] + [hits[0][-1:]])


class _SourceOf:
    """What the result reads of a trace source, from the first task's copy."""

    def __init__(self, part: dict, path: str, granularity: str, key_pattern):
        self.info, self.path, self.granularity = part["info"], path, granularity
        self.hosts, self.capture_stats = part["hosts"], part["capture_stats"]
        self.unmatched_shards, self.key_pattern = part["unmatched_shards"], key_pattern


def sweep_on_dask(call: dict, source, runs: list, fleets: list, with_curves: bool, policy_params: dict,
                  curve_unit: str, targets: list) -> SimulationResult:
    """Runs the sweep `call` (simulate_trace's arguments) as one task per single run, per fleet and for the
    curves, on the cluster `call` names; returns the serial run's result."""
    from cachescope.cluster import TaskFailed, default_workers, run_tasks

    trace = call["trace"]
    if not isinstance(trace, (str, list, tuple)) and not hasattr(trace, "__fspath__"):
        raise UsageError("a sweep on Dask reads the trace in every task: give its path, not an open source")
    opened = getattr(source, "_opened", None)
    if opened is not None:
        opened.close()  # the tasks read the trace; this process only planned the sweep
    subsets = [([i], [], False) for i in range(len(runs))] + [([], [i], False) for i in range(len(fleets))]
    if with_curves:
        subsets.append(([], [], True))
    if not subsets:
        subsets = [([], [], False)]
    names = [_name(runs, fleets, s) for s in subsets]
    scheduler, workers = call["scheduler"], call["workers"]
    if scheduler is None and workers is None:
        workers = default_workers(len(subsets))
    base = {k: v for k, v in call.items() if k not in ("scheduler", "workers", "_subset", "capacities")}
    base.update(call["capacities"], progress=False)
    if getattr(source, "format", None) == "pcap":
        base["ports"] = source.ports  # found once here, not again by every task
    args = [({**base, "_subset": s},) for s in subsets]
    parts = run_tasks(_task, args, names, workers=workers, scheduler=scheduler, progress=call["progress"],
                      what="simulations")
    for p in parts:
        if isinstance(p, TaskFailed):
            if isinstance(p.error, CachescopeError):
                raise p.error
            raise CachescopeError(f"the simulation {p.name} failed on the cluster: {p.message}")
    combined = _Combined(parts)
    src = _SourceOf(parts[0], getattr(source, "path", str(trace)), call["granularity"], call["key_pattern"])
    result = SimulationResult.from_simulation(src, combined, call["window"], parts[0]["first_ts"], runs,
                                              policy_params, [f[1].unit for f in fleets])
    result.capture_stats = {"input": src.path, **src.capture_stats} if src.capture_stats else {}
    if with_curves:
        result.add_curves(combined.curves(), curve_unit, targets, call["entry_overhead"])
    return result


def _task(kwargs: dict) -> dict:
    from cachescope.simulate.engine import simulate_trace

    return simulate_trace(**kwargs)


def _name(runs, fleets, subset) -> str:
    run_ids, fleet_ids, curves = subset
    if run_ids:
        policy, cap = runs[run_ids[0]]
        return f"{policy} {cap.value}"
    if fleet_ids:
        policy, cap, n, route = fleets[fleet_ids[0]]
        return f"{policy} {cap.value} x{n or 'client'} {route}"
    return "curves" if curves else "trace"
