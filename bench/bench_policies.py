"""One run of one policy, side by side: cachescope vs libcachesim's policy of the same name.

`--policy lru|lfu|fifo|clock|sieve` picks the policy; both contenders simulate it exactly (libCacheSim's
semantics are the specification cachescope's policies follow) with the same capacity in entries, every
object of size 1, over the same seeded Zipf stream as `bench_lru.py` (common.py's, the same cached files under
bench/data/). Hit counts must be equal; the script exits 1 if they are not.

What is timed, per contender (each run in a fresh subprocess, the stream already in memory):
  cachescope   `_native.Simulation([(policy, C)], 10_000).feed(keys)`: one call on a uint64 numpy array.
  libcachesim  `<Policy>(cache_size=C).process_trace(TraceReader(file, ORACLE_GENERAL_TRACE))`: the whole
               trace read (mmap) and simulated in C, its fastest path; the file is read into the page cache
               before timing. CLOCK runs with libcachesim's defaults (1-bit counter, init_freq=0).
Peak memory as in common.py (VmHWM reset just before the timed part). The contenders' runs alternate.
"""
import argparse, sys
from functools import partial

import numpy as np

from common import (RUN_COLUMNS, add_common_options, best_of, cachescope_ratios, cachescope_run, hit_disagreement,
                    hits_agree, hits_by_contender, interleaved, libcachesim_run, machine, machine_line, params,
                    parse_args, print_table, rel, run_worker, stream_files, stream_line, target_verdict,
                    write_results)

CONTENDERS = ["cachescope", "libcachesim"]
LIBCACHESIM = {"lru": "LRU", "lfu": "LFU", "fifo": "FIFO", "clock": "Clock", "sieve": "Sieve"}
# cachescope / libcachesim lookups/s that each policy should reach.
TARGETS = {"lru": 5.0, "lfu": 5.0, "fifo": 3.0, "clock": 3.0, "sieve": 3.0}


def prepare(a):
    """Untimed setup of contender `a.worker`; returns the timed callable, which returns the hit count."""
    if a.worker == "cachescope":
        return cachescope_run((a.policy, a.capacity), np.load(a.stream))
    if a.worker == "libcachesim":
        return libcachesim_run(LIBCACHESIM[a.policy], a.oracle, a.capacity, a.lookups)
    raise SystemExit(f"unknown contender {a.worker!r}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--policy", choices=sorted(LIBCACHESIM), required=True)
    add_common_options(p)
    p.add_argument("--repeat", type=int, default=3, help="best of N for each contender")
    a = parse_args(p, prepare)

    m = machine()
    target = TARGETS[a.policy]
    print(f"{a.policy.upper()}, one run: {stream_line(a)} (size 1)")
    print(machine_line(m, "libcachesim"))
    a.stream, a.oracle = stream_files(a)
    runs = interleaved({name: partial(run_worker, __file__, a, name, "--policy", a.policy) for name in CONTENDERS},
                       a.repeat)
    res = {name: best_of(name, rs, a.lookups) for name, rs in runs.items()}

    print_table([("contender", 13)], RUN_COLUMNS, [((name,), r) for name, r in res.items()], [
        "* best of N runs (wall s = fastest), the two contenders' runs alternating. Each run is a fresh subprocess.",
        "libcachesim: process_trace on an oracleGeneral file, whole trace read (mmap) and simulated in C.",
        "Its peak MiB includes the mapped trace file (the file MiB column)."])

    agree = hits_agree(res.values())
    ratios = cachescope_ratios(res)
    print(f"\ncachescope/libcachesim: {ratios['cachescope/libcachesim']:.2f}x")
    verdict = target_verdict(target, ratios["cachescope/libcachesim"], agree)

    write_results(a.policy, {
        "params": {"policy": a.policy, **params(a, "repeat")}, "stream": rel(a.stream), "machine": m,
        "contenders": res, "ratios": ratios, "hits_agree": agree,
        "target": {"min_ratio_vs_libcachesim": target, "pass": verdict}})
    if not agree:
        return hit_disagreement(f"both contenders are exact {a.policy.upper()}", hits_by_contender(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
