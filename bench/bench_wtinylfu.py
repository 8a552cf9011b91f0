"""One W-TinyLFU run, side by side: cachescope vs libcachesim's WTinyLFU vs a real Caffeine cache.

The key stream is bench_lru.py's (a seeded Zipf stream of uint64 ids, cached under bench/data/), capacity in
entries. The three do not compute the same thing, so their hit rates differ:
  cachescope   `_native.Simulation([("wtinylfu", C)], 10_000).feed(keys)`: one call on a uint64 array. The keys
               are the ids written as decimal text and hashed by cachescope's own trace reader (untimed), so the
               frequency sketch sees each key's Java String.hashCode, as Caffeine's does: hit rates should agree
               with Caffeine's to within its run-to-run noise (a few hundredths of a point).
  libcachesim  `WTinyLFU(cache_size=C).process_trace(TraceReader(oracleGeneral file))`, the whole trace read and
               simulated in C (its fastest path; file pre-read into the page cache). Its own W-TinyLFU (fixed
               1% window, no hill climber, its own sketch), 1 to 5.5 points away from Caffeine on cloudPhysicsIO.
  caffeine     bench/java/ReplayTimed.java: Caffeine 3.2.3, `maximumSize(C)`, maintenance on the caller's thread,
               `getIfPresent` then `put` on a miss, the same decimal-text keys as Java Strings. Only the replay
               loop is timed (not reading the file); `--repeat` runs in one JVM, the first one JIT-compiling.
               Built with Maven through tests/caffeine_oracle.py (the replay project of ../shared/reference).
cachescope and libcachesim run in fresh subprocesses, best of `--repeat`; see bench_lru.py for how peak memory is
measured (not measured for the JVM). Besides wall time, each run's CPU time is taken (the process's for the two
Python workers, the replaying thread's in the JVM): on a machine shared with other work the wall times swing
with the load, and the CPU-time ratio is the steadier of the two. Results go to bench/results/wtinylfu.json.
"""
import argparse, gc, json, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_lru import machine, proc_status, stream_files  # noqa: E402

CONTENDERS = ["cachescope", "libcachesim", "caffeine"]
TARGET = 5.0  # cachescope >= 5x libcachesim's WTinyLFU


def text_files(npy):
    """The ids as a key-per-line text file, and cachescope's hashes of those lines (both cached)."""
    keys_txt, hashed = npy.with_suffix(".keys.txt"), npy.with_suffix(".texthash.npy")
    if not keys_txt.exists():
        t = time.perf_counter()
        np.savetxt(f"{keys_txt}.tmp", np.load(npy), fmt="%d")
        Path(f"{keys_txt}.tmp").replace(keys_txt)
        print(f"wrote {keys_txt.relative_to(HERE.parent)} in {time.perf_counter() - t:.1f} s")
    if not hashed.exists():
        import cachescope
        keys = np.concatenate([b["keys"] for b in cachescope.open_trace(str(keys_txt)).batches()])
        np.save(f"{hashed}.tmp.npy", keys)
        Path(f"{hashed}.tmp.npy").replace(hashed)
    return keys_txt, hashed


# ---- worker side -----------------------------------------------------------------------------------------
def prepare(name, a):
    if name == "cachescope":
        from cachescope import _native
        keys = np.load(a.hashed)
        sim = _native.Simulation([("wtinylfu", a.capacity)], 10_000)
        return lambda: (sim.feed(keys), sim.results()[0]["hits"])[1]
    if name == "libcachesim":
        import libcachesim
        with open(a.oracle, "rb") as f:  # into the page cache: time C's reading, not the disk
            while f.read(1 << 24):
                pass
        reader = libcachesim.TraceReader(str(a.oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
        cache = libcachesim.WTinyLFU(cache_size=a.capacity)
        return lambda: round((1.0 - cache.process_trace(reader)[0]) * a.lookups)
    raise SystemExit(f"unknown contender {name!r}")


def worker(a):
    run = prepare(a.worker, a)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = proc_status()
    c, t = time.process_time(), time.perf_counter()
    hits = run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    after = proc_status()
    Path(a.out).write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "hits": int(hits),
                                       "peak_bytes": after["VmHWM"] - before["VmRSS"]}))


# ---- driver side -----------------------------------------------------------------------------------------
def run_python(name, a):
    runs = []
    for _ in range(a.repeat):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, __file__, "--worker", name, "--oracle", str(a.oracle), "--hashed", str(a.hashed),
                   "--capacity", str(a.capacity), "--lookups", str(a.lookups), "--out", out.name]
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
                raise SystemExit(f"\n!!! {name} failed (see its stderr above)")
            runs.append(json.loads(Path(out.name).read_text()))
    if len({r["hits"] for r in runs}) != 1:
        raise SystemExit(f"\n!!! {name}: hit counts differ between runs: {[r['hits'] for r in runs]}")
    return {"all_wall_s": [r["wall_s"] for r in runs], "all_cpu_s": [r["cpu_s"] for r in runs], "hits": runs[0]["hits"],
            "peak_mib": max(r["peak_bytes"] for r in runs) / 2**20}


def run_caffeine(a):
    from caffeine_oracle import replay_classpath
    classpath = replay_classpath()
    classes = HERE.parent / "target" / "bench-java"
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(HERE / "java" / "ReplayTimed.java")],
                   check=True)
    out = subprocess.run(["java", "-Xmx4g", "-cp", f"{classes}:{classpath}", "ReplayTimed", str(a.keys_txt),
                          str(a.capacity), str(a.repeat)], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    assert r["lookups"] == a.lookups, r["lookups"]
    return {"all_wall_s": r["wall_s"], "all_cpu_s": r["cpu_s"], "hits": r["hits"][r["wall_s"].index(min(r["wall_s"]))],
            "all_hits": r["hits"], "peak_mib": None}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lookups", type=int, default=10_000_000)
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=3, help="best of N for every contender")
    p.add_argument("--skip", default="", help=f"comma list of contenders to leave out ({','.join(CONTENDERS)})")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--oracle", "--hashed", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    a.skip = {s for s in a.skip.split(",") if s}
    if a.skip - set(CONTENDERS):
        p.error(f"--skip: unknown contender(s) {sorted(a.skip - set(CONTENDERS))}")

    m = machine()
    print(f"W-TinyLFU, one run: {a.lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {a.universe:,} keys, "
          f"seed {a.seed}, capacity {a.capacity:,} entries")
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs, Python {m['python']}, libcachesim {m['libcachesim']}")
    npy, a.oracle = stream_files(a)
    a.keys_txt, a.hashed = text_files(npy)
    res = {}
    for name in CONTENDERS:
        if name not in a.skip:
            res[name] = run_caffeine(a) if name == "caffeine" else run_python(name, a)
            r = res[name]
            r["wall_s"], r["cpu_s"] = min(r["all_wall_s"]), min(r["all_cpu_s"])
            r["lookups_per_s"] = a.lookups / r["wall_s"]
            r["lookups_per_cpu_s"] = a.lookups / r["cpu_s"]
            r["hit_rate"] = r["hits"] / a.lookups

    print(f"\n{'contender':<13}{'wall s':>9}{'M lookups/s':>13}{'CPU s':>8}{'M/CPU s':>9}{'hits':>12}{'hit rate':>10}"
          f"{'peak MiB':>10}")
    for name, r in res.items():
        peak = "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
        print(f"{name:<13}{r['wall_s']:>9.3f}{r['lookups_per_s'] / 1e6:>13.2f}{r['cpu_s']:>8.3f}"
              f"{r['lookups_per_cpu_s'] / 1e6:>9.2f}{r['hits']:>12,}{r['hit_rate']:>10.4f}{peak:>10}")
    print(f"  best of {a.repeat} runs each (cachescope, libcachesim: fresh subprocesses; caffeine: one JVM); wall and")
    print("  CPU columns are each the best run's.")
    if "caffeine" in res:
        print(f"  caffeine hits, every run: {res['caffeine']['all_hits']}")
    ratios = {f"cachescope/{n}": res["cachescope"]["lookups_per_s"] / r["lookups_per_s"]
              for n, r in res.items() if n != "cachescope" and "cachescope" in res}
    cpu_ratios = {f"cachescope/{n}": res["cachescope"]["lookups_per_cpu_s"] / r["lookups_per_cpu_s"]
                  for n, r in res.items() if n != "cachescope" and "cachescope" in res}
    print()
    for k, v in ratios.items():
        print(f"{k + ':':<25}{v:>7.2f}x wall, {cpu_ratios[k]:>6.2f}x CPU")
    verdict = None
    if "cachescope/libcachesim" in ratios:
        verdict = ratios["cachescope/libcachesim"] >= TARGET
        print(f"target: >= {TARGET:g}x libcachesim: {ratios['cachescope/libcachesim']:.2f}x "
              f"{'PASS' if verdict else 'FAIL'}")
    gap = None
    if "caffeine" in res and "cachescope" in res:
        gap = (res["cachescope"]["hits"] - res["caffeine"]["hits"]) / a.lookups * 100
        print(f"hit rate, cachescope - caffeine: {gap:+.3f} points")

    out = HERE / "results" / "wtinylfu.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "wtinylfu",
        "params": {k: getattr(a, k) for k in ("lookups", "universe", "alpha", "capacity", "seed", "repeat")},
        "skipped": sorted(a.skip), "machine": m, "contenders": res, "ratios": ratios, "cpu_ratios": cpu_ratios,
        "hit_rate_gap_vs_caffeine_points": gap, "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}},
        indent=2) + "\n")
    print(f"results: {out.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
