"""Fleets, side by side: 64 pods at 4 capacities (per pod) against the 4 single-cache runs at the same
capacities, over the same 10 M-lookup Zipf stream (common.py's, cached under bench/data/). The work of a fleet
is its lookups, not its pods: the target is a fleet costing no more than the single runs, memory the sum of
its caches. Single runs as large as the whole fleet (pods x capacity) are measured too: a fleet holds that many
entries: a fleet that took its lookups one at a time, pod after pod, would miss the processor's caches at
almost every lookup. It shares out chunks of the stream instead (2 M events), each pod taking its share in one
run, and fleets that route alike (here the 4 capacities of a route) share the routing and the chunk's copies:
their memory is the caches' plus the chunk's, about 25 bytes an event.

Each contender runs in a fresh interpreter and feeds the uint64 keys, in memory, to the core
(`_native.Simulation`): the single runs as one simulation of 4 runs, the fleets as one of 4 fleets (random and
entity routes measured apart). Best of --repeat; peak memory is the growth of VmHWM during the feed.
"""
import argparse, json, subprocess, sys, time

import numpy as np

from common import add_common_options, machine, machine_line, proc_status, rel, reset_hwm, stream_files

CAPACITIES = (1_000, 10_000, 100_000, 1_000_000)


def worker(a):
    from cachescope import _native

    keys = np.load(a.stream)
    # Commands of 4 lookups each, as a feature store's HMGETs: what replicated routes route.
    reqs = np.arange(len(keys), dtype=np.uint64) // 4
    single = {"single": 1, "single-total": a.pods}.get(a.worker)
    sim = _native.Simulation([] if single is None else [("lru", c * single) for c in CAPACITIES], 10_000)
    if single is None:
        for c in CAPACITIES:
            sim.add_fleet("lru", c, a.pods, a.worker)
    reset_hwm()
    rss = proc_status()["VmRSS"]
    t = time.perf_counter()
    sim.feed(keys, reqs=reqs)
    seconds = time.perf_counter() - t
    grown = proc_status()["VmHWM"] - rss
    hits = [r["hits"] for r in sim.results()] if single is not None else \
        [sum(p["hits"] for p in f["per_pod"]) for f in sim.fleets()]
    print(json.dumps({"seconds": seconds, "peak_growth": grown, "hits": hits}))


def run(a, name):
    cmd = [sys.executable, __file__, "--worker", name, "--stream", str(a.stream), "--pods", str(a.pods),
           "--lookups", str(a.lookups), "--universe", str(a.universe), "--alpha", str(a.alpha), "--seed", str(a.seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.add_argument("--pods", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.stream, _ = stream_files(a, oracle=False)
    print(f"fleets: {a.lookups:,} lookups, Zipf({a.alpha:g}) over {a.universe:,} keys, commands of 4 lookups; "
          f"{rel(a.stream)}")
    print(machine_line(machine()))
    results = {}
    for name in ("single", "single-total", "random", "entity"):
        runs = [run(a, name) for _ in range(a.repeat)]
        results[name] = min(runs, key=lambda r: r["seconds"])
    single = results["single"]
    caps = ", ".join(f"{c:,}" for c in CAPACITIES)
    print(f"\nLRU at {caps} entries (per pod for the fleets), best of {a.repeat}")
    print(f"{'contender':<44} {'seconds':>8} {'vs single runs':>15} {'peak MiB':>9}  hit rates")
    for name, label in (("single", "4 single caches"), ("single-total", f"4 single caches of {a.pods} x the capacity"),
                        ("random", f"4 fleets of {a.pods} pods, random route"),
                        ("entity", f"4 fleets of {a.pods} pods, entity route")):
        r = results[name]
        rates = " ".join(f"{h / a.lookups:.3f}" for h in r["hits"])
        print(f"{label:<44} {r['seconds']:>8.2f} {r['seconds'] / single['seconds']:>14.2f}x "
              f"{r['peak_growth'] / 2**20:>9.0f}  {rates}")
    worst = max(results["random"]["seconds"], results["entity"]["seconds"])
    print(f"\nfleets / single runs at the same capacity: {worst / single['seconds']:.2f}x at most (target <= 1x: "
          f"{'PASS' if worst <= single['seconds'] else 'FAIL'}); / single runs holding as much as the whole fleet: "
          f"{worst / results['single-total']['seconds']:.2f}x.")


if __name__ == "__main__":
    main()
