"""Pipeline depth: does one connection that pipelines N commands cost what N commands over many connections do?

Three synthetic captures of the same GETs (`--commands`, 1,000,000 by default), written here as pcap:
  - deep: one connection sends every GET, then reads every reply (what `redis-cli --pipe` and a feature
    store's batch upload do);
  - deep, no replies: the same requests, the server's side left out of the capture;
  - spread: `--connections` (1,000) connections, each pipelining its share of the GETs then reading their
    replies, one connection after the other.
Every connection opens with a handshake in the capture (no mid-stream pickup) and is cut into segments of at
most `--segment` bytes (1448: a 1500-byte MTU). Each capture is parsed in this process (`CaptureRows`, as
parse.py reads it, Arrow batches included), best of `--runs`; the deep captures' times are printed with their
ratio to the spread one's, measured in the same run. Linear parsing keeps both ratios near 1; a count of
every command still waiting, made for each command, made them grow with the depth (40,000 GETs: 2.39 s on
one connection, 0.04 s over 100).

The parser holds at most `max_pending_commands` (100,000) commands waiting for their reply; deeper ones are
emitted with their reply unknown, so the deep capture with replies pairs only the last 100,000 (printed).

Usage: python bench/bench_pipeline_depth.py [--commands N] [--connections C] [--runs R]
"""
import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T0 = 1_700_000_000 * 10**9
SERVER = (bytes([10, 0, 0, 1]), 6379)
SYN, ACK, PSH = 0x02, 0x10, 0x08


class Pcap:
    """A nanosecond pcap of Ethernet frames carrying IPv4/TCP; checksums are left zero (not checked)."""

    def __init__(self, f):
        self.f = f
        self.ts = T0
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))

    def segment(self, src, dst, seq, ack, flags, payload=b""):
        self.ts += 1000
        tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags,
                          65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 1, 0x4000, 64, 6, 0,
                         src[0], dst[0])
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + payload
        sec, ns = divmod(self.ts, 10**9)
        self.f.write(struct.pack("<IIII", sec, ns, len(frame), len(frame)))
        self.f.write(frame)


class Connection:
    """One client connection to SERVER, opened with a handshake; `send` cuts a byte stream into segments."""

    def __init__(self, pcap, index):
        self.pcap = pcap
        self.client = (bytes([10, 1, index >> 8 & 255, index & 255]), 20000 + index % 40000)
        self.seq = {True: 1000, False: 5000}  # by direction: from the client?
        pcap.segment(self.client, SERVER, self.seq[True] - 1, 0, SYN)
        pcap.segment(SERVER, self.client, self.seq[False] - 1, self.seq[True], SYN | ACK)
        pcap.segment(self.client, SERVER, self.seq[True], self.seq[False], ACK)

    def send(self, from_client, data, mss):
        src, dst = (self.client, SERVER) if from_client else (SERVER, self.client)
        for at in range(0, len(data), mss):
            chunk = data[at:at + mss]
            self.pcap.segment(src, dst, self.seq[from_client], self.seq[not from_client], ACK | PSH, chunk)
            self.seq[from_client] += len(chunk)


def gets(first, n):
    return b"".join(b"*2\r\n$3\r\nGET\r\n$12\r\nkey:%08d\r\n" % i for i in range(first, first + n))


def replies(n):
    return b"$10\r\nvalue-0123\r\n" * n


def write_capture(path, commands, connections, with_replies, mss):
    per = commands // connections
    with open(path, "wb") as f:
        pcap = Pcap(f)
        for c in range(connections):
            conn = Connection(pcap, c)
            conn.send(True, gets(c * per, per), mss)
            if with_replies:
                conn.send(False, replies(per), mss)


def parse(path):
    """Rows and the parser's counters of one parse, and its wall time."""
    from cachescope.parse.capture_source import CaptureRows

    rows = CaptureRows(path, [SERVER[1]])
    start = time.perf_counter()
    n = sum(rb.num_rows for rb in rows.record_batches())
    return time.perf_counter() - start, n, rows.stats


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commands", type=int, default=1_000_000)
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--segment", type=int, default=1448)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    if a.commands % a.connections:
        p.error("--commands must be a multiple of --connections")
    import cachescope.parse.schema  # noqa: F401  (imports are not the timed parse)

    shapes = {"spread": (a.connections, True), "deep": (1, True), "deep, no replies": (1, False)}
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (conns, with_replies) in shapes.items():
            path = os.path.join(tmp, name.replace(", ", "_").replace(" ", "_") + ".pcap")
            write_capture(path, a.commands, conns, with_replies, a.segment)
            runs = [parse(path) for _ in range(a.runs)]
            secs, n, stats = min(runs, key=lambda r: r[0])
            best[name] = secs
            print(f"{name:<18} {conns:>6,} connection(s) x {a.commands // conns:>9,} GETs "
                  f"({os.path.getsize(path) / 1e6:6.1f} MB): {secs:6.2f} s, {n:,} rows, "
                  f"{stats['unknown_replies']:,} with their reply unknown")
    for name in ("deep", "deep, no replies"):
        print(f"{name} / spread: {best[name] / best['spread']:.2f}x")


if __name__ == "__main__":
    main()
