"""`cachescope parse` / `python parse.py CAPTURE -o OUT`: a packet capture (or a MONITOR log) to a trace."""

from __future__ import annotations

import json
import os
import sys

from cachescope.cli.common import EXIT_USAGE, Parser
from cachescope.errors import UsageError
from cachescope.outputs import check_outputs
from cachescope.parse.output_format import OUTPUT_FORMATS
from cachescope.parse.report import input_line, input_report


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Parse captured Redis traffic into a trace (DESIGN.md's schema).")
    p.add_argument("capture", nargs="+",
                   help="pcap or pcapng capture (tcpdump -w), a MONITOR log, or a tcpflow output directory (tcpflow "
                        "-o DIR: no packet times, so no latencies), compressed or not; - for standard input "
                        "(tcpdump -w - | ..., ended cleanly by Ctrl-C); several (files, globs, capture.py's rotated "
                        "files, a folder of captures per host) are merged by time, each host its own client")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="trace to write: .parquet, .txt (commands), .monitor, .oracleGeneral; with several "
                        "captures, a folder (fleet/) writes a Parquet dataset, one part per capture")
    p.add_argument("--format", choices=OUTPUT_FORMATS, help="output format (default: from OUT's extension)")
    p.add_argument("--port", action="append", metavar="PORT[,PORT]",
                   help="Redis server port(s) (default: the ports Redis commands are sent to in the capture; "
                        "repeat or comma-list for several servers)")
    p.add_argument("--anonymize", action="store_true",
                   help="replace keys by a salted hash (consistent within this trace, a new salt each run)")
    p.add_argument("--stats-json", metavar="FILE", help="also write the counters as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    dask = p.add_argument_group("several captures on Dask", "captures parsed in parallel, one task each")
    dask.add_argument("--workers", type=int, metavar="N",
                      help="a local Dask cluster of N worker processes (default: one per core, when Dask is "
                           "installed and there are several captures; 0: parse here, one after another)")
    dask.add_argument("--scheduler", metavar="ADDRESS",
                      help="run on the Dask cluster already running there (tcp://HOST:8786); its workers must "
                           "see the captures and the output at the same paths")
    return p


def main(argv=None, prog: str = "parse.py") -> int:
    args = build_parser(prog).parse_args(argv)
    from cachescope.parse.inputs import captures

    if "-" in args.capture and len(args.capture) > 1:
        raise UsageError("-: standard input is read alone, not with other captures")
    caps = captures(args.capture)
    check_outputs([("capture", c.path) for c in caps], [("-o", args.output), ("--stats-json", args.stats_json)])
    from cachescope.parse.output_format import is_folder_output

    if len(caps) == 1 and len(args.capture) == 1 and args.scheduler is None and not args.workers \
            and not is_folder_output(args.output):
        # The parser starts before numpy and pyarrow are imported (`convert`): not for --help.
        from cachescope.parse.convert import convert

        stats = convert(caps[0].path, args.output, fmt=args.format, ports=args.port,
                        anonymize=args.anonymize, progress=not args.no_progress)
        if stats.get("live_end"):
            print(f"live input ended: {stats['live_end']}; the trace holds everything read until then",
                  file=sys.stderr)
        print(format_stats(stats), file=sys.stderr)
    else:
        from cachescope.parse.many import convert_many

        stats = convert_many(caps, args.output, fmt=args.format, ports=args.port, anonymize=args.anonymize,
                             progress=not args.no_progress, workers=args.workers, scheduler=args.scheduler)
        print(format_many(stats), file=sys.stderr)
    if args.stats_json:
        from cachescope.output_file import output_file

        with output_file(args.stats_json, "--stats-json") as where, open(where, "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=2)
            f.write("\n")
    for failure in stats.get("failed", []):
        print(f"{prog}: error: {failure['error']}", file=sys.stderr)
    return EXIT_USAGE if stats.get("failed") else 0


def format_stats(stats: dict) -> str:
    s = stats
    lines = [input_line(s),
             f"  {s.get('commands', 0):,} commands -> {s.get('rows', 0):,} rows in {s['output']} ({s['format']})"]
    return "\n".join(lines + input_report(s))


def format_many(stats: dict) -> str:
    """Each capture's size, then the counters summed, the clock offsets and where the rows went."""
    s = stats
    lines = [input_line(c) for c in s["captures"]]
    parsed = len(s["captures"])
    where = (f"{s['output']} (a Parquet dataset, one part per capture)" if s["output"].endswith(("/", os.sep))
             or os.path.isdir(s["output"]) else f"{s['output']} ({s['format']})")
    lines.append(f"  {parsed:,} capture{'s' * (parsed != 1)}: {s.get('commands', 0):,} commands -> "
                 f"{s.get('rows', 0):,} rows in {where}")
    lines += input_report(s)
    for o in s.get("clock_offsets", []):
        a, b = o["captures"]
        lines.append(f"  clock offset: {b} is {o['offset_ns'] / 1e6:+,.3f} ms from {a} (median over "
                     f"{o['commands']:,} commands of {o['connections']:,} connections both saw; includes the "
                     "network delay between them)")
    if s.get("failed"):
        lines.append(f"  {len(s['failed']):,} capture{'s' * (len(s['failed']) != 1)} could not be parsed "
                     "(below); the others are written")
    return "\n".join(lines)


def entry_point() -> int:
    from cachescope.cli.common import run

    return run("parse.py", main)
