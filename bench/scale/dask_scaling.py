"""Dask measured on what this machine can show: the same work on 1 and on 2 single-threaded workers of a
LocalCluster (real scheduler, real worker processes), with the serial run in this process as the reference,
in one run, outputs checked equal.

- (a) a sweep of 8 independent tasks, each one LRU simulation (a capacity of its own) over the whole trace:
  speed-up of 2 workers over 1 (target >= 1.7x) and parallel efficiency; and the same 8 capacities as the
  product runs them (`simulate_trace(..., scheduler=ADDRESS)`: as many tasks as the cluster has threads).
- (b) a fleet of 64 pods routed by entity (`--pods 64 --route entity`), split by pods into a part per worker.
- (c) what each task reads (bytes through read calls, /proc/self/io `rchar`; the trace's size on disk) and
  holds (peak resident memory of the task, its VmHWM reset as it starts; each worker's peak).
- (d) the scheduler's cost per task: many tiny tasks (each returns its argument) on the same cluster.

The trace is a Parquet file of feature-store lookups (HMGET-like: Zipf-distributed entities, 16 fields each)
written here once (kept with --keep). The clusters are started before the clock starts and warmed (each
worker imports cachescope once): what is timed is the work. Each timed figure is the best of --repeat runs,
interleaved, so that load from elsewhere on a shared machine falls on every contender alike. Where the
machine is shared, the 8 tasks are also given in CPU seconds (each worker's busiest share: what it would
take on a core of its own), since the wall times then show the other work more than the workers.

    python bench/scale/dask_scaling.py                  # 1e7 lookups, best of 2: some 20 min on 2 idle cores
    python bench/scale/dask_scaling.py --lookups 3e6 --repeat 1   # a quick look: under 5 min idle
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / "bench" / "results" / "dask_scaling.json"
CAPACITIES = [10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000]
FIELDS = 16


# ---- what runs in a worker (self-contained: pickled to the worker processes) ----

def _rchar() -> int:
    with open("/proc/self/io") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("rchar:"))


def _hwm_bytes() -> int:
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def one_simulation(path: str, capacity: int) -> dict:
    """One LRU simulation over the whole trace, as one task: its hits, and what it took (wall and CPU
    seconds, bytes read, peak memory)."""
    from cachescope.simulate.engine import simulate_trace

    reset = _reset_hwm()
    rchar, cpu, wall = _rchar(), time.process_time(), time.perf_counter()
    result = simulate_trace(path, lru=capacity)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    row = result.summary_records()[0]
    return {"capacity": capacity, "lookups": int(row["lookups"]), "hits": int(row["hits"]), "wall_s": wall,
            "cpu_s": cpu, "worker": os.getpid(), "read_bytes": _rchar() - rchar, "peak_bytes": _hwm_bytes() if reset else None}


def tiny(i: int) -> int:
    return i


def _warm() -> int:
    import cachescope.simulate.engine  # noqa: F401 (the imports, once per worker, before any clock)
    return os.getpid()


def _worker_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ---- the trace ----

def write_trace(path: Path, lookups: int, entities: int, seed: int = 29) -> None:
    """Lookups of `entities` Zipf-distributed entities, a field of 16 each, written in row groups as
    parse.py writes them (key and field dictionary-encoded)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = pa.array([f"st_{e}" for e in range(entities)])
    fields = pa.array([str(1_000_000_007 * f % 4_294_967_291) for f in range(FIELDS)])
    ops = pa.array(["read"])
    step = 1 << 20
    tmp = path.with_name("." + path.name)
    with pq.ParquetWriter(tmp, pa.schema([("op", pa.dictionary(pa.int32(), pa.string())),
                                          ("key", pa.dictionary(pa.int32(), pa.string())),
                                          ("field", pa.dictionary(pa.int32(), pa.string())),
                                          ("req", pa.uint64())])) as w:
        for start in range(0, lookups, step):
            n = min(step, lookups - start)
            ent = ((rng.zipf(1.1, n) - 1) % entities).astype(np.int32)
            w.write_table(pa.table({
                "op": pa.DictionaryArray.from_arrays(np.zeros(n, np.int32), ops),
                "key": pa.DictionaryArray.from_arrays(ent, names),
                "field": pa.DictionaryArray.from_arrays(rng.integers(0, FIELDS, n, dtype=np.int32), fields),
                "req": pa.array(np.arange(start, start + n, dtype=np.uint64) // 4),
            }), row_group_size=step)
    tmp.rename(path)


# ---- measuring ----

def best(runs: list[float]) -> float:
    return min(runs)


def comparable(result) -> list:
    """What must be equal between the serial run and the cluster's: every row of the summary (hits per
    run, per fleet and per pod), no timing in it."""
    return json.loads(json.dumps(result.to_json()["results"], sort_keys=True, default=str))


def run_serial(path: str, fleet_capacity: int, pods: int) -> dict:
    from cachescope.simulate.engine import simulate_trace

    caps = ",".join(map(str, CAPACITIES))
    t = time.perf_counter()
    sweep = simulate_trace(path, lru=caps)
    sweep_s = time.perf_counter() - t
    t = time.perf_counter()
    fleet = simulate_trace(path, lru=fleet_capacity, pods=pods, route="entity")
    fleet_s = time.perf_counter() - t
    hits = {int(r["capacity"]): int(r["hits"]) for r in sweep.summary_records()}
    return {"sweep_s": sweep_s, "fleet_s": fleet_s, "hits": hits, "sweep": comparable(sweep),
            "fleet": comparable(fleet), "lookups": int(sweep.trace.lookups)}


def run_on_cluster(workers: int, path: str, fleet_capacity: int, pods: int, tiny_tasks: int) -> dict:
    """Every figure of one cluster of `workers` single-threaded workers, started and warmed untimed."""
    from distributed import Client, LocalCluster

    from cachescope.cluster import _quiet
    from cachescope.simulate.engine import simulate_trace

    _quiet()
    out: dict = {"workers": workers}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(workers)
        client.run(_warm)
        address = cluster.scheduler_address
        # (a) 8 independent tasks, one simulation each.
        t = time.perf_counter()
        tasks = client.gather([client.submit(one_simulation, path, c, pure=False) for c in CAPACITIES])
        out["tasks_s"] = time.perf_counter() - t
        out["tasks"] = tasks
        # The same capacities as the product deals them (a task per worker thread, each a pass over the trace).
        t = time.perf_counter()
        sweep = simulate_trace(path, lru=",".join(map(str, CAPACITIES)), scheduler=address)
        out["sweep_s"] = time.perf_counter() - t
        out["sweep"] = comparable(sweep)
        # (b) the fleet, split by pods into a part per worker.
        t = time.perf_counter()
        fleet = simulate_trace(path, lru=fleet_capacity, pods=pods, route="entity", scheduler=address)
        out["fleet_s"] = time.perf_counter() - t
        out["fleet"] = comparable(fleet)
        # (d) the scheduler's cost per task.
        t = time.perf_counter()
        client.gather([client.submit(tiny, i, pure=False) for i in range(tiny_tasks)])
        out["tiny_s_per_task"] = (time.perf_counter() - t) / tiny_tasks
        out["worker_peak_bytes"] = sorted(client.run(_worker_peak).values())
    return out


def best_runs(runs: list[dict]) -> dict:
    """Of several runs of one cluster, each figure's best (the outputs were checked equal in each)."""
    first = dict(runs[0])
    for key in ("tasks_s", "sweep_s", "fleet_s", "tiny_s_per_task"):
        first[key] = min(r[key] for r in runs)
    first["tasks"] = min((r["tasks"] for r in runs), key=cpu_makespan)
    first["worker_peak_bytes"] = max(max(r["worker_peak_bytes"]) for r in runs)
    return first


def cpu_makespan(tasks: list[dict]) -> float:
    """The time the tasks would take if each worker had a core of its own: the most CPU seconds any worker
    spent on its tasks. On a machine shared with other work (where Linux gives each session its share of the
    cores, not each process) wall times cannot show what a second worker brings; the CPU seconds can."""
    by_worker: dict = {}
    for t in tasks:
        by_worker[t["worker"]] = by_worker.get(t["worker"], 0.0) + t["cpu_s"]
    return max(by_worker.values())


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lookups", type=float, default=1e7, help="lookups in the trace (default 1e7)")
    p.add_argument("--entities", type=int, default=400_000, help="distinct entities (x16 fields: the keys)")
    p.add_argument("--pods", type=int, default=64)
    p.add_argument("--fleet-capacity", type=int, default=20_000, help="LRU entries per pod of the fleet")
    p.add_argument("--tiny", type=int, default=2000, help="tiny tasks to time the scheduler's cost per task")
    p.add_argument("--repeat", type=int, default=2, help="runs of each contender, interleaved; best kept")
    p.add_argument("--keep", metavar="DIR", help="write the trace in DIR and keep it (default: a temporary folder)")
    a = p.parse_args(argv)
    lookups = int(a.lookups)
    # The workers import cachescope from where this script does (a checkout), and this module by its name.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(HERE), os.environ.get("PYTHONPATH")]))
    sys.path[:0] = [str(ROOT)]
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    work = Path(a.keep or tempfile.mkdtemp(prefix="dask_scaling."))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / f"lookups-{lookups}-{a.entities}.parquet"
    if not trace.exists():
        t = time.perf_counter()
        write_trace(trace, lookups, a.entities)
        print(f"wrote {trace} in {time.perf_counter() - t:.1f} s")
    size = trace.stat().st_size
    before = load()
    print(f"trace: {lookups:,} lookups, {size / 1e6:,.1f} MB of Parquet ({size / lookups:.2f} bytes/lookup); {before}")

    t0 = time.perf_counter()
    serial, clusters = [], {1: [], 2: []}
    for _ in range(a.repeat):  # interleaved: serial, 1 worker, 2 workers, again
        serial.append(run_serial(str(trace), a.fleet_capacity, a.pods))
        for w in clusters:
            clusters[w].append(run_on_cluster(w, str(trace), a.fleet_capacity, a.pods, a.tiny))
    elapsed = time.perf_counter() - t0

    ref = serial[0]
    agree = all(s["sweep"] == ref["sweep"] and s["fleet"] == ref["fleet"] for s in serial)
    for runs in clusters.values():
        for r in runs:
            agree &= r["sweep"] == ref["sweep"] and r["fleet"] == ref["fleet"]
            agree &= {t["capacity"]: t["hits"] for t in r["tasks"]} == ref["hits"]
    s = {"sweep_s": best([r["sweep_s"] for r in serial]), "fleet_s": best([r["fleet_s"] for r in serial])}
    one, two = best_runs(clusters[1]), best_runs(clusters[2])
    task_walls = [t["wall_s"] for t in one["tasks"]]
    per_task = {
        "lookups": ref["lookups"],
        "wall_s_median": sorted(task_walls)[len(task_walls) // 2],
        "lookups_per_s": ref["lookups"] / sorted(task_walls)[len(task_walls) // 2],
        "cpu_over_wall": sum(t["cpu_s"] for t in one["tasks"]) / sum(task_walls),
        # A task's throughput on a core of its own (an idle worker's wall time), whatever else ran here.
        "lookups_per_cpu_s": ref["lookups"] * len(task_walls) / sum(t["cpu_s"] for t in one["tasks"]),
        "read_bytes": max(t["read_bytes"] for t in one["tasks"]),
        "trace_bytes": size,
        "peak_bytes": max((t["peak_bytes"] or 0) for t in one["tasks"]) or None,
    }
    rows = [
        ("(a) 8 tasks, an LRU each", None, one["tasks_s"], two["tasks_s"]),
        ("(a') the same 8 as the product deals them", s["sweep_s"], one["sweep_s"], two["sweep_s"]),
        (f"(b) fleet of {a.pods} pods by entity, split by pods", s["fleet_s"], one["fleet_s"], two["fleet_s"]),
    ]
    print(f"\n{'work':<46}{'serial s':>10}{'1 worker s':>12}{'2 workers s':>13}{'2 over 1':>10}{'efficiency':>12}")
    for name, ser, w1, w2 in rows:
        print(f"{name:<46}{'-' if ser is None else f'{ser:.2f}':>10}{w1:>12.2f}{w2:>13.2f}{w1 / w2:>9.2f}x"
              f"{w1 / w2 / 2:>11.0%}")
    speedup = one["tasks_s"] / two["tasks_s"]
    print(f"\n(a) target: 2 workers >= 1.7x 1 worker: {speedup:.2f}x, {'MET' if speedup >= 1.7 else 'NOT MET'}")
    cpu1, cpu2 = cpu_makespan(one["tasks"]), cpu_makespan(two["tasks"])
    print(f"(a) in CPU seconds (each worker on a core of its own): 1 worker {cpu1:.1f} s, 2 workers {cpu2:.1f} s "
          f"(the busiest; {sum(t['cpu_s'] for t in two['tasks']):.1f} s in all): {cpu1 / cpu2:.2f}x")
    print(f"(c) a task (one LRU over the whole trace, on a single-threaded worker): {per_task['wall_s_median']:.2f} s, "
          f"{per_task['lookups_per_s'] / 1e6:.2f} M lookups/s ({per_task['lookups_per_cpu_s'] / 1e6:.2f} M per CPU "
          f"second), {per_task['cpu_over_wall']:.2f} cores; reads "
          f"{per_task['read_bytes'] / 1e6:,.1f} MB (the trace: {size / 1e6:,.1f} MB); peak "
          + ("n/a" if per_task["peak_bytes"] is None else f"{per_task['peak_bytes'] / 2**20:,.0f} MiB")
          + f"; a worker's peak {max(one['worker_peak_bytes'], two['worker_peak_bytes']) / 2**20:,.0f} MiB")
    print(f"(d) the scheduler's cost per task ({a.tiny:,} tiny tasks): {one['tiny_s_per_task'] * 1e3:.2f} ms on 1 "
          f"worker, {two['tiny_s_per_task'] * 1e3:.2f} ms on 2")
    print(f"outputs (serial, 1 worker, 2 workers; every run): {'equal' if agree else 'DIFFER'}")
    after = load()
    print(f"measured in {elapsed:.0f} s, best of {a.repeat}; before: {before}; after: {after}")
    RESULTS.parent.mkdir(exist_ok=True)
    drop = ("sweep", "fleet", "tasks")
    RESULTS.write_text(json.dumps({
        "benchmark": "dask_scaling", "lookups": lookups, "trace_bytes": size, "capacities": CAPACITIES,
        "pods": a.pods, "fleet_capacity": a.fleet_capacity, "repeat": a.repeat, "seconds": elapsed,
        "load_before": before, "load_after": after, "serial": s,
        "one_worker": {k: v for k, v in one.items() if k not in drop},
        "two_workers": {k: v for k, v in two.items() if k not in drop},
        "tasks_one_worker": one["tasks"], "tasks_two_workers": two["tasks"], "per_task": per_task,
        "speedup_tasks": speedup, "speedup_tasks_cpu": cpu1 / cpu2,
        "speedup_sweep": one["sweep_s"] / two["sweep_s"], "speedup_fleet": one["fleet_s"] / two["fleet_s"],
        "outputs_equal": agree,
    }, indent=2) + "\n")
    print(f"results: {RESULTS.relative_to(ROOT)}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
