"""Issue 29's figures in one run: SHARDS and the exact curve against libCacheSim's mrcProfiler, Dask on the
workers this machine has, and a billion lookups end to end. Each section is a script of `bench/scale/` run
as it would be alone (its own options after `--`), one after the other, so that no two share the cores.

    python bench/bench_scale.py                        # anchors, then dask, then billion (hours at 1e9)
    python bench/bench_scale.py --only anchors,dask    # the figures the issue holds to, about 30 min
    python bench/bench_scale.py --only billion -- --scales 1e7,1e8
    python bench/bench_scale.py --only anchors,dask --anchors "--mrc-exact-timeout 700" --dask "--repeat 2"

Options after `--` go to every section; `--anchors`, `--dask` and `--billion` give one section its own.
"""

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

SCALE = Path(__file__).resolve().parent / "scale"
SECTIONS = {
    "anchors": "anchors.py",      # SHARDS at 1% and the exact curve against mrcProfiler, 2e7 and 1e8 lookups
    "dask": "dask_scaling.py",    # a sweep of 8 tasks and a 64-pod fleet on 1 and 2 single-threaded workers
    "billion": "billion.py",      # LRU, SHARDS, exact curve and a 64-pod fleet over 1e7, 1e8 and 1e9 lookups
}


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=",".join(SECTIONS), help=f"sections, comma list of {', '.join(SECTIONS)}")
    for name in SECTIONS:
        p.add_argument(f"--{name}", default="", metavar="OPTIONS", help=f"options of {SECTIONS[name]} alone, quoted")
    a = p.parse_args(own)
    chosen = [s.strip() for s in a.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        p.error(f"unknown section {unknown[0]!r}: choose among {', '.join(SECTIONS)}")
    failed = []
    for name in chosen:
        args = [*shlex.split(getattr(a, name)), *extra]
        print(f"\n=== {name}: bench/scale/{SECTIONS[name]} {shlex.join(args)}", flush=True)
        start = time.monotonic()
        code = subprocess.call([sys.executable, str(SCALE / SECTIONS[name]), *args])
        print(f"=== {name}: exit {code}, {time.monotonic() - start:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
