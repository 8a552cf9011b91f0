"""Reading compressed traces: `simulate.py` on a zstd- (and gzip-) compressed trace against the same trace
uncompressed, in one run on one machine (the uncompressed file is the anchor). Target: zstd <= 1.3x the
uncompressed time.

Two traces, generated once under bench/data/: a `commands` text trace of feature-store HMGETs (Zipf entities,
1-4 fields each, two dozen feature ids) and libCacheSim's oracleGeneral binary of the same lookups' entity
ids. Each is compressed with the command-line tools' defaults (`zstd -3`, `gzip -6`). Two measures, each a
fresh process, the files read once before so no disk I/O is timed, contenders alternating, best of --repeat:
"read", the trace's batches read and dropped (`open_trace(path).batches()`: decoding and parsing, nothing
simulated), and "simulate", the whole `simulate.py FILE --lru N --json --no-progress` as a user runs it. All
runs of one trace must read the same lookups and report the same hits.

    python bench/bench_inputs.py [--lines 2000000] [--repeat 3]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
COMPRESS = {"zstd": (["zstd", "-q", "-3", "-f", "-k"], ".zst"), "gzip": (["gzip", "-6", "-f", "-k"], ".gz")}


def make_traces(lines: int, seed: int):
    DATA.mkdir(exist_ok=True)
    text = DATA / f"inputs_n{lines}_s{seed}.commands"
    oracle = DATA / f"inputs_n{lines}_s{seed}.oracleGeneral"
    if not text.exists() or not oracle.exists():
        rng = np.random.default_rng(seed)
        entities = rng.zipf(1.1, lines) % 500_000
        nfields = rng.integers(1, 5, lines)
        fields = rng.integers(0, 24, (lines, 4)) * 179_424_673 % 2**32  # two dozen feature ids
        with open(text, "w") as f:
            for e, n, fs in zip(entities.tolist(), nfields.tolist(), fields.tolist()):
                f.write(f"HMGET st_{e} {' '.join(map(str, fs[:n]))}\n")
        rec = np.zeros(lines, dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
        rec["t"] = np.arange(lines, dtype=np.uint32) // 1000
        rec["id"], rec["size"], rec["next"] = entities, 1, -1
        rec.tofile(oracle)
    out = {}
    for trace in (text, oracle):
        out[trace] = {"plain": trace}
        for kind, (cmd, suffix) in COMPRESS.items():
            packed = trace.with_name(trace.name + suffix)
            if not packed.exists():
                subprocess.run([*cmd, str(trace)], check=True)
            out[trace][kind] = packed
    return out


READER = """
import sys, time
from cachescope.trace.readers import open_trace
start = time.perf_counter()
n = sum(len(b["keys"]) for b in open_trace(sys.argv[1]).batches())
print(time.perf_counter() - start, n)
"""


def timed_read(path):
    path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", READER, str(path)], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{path}: {proc.stderr}")
    seconds, n = proc.stdout.split()
    return float(seconds), int(n)


def timed(path, capacity):
    path.read_bytes()  # into the page cache: no disk I/O timed
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "simulate.py", str(path), "--lru", str(capacity), "--json",
                           "--no-progress"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{path}: {proc.stderr}")
    (run,) = [r for r in json.loads(proc.stdout)["results"] if r["policy"] == "lru"]
    return seconds, run["hits"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--capacity", type=int, default=100_000)
    a = p.parse_args()
    traces = make_traces(a.lines, a.seed)
    verdicts = []
    for trace, files in traces.items():
        read = {kind: float("inf") for kind in files}
        best = {kind: float("inf") for kind in files}
        hits, lookups = set(), set()
        for _ in range(a.repeat):
            for kind, path in files.items():
                seconds, n = timed_read(path)
                read[kind] = min(read[kind], seconds)
                lookups.add(n)
                seconds, h = timed(path, a.capacity)
                best[kind] = min(best[kind], seconds)
                hits.add(h)
        assert len(hits) == 1 and len(lookups) == 1, f"{trace.name}: different hits {hits} or lookups {lookups}"
        plain_mb = files["plain"].stat().st_size / 1e6
        print(f"\n{trace.name}: {plain_mb:,.0f} MB plain, {files['zstd'].stat().st_size / 1e6:,.0f} MB zstd, "
              f"{files['gzip'].stat().st_size / 1e6:,.0f} MB gzip; {lookups.pop():,} events; "
              f"LRU {a.capacity:,} hits {hits.pop():,}; best of {a.repeat}")
        print("| input | read s | plain MB/s | vs uncompressed | simulate.py s | vs uncompressed |")
        print("|---|---|---|---|---|---|")
        for kind in files:
            print(f"| {kind} | {read[kind]:.2f} | {plain_mb / read[kind]:,.0f} | {read[kind] / read['plain']:.2f}x "
                  f"| {best[kind]:.2f} | {best[kind] / best['plain']:.2f}x |")
        for what, times in (("read", read), ("simulate.py", best)):
            verdict = times["zstd"] / times["plain"] <= 1.3
            verdicts.append(verdict)
            print(f"{what}: zstd / uncompressed = {times['zstd'] / times['plain']:.2f}x "
                  f"(target <= 1.3x: {'PASS' if verdict else 'FAIL'})")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
