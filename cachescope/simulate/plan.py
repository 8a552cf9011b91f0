"""What a call of simulate_trace asks for, validated once: the runs, fleets, curves and answers to make, and the
options every one of them runs with. The engine's steps read this plan instead of carrying the call's 40
keyword arguments from one to the next."""

from __future__ import annotations

from dataclasses import dataclass, field

from cachescope.errors import UsageError
from cachescope.simulate import options as opt
from cachescope.simulate.capacity import Capacity, parse_capacities
from cachescope.simulate.curve import EXACT, curve_capacities as curve_capacities_of, parse_curve_policies, parse_sample
from cachescope.simulate.fleet import parse_pods, parse_routes
from cachescope.simulate.registry import BY_KEYWORD, POLICIES
from cachescope.simulate.sizing import parse_targets


@dataclass(frozen=True)
class Plan:
    runs: list
    """(policy, Capacity) of each single cache."""
    fleets: list
    """(policy, Capacity, pods, route) of each fleet (pods 0 under the client route)."""
    shapes: list
    """(pods, route) of each fleet the curves and answers are for."""
    curve_policies: list
    curve_caps: list
    curve_unit: str
    targets: list
    what_if: int
    """`one_pod_of`: the sharded what-if's pods (0: none)."""
    rolling: tuple | None
    policy_params: dict
    restarts: list
    allow: list | None
    schedule: list
    sample_rate: float | None
    fleets_at_answer: list | None = None
    """Fleets asked for with curves but no capacity: the shapes to run at their answers (None otherwise)."""
    sized_by_runs: list = field(default_factory=list)
    """Curve policies whose curve the options rule out (LRU's stack with a TTL or a refresh schedule): their
    answers come from full runs alone."""
    seeds: dict = field(default_factory=dict)
    """Per run and per fleet index, the seed of a confirming pass's draw (`_asks`)."""

    @property
    def seeded_runs(self) -> list:
        return [self.seeds.get(("run", i), {}) for i in range(len(self.runs))]

    @property
    def seeded_fleets(self) -> list:
        return [self.seeds.get(("fleet", i), {}) for i in range(len(self.fleets))]


def plan_of(call: dict, source) -> Plan:
    """The plan of `call` (simulate_trace's arguments) over `source`; tells the source what its routes need
    (clients, the key pattern). A usage error is one line."""
    c = call
    curve_policies = [] if c["curve"] is None else parse_curve_policies(c["curve"])
    curve_caps, curve_unit = curve_capacities_of(c["curve_capacities"]) if curve_policies else ([], "entries")
    targets = [] if c["target"] is None else parse_targets(c["target"])
    if targets and not curve_policies:
        raise UsageError("a target hit rate is answered from a curve: give --curve lru as well")
    # LRU's stack cannot model a TTL or a refresh schedule (they act on each capacity's own admission times):
    # with a target, full runs alone size it; without one, the core refuses the curve in one line.
    sized_by_runs = [p for p in curve_policies if targets and p in EXACT and c["sample"] is None
                     and c["sample_keys"] is None and (c["ttl"] is not None or c["refresh_schedule"] is not None)]
    curve_policies = [p for p in curve_policies if p not in sized_by_runs]
    asks = c["_asks"]
    runs = requested_runs(c["capacities"], required=not curve_policies and not sized_by_runs and asks is None)
    pods, route = c["pods"], c["route"]
    what_if = 0
    if c["one_pod_of"] is not None:
        if pods is not None or route != "random":
            raise UsageError("--one-pod-of N chooses the fleets itself: give it without --pods and --route")
        (what_if,) = parse_pods([c["one_pod_of"]])
        if what_if < 2:
            raise UsageError("--one-pod-of N: a fleet of at least 2 pods")
        pods, route = "1", "random"
    # One pod is one cache whatever the route: it runs once. The client route has a pod per client host,
    # however many `pods` says.
    routes = parse_routes(route)
    balanced = [r for r in routes if r != "client"]
    if pods is None and balanced and "client" in routes:
        raise UsageError(f"--route {','.join(balanced)} needs --pods (the client route alone does not)")
    fleets = [] if pods is None else [(p, cap, n, r) for p, cap in runs for n in parse_pods(pods)
                                      for r in balanced[: None if n > 1 else 1]]
    if "client" in routes:
        fleets += [(p, cap, 0, "client") for p, cap in runs]
    seeds = {}
    if asks is not None:  # a confirming pass (confirm.py): exactly these runs and fleets, nothing else
        singles, fleet_asks = [a for a in asks if a.route is None], [a for a in asks if a.route is not None]
        runs = [(a.policy, Capacity(a.capacity, a.unit)) for a in singles]
        fleets = [(a.policy, Capacity(a.capacity, a.unit), a.pods, a.route) for a in fleet_asks]
        seeds = {(kind, i): {"seed": float(a.seed)} for kind, group in (("run", singles), ("fleet", fleet_asks))
                 for i, a in enumerate(group) if a.seed is not None}
        curve_policies, targets, sized_by_runs = [], [], []
    shapes = fleet_shapes(fleets, c["_shapes"], what_if)
    if ("key-pattern" in routes) != (c["key_pattern"] is not None):
        raise UsageError("the key-pattern route and --key-pattern REGEX go together")
    source.key_pattern = c["key_pattern"]
    if "client" in routes or any(r == "client" for _, r in shapes) or any(f[3] == "client" for f in fleets):
        source.want_clients = True
    if what_if:
        fleets += [(p, cap, what_if, "entity") for p, cap in runs]
    at_answer = None
    if not fleets and not runs and (pods is not None or "client" in routes or what_if) and c["_subset"] is None \
            and asks is None:
        at_answer = [(n, r) for n in ([] if pods is None or what_if else parse_pods(pods)) for r in balanced
                     if n > 1] + ([(0, "client")] if "client" in routes else [])
    if fleets and asks is None:
        runs = []  # each capacity runs in its fleets, `--pods 1` as the single cache it is
    rolling = None
    if c["rolling_restart_every"] is not None:
        if c["restart_every"] is not None:
            raise UsageError("give --restart-every (every pod at once) or --rolling-restart-every, not both")
        if not fleets and at_answer is None:
            raise UsageError("a rolling restart rolls across pods: give --pods as well")
        rolling = (opt.parse_duration(c["rolling_restart_every"]), opt.parse_duration(c["rolling_over"]))
    policy_params = checked_params(c["params"] or {}, {name for name, _ in runs} | {f[0] for f in fleets}
                                   | set(curve_policies) | set(sized_by_runs))
    _check_numbers(c)
    restart_at = c["restart_at"]
    return Plan(
        runs=runs, fleets=fleets, shapes=shapes, curve_policies=curve_policies, curve_caps=curve_caps,
        curve_unit=curve_unit, targets=targets, what_if=what_if, rolling=rolling, policy_params=policy_params,
        restarts=[opt.parse_time(t) for t in ([restart_at] if isinstance(restart_at, str) else restart_at)],
        allow=None if c["allow_list"] is None else opt.read_allow_list(c["allow_list"]),
        schedule=[] if c["refresh_schedule"] is None else opt.read_refresh_rows(c["refresh_schedule"]),
        sample_rate=parse_sample(c["sample"]), fleets_at_answer=at_answer, sized_by_runs=sized_by_runs,
        seeds=seeds,
    )


def _check_numbers(c: dict) -> None:
    window = c["window"]
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window < 2**63:
        raise UsageError(f"window {window!r} must be a whole number of lookups, at least 1 (and below 2**63)")
    if c["writes"] not in opt.WRITE_MODES:
        raise UsageError(f"writes {c['writes']!r}: choose from {', '.join(opt.WRITE_MODES)}")
    overhead = c["entry_overhead"]
    if not isinstance(overhead, int) or not 0 <= overhead < 2**32:
        raise UsageError(f"entry overhead {overhead!r} must be a whole number of bytes")
    seeds = c["seeds"]
    if seeds is not None and (isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1):
        raise UsageError(f"seeds {seeds!r} must be a whole number of admission draws, at least 1")


def fleet_shapes(fleets, shapes, what_if) -> list:
    """The fleets a sizing answers for, as (pods, route): those asked for (`shapes`), else those simulated,
    less the sharded what-if of one pod's capture (an estimate on its own clock) and one-pod fleets (the
    single cache)."""
    if shapes is not None:
        return list(shapes)
    found = [(n, r) for _, _, n, r in fleets if not (what_if and r == "entity" and n == what_if)]
    return [s for s in dict.fromkeys(found) if s[0] != 1 or s[1] == "client"]


def requested_runs(capacities: dict, required: bool = True) -> list:
    """(registry name, capacity) for each capacity of each policy named by its keyword."""
    unknown = sorted(set(capacities) - set(BY_KEYWORD))
    if unknown:
        raise UsageError(f"unknown policy {unknown[0]!r}; registered: {', '.join(BY_KEYWORD)}")
    runs = [(BY_KEYWORD[kw].name, cap) for kw, value in capacities.items() if value is not None
            for cap in parse_capacities(value)]
    if not runs and required:
        raise UsageError(f"no policy to simulate: give at least one of {', '.join(s.flag for s in POLICIES.values())}")
    return runs


def checked_params(given: dict, simulated: set) -> dict:
    """{registry name: {parameter: value}} for each simulated policy that has parameters: the registry's
    defaults, overridden by `given` ({policy keyword: {parameter: value}})."""
    if not isinstance(given, dict):
        raise UsageError(f"params {given!r} must map policy keywords to {{parameter: value}}")
    for kw, values in given.items():
        spec = BY_KEYWORD.get(kw)
        if spec is None:
            raise UsageError(f"params for unknown policy {kw!r}; registered: {', '.join(BY_KEYWORD)}")
        if spec.name not in simulated:
            raise UsageError(f"parameters for {spec.name}, which is not simulated (give it a capacity: {spec.flag} N)")
        names = [p.name for p in spec.params]
        for name, value in dict(values).items():
            if name not in names:
                has = f"its parameters are {', '.join(names)}" if names else "it has none"
                raise UsageError(f"{kw} has no parameter {name!r}; {has}")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"{kw} parameter {name} = {value!r} is not a number")
    out = {}
    for spec in POLICIES.values():
        if spec.name in simulated and spec.params:
            override = dict(given.get(spec.keyword, {}))
            out[spec.name] = {p.name: float(override.get(p.name, p.default)) for p in spec.params}
    return out
