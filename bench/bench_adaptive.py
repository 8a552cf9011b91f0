"""ARC, 2Q and S3-FIFO, one run each, side by side: cachescope vs libcachesim's implementation of the same policy.

The stream and its files are bench_lru.py's (common.py's seeded Zipf stream cached under bench/data/, with its
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
import argparse, sys
from functools import partial

import numpy as np

from common import (add_common_options, add_list_option, best_of, cachescope_ratios, cachescope_run,
                    hit_disagreement, hits_agree, interleaved, libcachesim_run, machine, machine_line, params,
                    parse_args, print_table, rel, run_worker, stream_files, stream_line, write_results)

TARGET = 3.0  # cachescope >= 3x libcachesim, per policy
# Our registry name -> libcachesim's class.
POLICIES = {"arc": "ARC", "2q": "TwoQ", "s3fifo": "S3FIFO"}
CONTENDERS = ["cachescope", "libcachesim"]


def prepare(a):
    """Untimed setup of `a.worker` (contender:policy); returns the timed callable, which returns the hit count."""
    contender, policy = a.worker.split(":")
    if contender == "cachescope":
        from cachescope.simulate.registry import POLICIES as REGISTRY

        defaults = {p.name: float(p.default) for p in REGISTRY[policy].params}
        return cachescope_run((policy, a.capacity, None, defaults), np.load(a.stream))
    return libcachesim_run(POLICIES[policy], a.oracle, a.capacity, a.lookups)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_options(p)
    p.add_argument("--repeat", type=int, default=3, help="best of N runs per contender and policy")
    add_list_option(p, "--policies", POLICIES, default=",".join(POLICIES), help=f"comma list of ({','.join(POLICIES)})")
    a = parse_args(p, prepare)
    policies = a.policies

    m = machine()
    print(f"ARC, 2Q, S3-FIFO, one run each: {stream_line(a)} (size 1)")
    print(machine_line(m, "libcachesim"))
    a.stream, a.oracle = stream_files(a)
    # Runs interleave (policy by policy, contender by contender, repeat by repeat) so that a change in the
    # machine's load during the benchmark falls on both contenders alike.
    jobs = {(pol, c): partial(run_worker, __file__, a, f"{c}:{pol}", label=f"{c} {pol}")
            for pol in policies for c in CONTENDERS}
    res = {}
    for (pol, c), rs in interleaved(jobs, a.repeat).items():
        res.setdefault(pol, {})[c] = best_of(f"{c} {pol}", rs, a.lookups)

    print_table([("policy", 8), ("contender", 13)], ["wall", "rate", "hits", "hit_rate", "peak"],
                [((pol, c), r) for pol in policies for c, r in res[pol].items()],
                [f"best of {a.repeat} runs each, every run a fresh subprocess; libcachesim's peak includes its mapped "
                 "trace file."])
    print()
    ratios = {pol: cachescope_ratios(res[pol])["cachescope/libcachesim"] for pol in policies}
    agree = all(hits_agree(res[pol].values()) for pol in policies)
    verdict = agree and all(r >= TARGET for r in ratios.values())
    for pol, r in ratios.items():
        print(f"cachescope/libcachesim {pol + ':':<8}{r:>7.2f}x  {'PASS' if r >= TARGET else 'FAIL'} "
              f"(target >= {TARGET:g}x)")

    write_results("adaptive", {
        "params": params(a, "repeat"), "stream": rel(a.stream), "machine": m, "results": res, "ratios": ratios,
        "hits_agree": agree, "target": {"min_ratio_vs_libcachesim": TARGET, "pass": verdict}})
    if not agree:
        return hit_disagreement("cachescope follows libCacheSim hit for hit", [
            f"{pol:<8} cachescope {res[pol]['cachescope']['hits']:,} libcachesim {res[pol]['libcachesim']['hits']:,}"
            for pol in policies])
    return 0


if __name__ == "__main__":
    sys.exit(main())
