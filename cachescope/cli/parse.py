"""`cachescope parse` / `python parse.py CAPTURE -o OUT`: a packet capture (or a MONITOR log) to a trace."""

from __future__ import annotations

import json
import sys

from cachescope.cli.common import Parser
from cachescope.outputs import check_outputs
from cachescope.parse.output_format import OUTPUT_FORMATS
from cachescope.parse.report import input_line, input_report


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Parse captured Redis traffic into a trace (DESIGN.md's schema).")
    p.add_argument("capture", help="pcap or pcapng capture (tcpdump -w), a MONITOR log, or a tcpflow output "
                                   "directory (tcpflow -o DIR: no packet times, so no latencies); compressed or "
                                   "not; - for standard input (tcpdump -w - | ..., ended cleanly by Ctrl-C)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="trace to write: .parquet, .txt (commands), .monitor, .oracleGeneral")
    p.add_argument("--format", choices=OUTPUT_FORMATS, help="output format (default: from OUT's extension)")
    p.add_argument("--port", action="append", metavar="PORT[,PORT]",
                   help="Redis server port(s) (default: the ports Redis commands are sent to in the capture; "
                        "repeat or comma-list for several servers)")
    p.add_argument("--anonymize", action="store_true",
                   help="replace keys by a salted hash (consistent within this trace, a new salt each run)")
    p.add_argument("--stats-json", metavar="FILE", help="also write the counters as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def main(argv=None, prog: str = "parse.py") -> int:
    args = build_parser(prog).parse_args(argv)
    check_outputs([("capture", args.capture)], [("-o", args.output), ("--stats-json", args.stats_json)])
    from cachescope.parse.convert import convert  # pyarrow and the parser: not for --help

    stats = convert(args.capture, args.output, fmt=args.format, ports=args.port,
                    anonymize=args.anonymize, progress=not args.no_progress)
    if stats.get("live_end"):
        print(f"live input ended: {stats['live_end']}; the trace holds everything read until then", file=sys.stderr)
    print(format_stats(stats), file=sys.stderr)
    if args.stats_json:
        with open(args.stats_json, "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=2)
            f.write("\n")
    return 0


def format_stats(stats: dict) -> str:
    s = stats
    lines = [input_line(s),
             f"  {s.get('commands', 0):,} commands -> {s.get('rows', 0):,} rows in {s['output']} ({s['format']})"]
    return "\n".join(lines + input_report(s))


def entry_point() -> int:
    from cachescope.cli.common import run

    return run("parse.py", main)
