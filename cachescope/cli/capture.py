"""`cachescope capture` / `python capture.py`: record a host's Redis traffic with tcpdump, or a server's MONITOR."""

from __future__ import annotations

import argparse
import os

from cachescope.capture.monitor import record_monitor
from cachescope.capture.options import human_bytes, human_seconds, parse_duration, parse_ports, parse_size
from cachescope.capture.packets import DEFAULT_BUFFER, capture_packets
from cachescope.capture.status import Status
from cachescope.cli.common import Parser, run
from cachescope.errors import UsageError

EPILOG = """\
files written:
  no rotation          FILE as given
  --rotate-size        FILE, FILE1, FILE2, ... (tcpdump appends a count once a file passes the size)
  --rotate-every       FILE with -%Y%m%d-%H%M%S before its extension (local time each file was opened),
                       e.g. capture-20240521-143000.pcap, unless FILE already has strftime % fields
  both                 each timed file may also grow a count: capture-20240521-143000.pcap1

--compress gzip|zstd|xz|lz4 compresses each file once it is closed (FILE.gz, FILE1.gz, ...), as tcpdump -z
does, the last one too; simulate.py and parse.py read them as they are.

Capturing packets needs root or CAP_NET_RAW (sudo). Ctrl-C stops cleanly and prints the counters.
--monitor records `redis-cli MONITOR` lines instead of packets (no root needed, but it slows the server).
"""

PACKET_ONLY = ("port", "interface", "buffer", "rotate_size", "rotate_every", "compress")


def build_parser(prog: str) -> Parser:
    p = Parser(prog=prog, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Capture the Redis traffic of this host into a pcap file (tcpdump), "
                           "or a server's MONITOR stream into a monitor text file.")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the capture file to write; - writes it to standard output, packet by packet, for a "
                        "live simulation: capture.py -o - | simulate.py - --port 6379 --lru 1e5")
    p.add_argument("--duration", metavar="TIME", help="how long: 90s, 15m, 1h (default: until Ctrl-C)")
    p.add_argument("--port", action="append", metavar="PORT[,PORT...]",
                   help="Redis port to capture, repeatable (default 6379)")
    p.add_argument("--interface", "-i", metavar="IF", help="network interface (default any)")
    p.add_argument("--buffer", metavar="SIZE",
                   help=f"kernel capture buffer, e.g. 256MiB (default {DEFAULT_BUFFER // 2**20}MiB)")
    p.add_argument("--rotate-size", metavar="SIZE", help="start a new file past this size, e.g. 1GiB")
    p.add_argument("--rotate-every", metavar="TIME", help="start a new file every TIME, e.g. 10m")
    p.add_argument("--compress", "-z", metavar="gzip|zstd|xz|lz4",
                   help="compress each file once closed (rotated, or at the end), as tcpdump -z does")
    p.add_argument("--monitor", metavar="URL",
                   help="record MONITOR from redis://[:password@]host:port[/db] instead of capturing packets")
    return p


def main(argv=None, prog: str = "capture.py") -> int:
    args = build_parser(prog).parse_args(argv)
    status = Status(prog)
    duration = parse_duration(args.duration, "--duration") if args.duration else None
    if args.monitor:
        given = [f"--{name.replace('_', '-')}" for name in PACKET_ONLY if getattr(args, name) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} capture packets and cannot be used with --monitor")
        result = record_monitor(args.monitor, args.output, duration=duration, status=status)
        status.say(f"recorded {result.lines:,} command{'' if result.lines == 1 else 's'} "
                   f"({human_bytes(result.bytes)}) in "
                   f"{human_seconds(result.seconds)} into {args.output}")
        return 0
    result = capture_packets(
        args.output,
        ports=parse_ports(args.port or ["6379"]),
        interface=args.interface or "any",
        duration=duration,
        buffer_bytes=parse_size(args.buffer, "--buffer") if args.buffer else DEFAULT_BUFFER,
        rotate_size=parse_size(args.rotate_size, "--rotate-size") if args.rotate_size else None,
        rotate_every=parse_duration(args.rotate_every, "--rotate-every") if args.rotate_every else None,
        status=status,
        compress=args.compress,
    )
    report(result, status, interface=args.interface or "any")
    return 0


def report(result, status: Status, interface: str = "any") -> None:
    s = result.stats
    status.say(f"{s.captured:,} packets captured, {_count(s.received)} received by filter, "
               f"{_count(s.dropped_by_kernel)} dropped by kernel"
               + (f", {s.dropped_by_interface:,} dropped by interface" if s.dropped_by_interface else ""))
    if is_loopback(interface) and s.received is not None and s.received > s.captured:
        # Linux hands a packet socket each loopback packet twice (as sent and as received) and counts both;
        # libpcap keeps one copy. Without this line the count reads as half the packets lost.
        status.say(f"(on the loopback interface {interface} the kernel counts each packet twice, as sent and as "
                   "received, and tcpdump keeps one copy: the difference is no loss)")
    dropped = (s.dropped_by_kernel or 0) + (s.dropped_by_interface or 0)
    if dropped:
        share = dropped / max(1, dropped + s.captured)
        status.say(f"WARNING: {dropped:,} packets ({share:.2%}) were dropped before tcpdump saw them: the "
                   "capture has gaps and the parser will count them; raise --buffer, narrow the ports, or "
                   "write to a faster disk")
    for path in result.files:
        status.say(f"wrote {path} ({human_bytes(os.path.getsize(path))})")
    if result.to_stdout:
        status.say("wrote the capture to standard output")
    elif not result.files:
        status.say("no file was written (no packet matched?)")


def is_loopback(interface: str) -> bool:
    """Whether `interface` is a loopback device (IFF_LOOPBACK in its flags; by name where /sys says nothing)."""
    try:
        with open(f"/sys/class/net/{os.path.basename(interface)}/flags") as f:
            return bool(int(f.read().strip(), 16) & 0x8)
    except (OSError, ValueError):
        return interface == "lo"


def _count(n) -> str:
    return "?" if n is None else f"{n:,}"


def entry_point() -> int:
    return run("capture.py", main)
