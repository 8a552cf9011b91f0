"""Curves, side by side: the exact LRU curve at 100 capacities against one LRU run and against libcachesim's
per-capacity runs; SHARDS at 1% against the exact curve (time and error); miniature simulations of W-TinyLFU,
S3-FIFO and ARC at 1% and 10% against full runs of the same policies (time and error).

Every timed contender runs in a fresh interpreter on the same Zipf stream (common.py's, cached under
bench/data/): the core measured on the uint64 keys in memory (`_native.Simulation.feed`), and the whole
`simulate.py` command on the same keys as a text trace. libcachesim's LRU is timed on a few of the 100
capacities (`--libcachesim-runs`, default 5, spread over the range) and its total for 100 capacities is that
mean times 100, labelled as such.
"""
import argparse, json, subprocess, sys, time

import numpy as np

from common import (add_common_options, libcachesim_run, machine, machine_line, proc_status, rel, reset_hwm,
                    stream_files)

POINTS = 100
MINI_POLICIES = ("wtinylfu", "s3fifo", "arc")


def capacities(a):
    """100 capacities log-spaced from 100 entries to the universe."""
    return sorted({int(c) for c in np.geomspace(100, a.universe, POINTS).round()})


def worker(a):
    """One timed contender; prints {"seconds", ...} as JSON."""
    from cachescope import _native

    keys = np.load(a.stream)
    caps = capacities(a)
    sim = None
    if a.worker == "lru":
        sim = _native.Simulation([("lru", a.capacity)], 10_000)
    elif a.worker == "exact":
        sim = _native.Simulation([], 10_000)
        sim.add_lru_curve(caps)
    elif a.worker == "shards":
        sim = _native.Simulation([], 10_000)
        sim.add_shards(caps, 0.01, 4)
    elif a.worker.startswith("full-"):
        policy = a.worker[5:]
        sim = _native.Simulation([(policy, c) for c in a.mini_caps], 10_000)
    elif a.worker.startswith("mini-"):
        policy, rate = a.worker[5:].rsplit("@", 1)
        sim = _native.Simulation([], 10_000)
        sim.add_minisim(policy, a.mini_caps, float(rate), 4)
    elif a.worker == "libcachesim":
        run = libcachesim_run("LRU", a.oracle, a.lib_capacity, len(keys))
        t = time.perf_counter()
        hits = run()
        print(json.dumps({"seconds": time.perf_counter() - t, "hits": hits}))
        return
    reset_hwm()
    rss = proc_status()["VmRSS"]
    t = time.perf_counter()
    sim.feed(keys)
    seconds = time.perf_counter() - t
    out = {"seconds": seconds, "peak_growth": proc_status()["VmHWM"] - rss}
    if a.worker == "lru":
        out["hits"] = sim.results()[0]["hits"]
    elif a.worker in ("exact", "shards"):
        (c,) = sim.curves()
        rates = np.asarray(c["hits"]) / len(keys) if a.worker == "exact" else np.asarray(c["hit_rates"]).mean(0)
        out["capacities"], out["hit_rates"] = c["capacities"].tolist(), rates.tolist()
    elif a.worker.startswith("full-"):
        out["hit_rates"] = [r["hits"] / len(keys) for r in sim.results()]
    else:
        (c,) = sim.curves()
        misses = np.asarray(c["lookups"], float) - np.asarray(c["hits"], float)
        per_sample = 1 - misses / c["sample_rate"] / len(keys)
        out["hit_rates"], out["spread"] = per_sample.mean(0).tolist(), (2 * per_sample.std(0, ddof=1)).tolist()
    print(json.dumps(out))


def run(a, name, *extra):
    cmd = [sys.executable, __file__, "--worker", name, "--stream", str(a.stream), "--oracle", str(a.oracle),
           "--lookups", str(a.lookups), "--universe", str(a.universe), "--alpha", str(a.alpha),
           "--seed", str(a.seed), "--capacity", str(a.capacity), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def best(a, name, *extra):
    runs = [run(a, name, *extra) for _ in range(a.repeat)]
    return min(runs, key=lambda r: r["seconds"])


def whole_command(a, keys_txt, *args):
    """Best wall time of `simulate.py KEYS --json ...` as a user runs it."""
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "simulate.py", str(keys_txt), "--no-progress", "--json", *args],
                       cwd=str(a.root), capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return min(times)


def core_only(a):
    """The exact curve and SHARDS at 1% on the keys in memory: time, error, memory."""
    a.stream, a.oracle = stream_files(a, oracle=False)
    print(f"curves, core only: {a.lookups:,} lookups, Zipf({a.alpha:g}) over {a.universe:,} keys; {rel(a.stream)}")
    print(machine_line(machine()))
    exact, shards = best(a, "exact"), best(a, "shards")
    rates = dict(zip(exact["capacities"], exact["hit_rates"]))
    resolved = [i for i, c in enumerate(shards["capacities"]) if c >= 100 / 0.01]
    mae = float(np.mean([abs(shards["hit_rates"][i] - rates[shards["capacities"][i]]) for i in resolved]))
    print(f"exact curve at {len(exact['capacities'])} capacities: {exact['seconds']:.2f} s, "
          f"{exact['peak_growth'] / 2**20:.0f} MiB; SHARDS 1% (4 samples): {shards['seconds']:.2f} s, "
          f"{exact['seconds'] / shards['seconds']:.1f}x faster (target >= 10x), mean absolute error {mae:.4f} "
          f"over {len(resolved)} capacities >= 100 / rate (target <= 0.005)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.add_argument("--repeat", type=int, default=3, help="best of N")
    p.add_argument("--libcachesim-runs", type=int, default=5, help="capacities libcachesim is timed at")
    p.add_argument("--lib-capacity", type=int, help=argparse.SUPPRESS)
    p.add_argument("--mini-caps", type=lambda s: [int(x) for x in s.split(",")], help=argparse.SUPPRESS)
    p.add_argument("--core-only", action="store_true",
                   help="only the exact curve against SHARDS in the core (for a stream too large to write as text)")
    a = p.parse_args()
    if a.worker:
        return worker(a)
    if a.core_only:
        return core_only(a)
    from pathlib import Path

    a.root = Path(__file__).resolve().parent.parent
    a.stream, a.oracle = stream_files(a)
    keys_txt = a.stream.with_suffix(".keys.txt")
    if not keys_txt.exists():
        np.savetxt(keys_txt, np.load(a.stream), fmt="%d")
    print(f"curves: {a.lookups:,} lookups, Zipf({a.alpha:g}) over {a.universe:,} keys; {rel(a.stream)}")
    print(machine_line(machine(), "libcachesim"))
    caps = capacities(a)

    one = best(a, "lru")
    exact = best(a, "exact")
    shards = best(a, "shards")
    picks = [caps[int(i)] for i in np.linspace(0, len(caps) - 1, a.libcachesim_runs).round()]
    lib = [run(a, "libcachesim", "--lib-capacity", str(c)) for c in picks]
    lib_each = float(np.mean([r["seconds"] for r in lib]))
    exact_rates = dict(zip(exact["capacities"], exact["hit_rates"]))
    for c, r in zip(picks, lib):
        if abs(r["hits"] / a.lookups - exact_rates[c]) > 1e-9:
            sys.exit(f"libcachesim's LRU at {c} disagrees with the exact curve: {r['hits']} hits")
    resolved = [i for i, c in enumerate(shards["capacities"]) if c >= 100 / 0.01]
    sh = np.asarray(shards["hit_rates"])
    ex = np.asarray([exact_rates[c] for c in shards["capacities"]])
    mae = float(np.abs(sh - ex)[resolved].mean())

    cmd_one = whole_command(a, keys_txt, "--lru", str(a.capacity))
    cmd_exact = whole_command(a, keys_txt, "--curve", "lru", "--curve-capacities", ",".join(map(str, caps)))
    cmd_shards = whole_command(a, keys_txt, "--curve", "lru", "--sample", "1%",
                               "--curve-capacities", ",".join(map(str, caps)))

    print(f"\nLRU at {len(caps)} capacities (100 to {a.universe:,} entries, log-spaced), best of {a.repeat}")
    print(f"{'contender':<58} {'seconds':>8}  {'vs one LRU run':>14}")
    rows = [
        (f"one LRU run at {a.capacity:,} (core)", one["seconds"]),
        (f"exact curve, {len(caps)} capacities in one pass (core)", exact["seconds"]),
        ("SHARDS 1%, 4 samples (core)", shards["seconds"]),
        (f"libcachesim LRU, {len(caps)} runs (mean of {len(lib)} measured x {len(caps)})", lib_each * len(caps)),
        (f"simulate.py --lru {a.capacity} (whole command)", cmd_one),
        ("simulate.py --curve lru, 100 capacities (whole command)", cmd_exact),
        ("simulate.py --curve lru --sample 1% (whole command)", cmd_shards),
    ]
    for name, s in rows:
        print(f"{name:<58} {s:>8.2f}  {s / one['seconds']:>13.2f}x")
    unique = len(np.unique(np.load(a.stream)))
    print(f"\nmemory (peak growth while feeding): one LRU run {one['peak_growth'] / 2**20:.0f} MiB; exact curve "
          f"{exact['peak_growth'] / 2**20:.0f} MiB for {unique:,} unique keys = "
          f"{exact['peak_growth'] / unique:.0f} bytes a unique key; SHARDS 1% {shards['peak_growth'] / 2**20:.0f} MiB")
    print(f"exact curve / one run, core: {exact['seconds'] / one['seconds']:.2f}x; whole command: "
          f"{cmd_exact / cmd_one:.2f}x (target < 3x)")
    print(f"exact curve vs libcachesim's 100 runs: {lib_each * len(caps) / exact['seconds']:.1f}x faster "
          f"(libcachesim equal to the curve at the {len(picks)} capacities timed)")
    print(f"SHARDS 1%: {exact['seconds'] / shards['seconds']:.1f}x faster than the exact curve in the core, "
          f"{cmd_exact / cmd_shards:.1f}x as whole commands (target >= 10x); mean absolute error "
          f"{mae:.4f} over the {len(resolved)} capacities >= 100 / rate (target <= 0.005)")

    mini_caps = [c for c in caps if c >= 10_000][:: max(1, len(caps) // 12)][:6]
    extra = ("--mini-caps", ",".join(map(str, mini_caps)))
    print(f"\nminiature simulations, 4 samples each, against full runs at {', '.join(f'{c:,}' for c in mini_caps)}")
    print(f"{'policy':<10} {'rate':>5} {'seconds':>8} {'full runs s':>11} {'speed-up':>8} {'mean |err|':>10} "
          f"{'max |err|':>9} {'band covers':>11}")
    for policy in MINI_POLICIES:
        full = best(a, f"full-{policy}", *extra)
        for rate in (0.01, 0.1):
            mini = best(a, f"mini-{policy}@{rate}", *extra)
            err = np.abs(np.asarray(mini["hit_rates"]) - np.asarray(full["hit_rates"]))
            covered = int((err <= np.asarray(mini["spread"])).sum())
            print(f"{policy:<10} {rate:>5.0%} {mini['seconds']:>8.2f} {full['seconds']:>11.2f} "
                  f"{full['seconds'] / mini['seconds']:>7.1f}x {err.mean():>10.4f} {err.max():>9.4f} "
                  f"{covered:>5}/{len(err)}")


if __name__ == "__main__":
    main()
