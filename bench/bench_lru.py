"""One LRU run, side by side: cachescope vs libcachesim, cachetools and functools.lru_cache.

All four contenders simulate exact LRU with the same capacity (entries, every object of size 1) over the
same key stream: a seeded Zipf stream (inverse CDF over popularity ranks, ranks mapped to a random
permutation of ids so an id says nothing about its popularity), cached under bench/data/. Exact LRU is
deterministic, so all hit counts must be equal; the script exits 1 if they are not.

What is timed, per contender (each run in a fresh subprocess, the stream already in memory):
  cachescope   `_native.Simulation([("lru", C)], 10_000).feed(keys)`: one call on a uint64 numpy array,
               all hash-table and recency-list work in Rust.
  libcachesim  `LRU(cache_size=C).process_trace(TraceReader(file, ORACLE_GENERAL_TRACE))`. This is its
               fastest path: the whole trace is read and simulated in C, without one Python call per
               request. The oracleGeneral file is written once beforehand and read into the page cache
               before timing, so the time covers C reading its (mmap'd) file and simulating, no disk I/O.
  cachetools   a Python loop over `LRUCache` (`k in cache` -> `cache[k]` to refresh recency, else insert).
  functools    a Python loop calling a no-op function wrapped in `lru_cache(maxsize=C)`.
Keys are Python ints for the two Python loops (converted before timing).

Peak memory is the growth of the subprocess's peak RSS during the timed part: VmHWM is reset to the current
RSS (`/proc/self/clear_refs`, "5") just before it and read just after it, minus the RSS at the reset.
(ru_maxrss is not used: it cannot be reset and a child inherits its parent's high-water mark across
fork/exec.) libcachesim maps its trace file, so its peak includes those file pages (24 bytes a lookup);
the "file MiB" column shows the file-backed part of the growth.
"""
import argparse, gc, importlib.metadata, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CONTENDERS = ["cachescope", "libcachesim", "cachetools", "functools"]
SLOW = {"cachetools", "functools"}  # Python loops: run --slow-repeat times (default once)
TARGET = 5.0  # cachescope >= 5x libcachesim (DESIGN.md, "Performance targets")
ORACLE = np.dtype([("clock_time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next_access_vtime", "<i8")])
assert ORACLE.itemsize == 24


def zipf_stream(lookups, universe, alpha, seed):
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, universe + 1, dtype=np.float64) ** -alpha)
    cdf /= cdf[-1]
    ranks = np.minimum(np.searchsorted(cdf, rng.random(lookups), side="right"), universe - 1)
    ids = rng.permutation(universe).astype(np.uint64)
    return ids[ranks]


def stream_files(a):
    """The cached stream (.npy) and its oracleGeneral twin, generated once per parameter set."""
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    stem = data / f"zipf_n{a.lookups}_u{a.universe}_a{a.alpha:g}_s{a.seed}"
    npy, oracle = stem.with_suffix(".npy"), stem.with_suffix(".oracleGeneral")
    if not npy.exists():
        t = time.perf_counter()
        keys = zipf_stream(a.lookups, a.universe, a.alpha, a.seed)
        np.save(f"{npy}.tmp.npy", keys)
        os.replace(f"{npy}.tmp.npy", npy)
        print(f"generated {npy.relative_to(HERE.parent)} in {time.perf_counter() - t:.1f} s")
        oracle.unlink(missing_ok=True)
    if "libcachesim" not in a.skip and (not oracle.exists() or oracle.stat().st_size != 24 * a.lookups):
        keys = np.load(npy)
        rec = np.empty(len(keys), ORACLE)
        rec["clock_time"] = np.arange(len(keys), dtype=np.uint64).astype(np.uint32)
        rec["obj_id"], rec["obj_size"], rec["next_access_vtime"] = keys, 1, -1
        rec.tofile(f"{oracle}.tmp")
        os.replace(f"{oracle}.tmp", oracle)
    return npy, oracle


# ---- worker side: one contender, one timed run, in its own process -------------------------------------
def proc_status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in f) if v.strip().endswith("kB")}


def prepare(name, npy, oracle, capacity):
    """Untimed setup; returns the timed callable, which returns the hit count."""
    keys = np.load(npy)
    if name == "cachescope":
        from cachescope import _native
        sim = _native.Simulation([("lru", capacity)], 10_000)
        return lambda: (sim.feed(keys), sim.results()[0]["hits"])[1]
    if name == "libcachesim":
        import libcachesim
        with open(oracle, "rb") as f:  # into the page cache: time C's reading, not the disk
            while f.read(1 << 24):
                pass
        reader = libcachesim.TraceReader(str(oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
        cache = libcachesim.LRU(cache_size=capacity)
        return lambda: round((1.0 - cache.process_trace(reader)[0]) * len(keys))
    ints = keys.tolist()
    if name == "cachetools":
        import cachetools
        cache = cachetools.LRUCache(maxsize=capacity)

        def run():
            hits = 0
            for k in ints:
                if k in cache:  # __contains__ does not touch recency ...
                    cache[k]  # ... LRUCache.__getitem__ moves k to the most recent end
                    hits += 1
                else:
                    cache[k] = True  # evicts the least recent entry first when full
            return hits
        return run
    if name == "functools":
        import functools

        @functools.lru_cache(maxsize=capacity)
        def noop(k):
            return None

        def run():
            for k in ints:
                noop(k)
            return noop.cache_info().hits
        return run
    raise SystemExit(f"unknown contender {name!r}")


def worker(a):
    run = prepare(a.worker, a.stream, a.oracle, a.capacity)
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


# ---- driver side -------------------------------------------------------------------------------------
def run_contender(name, npy, oracle, a, repeats):
    runs = []
    for _ in range(repeats):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, __file__, "--worker", name, "--stream", str(npy), "--oracle", str(oracle),
                   "--capacity", str(a.capacity), "--out", out.name]
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
                raise SystemExit(f"\n!!! {name} failed (see its stderr above)")
            runs.append(json.loads(Path(out.name).read_text()))
    best = min(runs, key=lambda r: r["wall_s"])
    if len({r["hits"] for r in runs}) != 1:
        raise SystemExit(f"\n!!! {name}: hit counts differ between runs: {[r['hits'] for r in runs]}")
    return {"runs": len(runs), "wall_s": best["wall_s"], "all_wall_s": [r["wall_s"] for r in runs],
            "lookups_per_s": a.lookups / best["wall_s"], "hits": best["hits"], "hit_rate": best["hits"] / a.lookups,
            "peak_mib": max(r["peak_bytes"] for r in runs) / 2**20, "file_mib": best["file_bytes"] / 2**20,
            "hwm_reset": all(r["hwm_reset"] for r in runs)}


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    versions = {}
    for pkg in ("libcachesim", "cachetools", "numpy"):
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(),
            "kernel": platform.release(), **versions}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lookups", type=int, default=10_000_000)
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=3, help="best of N for cachescope and libcachesim")
    p.add_argument("--slow-repeat", type=int, default=1, help="best of N for cachetools and functools")
    p.add_argument("--skip", default="", help=f"comma list of contenders to leave out ({','.join(CONTENDERS)})")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--stream", "--oracle", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.skip = {s for s in a.skip.split(",") if s}
    if a.skip - set(CONTENDERS):
        p.error(f"--skip: unknown contender(s) {sorted(a.skip - set(CONTENDERS))}; known: {','.join(CONTENDERS)}")

    m = machine()
    print(f"LRU, one run: {a.lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {a.universe:,} keys, seed {a.seed}, "
          f"capacity {a.capacity:,} entries (size 1)")
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs, Linux {m['kernel']}, Python {m['python']}, "
          f"libcachesim {m['libcachesim']}, cachetools {m['cachetools']}")
    npy, oracle = stream_files(a)
    res = {}
    for name in CONTENDERS:
        if name not in a.skip:
            res[name] = run_contender(name, npy, oracle, a, a.slow_repeat if name in SLOW else a.repeat)

    print(f"\n{'contender':<13}{'runs':>5}{'wall s':>9}{'M lookups/s':>13}{'hits':>12}{'hit rate':>10}"
          f"{'peak MiB':>10}{'file MiB':>10}")
    for name, r in res.items():
        runs = f"{r['runs']}" + ("" if r["runs"] == 1 else "*")
        print(f"{name:<13}{runs:>5}{r['wall_s']:>9.3f}{r['lookups_per_s'] / 1e6:>13.2f}{r['hits']:>12,}"
              f"{r['hit_rate']:>10.4f}{r['peak_mib']:>10.1f}{r['file_mib']:>10.1f}")
    print("  * best of N runs (wall s = fastest); runs = 1: a single run. Each run is a fresh subprocess.")
    print("  libcachesim: process_trace on an oracleGeneral file, whole trace read (mmap) and simulated in C:")
    print("  its fastest path. Its peak MiB includes the mapped trace file (the file MiB column).")
    print("  peak MiB: growth of peak RSS during the timed part (VmHWM reset via /proc/self/clear_refs).")
    if not all(r["hwm_reset"] for r in res.values()):
        print("  WARNING: could not reset VmHWM; peak MiB may be underestimated.")

    agree = len({r["hits"] for r in res.values()}) <= 1
    ratios = {f"cachescope/{n}": res["cachescope"]["lookups_per_s"] / r["lookups_per_s"]
              for n, r in res.items() if n != "cachescope" and "cachescope" in res}
    print()
    for k, v in ratios.items():
        print(f"{k + ':':<25}{v:>7.2f}x")
    verdict = None
    if "cachescope/libcachesim" in ratios:
        verdict = agree and ratios["cachescope/libcachesim"] >= TARGET
        print(f"target: >= {TARGET:g}x libcachesim: {ratios['cachescope/libcachesim']:.2f}x "
              f"{'PASS' if verdict else 'FAIL'}{'' if agree else ' (hit counts disagree)'}")
    else:
        print(f"target: >= {TARGET:g}x libcachesim: not measured (skipped)")

    out = HERE / "results" / "lru.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "lru", "params": {k: getattr(a, k) for k in ("lookups", "universe", "alpha", "capacity", "seed",
                                                                    "repeat", "slow_repeat")},
        "skipped": sorted(a.skip), "stream": str(npy.relative_to(HERE.parent)), "machine": m, "contenders": res,
        "ratios": ratios, "hits_agree": agree,
        "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}}, indent=2) + "\n")
    print(f"results: {out.relative_to(HERE.parent)}")
    if not agree:
        print("\n" + "!" * 72 + "\n!!! HIT COUNTS DISAGREE: all contenders are exact LRU and must be equal:\n"
              + "".join(f"!!!   {n:<12} {r['hits']:,}\n" for n, r in res.items()) + "!" * 72, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
