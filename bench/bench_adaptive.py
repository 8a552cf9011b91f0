"""ARC, 2Q and S3-FIFO, one run each, side by side: cachescope vs libcachesim's implementation of the same policy.

The stream and its files are bench_lru.py's (a seeded Zipf stream cached under bench/data/, with its
oracleGeneral twin), and so is the method: each run is a fresh subprocess with the stream already loaded, the
timed part is one call, best of --repeat. cachescope's policies follow libCacheSim's semantics hit for hit, so
both must report the same hits for each policy; the script exits 1 if they do not.

What is timed:
  cachescope   `_native.Simulation([(policy, C, None, params)], 10_000).feed(keys)`: one call on a uint64
               numpy array, the whole policy in Rust.
  libcachesim  `<Policy>(cache_size=C).process_trace(TraceReader(file, ORACLE_GENERAL_TRACE))`, its fastest
               path (whole trace read and simulated in C), the file read into the page cache beforehand.
Parameters are both libraries' defaults (2Q: Kin 25%, Kout 50%; S3-FIFO: small 10%, ghost 90%, threshold 2).
"""
import argparse, gc, json, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

from bench_lru import HERE, machine, proc_status, stream_files

TARGET = 3.0  # cachescope >= 3x libcachesim, per policy
# Our registry name -> libcachesim's class.
POLICIES = {"arc": "ARC", "2q": "TwoQ", "s3fifo": "S3FIFO"}
CONTENDERS = ["cachescope", "libcachesim"]


def prepare(contender, policy, npy, oracle, capacity):
    """Untimed setup; returns the timed callable, which returns the hit count."""
    keys = np.load(npy)
    if contender == "cachescope":
        from cachescope import _native
        from cachescope.simulate.registry import POLICIES as REGISTRY

        params = {p.name: float(p.default) for p in REGISTRY[policy].params}
        sim = _native.Simulation([(policy, capacity, None, params)], 10_000)
        return lambda: (sim.feed(keys), sim.results()[0]["hits"])[1]
    import libcachesim

    with open(oracle, "rb") as f:  # into the page cache: time C's reading, not the disk
        while f.read(1 << 24):
            pass
    reader = libcachesim.TraceReader(str(oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(libcachesim, POLICIES[policy])(cache_size=capacity)
    return lambda: round((1.0 - cache.process_trace(reader)[0]) * len(keys))


def worker(a):
    contender, policy = a.worker.split(":")
    run = prepare(contender, policy, a.stream, a.oracle, a.capacity)
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
    Path(a.out).write_text(json.dumps({"wall_s": wall, "hits": int(hits), "peak_bytes": after["VmHWM"] - before["VmRSS"],
                                       "hwm_reset": reset}))


def run_once(contender, policy, npy, oracle, a):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, __file__, "--worker", f"{contender}:{policy}", "--stream", str(npy),
               "--oracle", str(oracle), "--capacity", str(a.capacity), "--out", out.name]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            raise SystemExit(f"\n!!! {contender} {policy} failed (see its stderr above)")
        return json.loads(Path(out.name).read_text())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lookups", type=int, default=10_000_000)
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=3, help="best of N runs per contender and policy")
    p.add_argument("--policies", default=",".join(POLICIES), help=f"comma list of ({','.join(POLICIES)})")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--stream", "--oracle", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    policies = [x for x in a.policies.split(",") if x]
    if set(policies) - set(POLICIES):
        p.error(f"--policies: unknown {sorted(set(policies) - set(POLICIES))}; known: {','.join(POLICIES)}")

    m = machine()
    print(f"ARC, 2Q, S3-FIFO, one run each: {a.lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {a.universe:,} keys, "
          f"seed {a.seed}, capacity {a.capacity:,} entries (size 1)")
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs, Linux {m['kernel']}, Python {m['python']}, "
          f"libcachesim {m['libcachesim']}")
    a.skip = set()
    npy, oracle = stream_files(a)
    # Runs interleave (policy by policy, contender by contender, repeat by repeat) so that a change in the
    # machine's load during the benchmark falls on both contenders alike.
    runs = {(pol, c): [] for pol in policies for c in CONTENDERS}
    for _ in range(a.repeat):
        for pol in policies:
            for c in CONTENDERS:
                runs[pol, c].append(run_once(c, pol, npy, oracle, a))

    res, ratios, agree = {}, {}, True
    print(f"\n{'policy':<8}{'contender':<13}{'wall s':>9}{'M lookups/s':>13}{'hits':>12}{'hit rate':>10}{'peak MiB':>10}")
    for pol in policies:
        for c in CONTENDERS:
            rs = runs[pol, c]
            best = min(rs, key=lambda r: r["wall_s"])
            if len({r["hits"] for r in rs}) != 1:
                raise SystemExit(f"\n!!! {c} {pol}: hit counts differ between runs: {[r['hits'] for r in rs]}")
            res.setdefault(pol, {})[c] = {
                "runs": len(rs), "wall_s": best["wall_s"], "all_wall_s": [r["wall_s"] for r in rs],
                "lookups_per_s": a.lookups / best["wall_s"], "hits": best["hits"], "hit_rate": best["hits"] / a.lookups,
                "peak_mib": max(r["peak_bytes"] for r in rs) / 2**20, "hwm_reset": all(r["hwm_reset"] for r in rs)}
            r = res[pol][c]
            print(f"{pol:<8}{c:<13}{r['wall_s']:>9.3f}{r['lookups_per_s'] / 1e6:>13.2f}{r['hits']:>12,}"
                  f"{r['hit_rate']:>10.4f}{r['peak_mib']:>10.1f}")
        ratios[pol] = res[pol]["cachescope"]["lookups_per_s"] / res[pol]["libcachesim"]["lookups_per_s"]
        agree &= res[pol]["cachescope"]["hits"] == res[pol]["libcachesim"]["hits"]
    print(f"  best of {a.repeat} runs each, every run a fresh subprocess; libcachesim's peak includes its mapped "
          "trace file.")
    print()
    verdict = agree and all(r >= TARGET for r in ratios.values())
    for pol, r in ratios.items():
        print(f"cachescope/libcachesim {pol + ':':<8}{r:>7.2f}x  {'PASS' if r >= TARGET else 'FAIL'} (target >= {TARGET:g}x)")

    out = HERE / "results" / "adaptive.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "adaptive", "params": {k: getattr(a, k) for k in ("lookups", "universe", "alpha", "capacity",
                                                                        "seed", "repeat")},
        "stream": str(npy.relative_to(HERE.parent)), "machine": m, "results": res, "ratios": ratios,
        "hits_agree": agree, "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}}, indent=2) + "\n")
    print(f"results: {out.relative_to(HERE.parent)}")
    if not agree:
        print("\n" + "!" * 72 + "\n!!! HIT COUNTS DISAGREE: cachescope follows libCacheSim hit for hit:\n"
              + "".join(f"!!!   {pol:<8} cachescope {res[pol]['cachescope']['hits']:,} libcachesim "
                        f"{res[pol]['libcachesim']['hits']:,}\n" for pol in policies) + "!" * 72, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
