"""`cachescope parse` / `python parse.py CAPTURE -o OUT`: a packet capture (or a MONITOR log) to a trace."""

from __future__ import annotations

import json
import sys

from cachescope.cli.common import Parser
from cachescope.outputs import check_outputs
from cachescope.parse.output_format import OUTPUT_FORMATS


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Parse captured Redis traffic into a trace (DESIGN.md's schema).")
    p.add_argument("capture", help="pcap or pcapng capture (tcpdump -w), a MONITOR log, or a tcpflow output "
                                   "directory (tcpflow -o DIR: no packet times, so no latencies)")
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
    print(format_stats(stats), file=sys.stderr)
    if args.stats_json:
        with open(args.stats_json, "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=2)
            f.write("\n")
    return 0


# Segments, bytes and signals reassembly set aside (each also in --stats-json under its key).
REASSEMBLY_DROPS = [
    ("segments_after_close", "segments after their connection closed ({bytes_after_close:,} bytes)"),
    ("ignored_rsts", "RSTs outside the window (ignored)"),
    ("out_of_window_segments", "segments beyond any TCP window ({out_of_window_bytes:,} bytes)"),
    ("out_of_window_acks", "ACKs beyond any TCP window"),
    ("segments_before_start", "segments before a connection's first byte seen"),
    ("non_redis_segments", "segments on no Redis port"),
    ("reassembly_limit_hits", "reassembly limits reached"),
]


def format_stats(stats: dict) -> str:
    s = stats
    if s.get("input_format") == "tcpflow":
        head = (f"{s['input']}: tcpflow directory, {s.get('files', 0):,} flow files, {s.get('bytes', 0):,} bytes, "
                f"{s.get('connections', 0):,} connections ({s.get('mid_stream_connections', 0):,} not seen "
                f"from their start)")
    else:
        head = (f"{s['input']}: {s.get('packets', 0):,} packets, {s.get('bytes', 0):,} bytes, "
                f"{s.get('connections', 0):,} connections ({s.get('mid_stream_connections', 0):,} already open)")
    lines = [
        head,
        f"  {s.get('commands', 0):,} commands -> {s.get('rows', 0):,} rows in {s['output']} ({s['format']})",
        f"  losses: {s.get('gaps', 0):,} gaps ({s.get('gap_bytes', 0):,} bytes), "
        f"{s.get('retransmissions', 0):,} retransmissions, {s.get('out_of_order', 0):,} out of order, "
        f"{s.get('resyncs', 0):,} resyncs, {s.get('unknown_replies', 0):,} replies unknown",
    ]
    dropped = [(n, what) for n, what in ((s.get(k, 0), what) for k, what in REASSEMBLY_DROPS) if n]
    if dropped:
        counts = {k: s.get(k, 0) for k in ("bytes_after_close", "out_of_window_bytes")}
        lines.append("  dropped by reassembly: " + ", ".join(f"{n:,} {what.format(**counts)}" for n, what in dropped))
    if s.get("ports_found"):
        lines.append(f"  Redis found by content on port(s) {', '.join(map(str, s['redis_ports']))} (--port to choose)")
    limits = [(s.get("oversized_commands", 0), "commands over the size limit (no rows)"),
              (s.get("oversized_replies", 0), "replies too large to describe (lookups unknown)"),
              (s.get("elided_keys", 0), "rows dropped for a key or field not kept"),
              (s.get("args_lost_in_gaps", 0), "arguments cut by a gap (command kept)"),
              (s.get("unconfirmed_commands", 0), "commands after a resync unconfirmed (dropped)"),
              (s.get("refused_inline_lines", 0), "inline lines Redis refuses"),
              (s.get("unparsable_bytes", 0), "unparsable bytes"),
              (s.get("encrypted_connections", 0), "encrypted (TLS) connections, not read")]
    if any(n for n, _ in limits):
        lines.append("  limits: " + ", ".join(f"{n:,} {what}" for n, what in limits if n))
    if s.get("truncated_tail"):
        lines.append("  the capture ends in a cut record (tcpdump stopped mid-write): the rest was parsed")
    other = s.get("other_commands") or {}
    if other:
        top = sorted(other.items(), key=lambda kv: -kv[1])[:8]
        lines.append("  other commands: " + ", ".join(f"{name} {n:,}" for name, n in top))
    errors = s.get("error_replies") or {}
    if errors:
        top = sorted(errors.items(), key=lambda kv: -kv[1])[:8]
        lines.append("  answered with an error (rows marked in `error`, no lookups): "
                     + ", ".join(f"{code} {n:,}" for code, n in top))
    return "\n".join(lines)


def entry_point() -> int:
    from cachescope.cli.common import run

    return run("parse.py", main)
