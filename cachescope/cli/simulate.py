"""`cachescope simulate` / `python simulate.py`: hit rates of cache policies over a trace."""

from __future__ import annotations

import json
import sys

from cachescope.cli.common import Parser, run
from cachescope.simulate.engine import DEFAULT_WINDOW, simulate_trace
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.result import label
from cachescope.trace.formats import FORMATS
from cachescope.trace.readers import GRANULARITIES


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Simulate in-process cache policies over a Redis trace.")
    p.add_argument("trace", help="trace file: commands, monitor or keys text, or Parquet")
    group = p.add_argument_group("policies (capacity in entries: 100000, 1e5, 100k, or a list 1e4,1e5,1e6)")
    for spec in POLICIES.values():
        group.add_argument(spec.flag, metavar="N[,N...]", help=spec.description)
    p.add_argument("--format", choices=FORMATS, help="trace format (default: from the extension or the content)")
    p.add_argument("--granularity", choices=GRANULARITIES, default="field",
                   help="cache key: (key, field) as a feature-store client caches, or the whole entity key")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                   help=f"lookups per timeline point (default {DEFAULT_WINDOW:,})")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    p.add_argument("--plot", metavar="FILE.png", help="draw hit rate over time, one line per capacity")
    p.add_argument("--timeline", metavar="FILE.csv", help="write the hit-rate timeline as CSV")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def main(argv=None, prog: str = "simulate.py") -> int:
    args = build_parser(prog).parse_args(argv)
    capacities = {name: getattr(args, name) for name in POLICIES}
    result = simulate_trace(
        args.trace,
        format=args.format,
        granularity=args.granularity,
        window=args.window,
        progress=not args.no_progress,
        **capacities,
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


def format_summary(result) -> str:
    t = result.trace
    lines = [
        f"trace     {t.path} ({t.format})",
        f"          {t.commands:,} commands, {t.lookups:,} lookups of {result.unique_keys:,} unique keys"
        + (f", {t.writes:,} writes" if t.writes else "")
        + (f", {t.deletes:,} deletes" if t.deletes else "")
        + _span(result),
        "",
        f"{'cache':<24} {'hits':>14} {'misses':>14} {'hit rate':>9}",
    ]
    for row in result.summary.itertuples():
        lines.append(f"{label(row.policy, row.capacity) + ' entries':<24} {row.hits:>14,} {row.misses:>14,} "
                     f"{row.hit_rate:>9.2%}")
    inf = result.infinite
    lines.append(f"{'infinite (bound)':<24} {inf['hits']:>14,} {inf['misses']:>14,} {inf['hit_rate']:>9.2%}")
    lines.append("")
    lines.append("hit rate = lookup hits / lookups, cold start included; the infinite cache never evicts.")
    return "\n".join(lines)


def _span(result) -> str:
    if not result.has_clock or result.timeline.empty:
        return ""
    seconds = float(result.timeline["seconds"].max())
    return f"; {seconds / 60:.1f} minutes of traffic" if seconds >= 120 else f"; {seconds:.1f} s of traffic"


def entry_point() -> int:
    return run("simulate.py", main)
