"""Text trace readers, side by side: each text format (keys, commands, monitor) read by this checkout's reader
and by a reader built before it (`--before DIR`, a checkout with its extension built: the anchor, measured in
the same run), in MB/s; and the whole command `simulate.py KEYS.txt --lru C` against libcachesim reading the
same text file (`TraceReader(PLAIN_TXT_TRACE)` + `LRU.process_trace`), with equal hits asserted.

Every contender is a fresh interpreter; best of `--repeat`, runs interleaved so that load from elsewhere falls
on all of them. A reader's clock starts once numpy and cachescope are imported, with `OPENBLAS_NUM_THREADS=1`
as the command line sets it; the whole command's figure counts everything. The inputs are made once from
common.py's Zipf stream and cached under bench/data/: `keys` (one id a line, the stream itself), `commands`
(`HMGET st_<id> f1 f2 f3 f4`, four lookups a line, with an `HSET` every 50 lines) and `monitor` (the same
commands as `redis-cli MONITOR` prints them).
"""
import argparse, json, os, sys, time
from pathlib import Path

# As the command line does (cachescope/cli), before numpy is first imported, here or by common.py: OpenBLAS's
# idle threads otherwise spin on a core the readers use (15% of a reader's samples on 2 cores, measured). It
# only counts when set before that import, so it is set here, for every contender's process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from common import HERE, add_common_options, machine, machine_line, rel, run_with_peak, stream_files

REPO = HERE.parent
FIELDS = ("2496559762", "1170383926", "3344556677", "90210")


def text_files(a):
    """(keys, commands, monitor) text traces of the stream, written once."""
    npy, _ = stream_files(a, oracle=False)
    stem = npy.with_suffix("")
    paths = {"keys": Path(f"{stem}.keys.txt"), "commands": Path(f"{stem}.commands.txt"),
             "monitor": Path(f"{stem}.monitor")}
    if all(p.exists() for p in paths.values()):
        return paths
    keys = np.load(npy)
    if not paths["keys"].exists():
        np.savetxt(paths["keys"], keys, fmt="%d")
    entities = keys[: len(keys) // 4]  # four lookups a line: as many lookups as the keys file
    rng = np.random.default_rng(a.seed)
    clients = [f"10.0.0.{i}:{5000 + i}" for i in range(3)]
    with open(paths["commands"], "w") as cmds, open(paths["monitor"], "w") as mon:
        mon.write("OK\n")
        fields = " ".join(FIELDS)
        quoted = " ".join(f'"{f}"' for f in FIELDS)
        for i, e in enumerate(entities.tolist()):
            ts = 1_700_000_000 + i / 1e4
            client = clients[int(rng.integers(3))]
            if i % 50 == 49:
                cmds.write(f"HSET st_{e} {FIELDS[0]} v\n")
                mon.write(f'{ts:.6f} [0 {client}] "HSET" "st_{e}" "{FIELDS[0]}" "v"\n')
            cmds.write(f"HMGET st_{e} {fields}\n")
            mon.write(f'{ts:.6f} [0 {client}] "HMGET" "st_{e}" {quoted}\n')
    return paths


def worker(a):
    """One timed contender; prints its measures as JSON on stdout."""
    if a.worker == "libcachesim":
        import libcachesim

        t = time.perf_counter()
        reader = libcachesim.TraceReader(a.path, libcachesim.TraceType.PLAIN_TXT_TRACE)
        miss_ratio = libcachesim.LRU(cache_size=a.capacity).process_trace(reader)[0]
        n = sum(1 for _ in open(a.path, "rb"))
        print(json.dumps({"seconds": time.perf_counter() - t, "hits": round((1 - miss_ratio) * n)}))
        return
    sys.path.insert(0, a.checkout)
    # The clock starts after the imports, numpy's included (imported at the top, ~0.08 s here, in both builds):
    # start-up is the whole command's figure below; counted here it would be a fixed cost taken for reading.
    import cachescope

    t = time.perf_counter()
    lookups = 0
    for batch in cachescope.open_trace(a.path).batches():
        lookups += len(batch["keys"])
    print(json.dumps({"seconds": time.perf_counter() - t, "events": lookups}))


def read_job(a, checkout, path):
    def run():
        _, out, peak = run_with_peak(__file__, "--worker", "read", "--checkout", checkout, "--path", path,
                                     cwd=checkout)
        return {**json.loads(out), "peak_bytes": peak}
    return run


def simulate_job(a, checkout, path):
    def run():
        seconds, out, peak = run_with_peak("simulate.py", path, "--lru", a.capacity, "--json", "--no-progress",
                                           cwd=checkout)
        return {"seconds": seconds, "hits": json.loads(out)["results"][0]["hits"], "peak_bytes": peak}
    return run


def libcachesim_job(a, path):
    def run():
        seconds, out, peak = run_with_peak(__file__, "--worker", "libcachesim", "--path", path, "--capacity",
                                           a.capacity)
        return {**json.loads(out), "seconds": seconds, "peak_bytes": peak}
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(p)
    p.add_argument("--before", default=os.environ.get("CACHESCOPE_BEFORE"),
                   help="a checkout of cachescope with its extension built, whose readers are the anchor")
    p.add_argument("--formats", default="keys,commands,monitor")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--checkout", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    if not a.before:
        raise SystemExit("--before DIR: a checkout built before the change (the anchor of the MB/s ratio)")
    files = text_files(a)
    checkouts = {"before": Path(a.before), "now": REPO}
    jobs = {}
    for fmt in a.formats.split(","):
        for name, checkout in checkouts.items():
            jobs[(fmt, name)] = read_job(a, checkout, files[fmt])
    for name, checkout in checkouts.items():
        jobs[("simulate", name)] = simulate_job(a, checkout, files["keys"])
    jobs[("simulate", "libcachesim")] = libcachesim_job(a, files["keys"])
    runs = {k: [] for k in jobs}
    for _ in range(a.repeat):
        for k, job in jobs.items():
            runs[k].append(job())
    best = {k: min(r, key=lambda x: x["seconds"]) for k, r in runs.items()}
    print(machine_line(machine(), "libcachesim"))
    print(f"{'format':<10} {'MB':>8} {'before MB/s':>12} {'now MB/s':>10} {'now is':>8} {'peak MiB before/now':>20}"
          f"   (best of {a.repeat}; peak: the whole process's, the largest of its runs)")
    results = {}
    for fmt in a.formats.split(","):
        mb = files[fmt].stat().st_size / 1e6
        b, n = best[(fmt, "before")], best[(fmt, "now")]
        if b["events"] != n["events"]:
            raise SystemExit(f"!!! {fmt}: {b['events']} events before, {n['events']} now")
        ratio = b["seconds"] / n["seconds"]
        peaks = [max(r["peak_bytes"] for r in runs[(fmt, name)]) / 2**20 for name in ("before", "now")]
        results[fmt] = {"mb": mb, "before_mb_s": mb / b["seconds"], "now_mb_s": mb / n["seconds"], "ratio": ratio,
                        "events": n["events"], "before_peak_mib": peaks[0], "now_peak_mib": peaks[1]}
        print(f"{fmt:<10} {mb:>8.0f} {mb / b['seconds']:>12.0f} {mb / n['seconds']:>10.0f} {ratio:>7.1f}x"
              f" {peaks[0]:>10.0f} / {peaks[1]:<8.0f}   target 5x: {'PASS' if ratio >= 5 else 'FAIL'}")
    hits = {k[1]: v["hits"] for k, v in best.items() if k[0] == "simulate"}
    agree = len(set(hits.values())) == 1
    lib, now, before = (best[("simulate", k)]["seconds"] for k in ("libcachesim", "now", "before"))
    print(f"\nsimulate.py {rel(files['keys'])} --lru {a.capacity} (whole processes): now {now:.2f} s, before "
          f"{before:.2f} s, libcachesim {lib:.2f} s -> {lib / now:.2f}x libcachesim "
          f"(target 3x: {'PASS' if lib / now >= 3 and agree else 'FAIL'}); hits {hits}"
          + ("" if agree else "  HIT COUNTS DISAGREE"))
    peak = {k: max(r["peak_bytes"] for r in runs[("simulate", k)]) / 2**20 for k in ("now", "before", "libcachesim")}
    print(f"  peak memory of the whole process: now {peak['now']:.0f} MiB, before {peak['before']:.0f} MiB, "
          f"libcachesim {peak['libcachesim']:.0f} MiB")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "text_readers.json").write_text(json.dumps({
        "machine": machine(), "formats": results, "simulate": {k[1]: v for k, v in best.items() if k[0] == "simulate"},
        "hits_agree": agree}, indent=2))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
