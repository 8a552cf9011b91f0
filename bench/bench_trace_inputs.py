"""simulate.py on a Parquet trace against simulate.py on the capture it was parsed from, whole commands.

The capture is bench_parse.py's loopback capture of real feature-store traffic (redis-server + tcpdump, see
parse_capture.py; recorded once, cached under bench/data/), parsed once by `parse.py CAPTURE -o TRACE.parquet`.
Then, alternating, each a fresh process with the file in the page cache, best of --repeat:
  capture  `python simulate.py CAPTURE --port P --lru 100000 --no-progress --json`
  parquet  `python simulate.py TRACE.parquet --lru 100000 --no-progress --json`
Both must report the same lookups and hits. The issue's target: the Parquet trace at least 2x faster.
`--profile` adds where each command's time goes (cProfile's top functions, one run each).
"""
import argparse, cProfile, io, json, pstats, subprocess, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))  # this checkout's cachescope (for --profile, which runs it in this process)

import parse_capture  # noqa: E402
from common import machine, machine_line, run_with_peak  # noqa: E402


def simulate(args):
    """(wall seconds, (lookups, hits), peak resident bytes) of one whole `simulate.py` command."""
    seconds, out, peak = run_with_peak(ROOT / "simulate.py", *args, "--no-progress", "--json")
    doc = json.loads(out)
    return seconds, (doc["trace"]["lookups"], [r["hits"] for r in doc["results"]]), peak


def profile(args):
    """The top functions of one run in this process (cumulative seconds)."""
    from cachescope.cli.simulate import main

    prof, sink = cProfile.Profile(), io.StringIO()
    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        prof.runcall(main, [*map(str, args), "--no-progress"])
    finally:
        sys.stdout = stdout
    pstats.Stats(prof, stream=sink).sort_stats("tottime").print_stats(8)
    return sink.getvalue()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mb", type=float, default=270.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    capture, meta = parse_capture.cached(HERE / "data", a.size_mb)
    port = meta["port"]
    trace = capture.with_suffix(".parquet")
    if not trace.exists():
        subprocess.run([sys.executable, str(ROOT / "parse.py"), str(capture), "--port", str(port), "-o", str(trace),
                        "--no-progress"], check=True, capture_output=True)
    contenders = {"capture": [capture, "--port", port, "--lru", a.capacity],
                  "parquet": [trace, "--lru", a.capacity]}
    print(f"simulate.py, LRU {a.capacity:,}: {capture.name} ({capture.stat().st_size / 1e6:.0f} MB) against "
          f"{trace.name} ({trace.stat().st_size / 1e6:.0f} MB) parsed from it")
    print(machine_line(machine()))
    runs = {name: [] for name in contenders}
    for _ in range(a.repeat):
        for name, args in contenders.items():
            runs[name].append(simulate(args))
    answers = {name: {r[1][0]: r[1][1] for r in rs} for name, rs in runs.items()}
    peaks = {name: max(r[2] for r in rs) / 2**20 for name, rs in runs.items()}
    if answers["capture"] != answers["parquet"] or any(len(v) != 1 for v in answers.values()):
        print(f"DIFFERENT ANSWERS (lookups: hits): {answers}")
        sys.exit(1)
    best = {name: min(r[0] for r in rs) for name, rs in runs.items()}
    lookups = next(iter(answers["capture"]))
    for name in contenders:
        print(f"  {name:<8} {best[name]:6.2f} s  ({lookups / best[name] / 1e6:.2f} M lookups/s, whole command), "
              f"peak memory {peaks[name]:.0f} MiB")
    ratio = best["capture"] / best["parquet"]
    print(f"the Parquet trace is {ratio:.2f}x faster than its capture (target >= 2x: {'PASS' if ratio >= 2 else 'FAIL'})")
    if a.profile:
        for name, args in contenders.items():
            print(f"\n{name}: where the time goes\n{profile(args)}")


if __name__ == "__main__":
    main()
