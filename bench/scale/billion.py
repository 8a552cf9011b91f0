"""`python bench/scale/billion.py` runs `simulate.py` as whole processes over make_dataset.py's feature-store
datasets of 10^7, 10^8 and 10^9 lookups: LRU at three capacities in one pass, SHARDS curves (a fixed-size sample
and a 1% sample), the exact LRU curve and a fleet of 64 pods sharded by entity; for each, the wall time, the
lookups per second and the peak resident memory (peak.py: the process's VmHWM, start-up included), next to
the floor (the same command on a dataset of 10^4 lookups: the interpreter, its libraries and the readers'
buffers) and the trace's unique keys, so that what grows with the trace shows apart from what grows with its
unique keys. Prints the table; writes bench/results/billion.json after every run (a run cut short by
`--deadline` is kept, as how far it got).

What each run holds beyond the floor: LRU, its caches (per entry) and the infinite bound (per unique key);
SHARDS at a fixed size, its sample and a fixed-size sketch of the unique keys; SHARDS at 1%, the sample (1% of
the unique keys); the exact curve, a table of last uses and the stack (per unique key); the fleet, its pods'
caches and one routed chunk of events. None of them holds anything per lookup."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(HERE))
import common  # noqa: E402
import make_dataset  # noqa: E402

# name -> simulate.py options (after the trace)
RUNS = {
    "lru": ["--lru", "1e5,1e6,1e7"],
    "fleet": ["--lru", "1e5", "--pods", "64", "--route", "entity"],
    "shards-keys": ["--curve", "lru", "--sample-keys", "32768"],
    "shards-1%": ["--curve", "lru", "--sample", "1%"],
    "exact": ["--curve", "lru"],
}
FLOOR_LOOKUPS = 10_000
SAMPLE_S = 10.0


def options(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scales", default="1e7,1e8,1e9", help="lookups of each dataset, comma list (default 1e7,1e8,1e9)")
    common.add_list_option(p, "--runs", list(RUNS), "run(s) ", default=",".join(RUNS),
                           help=f"comma list of runs ({','.join(RUNS)}; default all, in this order)".replace("%", "%%"))
    p.add_argument("--entities", type=make_dataset.parse_count, default=10**7, help="entities of every dataset (1e7)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--deadline", help="UTC time HH:MM: a run still going then is stopped and reported as cut short "
                                      "(with how far it got), and later runs are not started")
    p.add_argument("--out", default=str(BENCH / "results" / "billion.json"), help="results JSON")
    a = p.parse_args(argv)
    try:
        a.scales = [make_dataset.parse_count(s) for s in a.scales.split(",") if s]
    except argparse.ArgumentTypeError as e:
        p.error(f"--scales: {e}")
    a.deadline_at = _deadline(p, a.deadline) if a.deadline else None
    return a


def _deadline(p, text: str) -> float:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text)
    if not m:
        p.error(f"--deadline: not HH:MM: {text}")
    now = datetime.datetime.now(datetime.timezone.utc)
    at = now.replace(hour=int(m[1]), minute=int(m[2]), second=0, microsecond=0)
    if at <= now:
        at += datetime.timedelta(days=1)
    return time.time() + (at - now).total_seconds()


def dataset(lookups: int, a) -> Path:
    """The dataset of `lookups` (generated unless it is there already), its folder."""
    out = make_dataset.default_out(lookups, a.entities, a.seed)
    args = ["--lookups", str(lookups), "--entities", str(a.entities), "--seed", str(a.seed), "--out", str(out)]
    if lookups == FLOOR_LOOKUPS:
        args += ["--parts", "1"]
    if make_dataset.main(args) != 0:
        raise SystemExit(f"!!! generating {out} failed")
    return out


def run(name: str, trace: Path, deadline: float | None, log: Path) -> dict:
    """simulate.py over `trace` with the run's options, through peak.py (its stderr to `log`), watched every
    SAMPLE_S seconds: its resident memory, CPU time and the part of the dataset it has open (`samples`, to
    show memory against how far into the trace the run is). Returns wall and CPU time, peak memory and the
    JSON document's essentials; or, stopped at the deadline, `cut_short` with the samples so far."""
    args = [str(trace), *RUNS[name], "--json"]
    with tempfile.NamedTemporaryFile(suffix=".peak") as peak, tempfile.TemporaryFile("w+") as out, \
            open(log, "w") as err:
        cmd = [sys.executable, str(BENCH / "peak.py"), str(ROOT / "simulate.py"), *args]
        env = {**os.environ, "PEAK_RSS_FILE": peak.name}
        cpu = _children_cpu()
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, text=True, env=env)
        samples = []
        while True:
            try:
                proc.wait(timeout=SAMPLE_S)
                break
            except subprocess.TimeoutExpired:
                sample = _sample(proc.pid, time.perf_counter() - t)
                if sample is not None:
                    samples.append(sample)
                if deadline is not None and time.time() >= deadline:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    return {"run": name, "args": RUNS[name], "cut_short": True, "wall_s": time.perf_counter() - t,
                            "cpu_s": _children_cpu() - cpu, "samples": samples,
                            "peak_bytes_so_far": max((x["hwm"] for x in samples), default=None)}
        seconds = time.perf_counter() - t
        cpu_s = _children_cpu() - cpu
        if proc.returncode != 0:
            raise SystemExit(f"!!! {' '.join(cmd)} failed (exit {proc.returncode}); see {log}")
        out.seek(0)
        doc = json.load(out)
        peak_bytes = int(Path(peak.name).read_text())
    lookups = doc["trace"]["lookups"]
    return {"run": name, "args": RUNS[name], "wall_s": seconds, "lookups": lookups, "lookups_per_s": lookups / seconds,
            "cpu_s": cpu_s, "lookups_per_cpu_s": lookups / cpu_s, "peak_bytes": peak_bytes,
            "unique_keys": doc["trace"]["unique_keys"], "summary": _summary(name, doc), "samples": samples}


def _sample(pid: int, at: float) -> dict | None:
    """The process's VmRSS and VmHWM, its CPU seconds, and the highest-numbered part it has open."""
    try:
        status = {l.split(":")[0]: l.split()[1] for l in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if l.startswith(("VmRSS", "VmHWM"))}
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        parts = []
        for fd in os.listdir(f"/proc/{pid}/fd"):
            m = re.search(r"-(\d+)\.pcap\.parquet$", os.readlink(f"/proc/{pid}/fd/{fd}") )
            if m:
                parts.append(int(m[1]))
    except (OSError, IndexError, ValueError):
        return None
    return {"t": round(at, 1), "cpu_s": cpu, "rss": int(status["VmRSS"]) * 1024, "hwm": int(status["VmHWM"]) * 1024,
            "part": max(parts, default=None)}


def _children_cpu() -> float:
    """User and system seconds of the children waited for so far: the runs are one at a time, so the
    difference across one is its CPU time, whatever else the machine is doing (its wall time is not)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _summary(name: str, doc: dict) -> dict:
    """A few numbers to tell the runs apart and check them: hit rates by capacity, or points of the curve."""
    if name in ("lru", "fleet"):
        return {f"{r['capacity']:g}" + (f" x{r['pods']}" if r.get("pods") else ""): r["hit_rate"]
                for r in doc["results"]}
    curve = next((c for c in doc.get("curves", []) if c.get("policy") == "lru"), None)
    if curve is None:
        return {}
    points = {int(p["capacity"]): p["hit_rate"] for p in curve.get("points", [])}
    want = [10**5, 10**6, 10**7]
    return {f"{c:g}": points[min(points, key=lambda k: abs(k - c))] for c in want if points}


def table(results: list[dict], floor: dict) -> None:
    print(f"\n{'lookups':>8} {'run':<12} {'wall s':>9} {'M lookups/s':>12} {'CPU s':>8} {'M/CPU s':>8} "
          f"{'peak MiB':>9} {'- floor':>8} {'unique keys':>12}  hit rates")
    for r in results:
        scale = f"{r['scale']:.0e}".replace("+0", "")
        if r.get("cut_short"):
            last = r["samples"][-1] if r.get("samples") else {}
            print(f"{scale:>8} {r['run']:<12} {r['wall_s']:>9.1f}   cut short at the deadline: reading part "
                  f"{last.get('part')} after {r['cpu_s']:.0f} CPU s, resident {last.get('rss', 0) / 2**20:.0f} MiB")
            continue
        f = floor.get(r["run"])
        above = "" if f is None else f"{(r['peak_bytes'] - f) / 2**20:8.0f}"
        hits = ", ".join(f"{k} {v:.3f}" for k, v in r["summary"].items())
        print(f"{scale:>8} {r['run']:<12} {r['wall_s']:>9.1f} {r['lookups_per_s'] / 1e6:>12.2f} "
              f"{r['cpu_s']:>8.1f} {r['lookups_per_cpu_s'] / 1e6:>8.2f} {r['peak_bytes'] / 2**20:>9.0f} {above:>8} {r['unique_keys']:>12,}  {hits}")
    print("  peak MiB: the whole process's VmHWM, start-up included; - floor: less the same run's on "
          f"{FLOOR_LOOKUPS:,} lookups; CPU s: user + system of the whole process (all its threads)")


def save(a, results, floor, machine) -> None:
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "billion", "scales": a.scales, "entities": a.entities, "seed": a.seed,
                               "machine": machine, "floor_peak_bytes": floor, "results": results}, indent=2) + "\n")


def main(argv=None) -> int:
    a = options(argv)
    machine = {**common.machine(), "load_at_start": os.getloadavg()}
    logs = BENCH / "results" / "billion-logs"
    logs.mkdir(parents=True, exist_ok=True)
    floor_trace = dataset(FLOOR_LOOKUPS, a)
    floor = {name: run(name, floor_trace, None, logs / f"floor-{name}.log")["peak_bytes"] for name in a.runs}
    results = []
    for scale in a.scales:
        trace = dataset(scale, a)
        for name in a.runs:
            if a.deadline_at is not None and time.time() >= a.deadline_at:
                results.append({"scale": scale, "run": name, "cut_short": True, "wall_s": 0.0, "cpu_s": 0.0,
                                "samples": []})
                continue
            r = {"scale": scale, **run(name, trace, a.deadline_at, logs / f"{scale:.0e}-{name}.log"),
                 "load": os.getloadavg(), "finished_utc": time.strftime("%H:%M:%S", time.gmtime())}
            results.append(r)
            save(a, results, floor, machine)
            print(f"{scale:.0e} {name}: " + ("cut short" if r.get("cut_short") else
                  f"{r['wall_s']:.1f} s, {r['lookups_per_s'] / 1e6:.2f} M lookups/s, {r['cpu_s']:.1f} CPU s, "
                  f"peak {r['peak_bytes'] / 2**20:.0f} MiB"), flush=True)
    save(a, results, floor, machine)
    table(results, floor)
    print(f"results: {common.rel(a.out) if Path(a.out).is_relative_to(ROOT) else a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
