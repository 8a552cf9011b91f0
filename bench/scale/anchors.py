"""At scale, against the anchor: cachescope's LRU curves next to libCacheSim's `mrcProfiler`, as whole processes,
side by side in one run, on the same keys (a Zipf stream, written once as libCacheSim's oracleGeneral trace and
read by both tools from that file).

For each size (2*10^7 and 10^8 lookups by default):
- SHARDS at 1%: `simulate.py TRACE --curve lru --sample 1% --salts 1` against `mrcProfiler --profiler=SHARDS
  --profiler-params=FIX_RATE,0.01,SALT`: wall time (best of --repeat, the two alternating), peak resident memory,
  and the mean absolute error of the hit rate against the exact curve at the same capacities, averaged over
  --salts samples (mrcProfiler: one process per hash salt; cachescope: the disjoint samples of one `--salts K`
  run, each a 1% sample of its own, read from `hit_rate_by_sample`). mrcProfiler hashes `obj_id ^ salt`, so
  salts 1, 2, 3 on this trace, whose ids are popularity ranks, give samples of each other's ids with their
  low bits flipped: keys of about the same popularity, errors alike (the same -0.02 at 1,000 entries for the
  three at 10^8), the mean of several salts about one sample's. Its salts are drawn at random over 62 bits
  (`mrc_salt`), so that each is an independent sample as cachescope's are.
- The exact curve: `simulate.py TRACE --curve lru` against `mrcProfiler` at FIX_RATE 1 (every key sampled: its
  exact stack distances). cachescope's exact curve is the truth the errors are measured against; the two exact
  curves must agree (their largest difference is printed).

Capacities are in entries: mrcProfiler is given fixed sizes in bytes (`1000B,...`) and every record has
obj_size 1. Peak memory: cachescope's through bench/peak.py (VmHWM inside the process), mrcProfiler's through
`/usr/bin/time -f %M` (its ru_maxrss; /usr/bin/time is a few MB, so the child starts from nothing of ours).

Targets: SHARDS at least as fast (>= 1x) and at most as wrong (MAE <=; a TIE when it is above by less than two
standard errors of the difference: the same estimator on samples that drew other keys); the exact curve >= 3x
faster.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
import common  # noqa: E402  (bench/common.py: the stream, its oracleGeneral twin, run_with_peak, machine)

DEFAULT_MRC = BENCH / "data" / "libcachesim-0.3.5" / "src" / "libCacheSim" / "_build" / "bin" / "mrcProfiler"
SIMULATE = ROOT / "simulate.py"
RATE = 0.01
POINTS = 20


def options() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="20000000:5000000,100000000:10000000",
                   help="comma list of LOOKUPS:UNIQUE_KEYS_IN_THE_UNIVERSE (default %(default)s)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--salts", type=int, default=64,
                   help="samples (hash salts) the SHARDS error is averaged over (64: the most disjoint samples one "
                        "cachescope run gives)")
    p.add_argument("--repeat", type=int, default=3, help="best of N for the SHARDS runs (alternating)")
    p.add_argument("--exact-repeat", type=int, default=1, help="best of N for the exact runs")
    p.add_argument("--mrc-exact-max", type=int, default=10**8,
                   help="largest trace (lookups) mrcProfiler's exact curve is run on; above it, it is left out "
                        "and said so")
    p.add_argument("--mrc-exact-timeout", type=float, default=None,
                   help="seconds mrcProfiler's exact curve may take; past them it is stopped and its time reported "
                        "as more than that (the ratio as at least)")
    p.add_argument("--mrcprofiler", default=os.environ.get("MRCPROFILER", str(DEFAULT_MRC)),
                   help="the mrcProfiler binary (bench/scale/build_mrcprofiler.sh builds it)")
    p.add_argument("--out", default=str(BENCH / "results" / "scale_anchors.json"))
    return p.parse_args()


def sizes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(float(x)) for x in part.split(":")) for part in text.split(",") if part]


def capacities(universe: int) -> list[int]:
    """POINTS capacities log-spaced from 1,000 entries to 40% of the universe (below the unique keys read, so
    that every point is on both tools' curves)."""
    return sorted({int(c) for c in np.geomspace(1_000, 0.4 * universe, POINTS).round()})


# ---- one run of each tool -----------------------------------------------------------------------------------
def cachescope_run(trace: Path, caps: list[int], *extra) -> dict:
    """`simulate.py TRACE --curve lru ... --json` as a whole process: wall seconds, peak bytes, the curve."""
    args = [trace, "--format", "oracleGeneral", "--curve", "lru", "--curve-capacities", ",".join(map(str, caps)),
            "--json", "--no-progress", *extra]
    seconds, out, peak = common.run_with_peak(SIMULATE, *args, cwd=ROOT)
    curve = json.loads(out)["curves"][0]
    return {"wall_s": seconds, "peak_bytes": peak, "method": curve["method"],
            "points": {p["capacity"]: p for p in curve["points"]}}


def mrc_salt(k: int) -> int:
    """mrcProfiler's `k`-th salt (from 1): 62 random bits, the same in every run (see the module's docstring)."""
    return random.Random(f"mrc-salt-{k}").getrandbits(62)


def mrc_run(binary: str, trace: Path, caps: list[int], rate: float, salt: int, timeout: float | None = None) -> dict:
    """mrcProfiler's SHARDS at `rate` (1: exact) with `salt`, as a whole process under /usr/bin/time; stopped
    after `timeout` seconds (then {"wall_s": timeout, "timed_out": True})."""
    with tempfile.NamedTemporaryFile(suffix=".time") as tf:
        cmd = ["/usr/bin/time", "-f", "%M", "-o", tf.name, binary, str(trace), "oracleGeneral", "--algo=LRU",
               "--profiler=SHARDS", f"--profiler-params=FIX_RATE,{rate:g},{salt}",
               "--size=" + ",".join(f"{c}B" for c in caps)]
        t = time.perf_counter()
        # A session of its own, so that a timeout stops mrcProfiler too, not only /usr/bin/time above it.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"wall_s": timeout, "timed_out": True, "peak_bytes": None, "hit_rates": {}}
        seconds = time.perf_counter() - t
        out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
        if out.returncode != 0:
            raise SystemExit(f"\n!!! {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
        peak = int(Path(tf.name).read_text().split()[-1]) * 1024
    hit_rates = {}
    for line in out.stdout.splitlines():
        cells = line.split("\t")
        if len(cells) >= 2 and cells[0].endswith("B") and cells[0][:-1].isdigit():
            hit_rates[int(cells[0][:-1])] = 1.0 - float(cells[1])
    if set(hit_rates) != set(caps):
        raise SystemExit(f"\n!!! mrcProfiler gave capacities {sorted(hit_rates)}, not {caps}:\n{out.stdout[-2000:]}")
    return {"wall_s": seconds, "peak_bytes": peak, "hit_rates": hit_rates}


def mae(curve: dict[int, float], truth: dict[int, float]) -> float:
    common_caps = sorted(set(curve) & set(truth))
    return float(np.mean([abs(curve[c] - truth[c]) for c in common_caps]))


# ---- one size -----------------------------------------------------------------------------------------------
def one_size(a, lookups: int, universe: int) -> dict:
    stream = argparse.Namespace(lookups=lookups, universe=universe, alpha=a.alpha, seed=a.seed)
    _, trace = common.stream_files(stream)
    caps = capacities(universe)
    subprocess.run(["cat", str(trace)], stdout=subprocess.DEVNULL, check=True)  # into the page cache for both
    print(f"\n== {lookups:,} lookups, Zipf(alpha={a.alpha:g}) over {universe:,} keys ({common.rel(trace)}), "
          f"{len(caps)} capacities {caps[0]:,}..{caps[-1]:,} entries")

    # The exact curves first: cachescope's is the truth.
    exact_runs = common.interleaved({
        "cachescope": lambda: cachescope_run(trace, caps),
        **({"mrcProfiler": lambda: mrc_run(a.mrcprofiler, trace, caps, 1.0, a.seed, a.mrc_exact_timeout)}
           if lookups <= a.mrc_exact_max else {}),
    }, a.exact_repeat)
    cs_exact = min(exact_runs["cachescope"], key=lambda r: r["wall_s"])
    truth = {c: p["hit_rate"] for c, p in cs_exact["points"].items()}
    mrc_exact = min(exact_runs["mrcProfiler"], key=lambda r: r["wall_s"]) if "mrcProfiler" in exact_runs else None

    # SHARDS at 1%, one sample each, alternating; then the other salts for the error.
    shards_runs = common.interleaved({
        "cachescope": lambda: cachescope_run(trace, caps, "--sample", f"{RATE:.0%}", "--salts", "1"),
        "mrcProfiler": lambda: mrc_run(a.mrcprofiler, trace, caps, RATE, mrc_salt(1)),
    }, a.repeat)
    cs_shards = min(shards_runs["cachescope"], key=lambda r: r["wall_s"])
    mrc_shards = min(shards_runs["mrcProfiler"], key=lambda r: r["wall_s"])
    mrc_salts = [mrc_shards] + [mrc_run(a.mrcprofiler, trace, caps, RATE, mrc_salt(k)) for k in range(2, a.salts + 1)]
    mrc_maes = [mae(r["hit_rates"], truth) for r in mrc_salts]
    cs_samples = cachescope_run(trace, caps, "--sample", f"{RATE:.0%}", "--salts", str(a.salts))
    by_sample = np.array([cs_samples["points"][c]["hit_rate_by_sample"] for c in sorted(cs_samples["points"])])
    cs_caps = sorted(cs_samples["points"])
    cs_maes = [mae(dict(zip(cs_caps, by_sample[:, s])), truth) for s in range(by_sample.shape[1])]

    def row(r, runs=None):
        out = {"wall_s": r["wall_s"], "peak_mib": None if r["peak_bytes"] is None else r["peak_bytes"] / 2**20,
               "lookups_per_s": lookups / r["wall_s"], "timed_out": r.get("timed_out", False)}
        if runs:
            out["all_wall_s"] = [x["wall_s"] for x in runs]
        return out

    result = {
        "lookups": lookups, "universe": universe, "capacities": caps,
        "shards": {
            "cachescope": {**row(cs_shards, shards_runs["cachescope"]), "mae_by_salt": cs_maes,
                           "mae": float(np.mean(cs_maes)), "salts_run": row(cs_samples)},
            "mrcProfiler": {**row(mrc_shards, shards_runs["mrcProfiler"]), "mae_by_salt": mrc_maes,
                            "mae": float(np.mean(mrc_maes))},
        },
        "exact": {"cachescope": row(cs_exact, exact_runs["cachescope"])},
    }
    s = result["shards"]
    s["speed_ratio"] = mrc_shards["wall_s"] / cs_shards["wall_s"]
    # The two means are of a few samples each: the difference's standard error says whether it is more than
    # which keys the samples happened to hold. Both tools run the same estimator (SHARDS_adj) on samples of the
    # same rate, drawn by different hashes; each draw is fixed (cachescope's samples are the first --salts
    # slices of its hash, mrcProfiler's the salts `mrc_salt` gives), so a difference within noise stays the
    # same from run to run: at 10^8, cachescope's slices 0-29 erred 0.0119 and its slices 30-59 0.0098 against
    # mrcProfiler's 0.0099. Such a difference is a TIE, not a verdict on either tool.
    s["mae_difference_se"] = float(np.sqrt(np.var(cs_maes, ddof=1) / len(cs_maes)
                                           + np.var(mrc_maes, ddof=1) / len(mrc_maes))) if a.salts > 1 else None
    s["accuracy"] = accuracy_verdict(s["cachescope"]["mae"], s["mrcProfiler"]["mae"], s["mae_difference_se"])
    s["verdict"] = "PASS" if s["speed_ratio"] >= 1 and s["accuracy"] == "at most as wrong" else \
        "TIE" if s["speed_ratio"] >= 1 and s["accuracy"].startswith("tie") else "FAIL"
    e = result["exact"]
    if mrc_exact is not None:
        e["mrcProfiler"] = row(mrc_exact, exact_runs["mrcProfiler"])
        e["speed_ratio"] = mrc_exact["wall_s"] / cs_exact["wall_s"]
        if mrc_exact.get("timed_out"):
            # Stopped: its time is more than the timeout, so the ratio is at least this.
            e["largest_difference"] = None
            e["verdict"] = "PASS (at least)" if e["speed_ratio"] >= 3 else "UNDECIDED (stopped early)"
        else:
            e["largest_difference"] = max(abs(mrc_exact["hit_rates"][c] - truth[c]) for c in truth)
            e["verdict"] = "PASS" if e["speed_ratio"] >= 3 else "FAIL"
    else:
        e["mrcProfiler"] = None
        e["verdict"] = f"not run (mrcProfiler's exact curve left out above {a.mrc_exact_max:,} lookups)"
    print_size(result)
    return result


def accuracy_verdict(ours: float, theirs: float, se: float | None) -> str:
    """'at most as wrong' when cachescope's mean error is not above mrcProfiler's; a tie when it is above by
    less than two standard errors of the difference (samples that drew other keys could reverse it); else
    'more wrong'."""
    if ours <= theirs:
        return "at most as wrong"
    if se is not None and ours - theirs < 2 * se:
        return f"tie (+{ours - theirs:.4f}, within two standard errors, {2 * se:.4f})"
    return "more wrong"


def print_size(r: dict) -> None:
    print(f"{'':<22}{'wall s':>9}{'M lookups/s':>13}{'peak MiB':>10}{'MAE':>9}")
    for what in ("shards", "exact"):
        for tool in ("cachescope", "mrcProfiler"):
            x = r[what].get(tool)
            if x is None:
                print(f"{what + ' ' + tool:<22}{'(not run)':>9}")
                continue
            err = f"{x['mae']:.4f}" if "mae" in x else ""
            wall = (">" if x["timed_out"] else "") + f"{x['wall_s']:.3f}"
            peak = "n/a" if x["peak_mib"] is None else f"{x['peak_mib']:.1f}"
            print(f"{what + ' ' + tool:<22}{wall:>9}{x['lookups_per_s'] / 1e6:>13.1f}{peak:>10}{err:>9}")
    s, e = r["shards"], r["exact"]
    print(f"  SHARDS 1%: cachescope {s['speed_ratio']:.2f}x mrcProfiler's speed (target >= 1x), MAE "
          f"{s['cachescope']['mae']:.4f} vs {s['mrcProfiler']['mae']:.4f} over {len(s['mrcProfiler']['mae_by_salt'])}"
          f" salts (target <=): {s['accuracy']}: {s['verdict']}")
    if s.get("mae_difference_se") is not None:
        print(f"    the MAEs differ by {s['cachescope']['mae'] - s['mrcProfiler']['mae']:+.4f}, standard error of the "
              f"difference {s['mae_difference_se']:.4f} (a sample's error swings with which keys it holds)")
    if e.get("speed_ratio") is not None:
        diff = "n/a (stopped)" if e["largest_difference"] is None else f"{e['largest_difference']:.2e}"
        print(f"  exact: cachescope {e['speed_ratio']:.2f}x mrcProfiler's speed (target >= 3x): {e['verdict']}; "
              f"largest difference of the exact curves {diff}")
    else:
        print(f"  exact: {e['verdict']}")


def main() -> int:
    a = options()
    if not Path(a.mrcprofiler).exists():
        raise SystemExit(f"{a.mrcprofiler}: no mrcProfiler there; build it with bench/scale/build_mrcprofiler.sh "
                         "or give --mrcprofiler PATH")
    m = common.machine()
    print(common.machine_line(m, "numpy"))
    print(f"load average at start: {os.getloadavg()[0]:.1f} (a shared machine makes whole-process times noisy)")
    results = [one_size(a, n, u) for n, u in sizes(a.sizes)]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "scale_anchors", "machine": m, "rate": RATE, "salts": a.salts,
                               "repeat": a.repeat, "load_average_end": os.getloadavg(), "sizes": results},
                              indent=2) + "\n")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
