"""Runs the requested policies over a trace in one streaming pass."""

from __future__ import annotations

import gc
import math
import os
from contextlib import contextmanager

import numpy as np

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.progress import progress_bar
from cachescope.simulate import options as opt
from cachescope.simulate.estimated_bound import SERVED_SAMPLE_KEYS, bound_is_estimated, one_lookup_each
from cachescope.simulate.curve import DEFAULT_SALTS, EXACT, MINISIM_MIN_ENTRIES, MINISIM_RATE, minisim_capacities
from cachescope.simulate.fleet import parse_pods
from cachescope.simulate.freed_memory import giving_back_freed_memory
from cachescope.simulate.live_progress import LiveProgress
from cachescope.simulate.plan import Plan, plan_of
from cachescope.simulate.registry import INFINITE
from cachescope.simulate.result import SimulationResult
from cachescope.threads import task_threads
from cachescope.trace.live import LiveStop
from cachescope.trace.merge import MergedSource
from cachescope.trace.readers import TraceSource, input_reports, open_trace

DEFAULT_WINDOW = 10_000
# Most timeline points a simulation keeps (each costs 8 bytes per run in the core, and a row per run in the
# timeline frame): a window of 1 lookup over 10 M lookups would otherwise hold gigabytes.
MAX_WINDOWS = 1_000_000


def simulate_trace(
    trace,
    *,
    format: str | None = None,
    granularity: str = "field",
    window: int = DEFAULT_WINDOW,
    writes: str = "ignore",
    ttl=None,
    restart_every=None,
    restart_at=(),
    refresh_schedule=None,
    allow_list=None,
    entry_overhead: int = opt.DEFAULT_ENTRY_OVERHEAD,
    assume_value_size: int | None = None,
    ports=(6379,),
    progress: bool = False,
    params: dict | None = None,
    curve=None,
    curve_capacities="auto",
    target=None,
    sample=None,
    sample_keys: int | None = None,
    salts: int = DEFAULT_SALTS,
    pods=None,
    route="random",
    rolling_restart_every=None,
    rolling_over="20m",
    key_pattern=None,
    one_pod_of=None,
    scheduler: str | None = None,
    workers: int | None = None,
    duration=None,
    csv_spec=None,
    seeds: int | None = None,
    _subset=None,
    _by_field: bool = False,
    _asks=None,
    _shapes=None,
    **capacities,
) -> SimulationResult:
    """Simulates each registered policy named in `capacities` by its keyword (`lru="1e4,1e5"`, `lru=[10_000]`,
    `lru="64MiB"`, `two_q=1000`) over `trace` (a path, a list of paths merged in time order, or an open
    TraceSource), next to the infinite cache that bounds them.

    - `params`: policy parameters other than their registry defaults, by policy keyword
      (`params={"s3fifo": {"small_ratio": 0.2}}`).
    - `window`: lookups per timeline point.
    - `writes`: what writes and deletes in the trace do to cached entries: "ignore" (they go stale; stale
      reads are counted), "invalidate" (removed), "update" (writes refresh in place, deletes remove).
    - `ttl`: entries expire this long after admission (`"10m"`, or seconds).
    - `restart_every` (`"6h"`) and `restart_at` (unix seconds or ISO times): every cache restarts empty.
    - `refresh_schedule`: a CSV of `feature,time` (or (feature, time) pairs): at that time every cached value
      of the feature is evicted, as a batch upload does.
    - `allow_list`: a file or iterable of feature names / xxHash32 ids; other features are never cached.
    - byte capacities weigh an entry as value + key + field + `entry_overhead` bytes; traces without value
      sizes (text formats) need `assume_value_size`.
    - a packet capture is parsed on the fly, its Redis server on `ports`.
    - `progress` draws a bar on stderr for long traces.
    - `curve` (`"lru"`): the hit rate at every capacity of `curve_capacities` in one pass (`"auto"`: log-spaced
      2% apart up to the trace's unique keys; `"1e3,1e4"`; `"MIN:MAX:N"`); `target` (`"70%,80%"`): the
      smallest capacity on the curve that reaches each hit rate (`result.curves`, `result.sizing`). LRU's
      curve is exact; with `sample` (`"1%"`) or `sample_keys` (a fixed sample size) it is estimated by SHARDS,
      and every other policy's by miniature simulations (1% of the keys unless `sample` says otherwise), each
      over `salts` samples whose spread gives the error band.
    - `pods` (`8` or `"8,16,32"`) and `route` (`"random"`, `"round-robin"`, `"entity"`, or a comma list): every
      policy and capacity runs as a fleet of that many pods, the capacity per pod (fleet.py says what each
      route assumes); `rolling_restart_every` (`"6h"`) restarts the pods one after another over
      `rolling_over` (`"20m"`), as a rolling deployment does. The `key-pattern` route shards by the first
      group of `key_pattern` (a regular expression) in each key; `client` has one pod per client host.
    - `one_pod_of=N`: the trace is one pod's of a replicated fleet of N; each capacity runs as this pod alone
      (the replicated fleet's estimate) and as the sharded what-if over N pods (fleet.py says how).
    - `scheduler` (`"tcp://HOST:8786"`) or `workers=N` (a local cluster): the sweep's simulations (single
      caches, fleets, curves) run as Dask tasks that each stream the trace (sweep.py); the results are those
      of the serial run. The trace must be a path (or dataset URL) the workers can read.
    - `trace` may be a Parquet dataset (a folder, a glob, an fsspec URL; dataset.py), read as one trace.
    - a live input (`"-"` for standard input, a FIFO: `tcpdump -w - | ...`) is read until it ends, SIGINT,
      SIGTERM or `duration` (`"15m"`), and the answer covers everything read (`result.live_end` says what
      ended it); a progress line gives the hit rates so far.
    - `csv_spec`: the columns of a CSV object trace (libCacheSim's `-t csv` params, or `"twitter"`).
    - with `target`, every answer (each curve policy, as one cache and as each fleet of `pods` x `route`) is
      confirmed by full runs of the real policy (confirm.py): `result.sizing` has the smallest capacity per
      pod whose full run reaches the target, its memory and the byte budget that reaches it, and
      `result.best` the cheapest fleet per target. `seeds`: draws of W-TinyLFU's random admission run at each
      capacity (5 unless given); its answer is the smallest capacity whose lowest draw reaches the target.
    """
    call = dict(locals())  # a sweep's tasks and the confirming passes run this same call on a part of the work
    if scheduler is not None or workers:
        from cachescope.cluster import check_cluster_options

        check_cluster_options(workers, scheduler)
    source = _open(trace, format, granularity, ports, csv_spec)
    plan = plan_of(call, source)
    sources = getattr(source, "sources", [source])
    if plan.fleets_at_answer is not None:
        # Fleets asked for with curves but no capacity: each runs at the size its own answer gives.
        from cachescope.simulate.fleets_at_answer import fleets_at_the_answer

        if not source.rereadable:
            raise UsageError(f"{source.path}: fleets without a capacity per pod run at the size the curves "
                             "answer, which reads the trace twice, and a FIFO or a pipe can be read only once: "
                             "give the capacity (--lru 10000) or save the trace to a file first")
        return fleets_at_the_answer(call, _same_trace(call, sources), plan.targets, simulate_trace,
                                    plan.fleets_at_answer)
    if _subset is None and (scheduler is not None or workers):
        from cachescope.simulate.sweep import sweep_on_dask

        result = sweep_on_dask(call, source, plan, simulate_trace)
    else:
        sim, first_ts, live_end = _run(call, plan, source)
        if _subset is not None:
            from cachescope.simulate.sweep import task_outputs

            return task_outputs(source, sim, first_ts, bool(plan.curve_policies))
        result = _result(source, sim, plan, window, first_ts)
        result.live_end = live_end
        if plan.curve_policies:
            result.add_curves(sim.curves(), plan.curve_unit, plan.targets, entry_overhead)
    result.request = _request(call, plan, sources)
    result.same_trace = _same_trace(call, sources)
    if plan.targets:
        _confirm(result, call, plan, sources)
    return result


def _run(call: dict, plan: Plan, source):
    """Builds the simulation of `plan` and feeds it the whole trace: (simulation, the trace's first time, what
    ended a live input early)."""
    sim = _simulation(call, plan, source)
    needs_sizes = any(c.unit == "bytes" for _, c in plan.runs) or any(f[1].unit == "bytes" for f in plan.fleets) \
        or plan.curve_unit == "bytes" or (call["_asks"] is not None and call["assume_value_size"] is not None)
    window, progress = call["window"], call["progress"]
    first_ts = None
    live = _live_stop(source, call["duration"])
    with live, _progress_bar(source, progress and not live.active) as bar, _no_gc_pauses():
        if _reads_a_sample(source, sim, live.active):
            # Only the sampled lookups leave the core (TraceSource.feed_sampled): the same simulation.
            for _ in _saying_how_far(source.feed_sampled(sim), source, sim):
                _check_windows(sim, source, window)
                bar.update(source.bytes_read - bar.n)
            return sim, sim.first_ts, live.reason
        so_far = LiveProgress(source, sim, enabled=progress and live.active)
        for batch in giving_back_freed_memory(_saying_how_far(source.batches(), source, sim)):
            if needs_sizes and "value_sizes" not in batch:
                batch["value_sizes"] = _assumed_sizes(source, batch, call["assume_value_size"])
            if first_ts is None and "ts_ns" in batch:
                first_ts = int(batch["ts_ns"][0])
            try:
                sim.feed(**batch)
            except ValueError as e:
                raise TraceFormatError(f"{source.path}: {e}") from None
            _check_windows(sim, source, window)
            bar.update(source.bytes_read - bar.n)
            so_far.update()
        so_far.close()
    return sim, first_ts, live.reason


def _reads_a_sample(source, sim, live: bool) -> bool:
    """Whether the core can read this trace for `sim` keeping only the sampled lookups: an oracleGeneral file
    (not a live input, whose small batches feed a progress line) and a simulation of SHARDS curves beside the
    estimated bound alone (`sim.sampled_only`)."""
    return isinstance(source, TraceSource) and source.format == "oracleGeneral" and not live and sim.sampled_only


def _check_windows(sim, source, window: int) -> None:
    if sim.lookups > window * MAX_WINDOWS:
        raise UsageError(f"{source.path}: --window {window:,} makes more than {MAX_WINDOWS:,} timeline "
                         f"points over this trace ({sim.lookups:,} lookups read so far): give a larger "
                         "--window")


def _simulation(call: dict, plan: Plan, source):
    """The core's simulation of `plan`: its single runs (and the infinite bound), fleets and curves; a sweep
    task's share of them (`_subset`)."""
    runs, fleets, curve_policies = plan.runs, plan.fleets, plan.curve_policies
    run_seeds, fleet_seeds = plan.seeded_runs, plan.seeded_fleets
    fleet_parts = [None] * len(fleets)
    if call["_subset"] is not None:
        # The fleets as (index, part, of): a fleet of one part whole, else its pods `p % of == part` only.
        run_ids, fleet_ids, with_curves = call["_subset"]
        runs, run_seeds = [runs[i] for i in run_ids], [run_seeds[i] for i in run_ids]
        fleets, fleet_seeds = [fleets[i] for i, _, _ in fleet_ids], [fleet_seeds[i] for i, _, _ in fleet_ids]
        fleet_parts = [None if of == 1 else (part, of) for _, part, of in fleet_ids]
        curve_policies = curve_policies if with_curves else []
    future = None
    if any(p in _native.NEEDS_FUTURE for p, _ in runs):
        if not source.rereadable:
            raise UsageError(f"{source.path}: {', '.join(p for p, _ in runs if p in _native.NEEDS_FUTURE)} reads "
                             "the trace twice (first for the future), and a FIFO or a pipe can be read only once: "
                             "save the trace to a file first")
        future = _next_accesses(_open(call["trace"], call["format"], call["granularity"], call["ports"],
                                      call["csv_spec"]), plan.allow, call["progress"])
    overhead, params = call["entry_overhead"], plan.policy_params
    # The infinite bound is a run that keeps every key, unless a sketch can stand in for it (estimated_bound.py).
    estimate_bound = bound_is_estimated(call, plan, getattr(source, "sources", [source]))
    native_runs = [(p, c.value, overhead if c.unit == "bytes" else None, {**params.get(p, {}), **seed})
                   for (p, c), seed in zip(runs, run_seeds)]
    try:
        sim = _native.Simulation(
            native_runs + ([] if estimate_bound else [(INFINITE.name, 1, None)]),
            call["window"],
            writes=call["writes"],
            ttl_ns=None if call["ttl"] is None else opt.parse_duration(call["ttl"]),
            allow=plan.allow,
            refreshes=[(t, opt.feature_hash(f)) for t, f in plan.schedule],
            restarts_at=plan.restarts,
            restart_every_ns=None if call["restart_every"] is None else _restart_interval(call["restart_every"]),
            future=future,
        )
        if estimate_bound:
            sim.estimate_unique_reads()
            if not one_lookup_each(getattr(source, "sources", [source])):
                sim.estimate_served_commands(SERVED_SAMPLE_KEYS)
        if call["_by_field"]:
            sim.count_by_field()  # the report's hit rate per feature (report/chosen_run.py)
        for (policy, cap, n, r), part, seed in zip(fleets, fleet_parts, fleet_seeds):
            sim.add_fleet(policy, cap.value, n, r, overhead if cap.unit == "bytes" else None,
                          {**params.get(policy, {}), **seed}, 0, plan.rolling,
                          n if plan.what_if and r == "entity" else 1, part)
        _add_curves(sim, curve_policies, call["curve_capacities"], plan.curve_caps, plan.curve_unit,
                    overhead if plan.curve_unit == "bytes" else None, plan.sample_rate, call["sample_keys"],
                    call["salts"], params, plan.shapes)
        if call["_asks"] is not None:
            sim.track_resident_bytes(overhead)  # a confirming pass: each answer's memory
        threads = task_threads()
        if threads is not None:
            sim.limit_threads(threads)  # a Dask task: its worker's threads, no more (threads.py)
    except ValueError as e:  # a configuration the core refuses (a parameter out of range, a degenerate cache)
        raise UsageError(str(e)) from None
    return sim


def _result(source, sim, plan: Plan, window: int, first_ts) -> SimulationResult:
    result = SimulationResult.from_simulation(source, sim, window, first_ts, plan.runs, plan.policy_params,
                                              [f[1].unit for f in plan.fleets], opt.refresh_features(plan.schedule))
    # A capture or text trace read here: what reading it found, for the same report parse.py gives; a merge's
    # inputs each their own.
    result.capture_stats = {"input": source.path, **source.capture_stats} if source.capture_stats else {}
    result.input_reports = input_reports(source)
    return result


def _confirm(result: SimulationResult, call: dict, plan: Plan, sources) -> None:
    """The sizing answers confirmed by full runs (answers.py), each pass a call of simulate_trace on the same
    trace with exactly the runs it asks for."""
    from cachescope.simulate.answers import confirm_answers

    def run_pass(asks):
        return simulate_trace(**result.same_trace, window=call["window"], progress=call["progress"], _asks=asks)

    pods = call["pods"]
    confirm_answers(result, plan.shapes, plan.targets, call["entry_overhead"], all(s.rereadable for s in sources),
                    run_pass, seeds=call["seeds"], value_sizes=_has_value_sizes(sources, call["assume_value_size"]),
                    single_asked=pods is None or 1 in parse_pods(pods), by_runs=plan.sized_by_runs)


def _has_value_sizes(sources, assume_value_size) -> bool:
    """Whether the memory of an entry is known: the trace has value sizes (a capture, a Parquet trace) or
    one is assumed."""
    return assume_value_size is not None or all(s.format in ("pcap", "parquet", "oracleGeneral", "csv", "twitter")
                                                for s in sources)


def _request(call: dict, plan: Plan, sources) -> dict:
    """What was asked, as the report states its assumptions (and where to read the trace again for its
    anatomy); the same for a sweep on Dask."""
    c = call
    return {
        "inputs": [(s.path, s.format, s.ports, s.rereadable) for s in sources],
        "writes": c["writes"], "entry_overhead": c["entry_overhead"], "allow_list": c["allow_list"] is not None,
        "allowed_features": 0 if plan.allow is None else len(plan.allow), "ttl": c["ttl"],
        "restart_every": c["restart_every"], "restart_at": list(plan.restarts), "rolling": c["rolling_restart_every"],
        "rolling_over": c["rolling_over"], "targets": plan.targets, "curve": plan.curve_policies,
        "sample": c["sample"], "sample_keys": c["sample_keys"], "salts": c["salts"], "pods": c["pods"],
        "route": c["route"], "one_pod_of": c["one_pod_of"], "assume_value_size": c["assume_value_size"],
        "refresh_schedule": c["refresh_schedule"] is not None,
    }


# What a single run needs to see the same lookups as the call's (trace and options, no caches): the report
# simulates the cache it chose once more with them (report/chosen_run.py).
_SAME_TRACE = ("format", "granularity", "writes", "ttl", "restart_every", "restart_at", "refresh_schedule",
               "allow_list", "entry_overhead", "assume_value_size", "ports", "params", "csv_spec")


def _same_trace(call: dict, sources) -> dict:
    """simulate_trace's arguments that read the trace of `call` again with its options; an open source is
    replaced by the paths it read."""
    out = {k: call[k] for k in _SAME_TRACE}
    if hasattr(call["trace"], "batches"):
        out["trace"] = [s.path for s in sources] if len(sources) > 1 else sources[0].path
        out["format"] = call["format"] or (sources[0].format if len(sources) == 1 else None)
    else:
        out["trace"] = call["trace"]
    if len(sources) == 1 and sources[0].format == "pcap":
        out["ports"] = sources[0].ports  # found once, not searched for again
    return out


@contextmanager
def _no_gc_pauses():
    """The read-and-feed loop makes no reference cycles, yet its batches' allocations kept triggering
    collections that walked every object the imports made (5% of a run): the collector waits until it ends."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _open(trace, format, granularity, ports, csv_spec=None):
    """A trace source: an open one as it is, a path, or several paths merged in time order (the captures
    of several service hosts read as one fleet's stream)."""
    from cachescope.trace.dataset_spec import is_dataset, is_part_file

    if hasattr(trace, "batches"):  # a source already open (TraceSource, MergedSource, DatasetSource)
        return trace
    if isinstance(trace, (list, tuple)):
        if len(trace) == 1:
            return _open(trace[0], format, granularity, ports, csv_spec)
        if format in (None, "parquet") and all(is_part_file(t) for t in trace):
            # A dataset's parts as the shell expanded its glob: read as the dataset, not as separate traces.
            from cachescope.trace.dataset import DatasetSource

            return DatasetSource(None, granularity, files=[str(t) for t in trace])
        return MergedSource([open_trace(t, format, granularity, ports, csv_spec=csv_spec) for t in trace])
    if format in (None, "parquet") and is_dataset(trace):
        from cachescope.trace.dataset import DatasetSource

        return DatasetSource(os.fspath(trace), granularity)
    return open_trace(trace, format, granularity, ports, csv_spec=csv_spec)


def _saying_how_far(batches, source, sim):
    """The batches; a compressed input that breaks off (a file copied while tcpdump still wrote it) says how
    much of it was simulated before, so that the part read is not lost in silence."""
    try:
        yield from batches
    except TraceFormatError as e:
        if getattr(source, "compression", None) is None:
            raise
        raise TraceFormatError(f"{e}; {sim.lookups:,} lookups were read before it") from None


def _live_stop(source, duration):
    """What ends a live input (signals, `duration`); a context that does nothing for a file."""
    if not getattr(source, "live", False):
        if duration is not None:
            raise UsageError(f"{source.path}: --duration is for a live input (standard input, a FIFO); a file "
                             "ends by itself")
        return LiveStop(None, active=False)
    return LiveStop(None if duration is None else opt.parse_duration(duration) / 1e9, flag=source.stop)


def _add_curves(sim, policies, spec, caps, unit, overhead, rate, sample_keys, salts, params, shapes=()):
    """The exact LRU curve, or SHARDS with `rate` / `sample_keys`, and miniature simulations of the other
    policies, each sampled curve once per salt; each fleet `shapes` (pods, route) its own curves too."""
    if isinstance(salts, bool) or not isinstance(salts, int) or not 1 <= salts <= 64:
        raise UsageError(f"salts {salts!r} must be a whole number of samples from 1 to 64")
    if sample_keys is not None and (isinstance(sample_keys, bool) or not isinstance(sample_keys, int)
                                    or sample_keys < 1):
        raise UsageError(f"sample size {sample_keys!r} must be a whole number of keys, at least 1")
    auto = spec is None or (isinstance(spec, str) and spec.strip().lower() == "auto")
    for policy in policies:
        if policy in EXACT and rate is None and sample_keys is None:
            sim.add_lru_curve(caps, overhead)
            for pods, route in shapes:
                sim.add_fleet_lru_curve(caps, pods, route, overhead)
            continue
        # Samples are disjoint ranges of the keys: `salts` of them must fit in all the keys.
        if rate is not None and rate * salts > 1:
            raise UsageError(f"{salts} samples of {rate:.3g} of the keys each do not fit in all the keys: "
                             f"lower --sample or --salts")
        if policy in EXACT:
            # A sample of R resolves depths of about 1 / R keys: an `auto` curve starts where the sample holds
            # a hundred of them, as miniature simulations do.
            low = math.ceil(MINISIM_MIN_ENTRIES / rate) * (1024 if unit == "bytes" else 1) if rate and auto else 0
            shards_caps = [c for c in caps if c >= low]
            sim.add_shards(shards_caps, rate or 1.0 / salts, salts, sample_keys, overhead)
            for pods, route in shapes:
                sim.add_fleet_shards(shards_caps, rate or 1.0 / salts, salts, sample_keys, overhead, pods, route)
        else:
            mini_rate = rate or MINISIM_RATE
            mini_caps = minisim_capacities(mini_rate, unit) if auto else caps
            sim.add_minisim(policy, mini_caps, mini_rate, salts, params.get(policy, {}), overhead)
            for pods, route in shapes:
                sim.add_fleet_minisim(policy, mini_caps, mini_rate, salts, pods, route,
                                      params.get(policy, {}), overhead)


def _restart_interval(restart_every) -> int:
    ns = opt.parse_duration(restart_every)
    if ns < opt.MIN_RESTART_EVERY_NS:
        raise UsageError(f"restart interval {restart_every!r} is shorter than a second: every cache would restart "
                         "more often than it could fill (give 1s or more)")
    return ns


def _next_accesses(source: TraceSource, allow, progress: bool) -> np.ndarray:
    """A first pass for policies that need the future (Belady): the next use of every lookup that reaches the
    cache, in the order the runs will see them. Memory: 16 bytes a lookup."""
    keys = []
    with _progress_bar(source, progress, "reading the future of") as bar:
        for batch in source.batches():
            reads = batch["ops"] == 0 if "ops" in batch else np.ones(len(batch["keys"]), dtype=bool)
            if allow is not None:
                # No `fields` column (a keys trace): no lookup has a field, so none is on the list.
                fields = batch.get("fields", np.zeros(len(batch["keys"]), dtype=np.uint64))
                reads &= np.isin(fields, np.array(allow, dtype=np.uint64))
            keys.append(batch["keys"][reads])
            bar.update(source.bytes_read - bar.n)
    return _native.next_access(np.concatenate(keys) if keys else np.zeros(0, np.uint64))


def _assumed_sizes(source, batch, assume_value_size):
    if assume_value_size is None:
        raise UsageError(
            f"{source.path}: byte capacities need value sizes, and this {source.format} trace has none "
            "(use a Parquet trace parsed from a capture, or --assume-value-size BYTES)"
        )
    if not isinstance(assume_value_size, int) or not 0 <= assume_value_size < 2**32 - 1:
        raise UsageError(f"assumed value size {assume_value_size!r} must be a whole number of bytes")
    return np.full(len(batch["keys"]), assume_value_size, dtype=np.uint32)


def _progress_bar(source: TraceSource, enabled: bool, what: str = "simulating"):
    return progress_bar(source.size_bytes, f"{what} {source.path}", enabled)
