"""One W-TinyLFU run, side by side: cachescope vs libcachesim's WTinyLFU vs a real Caffeine cache.

The key stream is bench_lru.py's (common.py's seeded Zipf stream of uint64 ids, cached under bench/data/), capacity in
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
               Built with Maven through tests/caffeine_oracle.py (the replay project in tests/caffeine_replay).
cachescope and libcachesim run in fresh subprocesses, best of `--repeat`; see common.py for how peak memory is
measured (not measured for the JVM). Besides wall time, each run's CPU time is taken (the process's for the two
Python workers, the replaying thread's in the JVM): on a machine shared with other work the wall times swing
with the load, and the CPU-time ratio is the steadier of the two. Results go to bench/results/wtinylfu.json.
"""
import argparse, json, subprocess, sys, time
from pathlib import Path

import numpy as np

from common import (HERE, ROOT, add_common_options, add_skip_option, best_of, cachescope_ratios, cachescope_run,
                    libcachesim_run, machine, machine_line, params, parse_args, print_table, rel, run_worker,
                    stream_files, stream_line, target_verdict, write_results)

CONTENDERS = ["cachescope", "libcachesim", "caffeine"]
TARGET = 5.0  # cachescope >= 5x libcachesim's WTinyLFU


def text_files(npy):
    """The ids as a key-per-line text file, and cachescope's hashes of those lines (both cached)."""
    keys_txt, hashed = npy.with_suffix(".keys.txt"), npy.with_suffix(".texthash.npy")
    if not keys_txt.exists():
        t = time.perf_counter()
        np.savetxt(f"{keys_txt}.tmp", np.load(npy), fmt="%d")
        Path(f"{keys_txt}.tmp").replace(keys_txt)
        print(f"wrote {rel(keys_txt)} in {time.perf_counter() - t:.1f} s")
    if not hashed.exists():
        import cachescope
        keys = np.concatenate([b["keys"] for b in cachescope.open_trace(str(keys_txt)).batches()])
        np.save(f"{hashed}.tmp.npy", keys)
        Path(f"{hashed}.tmp.npy").replace(hashed)
    return keys_txt, hashed


def prepare(a):
    """Untimed setup of contender `a.worker`; returns the timed callable, which returns the hit count."""
    if a.worker == "cachescope":
        return cachescope_run(("wtinylfu", a.capacity), np.load(a.stream))
    if a.worker == "libcachesim":
        return libcachesim_run("WTinyLFU", a.oracle, a.capacity, a.lookups)
    raise SystemExit(f"unknown contender {a.worker!r}")


def run_python(name, a):
    runs = [run_worker(__file__, a, name) for _ in range(a.repeat)]
    # The table shows peak MiB without a caveat, so a peak that could not be measured is an error here.
    if not all(r["hwm_reset"] for r in runs):
        raise SystemExit(f"\n!!! {name}: could not reset VmHWM through /proc/self/clear_refs")
    res = best_of(name, runs, a.lookups)
    res["all_cpu_s"] = [r["cpu_s"] for r in runs]
    return res


def run_caffeine(a):
    sys.path.insert(0, str(ROOT / "tests"))
    from caffeine_oracle import replay_classpath
    classpath = replay_classpath()
    classes = ROOT / "target" / "bench-java"
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(HERE / "java" / "ReplayTimed.java")],
                   check=True)
    out = subprocess.run(["java", "-Xmx4g", "-cp", f"{classes}:{classpath}", "ReplayTimed", str(a.keys_txt),
                          str(a.capacity), str(a.repeat)], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    assert r["lookups"] == a.lookups, r["lookups"]
    best = r["wall_s"].index(min(r["wall_s"]))
    return {"all_wall_s": r["wall_s"], "all_cpu_s": r["cpu_s"], "hits": r["hits"][best], "all_hits": r["hits"],
            "peak_mib": None, "wall_s": r["wall_s"][best], "lookups_per_s": a.lookups / r["wall_s"][best],
            "hit_rate": r["hits"][best] / a.lookups}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.add_argument("--repeat", type=int, default=3, help="best of N for every contender")
    add_skip_option(p, CONTENDERS)
    a = parse_args(p, prepare)

    m = machine()
    print(f"W-TinyLFU, one run: {stream_line(a)}")
    print(machine_line(m, "libcachesim"))
    npy, a.oracle = stream_files(a, oracle="libcachesim" not in a.skip)
    a.keys_txt, a.stream = text_files(npy)  # cachescope feeds the hashes of the text keys Caffeine reads
    res = {}
    for name in CONTENDERS:
        if name not in a.skip:
            r = res[name] = run_caffeine(a) if name == "caffeine" else run_python(name, a)
            r["cpu_s"] = min(r["all_cpu_s"])
            r["lookups_per_cpu_s"] = a.lookups / r["cpu_s"]

    notes = [f"best of {a.repeat} runs each (cachescope, libcachesim: fresh subprocesses; caffeine: one JVM); wall and",
             "CPU columns are each the best run's."]
    if "caffeine" in res:
        notes.append(f"caffeine hits, every run: {res['caffeine']['all_hits']}")
    print_table([("contender", 13)], ["wall", "rate", "cpu", "cpu_rate", "hits", "hit_rate", "peak"],
                [((name,), r) for name, r in res.items()], notes)
    ratios = cachescope_ratios(res)
    cpu_ratios = cachescope_ratios(res, per="lookups_per_cpu_s")
    print()
    for k, v in ratios.items():
        print(f"{k + ':':<25}{v:>7.2f}x wall, {cpu_ratios[k]:>6.2f}x CPU")
    verdict = None
    if "cachescope/libcachesim" in ratios:
        verdict = target_verdict(TARGET, ratios["cachescope/libcachesim"])
    gap = None
    if "caffeine" in res and "cachescope" in res:
        gap = (res["cachescope"]["hits"] - res["caffeine"]["hits"]) / a.lookups * 100
        print(f"hit rate, cachescope - caffeine: {gap:+.3f} points")

    write_results("wtinylfu", {
        "params": params(a, "repeat"), "skipped": sorted(a.skip), "machine": m, "contenders": res, "ratios": ratios,
        "cpu_ratios": cpu_ratios, "hit_rate_gap_vs_caffeine_points": gap,
        "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
