"""`cachescope simulate` / `python simulate.py`: hit rates of cache policies over a trace."""

from __future__ import annotations

import json
import math
import sys

from cachescope.cli.common import Parser, run
from cachescope.outputs import check_outputs
from cachescope.simulate.engine import DEFAULT_WINDOW, simulate_trace
from cachescope.simulate.options import DEFAULT_ENTRY_OVERHEAD, WRITE_MODES
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.result import label
from cachescope.trace.formats import FORMATS
from cachescope.trace.readers import GRANULARITIES


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Simulate in-process cache policies over a Redis trace.")
    p.add_argument("trace", help="trace file (commands, monitor or keys text, Parquet) or a pcap/pcapng capture")
    group = p.add_argument_group(
        "policies", "capacity in entries (100000, 1e5, 100k) or bytes (64MiB, 2GB); a comma list runs several")
    for spec in POLICIES.values():
        group.add_argument(spec.flag, dest=spec.keyword, metavar="N[,N...]", help=spec.description)
        for param in spec.params:
            group.add_argument(spec.param_flag(param), dest=_param_dest(spec, param), type=float, metavar="X",
                               help=f"{spec.label}: {param.help} (default {param.default:g})")
    p.add_argument("--format", choices=FORMATS, help="trace format (default: from the extension or the content)")
    p.add_argument("--granularity", choices=GRANULARITIES, default="field",
                   help="cache key: (key, field) as a feature-store client caches, or the whole entity key")
    p.add_argument("--port", action="append", metavar="PORT[,PORT]",
                   help="Redis server port(s) in a capture (default 6379; repeat or comma-list for several)")
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
    out.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def main(argv=None, prog: str = "simulate.py") -> int:
    args = build_parser(prog).parse_args(argv)
    check_outputs([("trace", args.trace), ("--refresh-schedule", args.refresh_schedule),
                   ("--allow-list", args.allow_list)],
                  [("--plot", args.plot), ("--timeline", args.timeline)])
    if args.plot:
        from cachescope.simulate.plot import check_plot_path

        check_plot_path(args.plot)  # before the simulation, not after it
    result = simulate_trace(
        args.trace,
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
        ports=args.port or (6379,),
        progress=not args.no_progress,
        params=_given_params(args),
        **{spec.keyword: getattr(args, spec.keyword) for spec in POLICIES.values()},
    )
    if args.timeline:
        result.timeline.to_csv(args.timeline, index=False)
        print(f"wrote the timeline to {args.timeline}", file=sys.stderr)
    if args.plot:
        result.plot(args.plot)
        print(f"wrote the plot to {args.plot}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
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
        f"          {t.commands:,} commands, {t.lookups:,} lookups of {result.unique_keys:,} unique keys"
        + (f", {t.writes:,} writes" if t.writes else "")
        + (f", {t.deletes:,} deletes" if t.deletes else "")
        + _span(result),
        "",
    ]
    columns = _columns(result)
    lines.append("  ".join(f"{name:>{width}}" if i else f"{name:<{width}}" for i, (name, width, _) in enumerate(columns)))
    for row in result.summary.to_dict("records"):
        lines.append(_format_row(columns, row, label(row["policy"], row["capacity"], row["capacity_unit"])))
    lines.append(_format_row(columns, result.infinite, "infinite (bound)"))
    lines.append("")
    lines.append("hit rate = lookup hits / lookups, cold start included; the infinite cache never evicts.")
    if any(name == "cmds served" for name, _, _ in columns):
        lines.append("cmds served = commands (an HMGET and all its fields) answered entirely from the cache: "
                     "Redis round trips saved.")
    if any(name == "warm-up" for name, _, _ in columns):
        lines.append("warm-up / recovery = time until the hit rate over a window is within 5% of the steady rate.")
    return "\n".join(lines)


def _columns(result):
    """(header, width, cell formatter) for each column worth showing for this result."""
    s = result.summary
    cols = [("cache", 22, lambda r, name: name),
            ("hits", 12, lambda r, _: f"{r['hits']:,}"),
            ("hit rate", 8, lambda r, _: f"{r['hit_rate']:.2%}")]
    if "byte_hit_rate" in s:
        cols.append(("byte hit rate", 13, lambda r, _: _pct(r.get("byte_hit_rate"))))
    if result.trace.commands != result.trace.lookups:
        cols.append(("cmds served", 11, lambda r, _: _pct(r.get("command_hit_rate"))))
    for key, header in (("evictions", "evictions"), ("invalidations", "invalidated"),
                        ("refresh_evictions", "refreshed"), ("expirations", "expired"),
                        ("stale_reads", "stale reads"), ("uncacheable", "not cacheable")):
        if key in s and s[key].sum() > 0:
            cols.append((header, max(11, len(header)), lambda r, _, k=key: f"{r[k]:,}" if k in r else ""))
    if "warmup_s" in s:
        cols.append(("warm-up", 9, lambda r, _: _duration(r.get("warmup_s"))))
    if "recovery_s" in s and s["restarts"].max() > 0:
        cols.append(("recovery", 9, lambda r, _: _duration(r.get("recovery_s"))))
    return cols


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
