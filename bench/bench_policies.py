"""One run of one policy, side by side: cachescope vs libcachesim's policy of the same name.

`--policy lru|lfu|fifo|clock|sieve` picks the policy; both contenders simulate it exactly (libCacheSim's
semantics are the specification cachescope's policies follow) with the same capacity in entries, every
object of size 1, over the same seeded Zipf stream as `bench_lru.py` (the same cached files under
bench/data/). Hit counts must be equal; the script exits 1 if they are not.

What is timed, per contender (each run in a fresh subprocess, the stream already in memory):
  cachescope   `_native.Simulation([(policy, C)], 10_000).feed(keys)`: one call on a uint64 numpy array.
  libcachesim  `<Policy>(cache_size=C).process_trace(TraceReader(file, ORACLE_GENERAL_TRACE))`: the whole
               trace read (mmap) and simulated in C, its fastest path; the file is read into the page cache
               before timing. CLOCK runs with libcachesim's defaults (1-bit counter, init_freq=0).
Peak memory as in bench_lru.py (VmHWM reset just before the timed part).
"""
import argparse, gc, json, subprocess, sys, tempfile, time
from pathlib import Path

from bench_lru import machine, proc_status, stream_files

HERE = Path(__file__).resolve().parent
CONTENDERS = ["cachescope", "libcachesim"]
LIBCACHESIM = {"lru": "LRU", "lfu": "LFU", "fifo": "FIFO", "clock": "Clock", "sieve": "Sieve"}
# cachescope / libcachesim lookups/s that each policy should reach.
TARGETS = {"lru": 5.0, "lfu": 5.0, "fifo": 3.0, "clock": 3.0, "sieve": 3.0}


def prepare(name, policy, npy, oracle, capacity):
    """Untimed setup; returns the timed callable, which returns the hit count."""
    import numpy as np
    keys = np.load(npy)
    if name == "cachescope":
        from cachescope import _native
        sim = _native.Simulation([(policy, capacity)], 10_000)
        return lambda: (sim.feed(keys), sim.results()[0]["hits"])[1]
    if name == "libcachesim":
        import libcachesim
        with open(oracle, "rb") as f:  # into the page cache: time C's reading, not the disk
            while f.read(1 << 24):
                pass
        reader = libcachesim.TraceReader(str(oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
        cache = getattr(libcachesim, LIBCACHESIM[policy])(cache_size=capacity)
        return lambda: round((1.0 - cache.process_trace(reader)[0]) * len(keys))
    raise SystemExit(f"unknown contender {name!r}")


def worker(a):
    run = prepare(a.worker, a.policy, a.stream, a.oracle, a.capacity)
    gc.collect()
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
    except OSError:
        reset = False
    before = proc_status()
    t = time.perf_counter()
    hits = run()
    wall = time.perf_counter() - t
    after = proc_status()
    Path(a.out).write_text(json.dumps({
        "wall_s": wall, "hits": int(hits), "peak_bytes": after["VmHWM"] - before["VmRSS"], "hwm_reset": reset,
        "file_bytes": after.get("RssFile", 0) - before.get("RssFile", 0)}))


def run_once(name, npy, oracle, a):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, __file__, "--worker", name, "--policy", a.policy, "--stream", str(npy),
               "--oracle", str(oracle), "--capacity", str(a.capacity), "--out", out.name]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            raise SystemExit(f"\n!!! {name} failed (see its stderr above)")
        return json.loads(Path(out.name).read_text())


def run_contenders(npy, oracle, a):
    """Runs alternate between the contenders, so that a burst of load from elsewhere on a shared machine
    falls on both rather than on all runs of one."""
    all_runs = {name: [] for name in CONTENDERS}
    for _ in range(a.repeat):
        for name in CONTENDERS:
            all_runs[name].append(run_once(name, npy, oracle, a))
    res = {}
    for name, runs in all_runs.items():
        if len({r["hits"] for r in runs}) != 1:
            raise SystemExit(f"\n!!! {name}: hit counts differ between runs: {[r['hits'] for r in runs]}")
        best = min(runs, key=lambda r: r["wall_s"])
        res[name] = {
            "runs": len(runs), "wall_s": best["wall_s"], "all_wall_s": [r["wall_s"] for r in runs],
            "lookups_per_s": a.lookups / best["wall_s"], "hits": best["hits"], "hit_rate": best["hits"] / a.lookups,
            "peak_mib": max(r["peak_bytes"] for r in runs) / 2**20, "file_mib": best["file_bytes"] / 2**20,
            "hwm_reset": all(r["hwm_reset"] for r in runs)}
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--policy", choices=sorted(LIBCACHESIM), required=True)
    p.add_argument("--lookups", type=int, default=10_000_000)
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=3, help="best of N for each contender")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--stream", "--oracle", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.skip = set()  # stream_files() writes the oracleGeneral twin unless libcachesim is skipped

    m = machine()
    target = TARGETS[a.policy]
    print(f"{a.policy.upper()}, one run: {a.lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {a.universe:,} keys, "
          f"seed {a.seed}, capacity {a.capacity:,} entries (size 1)")
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs, Linux {m['kernel']}, Python {m['python']}, "
          f"libcachesim {m['libcachesim']}")
    npy, oracle = stream_files(a)
    res = run_contenders(npy, oracle, a)

    print(f"\n{'contender':<13}{'runs':>5}{'wall s':>9}{'M lookups/s':>13}{'hits':>12}{'hit rate':>10}"
          f"{'peak MiB':>10}{'file MiB':>10}")
    for name, r in res.items():
        runs = f"{r['runs']}" + ("" if r["runs"] == 1 else "*")
        print(f"{name:<13}{runs:>5}{r['wall_s']:>9.3f}{r['lookups_per_s'] / 1e6:>13.2f}{r['hits']:>12,}"
              f"{r['hit_rate']:>10.4f}{r['peak_mib']:>10.1f}{r['file_mib']:>10.1f}")
    print("  * best of N runs (wall s = fastest), the two contenders' runs alternating. Each run is a fresh subprocess.")
    print("  libcachesim: process_trace on an oracleGeneral file, whole trace read (mmap) and simulated in C.")
    print("  Its peak MiB includes the mapped trace file (the file MiB column).")
    if not all(r["hwm_reset"] for r in res.values()):
        print("  WARNING: could not reset VmHWM; peak MiB may be underestimated.")

    agree = res["cachescope"]["hits"] == res["libcachesim"]["hits"]
    ratio = res["cachescope"]["lookups_per_s"] / res["libcachesim"]["lookups_per_s"]
    verdict = agree and ratio >= target
    print(f"\ncachescope/libcachesim: {ratio:.2f}x")
    print(f"target: >= {target:g}x libcachesim: {ratio:.2f}x {'PASS' if verdict else 'FAIL'}"
          f"{'' if agree else ' (hit counts disagree)'}")

    out = HERE / "results" / f"{a.policy}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": a.policy, "params": {k: getattr(a, k) for k in ("policy", "lookups", "universe", "alpha",
                                                                       "capacity", "seed", "repeat")},
        "stream": str(npy.relative_to(HERE.parent)), "machine": m, "contenders": res,
        "ratios": {"cachescope/libcachesim": ratio}, "hits_agree": agree,
        "target": {"min_ratio_vs_libcachesim": target, "pass": verdict}}, indent=2) + "\n")
    print(f"results: {out.relative_to(HERE.parent)}")
    if not agree:
        print("\n" + "!" * 72 + f"\n!!! HIT COUNTS DISAGREE: both contenders are exact {a.policy.upper()}:\n"
              + "".join(f"!!!   {n:<12} {r['hits']:,}\n" for n, r in res.items()) + "!" * 72, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
