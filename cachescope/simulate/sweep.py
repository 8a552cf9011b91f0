"""A sweep's simulations as Dask tasks: the single caches (a policy at a capacity), the fleets (pods x route)
and the curves of the sweep are dealt into as many tasks as the cluster runs at once, each a pass over the
trace that it streams itself, and their outputs are put back together into the result the serial run gives.

Each task runs `simulate_trace` with the caller's own arguments on its share of the work (`_subset`), so it
simulates exactly what the serial run does for those caches: the runs of one pass are independent (a random
route draws from a fixed seed), and the infinite bound, the timeline's windows and the trace's counts are the
same in every task (taken from the first). The price is reading the trace once per task instead of once; it
pays when the cluster has more cores than one machine, or the sweep more caches than one machine's memory
holds (memory per task: its caches plus one batch of the trace).

A fleet of the sharded routes (`entity`, `key-pattern`) or of the `client` route, whose pods are independent,
is split by pods into as many parts as the cluster runs tasks at once (no more than its pods), each part in a
task of its own: a part routes every lookup but runs only its pods, and the parts are put back together
exactly (fleet_parts.py). A replicated fleet (`random`, `round-robin`) stays whole in one task."""

from __future__ import annotations

import os

import numpy as np

from cachescope.errors import CachescopeError, UsageError
from cachescope.simulate.fleet_parts import merge_fleet_parts
from cachescope.simulate.options import read_refresh_rows, refresh_features
from cachescope.simulate.result import SimulationResult
from cachescope.trace.readers import input_reports

# The routes whose pods are independent: a lookup's pod does not depend on the requests before it.
SPLIT_ROUTES = ("entity", "key-pattern", "client")


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
        "input_reports": input_reports(source),
        "unmatched_shards": getattr(source, "unmatched_shards", 0),
        "first_ts": first_ts,
    }


class _Combined:
    """The tasks' outputs, answering as one Simulation does: the runs and fleets in the serial run's order
    (each task says which it ran, a fleet split by pods in several tasks), the bound last."""

    def __init__(self, parts: list[dict], subsets: list[tuple]):
        self.parts = parts
        self.unique_reads = parts[0]["unique_reads"]
        self._runs = sorted((i, p, at) for p, (runs, _, _) in enumerate(subsets) for at, i in enumerate(runs))
        self._fleets: dict[int, list] = {}
        for p, (_, fleets, _) in enumerate(subsets):
            for at, (i, _, _) in enumerate(fleets):
                self._fleets.setdefault(i, []).append((p, at))

    def results(self) -> list:
        return [self.parts[p]["results"][at] for _, p, at in self._runs] + [self.parts[0]["results"][-1]]

    def fleets(self) -> list:
        out = []
        for i in sorted(self._fleets):
            pieces = [self.parts[p]["fleets"][at] for p, at in self._fleets[i]]
            out.append(pieces[0] if len(pieces) == 1 and "part" not in pieces[0] else merge_fleet_parts(pieces))
        return out

    def curves(self) -> list:
        return [c for p in self.parts for c in p["curves"]]

    def timeline(self):
        ends, ts, _ = self.parts[0]["timeline"]
        hits = [p["timeline"][2] for p in self.parts]
        runs = [hits[p][at] for _, p, at in self._runs]
        return ends, ts, np.vstack(runs + [hits[0][-1]]) if runs else hits[0][-1:]


class _SourceOf:
    """What the result reads of a trace source, from the first task's copy."""

    def __init__(self, part: dict, path: str, granularity: str, key_pattern):
        self.info, self.path, self.granularity = part["info"], path, granularity
        self.hosts, self.capture_stats = part["hosts"], part["capture_stats"]
        self.unmatched_shards, self.key_pattern = part["unmatched_shards"], key_pattern


def sweep_on_dask(call: dict, source, plan, simulate) -> SimulationResult:
    """Runs the sweep `call` (simulate_trace's arguments, `plan` what they ask for) as tasks on the cluster
    `call` names, each task a call of `simulate` (simulate_trace); returns the serial run's result."""
    from cachescope.cluster import TaskFailed, cluster_threads, dask_client, default_workers, run_tasks

    runs, fleets, with_curves = plan.runs, plan.fleets, bool(plan.curve_policies)
    trace = call["trace"]
    if not isinstance(trace, (str, list, tuple)) and not hasattr(trace, "__fspath__"):
        raise UsageError("a sweep on Dask reads the trace in every task: give its path, not an open source")
    opened = getattr(source, "_opened", None)
    if opened is not None:
        opened.close()  # the tasks read the trace; this process only planned the sweep
    scheduler, workers = call["scheduler"], call["workers"]
    if scheduler is None and workers is None:
        workers = default_workers(len(_units(runs, fleets, with_curves, os.cpu_count() or 1)))
    base = {k: v for k, v in call.items() if k not in ("scheduler", "workers", "_subset", "capacities")}
    base.update(call["capacities"], progress=False)
    if getattr(source, "format", None) == "pcap":
        base["ports"] = source.ports  # found once here, not again by every task
    with dask_client(workers, scheduler) as client:
        threads = cluster_threads(client)
        subsets = _groups(_units(runs, fleets, with_curves, threads), threads)
        names = [_name(runs, fleets, s) for s in subsets]
        # Each task's share of the cluster's threads: on single-threaded workers, one (threads.py).
        share = max(1, threads // len(subsets))
        args = [(simulate, {**base, "_subset": s}, share) for s in subsets]
        parts = run_tasks(client, _task, args, names, progress=call["progress"], what="simulations")
    for p in parts:
        if isinstance(p, TaskFailed):
            if isinstance(p.error, CachescopeError):
                raise p.error
            raise CachescopeError(f"the simulation {p.name} failed on the cluster: {p.message}")
    combined = _Combined(parts, subsets)
    src = _SourceOf(parts[0], getattr(source, "path", str(trace)), call["granularity"], call["key_pattern"])
    schedule = call["refresh_schedule"]
    features = None if schedule is None else refresh_features(read_refresh_rows(schedule))
    result = SimulationResult.from_simulation(src, combined, call["window"], parts[0]["first_ts"], runs,
                                              plan.policy_params, [f[1].unit for f in fleets], features)
    result.capture_stats = {"input": src.path, **src.capture_stats} if src.capture_stats else {}
    result.input_reports = parts[0]["input_reports"]
    if with_curves:
        result.add_curves(combined.curves(), plan.curve_unit, plan.targets, call["entry_overhead"])
    return result


def _task(simulate, kwargs: dict, threads: int) -> dict:
    from cachescope.threads import limited_to

    with limited_to(threads):
        return simulate(**kwargs)


def _units(runs: list, fleets: list, with_curves: bool, threads: int) -> list[tuple]:
    """The pieces of work: each run, each fleet (a fleet of independent pods as `min(pods, threads)` parts,
    one after another so that they go to different tasks), the curves."""
    units = [("run", i) for i in range(len(runs))]
    for i, (_, _, pods, route) in enumerate(fleets):
        of = max(1, min(threads, pods or threads)) if route in SPLIT_ROUTES else 1
        units += [("fleet", (i, part, of)) for part in range(of)]
    return units + ([("curves", 0)] if with_curves else [])


def _groups(units: list[tuple], tasks: int) -> list[tuple]:
    """The simulations dealt into as many tasks as the cluster runs at once (at most one each): a task runs
    its share in one pass over the trace, as the serial run does all of them, so the trace is read once per
    task rather than once per simulation. (run ids, fleets as (id, part, of), with the curves) per task."""
    tasks = max(1, min(tasks, len(units)))
    groups = []
    for t in range(tasks):
        mine = units[t::tasks]
        groups.append(([i for kind, i in mine if kind == "run"], [f for kind, f in mine if kind == "fleet"],
                       any(kind == "curves" for kind, _ in mine)))
    return groups


def _name(runs, fleets, subset) -> str:
    run_ids, fleet_ids, curves = subset
    what = [f"{runs[i][0]} {runs[i][1].value}" for i in run_ids]
    what += [f"{fleets[i][0]} {fleets[i][1].value} x{fleets[i][2] or 'client'} {fleets[i][3]}"
             + (f" (pods {part} mod {of})" if of > 1 else "") for i, part, of in fleet_ids]
    return ", ".join(what + (["curves"] if curves else [])) or "trace"
