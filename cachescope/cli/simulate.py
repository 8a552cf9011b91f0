"""`cachescope simulate` / `python simulate.py`: hit rates of cache policies over a trace."""

from __future__ import annotations

import argparse
import json
import math
import sys

from cachescope.cli.common import Parser, run
from cachescope.output_file import output_file
from cachescope.outputs import check_outputs
from cachescope.simulate.engine import DEFAULT_WINDOW, simulate_trace
from cachescope.simulate.estimated_bound import summary_note
from cachescope.simulate.options import DEFAULT_ENTRY_OVERHEAD, WRITE_MODES
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.answer_text import answer_line, best_line, cache_name, fleet_table
from cachescope.simulate.labels import approx_count, human_bytes, label
from cachescope.simulate.sizing import CURVE_KEYS, records, route_of
from cachescope.trace.formats import FORMATS
from cachescope.trace.readers import GRANULARITIES


def examples(prog: str) -> str:
    """The `--help` epilog: a command for each of the first questions, on the bundled traces (run from the
    repository's root; out/ is the ignored folder for outputs)."""
    run = "python simulate.py" if prog == "simulate.py" else prog
    return f"""examples (from the repository's root):
  quick sizing: the hit rate of a few LRU sizes, next to the infinite cache (the bound)
    {run} sample_traces/feature_store.monitor --lru 1k,10k,100k
  curve and target: the hit rate at every capacity, the size that reaches 70% and 80%, and the plot
    {run} sample_traces/feature_store.monitor --curve lru --target 70%,80% --plot out/curve.png
  a capture of real traffic, the whole answer on one page
    {run} sample_traces/feature_store_paced.pcap --port 16380 --curve lru --target 55% --report out/report.html
  fleets: 8 and 32 pods with 10k entries each, replicated behind a load balancer or sharded by entity
    {run} sample_traces/feature_store.monitor --lru 10k --pods 8,32 --route random,entity"""


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Simulate in-process cache policies over a Redis trace.",
               epilog=examples(prog), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", nargs="+",
                   help="trace file (commands, monitor or keys text, Parquet) or a pcap/pcapng capture, compressed "
                        "or not (gzip, zstd, xz, lz4), or - for standard input (tcpdump -w - | ...); several (the "
                        "captures of several service hosts, say) are merged in time order into one stream; a Parquet "
                        "dataset (parse.py's folder output, a glob of its files, or an fsspec URL) is read as one "
                        "trace in time order")
    group = p.add_argument_group(
        "policies", "capacity in entries (100000, 1e5, 100k) or bytes (64MiB, 2GB); a comma list runs several")
    for spec in POLICIES.values():
        group.add_argument(spec.flag, dest=spec.keyword, metavar="N[,N...]", help=spec.description)
        for param in spec.params:
            group.add_argument(spec.param_flag(param), dest=_param_dest(spec, param), type=float, metavar="X",
                               help=f"{spec.label}: {param.help} (default {param.default:g})")
    curves = p.add_argument_group(
        "curves and sizing", "the hit rate at every capacity in one pass, and the capacity that reaches a target")
    curves.add_argument("--curve", metavar="POLICY[,POLICY...]",
                        help="hit-rate curve of these policies (lru: exact, Mattson's stack algorithm)")
    curves.add_argument("--curve-capacities", default="auto", metavar="auto|C1,C2,...|MIN:MAX:N",
                        help="the curve's capacities: auto (log-spaced 2%% apart up to the unique keys), a list, or "
                             "N log-spaced points from MIN to MAX; entries or bytes (64MiB:8GiB:200)")
    curves.add_argument("--target", metavar="RATE[,RATE...]",
                        help="hit rates to size for (70%%,80%%; 80 and 0.8 are 80%%): for each curve policy, as one cache and as each "
                             "fleet of --pods x --route, the smallest capacity per pod whose full run reaches each "
                             "(the curve brackets it, full runs of the real policy confirm it to 1%%), its memory, "
                             "its byte budget, and the cheapest fleet")
    curves.add_argument("--seeds", type=int, metavar="N",
                        help="W-TinyLFU's answers: draws of Caffeine's random admission run at each capacity "
                             "(default 5); the answer is where the lowest draw reaches the target")
    curves.add_argument("--sample", metavar="RATE",
                        help="sample this share of the keys (1%%): SHARDS for lru, miniature simulations for the "
                             "others (which sample 1%% by default); every sampled curve has an error band")
    curves.add_argument("--sample-keys", type=int, metavar="N",
                        help="SHARDS with a fixed-size sample of at most N keys (memory bounded whatever the trace)")
    curves.add_argument("--salts", type=int, default=4, metavar="K",
                        help="samples per sampled curve; their spread is the error band (default 4)")
    fleet = p.add_argument_group(
        "fleets", "the pods a service runs, each with its own cache of the capacity given (per pod)")
    fleet.add_argument("--pods", metavar="N[,N...]",
                       help="simulate each cache as a fleet of N pods (a comma list sweeps pod counts)")
    fleet.add_argument("--route", default="random", metavar="ROUTE[,ROUTE...]",
                       help="how requests reach pods: random or round-robin (replicated pods behind a load "
                            "balancer: each command goes to one pod), entity (sharded: each Redis key has one "
                            "owner pod, by consistent hashing), key-pattern (sharded by an id taken from the key, "
                            "see --key-pattern), client (one pod per client host of the trace; no --pods); "
                            "default random")
    fleet.add_argument("--key-pattern", metavar="REGEX",
                       help="with --route key-pattern: shard by the id the first (...) group takes from each key "
                            "(^mer_(\\d+): shards by merchant)")
    fleet.add_argument("--one-pod-of", type=int, metavar="N",
                       help="the trace is one pod's of a replicated fleet of N: simulate this pod alone (the "
                            "replicated fleet) and the sharded what-if over N pods (an estimate)")
    fleet.add_argument("--rolling-restart-every", metavar="DURATION",
                       help="a rolling deployment this often (6h): the pods restart one after another")
    fleet.add_argument("--rolling-over", default="20m", metavar="DURATION",
                       help="how long a rolling deployment takes from the first pod to the last (default 20m)")
    dask = p.add_argument_group("sweeps on Dask", "the sweep's simulations (policies x capacities, fleets, curves) "
                                                  "dealt into tasks that each stream the trace; the same results")
    dask.add_argument("--workers", type=int, metavar="N", help="on a local Dask cluster of N worker processes")
    dask.add_argument("--scheduler", metavar="ADDRESS",
                      help="on the Dask cluster already running there (tcp://HOST:8786); its workers must read the "
                           "trace at the same path (or URL)")
    p.add_argument("--format", choices=FORMATS, help="trace format (default: from the extension or the content)")
    p.add_argument("--granularity", choices=GRANULARITIES, default="field",
                   help="cache key: (key, field) as a feature-store client caches, or the whole entity key")
    p.add_argument("--port", action="append", metavar="PORT[,PORT]",
                   help="Redis server port(s) in a capture (default: the ports Redis commands are sent to in "
                        "it; repeat or comma-list for several)")
    p.add_argument("--csv-spec", metavar="SPEC",
                   help="the columns of a CSV trace, as libCacheSim's -t csv params: time-col=1,obj-id-col=2,"
                        "obj-size-col=3[,op-col=N,key-size-col=N,delimiter=X,has-header=true,obj-id-is-num=true]"
                        " (columns from 1), or a preset: twitter")
    p.add_argument("--duration", metavar="DURATION",
                   help="with a live input (- or a FIFO): stop reading after this long (15m) and answer; Ctrl-C "
                        "and SIGTERM also end it with the full answer")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                   help=f"lookups per timeline point (default {DEFAULT_WINDOW:,})")

    fresh = p.add_argument_group("freshness and restarts")
    # One of the three at most: given two, the last would silently win.
    writes = fresh.add_mutually_exclusive_group()
    writes.add_argument("--writes", choices=WRITE_MODES, default="ignore",
                        help="what writes/deletes in the trace do to cached entries (default: ignore, and count "
                             "the stale reads that leaves)")
    writes.add_argument("--invalidate-on-write", dest="writes", action="store_const", const="invalidate",
                        help="same as --writes invalidate")
    writes.add_argument("--update-on-write", dest="writes", action="store_const", const="update",
                        help="same as --writes update")
    fresh.add_argument("--ttl", metavar="DURATION", help="entries expire this long after admission (10m, 1h)")
    fresh.add_argument("--refresh-schedule", metavar="FILE.csv",
                       help="feature,time rows: at each time, every cached value of the feature is evicted")
    fresh.add_argument("--restart-every", metavar="DURATION", help="every cache restarts empty this often (6h)")
    fresh.add_argument("--restart-at", metavar="TIME[,TIME...]", default="",
                       help="restart times: unix seconds or ISO 8601 (UTC unless given)")
    fresh.add_argument("--allow-list", metavar="FILE",
                       help="only these features (names or xxHash32 ids, one a line) are cacheable")

    mem = p.add_argument_group("byte capacities")
    mem.add_argument("--entry-overhead", type=int, default=DEFAULT_ENTRY_OVERHEAD, metavar="BYTES",
                     help=f"bytes per entry besides key, field and value (default {DEFAULT_ENTRY_OVERHEAD}: a JVM "
                          "Caffeine cache; see the README)")
    mem.add_argument("--assume-value-size", type=int, metavar="BYTES",
                     help="value size to assume for traces that carry none (text formats)")

    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    out.add_argument("--plot", metavar="FILE.png", help="draw hit rate over time, one line per capacity")
    out.add_argument("--timeline", metavar="FILE.csv", help="write the hit-rate timeline as CSV")
    out.add_argument("--report", metavar="FILE.html",
                     help="write the whole answer as one self-contained HTML page (input, traffic anatomy, "
                          "curves and sizing, hit rate over time, fleets, limits)")
    out.add_argument("--feature-names", metavar="FILE",
                     help="feature names, one a line: the report names the trace's xxHash32 field ids with them")
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def main(argv=None, prog: str = "simulate.py") -> int:
    args = build_parser(prog).parse_args(argv)
    check_outputs([*(("trace", t) for t in args.trace), ("--refresh-schedule", args.refresh_schedule),
                   ("--allow-list", args.allow_list), ("--feature-names", args.feature_names)],
                  [("--plot", args.plot), ("--timeline", args.timeline), ("--report", args.report)])
    names = None
    if args.feature_names:
        from cachescope.report.features import read_feature_names

        names = read_feature_names(args.feature_names)  # before the simulation: a bad file fails fast
    if args.plot:
        from cachescope.simulate.plot import check_plot_path

        check_plot_path(args.plot)  # before the simulation, not after it
    result = simulate_trace(
        args.trace if len(args.trace) > 1 else args.trace[0],
        format=args.format,
        granularity=args.granularity,
        window=args.window,
        writes=args.writes,
        ttl=args.ttl,
        refresh_schedule=args.refresh_schedule,
        restart_every=args.restart_every,
        restart_at=[t for t in args.restart_at.split(",") if t.strip()],
        allow_list=args.allow_list,
        entry_overhead=args.entry_overhead,
        assume_value_size=args.assume_value_size,
        ports=args.port,
        progress=not args.no_progress,
        params=_given_params(args),
        curve=args.curve,
        curve_capacities=args.curve_capacities,
        target=args.target,
        sample=args.sample,
        sample_keys=args.sample_keys,
        salts=args.salts,
        seeds=args.seeds,
        pods=args.pods,
        route=args.route,
        rolling_restart_every=args.rolling_restart_every,
        rolling_over=args.rolling_over,
        key_pattern=args.key_pattern,
        one_pod_of=args.one_pod_of,
        scheduler=args.scheduler,
        workers=args.workers,
        duration=args.duration,
        csv_spec=args.csv_spec,
        **{spec.keyword: getattr(args, spec.keyword) for spec in POLICIES.values()},
    )
    if result.live_end:
        print(f"live input ended: {result.live_end}; the answer covers everything read until then", file=sys.stderr)
    if result.input_reports:
        from cachescope.parse.report import input_line, input_report

        for stats in result.input_reports:
            print("\n".join([input_line(stats)] + input_report(stats)), file=sys.stderr)
    if args.timeline:
        with output_file(args.timeline, "--timeline") as where:
            result.timeline.to_csv(where, index=False)
        print(f"wrote the timeline to {args.timeline}", file=sys.stderr)
    if args.plot:
        with output_file(args.plot, "--plot") as where:
            result.plot(where)
        print(f"wrote the plot to {args.plot}", file=sys.stderr)
    if args.report:
        from cachescope.report.page import report_page

        # Made before the file is opened: a failure to read the trace again is not one to write the page.
        page = report_page(result, feature_names=list(names.values()) if names else None)
        with output_file(args.report, "--report") as where, open(where, "w", encoding="utf-8") as f:
            f.write(page)
        print(f"wrote the report to {args.report}", file=sys.stderr)
    if args.json:
        # One write: dumped to the stream, it went out in hundreds of small writes on an unbuffered stdout.
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        print(format_summary(result))
    return 0


def _param_dest(spec, param) -> str:
    return f"{spec.keyword}__{param.name}"


def _given_params(args) -> dict:
    """{policy keyword: {parameter: value}} for the parameter flags given."""
    given = {}
    for spec in POLICIES.values():
        for param in spec.params:
            value = getattr(args, _param_dest(spec, param))
            if value is not None:
                given.setdefault(spec.keyword, {})[param.name] = value
    return given


def format_summary(result) -> str:
    t = result.trace
    lines = [
        f"trace     {t.path} ({t.format})",
        f"          {t.commands:,} commands, {t.lookups:,} lookups of {'~' if result.infinite.get('estimated') else ''}{result.unique_keys:,} unique keys"
        + (f", {t.writes:,} writes" if t.writes else "")
        + (f", {t.deletes:,} deletes" if t.deletes else "")
        + _span(result),
        *_trace_notes(t),
        "",
    ]
    rows = result.summary_records()
    columns = _columns(result, rows)
    lines.append("  ".join(f"{name:>{width}}" if i else f"{name:<{width}}" for i, (name, width, _) in enumerate(columns)))
    for row in rows:
        name = label(row["policy"], row["capacity"], row["capacity_unit"])
        if isinstance(row.get("estimate"), str):
            name += f" x{row['pods']} sharded*"
        elif "pods" in row:
            name += f" x{row['pods']} {row['route']}"
        lines.append(_format_row(columns, row, name))
    estimated = result.infinite.get("estimated")
    lines.append(_format_row(columns, result.infinite, "infinite (bound) ~" if estimated else "infinite (bound)"))
    lines.extend(format_curves(result))
    lines.append("")
    lines.append("hit rate = lookup hits / lookups, cold start included; the infinite cache never evicts.")
    if estimated:
        lines.append("~ " + summary_note(result.infinite))
    if any(name == "cmds served" for name, _, _ in columns):
        lines.append("cmds served = commands (an HMGET and all its fields) answered entirely from the cache.")
        if not result.trace.round_trips_known:
            lines.append(f"round trips: a {result.trace.format} trace does not show which commands were pipelined "
                         "together; each command counts as a round trip of its own.")
    if any(name == "trips saved" for name, _, _ in columns):
        lines.append("trips saved = Redis round trips (a batch: the commands a connection sent before waiting for "
                     "replies) whose every lookup hit and that wrote nothing.")
    estimates = {r["estimate"] for r in rows if isinstance(r.get("estimate"), str)}
    for estimate in sorted(estimates):
        lines.append(f"* an estimate, {estimate}; x1 is this pod alone, the replicated fleet's hit rate.")
    if result.key_pattern is not None:
        lines.append(f"key pattern {result.key_pattern}: {result.unmatched_shards:,} lookups, writes and deletes "
                     "of keys it does not match (each such key is its own shard).")
    if any("pods" in row for row in rows):
        lines.append("x N ROUTE = a fleet of N pods, each with a cache of that capacity; pods min/med/max = the "
                     "spread of the pods' hit rates; imbalance = the busiest pod's lookups over the mean.")
    unanswered = [s for s in result.fleet_sizes if not s["why"].startswith("the size ")]
    if result.fleet_sizes:
        lines.append("no capacity was given: each fleet runs at its own answer for the first target"
                     + (", or where none reaches it:" if unanswered else "."))
    for size in unanswered:
        name = cache_name({"policy": size["policy"], "pods": size["pods"], "route": size["route"]})
        lines.append(f"  {name} at {int(size['capacity']):,} entries per pod: {size['why']}.")
    if any(name == "warm-up" for name, _, _ in columns):
        lines.append("warm-up / recovery = time until the hit rate over a window is within 5% of the steady rate.")
    return "\n".join(lines)


_SHOWN_SERVERS = 8


def _trace_notes(t) -> list[str]:
    """The attempts answered with an error (not lookups), and the lookups by Redis server."""
    lines = []
    if getattr(t, "zero_size_requests", 0):
        lines.append(f"          {t.zero_size_requests:,} requests of size 0 left out (as libCacheSim leaves them)")
    if t.error_replies:
        codes = ", ".join(f"{code} {n:,}" for code, n in sorted(t.error_replies.items(), key=lambda x: -x[1]))
        lines.append(f"          {sum(t.error_replies.values()):,} commands answered with an error are no lookups "
                     f"({t.error_lookups:,} left out): {codes}")
        redirected = t.error_replies.get("MOVED", 0) + t.error_replies.get("ASK", 0)
        if redirected:
            lines.append(f"          {redirected:,} of them redirected by the cluster (MOVED, ASK): the client's "
                         "retries are the lookups")
    servers = {s: n for s, n in t.lookups_by_server.items() if s != "unknown"}
    if servers:
        total = max(sum(servers.values()), 1)
        busiest = sorted(servers.items(), key=lambda x: (-x[1], x[0]))
        shares = ", ".join(f"{s} {n:,} ({n / total:.1%})" for s, n in busiest[:_SHOWN_SERVERS])
        hidden = len(busiest) - _SHOWN_SERVERS
        more = f", and {hidden:,} more (--json has all)" if hidden > 0 else ""
        lines.append(f"          lookups by Redis server: {shares}{more}")
    return lines


def format_curves(result) -> list[str]:
    """A few points of each curve (one per decade, and the sizing answers), then the sizing answers."""
    if not result.has_curves():
        return []
    import numpy as np

    lines = []
    for (policy, pods, route, unit, method), curve in result.curves.groupby(CURVE_KEYS, sort=False, dropna=False):
        fmt = human_bytes if unit == "bytes" else approx_count
        route = route_of({"route": route})
        if route is not None:
            continue  # a fleet's curve is in --json and --plot; its answer is in the table below
        mine = [r for r in records(result.sizing) if (r["policy"], r["pods"], r["route"]) == (policy, pods, route)]
        sized = {int(r["capacity"]) for r in mine if r.get("reached") and r["capacity"] is not None}
        caps = curve["capacity"].to_numpy()
        decades = {int(caps[min(np.searchsorted(caps, 10**k), len(caps) - 1)]) for k in range(19) if 10**k <= caps[-1]}
        shown = curve[curve["capacity"].isin(decades | sized | {int(caps[0]), int(caps[-1])})]
        if method == "exact":
            how = f"exact, {len(curve):,} capacities in one pass"
            trips = _has_batches(result)
            lines += ["", f"{POLICIES[policy].label} curve ({how})",
                      f"{'capacity':>12}  {'hit rate':>8}  {'cmds served':>11}" + ("  trips saved" if trips else "")]
            for row in shown.to_dict("records"):
                lines.append(f"{fmt(row['capacity']):>12}  {row['hit_rate']:>8.2%}  {_pct(row['command_hit_rate']):>11}"
                             + (f"  {_pct(row['round_trips_saved_rate']):>11}" if trips else ""))
            continue
        how = (f"{'SHARDS' if method == 'shards' else 'miniature simulations'}, sampled: "
               f"{curve['sample_rate'].iloc[0]:.3g} of the keys, {int(curve['salts'].iloc[0])} samples; "
               "band = 2 standard deviations across samples")
        lines += ["", f"{POLICIES[policy].label} curve ({how})", f"{'capacity':>12}  {'hit rate':>8}  {'band':>17}"]
        for row in shown.to_dict("records"):
            band = f"{row['hit_rate_low']:.2%} - {row['hit_rate_high']:.2%}"
            lines.append(f"{fmt(row['capacity']):>12}  {row['hit_rate']:>8.2%}  {band:>17}")
    return lines + format_answers(result)


def format_answers(result) -> list[str]:
    """One line per answer; with fleets, a table per target (one cache or fleet a line) and the cheapest."""
    rows = records(result.sizing) if len(result.sizing) else []
    if not any(r["route"] is not None for r in rows):
        overhead = result.request.get("entry_overhead")
        return [answer_line(row, overhead) for row in rows] + [best_line(b) for b in result.best if len(rows) > 1]
    lines = []
    for target in dict.fromkeys(r["target"] for r in rows):
        lines += ["", *fleet_table([r for r in rows if r["target"] == target and r["capacity_unit"] == "entries"])]
        lines += [best_line(b) for b in result.best if b["target"] == target]
    lines.append("memory/pod = peak bytes of a pod's cache at that size (values + keys + fields + "
                 f"{result.request.get('entry_overhead')} B an entry); budget/pod = the byte budget per pod "
                 "(Caffeine's maximumWeight) that reaches the target.")
    return lines


def _has_batches(result) -> bool:
    """Whether the trace's round trips are not simply its commands (a capture of a pipelining client)."""
    inf = result.infinite
    return inf.get("round_trips", inf.get("commands")) != inf.get("commands")


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _columns(result, rows: list[dict]):
    """(header, width, cell formatter) for each column worth showing for this result (`rows`: its summary)."""
    s = {k for row in rows for k in row}
    cols = [("cache", 30 if "pods" in s else 22, lambda r, name: name),
            ("hits", 12, lambda r, _: f"{r['hits']:,}"),
            ("hit rate", 8, lambda r, _: f"{r['hit_rate']:.2%}")]
    if "byte_hit_rate" in s:
        cols.append(("byte hit rate", 13, lambda r, _: _pct(r.get("byte_hit_rate"))))
    if result.trace.commands != result.trace.lookups:
        cols.append(("cmds served", 11, lambda r, _: _pct(r.get("command_hit_rate"))))
    if _has_batches(result):
        cols.append(("trips saved", 11, lambda r, _: _pct(r.get("round_trips_saved_rate"))))
    if "pods" in s:
        cols.append(("pods min/med/max", 22, lambda r, _: "" if "pods" not in r else
                     f"{r['pod_hit_rate_min']:.1%}/{r['pod_hit_rate_median']:.1%}/{r['pod_hit_rate_max']:.1%}"))
        cols.append(("imbalance", 9, lambda r, _: "" if "pods" not in r else f"{r['load_imbalance']:.2f}"))
        cols.append(("fleet memory", 12, lambda r, _: "" if "pods" not in r else _fleet_memory(r)))
    for key, header in (("evictions", "evictions"), ("invalidations", "invalidated"),
                        ("refresh_evictions", "refreshed"), ("refresh_refetches", "re-fetched"),
                        ("expirations", "expired"),
                        ("stale_reads", "stale reads"), ("uncacheable", "not cacheable")):
        if key in s and sum(_present(rows, key)) > 0:
            cols.append((header, max(11, len(header)), lambda r, _, k=key: f"{r[k]:,}" if k in r else ""))
    if "warmup_s" in s:
        cols.append(("warm-up", 9, lambda r, _: _duration(r.get("warmup_s"))))
    if "recovery_s" in s and max(_present(rows, "restarts"), default=0) > 0:
        cols.append(("recovery", 9, lambda r, _: _duration(r.get("recovery_s"))))
    return cols


def _present(rows: list[dict], key: str) -> list:
    """The column's values in the rows that have one (as pandas' sum and max skip NaN)."""
    return [row[key] for row in rows if key in row and not _missing(row[key])]


def _fleet_memory(row) -> str:
    if row["capacity_unit"] == "bytes":
        return human_bytes(row["fleet_capacity_bytes"])
    return f"{approx_count(row['fleet_capacity_entries'])} entries"


def _format_row(columns, row, name) -> str:
    cells = [fmt(row, name) for _, _, fmt in columns]
    return "  ".join(f"{c:>{w}}" if i else f"{c:<{w}}" for i, (c, (_, w, _)) in enumerate(zip(cells, columns)))


def _pct(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2%}"


def _duration(seconds) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return ""
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _span(result) -> str:
    if not result.has_clock or result.timeline.empty:
        return ""
    seconds = float(result.timeline["seconds"].max())
    return f"; {seconds / 60:.1f} minutes of traffic" if seconds >= 120 else f"; {seconds:.1f} s of traffic"


def entry_point() -> int:
    return run("simulate.py", main)
