"""Fleet sizing, side by side in one run: the exact LRU curve of a fleet of 64 sharded pods against the single
cache's curve on the same stream (target: at most 3x), each in a fresh interpreter on the same Zipf keys in
memory (`_native.Simulation.feed`); then the whole sizing of `simulate_trace(curve="lru", target=...)` as one
cache and as that fleet, counting the confirming passes it adds (target: at most two) and timing them against
the curve pass alone.
"""
import argparse, json, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

from common import add_common_options, machine, machine_line, proc_status, rel, reset_hwm, stream_files

POINTS = 100


def capacities(universe: int) -> list[int]:
    return sorted({int(c) for c in np.geomspace(10, universe, POINTS).round()})


def worker(a):
    """One timed curve: the single cache's (`--worker single`) or the fleet's (`--worker fleet`)."""
    from cachescope import _native

    keys = np.load(a.stream)
    sim = _native.Simulation([], 10_000)
    if a.worker == "single":
        sim.add_lru_curve(capacities(a.universe))
    else:
        sim.add_fleet_lru_curve(capacities(a.universe), a.pods, "entity")
    reset_hwm()
    rss = proc_status()["VmRSS"]
    t = time.perf_counter()
    sim.feed(keys)
    seconds = time.perf_counter() - t
    (curve,) = sim.curves()
    print(json.dumps({"seconds": seconds, "peak_growth": proc_status()["VmHWM"] - rss,
                      "hits": np.asarray(curve["hits"]).tolist()}))


def timed(a, name):
    cmd = [sys.executable, __file__, "--worker", name, "--stream", str(a.stream), "--universe", str(a.universe),
           "--pods", str(a.pods)]
    runs = [json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            for _ in range(a.repeat)]
    return min(runs, key=lambda r: r["seconds"])


def sizing(a, keys_txt: Path, pods):
    """The whole sizing as the Python API runs it: (seconds, confirming passes, the answer's row)."""
    import cachescope

    t = time.perf_counter()
    result = cachescope.simulate_trace(str(keys_txt), curve="lru", target=a.target,
                                       **({"pods": str(pods), "route": "entity"} if pods else {}))
    seconds = time.perf_counter() - t
    rows = [r for r in result.to_json()["sizing"] if (r["route"] is not None) == bool(pods)]
    return seconds, result.confirming_passes, rows[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.set_defaults(lookups=10_000_000, universe=1_000_000)
    p.add_argument("--pods", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3, help="best of N")
    p.add_argument("--target", default="60%")
    p.add_argument("--sizing-lookups", type=int, default=2_000_000,
                   help="lookups of the stream's head that the whole sizing reads (a text trace)")
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.stream, _ = stream_files(a, oracle=False)
    print(f"fleet sizing: {a.lookups:,} lookups, Zipf({a.alpha:g}) over {a.universe:,} keys; {rel(a.stream)}")
    print(machine_line(machine()))
    single, fleet = timed(a, "single"), timed(a, "fleet")
    ratio = fleet["seconds"] / single["seconds"]
    print(f"\nexact LRU curve at {len(capacities(a.universe))} capacities, core only, best of {a.repeat}")
    print(f"  one cache:                {single['seconds']:.2f} s, peak growth {single['peak_growth'] / 2**20:.0f} MiB")
    print(f"  {a.pods} sharded pods (entity): {fleet['seconds']:.2f} s, peak growth "
          f"{fleet['peak_growth'] / 2**20:.0f} MiB")
    print(f"  fleet curve / single curve: {ratio:.2f}x (target <= 3x): {'PASS' if ratio <= 3 else 'FAIL'}")

    keys = np.load(a.stream)[: a.sizing_lookups]
    with tempfile.TemporaryDirectory() as tmp:
        keys_txt = Path(tmp) / "keys.txt"
        np.savetxt(keys_txt, keys, fmt="%d")
        import cachescope

        t = time.perf_counter()
        cachescope.simulate_trace(str(keys_txt), curve="lru")
        curve_pass = time.perf_counter() - t
        print(f"\nthe whole sizing for {a.target} on the first {len(keys):,} lookups (a keys trace), against the "
              f"curve pass alone ({curve_pass:.2f} s)")
        for pods in (None, a.pods):
            seconds, passes, row = sizing(a, keys_txt, pods)
            name = "one cache" if pods is None else f"{pods} sharded pods"
            print(f"  {name:<16} {seconds:.2f} s ({seconds / curve_pass:.1f}x the curve pass), {passes} confirming "
                  f"passes (target <= 2): {'PASS' if passes <= 2 else 'FAIL'}; answer {row['capacity']:,} entries "
                  f"per pod -> {row['hit_rate']:.2%} ({row['method']})")


if __name__ == "__main__":
    main()
