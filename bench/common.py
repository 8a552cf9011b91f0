"""What the policy benchmarks (bench_lru.py, bench_policies.py, bench_adaptive.py, bench_wtinylfu.py) share: the
key stream and its files, the timed runs in fresh subprocesses and what they measure, and how the results are
shown, checked and saved. Each script keeps only its contenders, its targets and its options.

The stream. `numpy.random.default_rng(seed)`: popularity ranks drawn from Zipf(alpha) over the universe by inverse
CDF, then mapped through a random permutation of the ids, so an id says nothing about how popular it is. It is
generated once per parameter set and cached under bench/data/ as uint64 keys (.npy), with an oracleGeneral twin for
libcachesim (24-byte little-endian records: uint32 clock_time, uint64 obj_id, uint32 obj_size = 1, int64
next_access_vtime = -1).

The runs. Every timed run is a fresh interpreter (`<script> --worker <contender> ...`): untimed setup first (the
stream loaded; libcachesim's file read into the page cache, so no disk I/O is timed), then one timed call that
returns the hit count. Its peak memory is the growth of its peak RSS during that call: VmHWM is reset to the
current RSS (`/proc/self/clear_refs`, "5") just before it and read just after it, minus the RSS at the reset.
ru_maxrss is not used: it cannot be reset and a child inherits its parent's high-water mark across fork/exec.
libcachesim maps its trace file, so its peak includes those file pages (24 bytes a lookup); the file-backed part
of the growth is kept apart ("file MiB"). A contender is shown by its fastest run, and all its runs must report
the same hits.
"""
import argparse, compileall, functools, gc, importlib.metadata, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STREAM_PARAMS = ("lookups", "universe", "alpha", "capacity", "seed")
ORACLE = np.dtype([("clock_time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next_access_vtime", "<i8")])
assert ORACLE.itemsize == 24


# ---- options ---------------------------------------------------------------------------------------------
def add_common_options(p):
    """The stream options every script takes, with the same defaults, and the worker mode's hidden ones."""
    p.add_argument("--lookups", type=int, default=10_000_000)
    p.add_argument("--universe", type=int, default=1_000_000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--capacity", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    # --stream: the uint64 keys a cachescope worker feeds; --out: where a worker writes what it measured.
    for hidden in ("--stream", "--oracle", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)


def add_list_option(p, flag, known, what="", **kwargs):
    """A comma-list option over the names in `known`: its value is the list of the names given, in their order,
    each once; any other name is a usage error."""
    def names(text):
        given = list(dict.fromkeys(s for s in text.split(",") if s))
        if set(given) - set(known):
            p.error(f"{flag}: unknown {what}{sorted(set(given) - set(known))}; known: {','.join(known)}")
        return given
    p.add_argument(flag, type=names, **kwargs)


def add_skip_option(p, contenders):
    add_list_option(p, "--skip", contenders, "contender(s) ", default="",
                    help=f"comma list of contenders to leave out ({','.join(contenders)})")


def parse_args(p, prepare):
    """The driver's options; in worker mode (`--worker`, given by the driver) one timed run, then exit."""
    a = p.parse_args()
    if a.worker:
        worker(prepare, a)
        sys.exit(0)
    return a


def params(a, *extra):
    return {k: getattr(a, k) for k in (*STREAM_PARAMS, *extra)}


def stream_line(a):
    return (f"{a.lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {a.universe:,} keys, seed {a.seed}, "
            f"capacity {a.capacity:,} entries")


def rel(path):
    return str(Path(path).relative_to(ROOT))


# ---- the stream ------------------------------------------------------------------------------------------
def zipf_stream(lookups, universe, alpha, seed):
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, universe + 1, dtype=np.float64) ** -alpha)
    cdf /= cdf[-1]
    ranks = np.minimum(np.searchsorted(cdf, rng.random(lookups), side="right"), universe - 1)
    ids = rng.permutation(universe).astype(np.uint64)
    return ids[ranks]


def stream_files(a, oracle=True):
    """The cached stream (.npy) and its oracleGeneral twin (written only if `oracle`), generated once per
    parameter set."""
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    stem = data / f"zipf_n{a.lookups}_u{a.universe}_a{a.alpha:g}_s{a.seed}"
    npy, oracle_path = stem.with_suffix(".npy"), stem.with_suffix(".oracleGeneral")
    if not npy.exists():
        t = time.perf_counter()
        keys = zipf_stream(a.lookups, a.universe, a.alpha, a.seed)
        np.save(f"{npy}.tmp.npy", keys)
        os.replace(f"{npy}.tmp.npy", npy)
        print(f"generated {rel(npy)} in {time.perf_counter() - t:.1f} s")
        oracle_path.unlink(missing_ok=True)
    if oracle and (not oracle_path.exists() or oracle_path.stat().st_size != 24 * a.lookups):
        keys = np.load(npy)
        rec = np.empty(len(keys), ORACLE)
        rec["clock_time"] = np.arange(len(keys), dtype=np.uint64).astype(np.uint32)
        rec["obj_id"], rec["obj_size"], rec["next_access_vtime"] = keys, 1, -1
        rec.tofile(f"{oracle_path}.tmp")
        os.replace(f"{oracle_path}.tmp", oracle_path)
    return npy, oracle_path


# ---- worker side: one contender, one timed run, in its own process ---------------------------------------
def cachescope_run(spec, keys):
    """cachescope's timed call: the whole uint64 array fed in one call to a simulation of `spec`."""
    from cachescope import _native

    sim = _native.Simulation([spec], 10_000)
    return lambda: (sim.feed(keys), sim.results()[0]["hits"])[1]


def libcachesim_run(policy_class, oracle, capacity, lookups):
    """libcachesim's timed call, its fastest path: `process_trace` reads (mmap) and simulates the whole
    oracleGeneral file in C, without a Python call per request."""
    import libcachesim

    with open(oracle, "rb") as f:  # into the page cache: time C's reading, not the disk
        while f.read(1 << 24):
            pass
    reader = libcachesim.TraceReader(str(oracle), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(libcachesim, policy_class)(cache_size=capacity)
    return lambda: round((1.0 - cache.process_trace(reader)[0]) * lookups)


def proc_status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in f) if v.strip().endswith("kB")}


def reset_hwm():
    """Resets VmHWM to the current RSS; False where the kernel does not let us."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(prepare, a):
    """Worker mode: `prepare(a)` does the untimed setup and returns the timed call, which returns the hit count;
    one timed run, what it measured written to `a.out` as JSON."""
    run = prepare(a)
    gc.collect()
    reset = reset_hwm()
    before = proc_status()
    c, t = time.process_time(), time.perf_counter()
    hits = run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    after = proc_status()
    Path(a.out).write_text(json.dumps({
        "wall_s": wall, "cpu_s": cpu, "hits": int(hits), "peak_bytes": after["VmHWM"] - before["VmRSS"],
        "hwm_reset": reset, "file_bytes": after.get("RssFile", 0) - before.get("RssFile", 0)}))


# ---- driver side -----------------------------------------------------------------------------------------
def run_worker(script, a, name, *extra, label=None):
    """One timed run of contender `name` in a fresh interpreter (`script --worker name`, with a's stream files,
    capacity and lookups, then `extra`); returns what it measured. A failing worker ends the benchmark."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, str(script), "--worker", name, "--stream", str(a.stream), "--oracle", str(a.oracle),
               "--capacity", str(a.capacity), "--lookups", str(a.lookups), *extra, "--out", out.name]
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
            raise SystemExit(f"\n!!! {label or name} failed (see its stderr above)")
        return json.loads(Path(out.name).read_text())


def run_with_peak(script, *args, cwd=None):
    """`python SCRIPT ARGS...` as a whole process, to its end (a failure ends the benchmark); returns (wall
    seconds, its stdout, its peak resident memory in bytes, measured by peak.py inside it)."""
    _compile_modules()
    with tempfile.NamedTemporaryFile(suffix=".peak") as peak:
        cmd = [sys.executable, str(HERE / "peak.py"), str(script), *map(str, args)]
        t = time.perf_counter()
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "PEAK_RSS_FILE": peak.name})
        seconds = time.perf_counter() - t
        if out.returncode != 0:
            raise SystemExit(f"\n!!! {' '.join(cmd)} failed:\n{out.stderr}")
        return seconds, out.stdout, int(Path(peak.name).read_text())


@functools.cache
def _compile_modules():
    """cachescope's modules compiled, as every run of a checkout but its first finds them: where
    PYTHONDONTWRITEBYTECODE is set (some sandboxes), each whole-process run would compile the edited ones again."""
    compileall.compile_dir(str(HERE.parent / "cachescope"), quiet=1)


def interleaved(jobs, repeat):
    """`repeat` runs of each job (key -> callable doing one run), round by round, so that a burst of load from
    elsewhere on a shared machine falls on all of them rather than on all runs of one."""
    runs = {key: [] for key in jobs}
    for _ in range(repeat):
        for key, job in jobs.items():
            runs[key].append(job())
    return runs


def best_of(label, runs, lookups):
    """One contender's result: its fastest run; every run must have reported the same hits."""
    if len({r["hits"] for r in runs}) != 1:
        raise SystemExit(f"\n!!! {label}: hit counts differ between runs: {[r['hits'] for r in runs]}")
    best = min(runs, key=lambda r: r["wall_s"])
    return {"runs": len(runs), "wall_s": best["wall_s"], "all_wall_s": [r["wall_s"] for r in runs],
            "lookups_per_s": lookups / best["wall_s"], "hits": best["hits"], "hit_rate": best["hits"] / lookups,
            "peak_mib": max(r["peak_bytes"] for r in runs) / 2**20, "file_mib": best["file_bytes"] / 2**20,
            "hwm_reset": all(r["hwm_reset"] for r in runs)}


# ---- report ----------------------------------------------------------------------------------------------
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


def machine_line(m, *packages):
    return (f"machine: {m['cpu']}, {m['nproc']} CPUs, Linux {m['kernel']}, Python {m['python']}"
            + "".join(f", {pkg} {m[pkg]}" for pkg in packages))


# column -> (title, width, the cell of one result), right-aligned
COLUMNS = {
    "runs": ("runs", 5, lambda r: f"{r['runs']}" + ("" if r["runs"] == 1 else "*")),
    "wall": ("wall s", 9, lambda r: f"{r['wall_s']:.3f}"),
    "rate": ("M lookups/s", 13, lambda r: f"{r['lookups_per_s'] / 1e6:.2f}"),
    "cpu": ("CPU s", 8, lambda r: f"{r['cpu_s']:.3f}"),
    "cpu_rate": ("M/CPU s", 9, lambda r: f"{r['lookups_per_cpu_s'] / 1e6:.2f}"),
    "hits": ("hits", 12, lambda r: f"{r['hits']:,}"),
    "hit_rate": ("hit rate", 10, lambda r: f"{r['hit_rate']:.4f}"),
    "peak": ("peak MiB", 10, lambda r: "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"),
    "file": ("file MiB", 10, lambda r: f"{r['file_mib']:.1f}"),
}
RUN_COLUMNS = ["runs", "wall", "rate", "hits", "hit_rate", "peak", "file"]


def print_table(lead, columns, rows, notes=()):
    """lead: (title, width) of the left-aligned name columns; columns: keys of COLUMNS; rows: (names, result);
    notes: lines under the table, followed by a warning if a peak could not be measured from a reset VmHWM."""
    print("\n" + "".join(f"{title:<{w}}" for title, w in lead)
          + "".join(f"{COLUMNS[c][0]:>{COLUMNS[c][1]}}" for c in columns))
    for names, r in rows:
        print("".join(f"{n:<{w}}" for n, (_, w) in zip(names, lead))
              + "".join(f"{COLUMNS[c][2](r):>{COLUMNS[c][1]}}" for c in columns))
    for line in notes:
        print(f"  {line}")
    if not all(r.get("hwm_reset", True) for _, r in rows):
        print("  WARNING: could not reset VmHWM; peak MiB may be underestimated.")


def cachescope_ratios(res, per="lookups_per_s"):
    """cachescope's rate over every other contender's, keyed `cachescope/<name>`."""
    return {f"cachescope/{n}": res["cachescope"][per] / r[per]
            for n, r in res.items() if n != "cachescope" and "cachescope" in res}


def target_verdict(target, ratio, agree=True):
    """Prints the target line; passing needs the ratio and, where hits must agree, agreeing hits."""
    verdict = agree and ratio >= target
    print(f"target: >= {target:g}x libcachesim: {ratio:.2f}x {'PASS' if verdict else 'FAIL'}"
          f"{'' if agree else ' (hit counts disagree)'}")
    return verdict


def hits_agree(results):
    return len({r["hits"] for r in results}) <= 1


def hits_by_contender(res):
    return [f"{n:<12} {r['hits']:,}" for n, r in res.items()]


def hit_disagreement(why, lines):
    """The loud block for hit counts that must be equal and are not; returns the exit status, 1."""
    print("\n" + "!" * 72 + f"\n!!! HIT COUNTS DISAGREE: {why}:\n" + "".join(f"!!!   {l}\n" for l in lines)
          + "!" * 72, flush=True)
    return 1


def write_results(benchmark, fields):
    out = HERE / "results" / f"{benchmark}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"benchmark": benchmark, **fields}, indent=2) + "\n")
    print(f"results: {rel(out)}")
