"""Real Caffeine as an oracle for the W-TinyLFU policy: seeded traces it has never been tuned on, and the hits a
real Caffeine 3.2.3 cache gets on them, replayed by `tests/caffeine_replay` (built with Maven).

    python tests/caffeine_oracle.py    # builds the replay tool if needed, rewrites tests/data/wtinylfu_caffeine.json

Caffeine admits a few warm candidates at random (1 in 128 ties, against hash flooding), so its hit count is a
draw from a distribution: ~0.02 points wide on cloudPhysicsIO, but over a point wide on a loop or a shifting
popularity trace, where one early admission changes which keys stay. Each capacity is therefore replayed RUNS
times, and a simulator is judged by its distance to the range of those runs.

The traces are generated from `numpy.random.default_rng(seed).random()` draws only (inverse CDF and argsort
permutations), whose streams numpy keeps stable, and each trace's SHA-256 is stored next to its numbers so a
changed generator is an error, not a silent comparison with another trace.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
REPLAY_SRC = REPO / "tests" / "caffeine_replay"
REPLAY_BUILD = REPO / "target" / "caffeine-replay"  # cargo's target dir: gitignored, survives between runs
DATA = TESTS / "data" / "wtinylfu_caffeine.json"
MONITOR = REPO / "sample_traces" / "feature_store.monitor"


# ---- traces ----------------------------------------------------------------------------------------------
def _zipf_ranks(rng, n, universe, alpha):
    cdf = np.cumsum(np.arange(1, universe + 1, dtype=np.float64) ** -alpha)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), universe - 1)


def _permutation(rng, n):
    return np.argsort(rng.random(n), kind="stable")


def zipf(seed, n, universe, alpha, prefix):
    rng = np.random.default_rng(seed)
    ids = _permutation(rng, universe)[_zipf_ranks(rng, n, universe, alpha)]
    return [f"{prefix}{i}" for i in ids]


def scan_heavy(seed, n, hot, alpha=0.9):
    """A Zipf working set of `hot` keys, interrupted by sequential scans of never-seen keys (1k to 20k long)."""
    rng = np.random.default_rng(seed)
    out, fresh = [], 0
    while len(out) < n:
        burst = int(2_000 + rng.random() * 20_000)
        out += [f"hot:{i}" for i in _zipf_ranks(rng, burst, hot, alpha)]
        scan = int(1_000 + rng.random() * 19_000)
        out += [f"scan:{fresh + i}" for i in range(scan)]
        fresh += scan
    return out[:n]


def loop(n, length):
    """The same `length` keys over and over: LRU's worst case below `length`."""
    return [f"loop/{i % length}" for i in range(n)]


def shifting(seed, n, universe, phases, alpha=1.0):
    """Zipf popularity whose hottest keys change at every phase (a fresh rank-to-id permutation)."""
    rng = np.random.default_rng(seed)
    per = n // phases
    out = []
    for _ in range(phases):
        ids = _permutation(rng, universe)[_zipf_ranks(rng, per, universe, alpha)]
        out += [f"item-{i:07d}" for i in ids]
    return out


_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def feature_store(granularity):
    """The sample capture's HMGET lookups as cache keys: `entity/field`, or `entity` alone."""
    out = []
    for line in MONITOR.read_text().splitlines():
        args = _QUOTED.findall(line)
        if len(args) >= 3 and args[0].upper() == "HMGET":
            key = args[1]
            out += [f"{key}/{f}" for f in args[2:]] if granularity == "field" else [key] * (len(args) - 2)
    return out


# name -> (keys, capacities)
TRACES = {
    "zipf_a0.7_u100k": (lambda: zipf(11, 300_000, 100_000, 0.7, "k"), [100, 1_000, 10_000, 50_000]),
    "zipf_a1.0_u1m": (lambda: zipf(12, 300_000, 1_000_000, 1.0, "user:"), [100, 1_000, 10_000, 100_000]),
    "zipf_a1.3_u10k": (lambda: zipf(13, 200_000, 10_000, 1.3, ""), [100, 500, 2_000]),
    "zipf_a0.5_u20k": (lambda: zipf(14, 200_000, 20_000, 0.5, "blk"), [100, 2_000, 10_000]),
    "scan_heavy": (lambda: scan_heavy(15, 300_000, 5_000), [100, 1_000, 4_000, 20_000]),
    "loop_5000": (lambda: loop(200_000, 5_000), [100, 1_000, 4_900, 5_000, 6_000]),
    "shifting": (lambda: shifting(16, 300_000, 50_000, 5), [100, 1_000, 5_000, 20_000]),
    "feature_store_fields": (lambda: feature_store("field"), [100, 1_000, 5_000, 20_000]),
    "feature_store_entities": (lambda: feature_store("entity"), [100, 500, 2_000]),
}


def write_keys(keys, path):
    text = "\n".join(keys) + "\n"
    Path(path).write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


# ---- the real thing --------------------------------------------------------------------------------------
def replay_classpath():
    """Builds the replay project once (a copy under target/, so that the build leaves the checkout clean); its classpath."""
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"the Caffeine replay needs {tool!r} (Maven and a JDK 17+) on the PATH")
    jar = REPLAY_BUILD / "target" / "replay-1.jar"
    sources = [p for p in REPLAY_SRC.rglob("*") if p.is_file()]
    if not jar.exists() or max(p.stat().st_mtime for p in sources) > jar.stat().st_mtime:
        shutil.rmtree(REPLAY_BUILD, ignore_errors=True)
        shutil.copytree(REPLAY_SRC, REPLAY_BUILD)
        for p in REPLAY_BUILD.rglob("*"):
            p.chmod(p.stat().st_mode | 0o200)
        proc = subprocess.run(["mvn", "-q", "-B", "package", "-DskipTests"], cwd=REPLAY_BUILD,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"maven build of the Caffeine replay failed:\n{proc.stdout}\n{proc.stderr}")
    return f"{jar}:{REPLAY_BUILD / 'target' / 'lib'}/*"


RUNS = 5


def caffeine_hits(path, capacities, classpath, runs=RUNS):
    """{capacity: [hits of each run]} of a real Caffeine cache (maximumSize = capacity) replaying the key file,
    each capacity `runs` times in one JVM (a fresh cache each time)."""
    proc = subprocess.run(["java", "-cp", classpath, "replay.Replay", str(path), *map(str, capacities * runs)],
                          capture_output=True, text=True, check=True)
    # The output repeats capacities as JSON object keys, so it is read pair by pair, not with json.loads.
    pairs = re.findall(r'"(\d+)": (\d+)', proc.stdout.split('"hits"', 1)[1])
    out = {c: [] for c in capacities}
    for c, h in pairs:
        out[int(c)].append(int(h))
    assert all(len(v) == runs for v in out.values()), proc.stdout
    return out


def distance_points(ours, runs, lookups):
    """How far `ours` lies outside the range of Caffeine's runs, in points of hit rate (0 inside it)."""
    return max(min(runs) - ours, ours - max(runs), 0) / lookups * 100


def measure(workdir):
    """Generates every trace under `workdir` and replays it through Caffeine: the JSON document for DATA."""
    classpath = replay_classpath()
    out = {}
    for name, (make, capacities) in TRACES.items():
        keys = make()
        path = Path(workdir) / f"{name}.keys.txt"
        sha = write_keys(keys, path)
        hits = caffeine_hits(path, capacities, classpath)
        out[name] = {"lookups": len(keys), "sha256": sha, "capacities": capacities,
                     "caffeine_hits": [sorted(hits[c]) for c in capacities]}
    return out


def main():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        traces = measure(tmp)
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps({
        "about": "Hits of a real Caffeine 3.2.3 cache (maximumSize = capacity, executor = caller thread) replaying "
                 "the traces generated by tests/caffeine_oracle.py, one key per line, cold start; written by "
                 f"`python tests/caffeine_oracle.py`. caffeine_hits: per capacity, the sorted hits of {RUNS} runs "
                 "(Caffeine admits some warm candidates at random, so runs differ).",
        "traces": traces}, indent=1) + "\n")
    print(f"wrote {DATA.relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(main())
