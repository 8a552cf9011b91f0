"""Memory follows the connections open at once, not every connection a capture ever held: a capture of many
short connections (a client that connects per request, a SYN scan) must parse in about the same peak memory
whether it holds 20,000 of them or 200,000."""

import struct

import pyarrow as pa

from cachescope.parse.capture_source import CaptureRows

from conftest import run_cli

GET = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
VALUE = b"$1\r\nv\r\n"
T0 = 1_700_000_000


def frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 0x50, flags, 65535, 0, 0)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload


def short_connections(path, n, every_us=1000):
    """`n` connections, one every `every_us`: SYN, a GET, its reply with the server's FIN, the client's FIN.
    Each client address and port is new (ids keep increasing), so each is a connection of its own."""
    server = bytes([10, 0, 0, 2])
    SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        out = []
        for i in range(n):
            client, port = bytes([10, 1, i >> 16 & 255, i >> 8 & 255]), 1024 + (i & 255)
            ts = T0 * 10**6 + i * every_us
            for dt, fr in enumerate([
                frame(client, server, port, 6379, 0, 0, SYN),
                frame(client, server, port, 6379, 1, 1, PSH | ACK, GET),
                frame(server, client, 6379, port, 1, 1 + len(GET), PSH | ACK | FIN, VALUE),
                frame(client, server, port, 6379, 1 + len(GET), 2 + len(VALUE), FIN | ACK),
            ]):
                sec, usec = divmod(ts + dt, 10**6)
                out.append(struct.pack("<IIII", sec, usec, len(fr), len(fr)) + fr)
            if len(out) > 40_000:
                f.write(b"".join(out))
                out.clear()
        f.write(b"".join(out))


# Parses a capture in small batches (so that one batch's own memory does not count) and reports its peak
# resident memory: VmHWM, the process's own (getrusage's maxrss keeps the parent's size from before exec).
CHILD = """
import re, sys
from cachescope.parse.capture_source import CaptureRows
rows = sum(b.num_rows for b in CaptureRows(sys.argv[1]).record_batches(4096))
peak = re.search(r"VmHWM:\\s*(\\d+) kB", open("/proc/self/status").read()).group(1)
print("rows", rows, "peak_kib", peak)
"""


def peak_parse(tmp, n):
    cap = tmp / f"short{n}.pcap"
    short_connections(cap, n)
    out = run_cli("-c", CHILD, cap, check_rc=0).stdout.split()
    cap.unlink()
    assert int(out[1]) == n
    return int(out[3]) * 1024


def test_peak_memory_does_not_grow_with_connections_already_closed(tmp):
    small, large = peak_parse(tmp, 20_000), peak_parse(tmp, 200_000)
    # 180,000 more connections: at ~1.4 KB each (and their endpoints as Python strings) held for good, memory
    # grew by 350 MB. Now only the reassembler's tombstones of the last 30 s of capture remain (30,000 either
    # way at one connection a millisecond, a few hundred bytes each).
    assert large - small < 30 << 20, f"peak {small >> 20} MiB for 20k connections, {large >> 20} MiB for 200k"


def test_each_row_keeps_its_connection_across_batches(tmp):
    n = 20_000
    cap = tmp / "short.pcap"
    short_connections(cap, n)
    batches = list(CaptureRows(str(cap)).record_batches(1000))
    assert len(batches) >= 20
    table = pa.Table.from_batches(batches).select(["conn", "client", "server"]).to_pydict()
    assert table["conn"] == list(range(n))  # ids keep increasing, one per connection
    assert table["client"] == [f"10.1.{i >> 16 & 255}.{i >> 8 & 255}:{1024 + (i & 255)}" for i in range(n)]
    assert set(table["server"]) == {"10.0.0.2:6379"}
