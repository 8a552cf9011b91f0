"""One LRU run, side by side: cachescope vs libcachesim, cachetools and functools.lru_cache.

All four contenders simulate exact LRU with the same capacity (entries, every object of size 1) over the
same key stream: common.py's seeded Zipf stream, cached under bench/data/. Exact LRU is deterministic, so all
hit counts must be equal; the script exits 1 if they are not.

What is timed, per contender (each run in a fresh subprocess, the stream already in memory; common.py says how
peak memory is measured):
  cachescope   `_native.Simulation([("lru", C)], 10_000).feed(keys)`: one call on a uint64 numpy array,
               all hash-table and recency-list work in Rust.
  libcachesim  `LRU(cache_size=C).process_trace(TraceReader(file, ORACLE_GENERAL_TRACE))`. This is its
               fastest path: the whole trace is read and simulated in C, without one Python call per
               request. The oracleGeneral file is written once beforehand and read into the page cache
               before timing, so the time covers C reading its (mmap'd) file and simulating, no disk I/O.
  cachetools   a Python loop over `LRUCache` (`k in cache` -> `cache[k]` to refresh recency, else insert).
  functools    a Python loop calling a no-op function wrapped in `lru_cache(maxsize=C)`.
Keys are Python ints for the two Python loops (converted before timing).
"""
import argparse, sys

import numpy as np

from common import (RUN_COLUMNS, add_common_options, add_skip_option, best_of, cachescope_ratios, cachescope_run,
                    hit_disagreement, hits_agree, hits_by_contender, libcachesim_run, machine, machine_line, params,
                    parse_args, print_table, rel, run_worker, stream_files, stream_line, target_verdict,
                    write_results)

CONTENDERS = ["cachescope", "libcachesim", "cachetools", "functools"]
SLOW = {"cachetools", "functools"}  # Python loops: run --slow-repeat times (default once)
TARGET = 5.0  # cachescope >= 5x libcachesim (DESIGN.md, "Performance targets")


def prepare(a):
    """Untimed setup of contender `a.worker`; returns the timed callable, which returns the hit count."""
    if a.worker == "cachescope":
        return cachescope_run(("lru", a.capacity), np.load(a.stream))
    if a.worker == "libcachesim":
        return libcachesim_run("LRU", a.oracle, a.capacity, a.lookups)
    ints = np.load(a.stream).tolist()
    if a.worker == "cachetools":
        import cachetools
        cache = cachetools.LRUCache(maxsize=a.capacity)

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
    if a.worker == "functools":
        import functools

        @functools.lru_cache(maxsize=a.capacity)
        def noop(k):
            return None

        def run():
            for k in ints:
                noop(k)
            return noop.cache_info().hits
        return run
    raise SystemExit(f"unknown contender {a.worker!r}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.add_argument("--repeat", type=int, default=3, help="best of N for cachescope and libcachesim")
    p.add_argument("--slow-repeat", type=int, default=1, help="best of N for cachetools and functools")
    add_skip_option(p, CONTENDERS)
    a = parse_args(p, prepare)

    m = machine()
    print(f"LRU, one run: {stream_line(a)} (size 1)")
    print(machine_line(m, "libcachesim", "cachetools"))
    a.stream, a.oracle = stream_files(a, oracle="libcachesim" not in a.skip)
    res = {}
    for name in CONTENDERS:
        if name not in a.skip:
            repeat = a.slow_repeat if name in SLOW else a.repeat
            res[name] = best_of(name, [run_worker(__file__, a, name) for _ in range(repeat)], a.lookups)

    print_table([("contender", 13)], RUN_COLUMNS, [((name,), r) for name, r in res.items()], [
        "* best of N runs (wall s = fastest); runs = 1: a single run. Each run is a fresh subprocess.",
        "libcachesim: process_trace on an oracleGeneral file, whole trace read (mmap) and simulated in C:",
        "its fastest path. Its peak MiB includes the mapped trace file (the file MiB column).",
        "peak MiB: growth of peak RSS during the timed part (VmHWM reset via /proc/self/clear_refs)."])

    agree = hits_agree(res.values())
    ratios = cachescope_ratios(res)
    print()
    for k, v in ratios.items():
        print(f"{k + ':':<25}{v:>7.2f}x")
    verdict = None
    if "cachescope/libcachesim" in ratios:
        verdict = target_verdict(TARGET, ratios["cachescope/libcachesim"], agree)
    else:
        print(f"target: >= {TARGET:g}x libcachesim: not measured (skipped)")

    write_results("lru", {
        "params": params(a, "repeat", "slow_repeat"), "skipped": sorted(a.skip), "stream": rel(a.stream),
        "machine": m, "contenders": res, "ratios": ratios, "hits_agree": agree,
        "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}})
    if not agree:
        return hit_disagreement("all contenders are exact LRU and must be equal", hits_by_contender(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
