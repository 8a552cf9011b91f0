"""Several captures and a sweep on a local Dask cluster against the serial run, measured side by side in one
run on this machine: whole commands (`parse.py ... --workers 0` against `--workers N`, `simulate.py` without
and with `--workers N`), best of --repeat, the cluster's start-up included, and the outputs checked equal.

The captures are the bundled sample (`sample_traces/feature_store.pcap`, real redis-server traffic) written
--copies times over into each of --captures files, each copy's client ports moved (a connection of its own)
and its times shifted after the previous copy, each file a host of its own. The sweep's trace is the parsed
fleet itself (a Parquet dataset), simulated under a sweep of policies x capacities x pods x routes.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from fleet_captures import REDIS_PORT, SAMPLE, replicate  # noqa: E402 (the tests' copies of the sample)

SWEEP = ["--lru", "1e3,1e4,1e5", "--wtinylfu", "1e4,1e5", "--s3fifo", "1e4", "--pods", "8",
         "--route", "random,entity"]


def timed(cmd, **kw) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, *map(str, cmd)], cwd=ROOT, capture_output=True, text=True, **kw)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr}")
    return seconds, proc


def best(label, runs):
    return min(runs, key=lambda r: r[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--captures", type=int, default=4)
    p.add_argument("--copies", type=int, default=40, help="copies of the sample in each capture")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    a = p.parse_args()
    work = Path(a.keep or tempfile.mkdtemp(prefix="bench_dask."))
    work.mkdir(parents=True, exist_ok=True)
    try:
        sample = SAMPLE.read_bytes()
        caps = []
        for h in range(a.captures):
            caps.append(work / f"host{h + 1}.pcap")
            if not caps[-1].exists():
                replicate(sample, a.copies, h, caps[-1])
        size = sum(c.stat().st_size for c in caps)
        print(f"{a.captures} captures of {a.copies} copies of {SAMPLE.name}: {size / 1e6:,.0f} MB; "
              f"{os.cpu_count()} cores, --workers {a.workers}; best of {a.repeat}, whole commands")
        rows = []
        parse = [*caps, "--port", str(REDIS_PORT), "--no-progress"]
        serial = best("serial", [timed(["parse.py", *parse, "-o", work / "serial.parquet", "--workers", "0"])
                                 for _ in range(a.repeat)])
        dask = best("dask", [timed(["parse.py", *parse, "-o", work / "dask.parquet", "--workers", a.workers])
                             for _ in range(a.repeat)])
        import pyarrow.parquet as pq

        same = pq.read_table(work / "serial.parquet").equals(pq.read_table(work / "dask.parquet"))
        rows.append(("parse.py to one file (merged)", serial[0], dask[0], same, size))
        for d in ("ds_serial", "ds_dask"):
            shutil.rmtree(work / d, ignore_errors=True)
        serial_ds = timed(["parse.py", *parse, "-o", f"{work}/ds_serial/", "--workers", "0"])
        dask_ds = timed(["parse.py", *parse, "-o", f"{work}/ds_dask/", "--workers", a.workers])
        rows.append(("parse.py to a dataset (one part per capture)", serial_ds[0], dask_ds[0], True, size))
        trace = f"{work}/ds_serial/"
        sweep = [trace, *SWEEP, "--json", "--no-progress"]
        s_sim = best("serial", [timed(["simulate.py", *sweep]) for _ in range(a.repeat)])
        d_sim = best("dask", [timed(["simulate.py", *sweep, "--workers", a.workers]) for _ in range(a.repeat)])
        same_sim = json.loads(s_sim[1].stdout) == json.loads(d_sim[1].stdout)
        tasks = len(json.loads(s_sim[1].stdout)["results"])
        rows.append((f"simulate.py sweep, {tasks} simulations", s_sim[0], d_sim[0], same_sim, None))
        print(f"\n{'command':<48} {'serial s':>9} {'dask s':>8} {'speed-up':>9}  same output")
        for name, s, d, ok, _ in rows:
            print(f"{name:<48} {s:>9.2f} {d:>8.2f} {s / d:>8.2f}x  {'yes' if ok else 'NO'}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
