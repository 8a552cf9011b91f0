"""Parsing a packet capture into a trace, side by side: cachescope vs tcpflow and a Python reference parser.

Two captures of the same real feature-store traffic (redis-server + tcpdump, see parse_capture.py; recorded
once, cached under bench/data/): one on the host's loopback (MTU 64 KiB: replies in segments of up to 64 KiB),
one in a network namespace whose loopback has MTU 1500 and no segmentation offloads (~1448-byte segments, ten
times the packets, as on a production network). Each is parsed by each contender, each run in a fresh
subprocess with the capture in the page cache:
  parse.py     `python parse.py CAPTURE -o OUT.parquet --port P --no-progress`: the whole command, Python
               start-up and Parquet writing (zstd) included; wall time from the outside.
  parse.py -> .txt / .monitor   the same command writing the `commands` or `monitor` text trace instead
               (written by the Rust core, src/parse/text_out.rs): measured in the same runs, as ratios to
               parse.py to Parquet and to tcpflow.
  CaptureRows  `cachescope.parse.capture_source.CaptureRows(...).record_batches()` iterated to the end, nothing
               written: pcap reading, TCP reassembly, RESP parsing and pairing, rows as Arrow record batches.
  tcpflow      `tcpflow -r CAPTURE -o DIR port P`: TCP reassembly only, each flow's bytes written to a file;
               no RESP, no timestamps. The DESIGN's anchor.
  reference    bench/reference_parse.py: dpkt + reassembly (segments beyond a hole held until it is filled) +
               hiredis, pairing requests with replies, the same rows as tuples (not kept).
Then parse.py and CaptureRows once more on each capture written 4 times back to back (4x the traffic, new
connections each time): their peak memory must not grow with the capture.

Time: `wall s` (MB/s = capture bytes / wall s) and `CPU s`, user + system time of all threads: of the whole
process for parse.py and tcpflow (GNU time), of the timed part for the two Python workers (process_time).

Memory: `max RSS` is the whole process's peak resident set (GNU time's "Maximum resident set size", the same
for every contender); `growth` (the two Python workers only) is the growth of peak RSS during the timed part:
VmHWM reset with /proc/self/clear_refs just before it, read right after it, minus the RSS at the reset, so
the interpreter and imported libraries do not count.

Checks, on each capture: the reference must have filled every hole, cachescope's command count must equal
the reference's, up to the commands the reference left unanswered (none on these captures); rows, reads,
writes, nils, value bytes and the sums of timestamps and latencies must then agree too, and the rows must match
what the traffic driver sent. Any difference prints a loud block and exits 1.
"""
import argparse, gc, importlib.metadata, json, os, platform, re, shutil, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this checkout's cachescope (and test harness), not an installed copy

import parse_capture  # noqa: E402

COPIES = 4
# numpy's BLAS threads (unused here) spin on the other core for ~50 ms after numpy is imported, which would
# count in the CPU time of the Python contenders; one BLAS thread means none of its own.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
BOUNDED = 1.25  # memory is bounded if the 4x capture's peak is below 1.25x the capture's
SUMMARY = ("rows", "reads", "writes", "found", "read_bytes", "write_bytes", "ts_sum", "latency_sum")


# ---- worker side: one timed run in its own process -----------------------------------------------------
def proc_status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in f) if v.strip().endswith("kB")}


def prepare(name, capture, port):
    """Untimed setup; returns the timed callable, which returns its counts."""
    if name == "rows":
        # pyarrow and the trace schema as the module imported them before it imported them lazily (parse.py
        # starts the parser first): their import is start-up, not the timed parse, nor its memory growth.
        import cachescope.parse.schema  # noqa: F401
        from cachescope.parse.capture_source import CaptureRows

        rows = CaptureRows(capture, [port])

        def run():
            n = sum(rb.num_rows for rb in rows.record_batches())
            return {"rows": n, "commands": rows.stats["commands"], "stats": rows.stats}
        return run
    if name == "reference":
        import reference_parse

        def run():
            stats, s = {}, dict.fromkeys(SUMMARY, 0)
            for ts, _, _, op, _, _, _, size, found, latency in reference_parse.rows(capture, port, stats):
                s["rows"] += 1
                s["ts_sum"] += ts
                s["latency_sum"] += latency
                if op == "read":
                    s["reads"] += 1
                    s["found"] += found
                    s["read_bytes"] += size or 0
                else:
                    s["writes"] += 1
                    s["write_bytes"] += size
            return {**s, "commands": stats["commands"], "stats": stats}
        return run
    raise SystemExit(f"unknown worker {name!r}")


def worker(a):
    run = prepare(a.worker, a.capture, a.port)
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    before = proc_status()
    t, cpu = time.perf_counter(), time.process_time()
    counts = run()
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    after = proc_status()
    Path(a.out).write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "growth_bytes": after["VmHWM"] - before["VmRSS"],
                                       "hwm_reset": reset, **counts}))


# ---- driver side ----------------------------------------------------------------------------------------
def warm(path):
    """The capture into the page cache, so no run times the disk."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def timed_process(argv, cwd=None):
    """Runs argv under GNU time; returns (wall s, CPU s (user + system), max RSS bytes)."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, cwd=cwd, env=ENV)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"\n!!! {' '.join(map(str, argv))} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    field = lambda name: re.search(name + r": ([\d.]+)", p.stderr).group(1)  # noqa: E731
    cpu = float(field(r"User time \(seconds\)")) + float(field(r"System time \(seconds\)"))
    return wall, cpu, int(field(r"Maximum resident set size \(kbytes\)")) * 1024


def run_parse_py(capture, port, tmp, ext="parquet"):
    out, stats = tmp / f"x.{ext}", tmp / "stats.json"
    wall, cpu, rss = timed_process([sys.executable, str(ROOT / "parse.py"), str(capture), "-o", str(out), "--port",
                                    str(port), "--no-progress", "--stats-json", str(stats)], cwd=ROOT)
    s = json.loads(stats.read_text())
    return {"wall_s": wall, "cpu_s": cpu, "max_rss": rss, "commands": s["commands"], "rows": s["rows"], "stats": s}, out


def run_worker(name, capture, port, tmp):
    out = tmp / f"{name}.json"
    _, _, rss = timed_process([sys.executable, __file__, "--worker", name, "--capture", str(capture),
                               "--port", str(port), "--out", str(out)])
    return {**json.loads(out.read_text()), "max_rss": rss}


def run_tcpflow(capture, port, tmp):
    flows = tmp / "tcpflow"
    shutil.rmtree(flows, ignore_errors=True)
    flows.mkdir()
    wall, cpu, rss = timed_process(["tcpflow", "-r", str(capture), "-o", str(flows), "port", str(port)])
    files = [p for p in flows.iterdir() if p.name != "report.xml"]
    written = sum(p.stat().st_size for p in files)
    shutil.rmtree(flows)
    return {"wall_s": wall, "cpu_s": cpu, "max_rss": rss, "flows": len(files), "stream_bytes": written}


def trace_summary(parquet):
    """The SUMMARY counts of a written trace (untimed), to check it against the reference's rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(parquet, columns=["ts_ns", "req", "op", "cmd", "value_size", "found", "latency_ns"])
    names = pa.table({"cmd": t["cmd"].cast(pa.string()), "req": t["req"]})  # batches' dictionaries differ
    per_cmd = names.group_by("cmd").aggregate([("req", "count_distinct")])
    op = t["op"].combine_chunks().indices.to_numpy()  # 0 read, 1 write, 2 delete (OPS in parse/schema.py)
    size = t["value_size"].fill_null(0).to_numpy()
    ts = t["ts_ns"].to_numpy()
    return {"rows": t.num_rows, "reads": int((op == 0).sum()), "writes": int((op == 1).sum()),
            "found": int(pc.sum(t["found"].cast("int64")).as_py() or 0),
            "read_bytes": int(size[op == 0].sum()), "write_bytes": int(size[op == 1].sum()),
            "ts_sum": int((ts // 10**9).sum()) * 10**9 + int((ts % 10**9).sum()),
            "latency_sum": int(pc.sum(t["latency_ns"]).as_py() or 0),
            "commands_by_name": dict(zip(per_cmd["cmd"].to_pylist(), per_cmd["req_count_distinct"].to_pylist()))}


def best(runs):
    r = dict(min(runs, key=lambda r: r["wall_s"]))
    r["runs"], r["all_wall_s"] = len(runs), [x["wall_s"] for x in runs]
    r["max_rss"] = max(x["max_rss"] for x in runs)
    if "growth_bytes" in r:
        r["growth_bytes"] = max(x["growth_bytes"] for x in runs)
    return r


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    tcpflow = subprocess.run(["tcpflow", "-V"], capture_output=True, text=True).stdout.strip()
    versions = {p: importlib.metadata.version(p) for p in ("dpkt", "hiredis", "pyarrow")}
    return {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release(),
            "load": os.getloadavg()[0], "tcpflow": tcpflow, **versions}


def mib(b):
    return f"{b / 2**20:.0f}"


def print_table(res, size):
    print(f"\n{'contender':<34}{'runs':>5}{'wall s':>8}{'MB/s':>7}{'CPU s':>7}{'max RSS MiB':>12}{'growth MiB':>11}"
          f"{'commands':>9}{'rows':>10}")
    for name, r in res.items():
        runs = f"{r['runs']}" + ("*" if r["runs"] > 1 else "")
        growth = mib(r["growth_bytes"]) if "growth_bytes" in r else "-"
        print(f"{name:<34}{runs:>5}{r['wall_s']:>8.3f}{size / 1e6 / r['wall_s']:>7.0f}{r['cpu_s']:>7.3f}"
              f"{mib(r['max_rss']):>12}{growth:>11}{r.get('commands', '-'):>9}{r.get('rows', '-'):>10}")
    print("  * best of N runs (wall s = fastest, CPU s of that run, max RSS / growth = largest); each run a fresh")
    print("  subprocess. MB/s = capture bytes / wall s. parse.py's wall and CPU time include Python start-up and")
    print("  writing Parquet; CaptureRows' and the reference's are their timed part only.")


PARSE_PY, ROWS = "cachescope parse.py (-> Parquet)", "cachescope CaptureRows (no write)"
TEXT_OUTPUTS = {"txt": "cachescope parse.py (-> .txt)", "monitor": "cachescope parse.py (-> .monitor)"}
TCPFLOW, REFERENCE = "tcpflow (reassembly only)", "reference (dpkt+hiredis, Python)"


def measure(a, capture, longer, port, tmp):
    """Every run; returns (best run per contender, the trace parse.py wrote (summary), parse.py's start-up s,
    parse.py and CaptureRows on the longer capture)."""
    runs = {PARSE_PY: [], **{name: [] for name in TEXT_OUTPUTS.values()}, ROWS: [], TCPFLOW: [], REFERENCE: []}
    for i in range(max(a.repeat, a.reference_repeat)):  # interleaved: a change of load falls on all alike
        warm(capture)
        if i < a.repeat:
            r, parquet = run_parse_py(capture, port, tmp)
            runs[PARSE_PY].append(r)
            for ext, name in TEXT_OUTPUTS.items():
                runs[name].append(run_parse_py(capture, port, tmp, ext)[0])
            runs[ROWS].append(run_worker("rows", capture, port, tmp))
            runs[TCPFLOW].append(run_tcpflow(capture, port, tmp))
        if i < a.reference_repeat:
            runs[REFERENCE].append(run_worker("reference", capture, port, tmp))
    trace = trace_summary(parquet)
    startup, _, _ = timed_process([sys.executable, str(ROOT / "parse.py"), "--help"], cwd=ROOT)
    warm(longer)
    longer_runs = {PARSE_PY: run_parse_py(longer, port, tmp)[0], ROWS: run_worker("rows", longer, port, tmp)}
    return {name: best(r) for name, r in runs.items()}, trace, startup, longer_runs


def print_memory(res, longer_runs, longer_bytes):
    """The peaks on the capture and on the longer one; returns whether they stayed bounded."""
    print(f"\nmemory bounded: the capture written {COPIES} times over ({longer_bytes / 1e6:.0f} MB):")
    print(f"  {'':<26}{'capture':>9}{'x' + str(COPIES):>7}   (on x{COPIES}: wall s, MB/s)")
    bounded = True
    for name, what, key in ((PARSE_PY, "parse.py max RSS MiB", "max_rss"), (ROWS, "CaptureRows growth MiB",
                                                                          "growth_bytes")):
        one, big = res[name][key], longer_runs[name][key]
        bounded &= big < BOUNDED * max(one, 1 << 20)
        wall = longer_runs[name]["wall_s"]
        print(f"  {what:<26}{mib(one):>9}{mib(big):>7}   ({wall:.2f} s, {longer_bytes / 1e6 / wall:.0f} MB/s)")
    return bounded


def print_agreement(res, trace, meta):
    ps, rows, tf, ref = res[PARSE_PY], res[ROWS], res[TCPFLOW], res[REFERENCE]
    sent = meta["sent"]
    print(f"\ncommands: cachescope {ps['commands']:,} (CaptureRows {rows['commands']:,}), reference "
          f"{ref['commands']:,} (+{ref['stats']['unsupported']} it could not handle)")
    print(f"  cachescope by name: {trace['commands_by_name']}, and without rows: "
          f"{ps['stats'].get('other_commands') or {}} (redis-py's handshake: CLIENT SETINFO twice a connection)")
    print(f"  the driver sent: HMGET {sent['hmget']:,}, HSET {sent['hset']:,}")
    print(f"rows: cachescope {trace['rows']:,}, reference {ref['rows']:,}, driver "
          f"{sent['hmget_fields'] + sent['hset_fields']:,} (fields asked + fields written)")
    print(f"reassembled stream bytes: tcpflow {tf['stream_bytes']:,} in {tf['flows']} flow files, reference "
          f"{ref['stats']['stream_bytes']:,}")
    for k in SUMMARY[1:]:
        verdict = "equal" if trace[k] == ref[k] else "DIFFER"
        print(f"  {k:<12} cachescope {trace[k]:>,}   reference {ref[k]:>,}   {verdict}")


MTU_LABEL = {parse_capture.LOOPBACK_MTU: "loopback, MTU 64 KiB: segments of up to 64 KiB",
             1500: "network namespace, loopback at MTU 1500, offloads off: ~1448-byte segments"}


def bench_capture(a, mtu, tmp):
    """Every contender on the capture of this MTU (recorded first if needed): prints its table, ratios,
    memory and agreement; returns its results."""
    capture, meta = parse_capture.cached(HERE / "data", a.size_mb, a.seed, mtu)
    port, size = meta["port"], capture.stat().st_size
    longer = capture.with_name(f"{capture.stem}_x{COPIES}.pcap")
    parse_capture.concatenate(capture, longer, COPIES, port)
    print(f"\n=== {capture.relative_to(ROOT)}, {size / 1e6:.1f} MB, {meta['tcpdump']['captured']:,} packets, "
          f"{meta['connections']} connections to redis-server port {port} ({MTU_LABEL[meta['mtu']]})")
    res, trace, startup, longer_runs = measure(a, capture, longer, port, tmp)

    print_table(res, size)
    print(f"  parse.py --help alone (Python start-up and imports): {startup:.2f} s")
    ratios = {f"{c}/{o}": res[other]["wall_s"] / res[ours]["wall_s"]
              for c, ours in (("parse.py", PARSE_PY), ("CaptureRows", ROWS))
              for o, other in (("tcpflow", TCPFLOW), ("reference", REFERENCE))}
    ratios.update({f"parse.py -> .{ext}/{o}": res[other]["wall_s"] / res[name]["wall_s"]
                   for ext, name in TEXT_OUTPUTS.items()
                   for o, other in (("tcpflow", TCPFLOW), ("parse.py -> Parquet", PARSE_PY))})
    print()
    for k, v in ratios.items():
        print(f"  cachescope {k + ':':<40}{v:>6.2f}x (MB/s over MB/s)")
    bounded = print_memory(res, longer_runs, longer.stat().st_size)
    print_agreement(res, trace, meta)
    verdict = {k: ratios[k] > 1 for k in ("CaptureRows/tcpflow", "parse.py/tcpflow")}
    return {"capture": {"path": str(capture.relative_to(ROOT)), "bytes": size, **meta},
            "contenders": res, "ratios": ratios, "cachescope_trace": trace, "startup_s": startup,
            "longer": {"bytes": longer.stat().st_size, "copies": COPIES, "runs": longer_runs},
            "target": {"faster_than_tcpflow": verdict, "memory_bounded": bounded},
            "problems": checks(res, trace, meta, longer_runs)}


def print_target(name, r):
    ratios, verdict, bounded = r["ratios"], r["target"]["faster_than_tcpflow"], r["target"]["memory_bounded"]
    print(f"  {name}: CaptureRows {ratios['CaptureRows/tcpflow']:.2f}x "
          f"{'PASS' if verdict['CaptureRows/tcpflow'] else 'FAIL'}, parse.py with Parquet "
          f"{ratios['parse.py/tcpflow']:.2f}x {'PASS' if verdict['parse.py/tcpflow'] else 'FAIL'}; "
          f"memory x{COPIES} {'bounded PASS' if bounded else 'GROWS FAIL'} (x{COPIES} peak < {BOUNDED:g}x the capture's)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mb", type=float, default=270, help="size of the captures to record (MB, default 270)")
    p.add_argument("--seed", type=int, default=parse_capture.SEED)
    p.add_argument("--repeat", type=int, default=3, help="best of N for cachescope and tcpflow (default 3)")
    p.add_argument("--reference-repeat", type=int, default=1, help="best of N for the reference (default 1)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--capture", "--out"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    if shutil.which("tcpflow") is None:
        raise SystemExit("tcpflow is missing: apt-get install tcpflow")

    m = machine()
    print(f"machine: {m['cpu']}, {m['nproc']} CPUs, load {m['load']:.1f}, Linux {m['kernel']}, Python {m['python']}, "
          f"{m['tcpflow']}, dpkt {m['dpkt']}, hiredis {m['hiredis']}, pyarrow {m['pyarrow']}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_parse_"))
    try:
        results = {name: bench_capture(a, mtu, tmp) for name, mtu in (("loopback", parse_capture.LOOPBACK_MTU),
                                                                       ("mtu1500", 1500))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("\ntarget (DESIGN.md): faster than tcpflow, memory bounded")
    for name, r in results.items():
        print_target(name, r)
    out = HERE / "results" / "parse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"benchmark": "parse", "machine": m, "captures": results}, indent=2, default=str) + "\n")
    print(f"results: {out.relative_to(ROOT)}")
    problems = [f"{name}: {x}" for name, r in results.items() for x in r["problems"]]
    if problems:
        print("\n" + "!" * 72 + "\n!!! PARSERS DISAGREE:\n" + "".join(f"!!!   {x}\n" for x in problems) + "!" * 72,
              flush=True)
        return 1
    return 0


def checks(res, trace, meta, longer_runs):
    """What must agree; each difference as one line."""
    ps, rows, ref = res[PARSE_PY], res[ROWS], res[REFERENCE]
    out = []
    for name in TEXT_OUTPUTS.values():
        if (res[name]["commands"], res[name]["rows"]) != (ps["commands"], ps["rows"]):
            out.append(f"{name} ({res[name]['commands']} commands, {res[name]['rows']} rows) and parse.py to "
                       f"Parquet ({ps['commands']}, {ps['rows']}) differ")
    if ps["commands"] != rows["commands"] or ps["rows"] != rows["rows"] or trace["rows"] != ps["rows"]:
        out.append(f"parse.py ({ps['commands']} commands, {ps['rows']} rows, {trace['rows']} in its trace) and "
                   f"CaptureRows ({rows['commands']}, {rows['rows']}) differ")
    unsupported = ref["stats"]["unsupported"]
    if ref["stats"]["broken_flows"]:
        out.append(f"the reference found {ref['stats']['broken_flows']} flows with a hole never filled: it read "
                   f"only what came before the hole")
    if abs(ps["commands"] - ref["commands"]) > unsupported:
        out.append(f"commands: cachescope {ps['commands']}, reference {ref['commands']} (+{unsupported} unsupported)")
    if unsupported == 0:
        out += [f"{k}: cachescope {trace[k]}, reference {ref[k]}" for k in SUMMARY if trace[k] != ref[k]]
    sent = meta["sent"]
    if trace["commands_by_name"] != {"HMGET": sent["hmget"], "HSET": sent["hset"]}:
        out.append(f"commands: cachescope {trace['commands_by_name']}, the driver sent HMGET {sent['hmget']}, "
                   f"HSET {sent['hset']}")
    if trace["rows"] != sent["hmget_fields"] + sent["hset_fields"]:
        out.append(f"rows: cachescope {trace['rows']}, the driver sent {sent['hmget_fields'] + sent['hset_fields']}")
    for name, r in longer_runs.items():
        if r["commands"] != COPIES * ps["commands"] or r["rows"] != COPIES * ps["rows"]:
            out.append(f"x{COPIES} capture: {name} {r['commands']} commands, {r['rows']} rows; expected "
                       f"{COPIES} x ({ps['commands']}, {ps['rows']})")
    return out


if __name__ == "__main__":
    sys.exit(main())
