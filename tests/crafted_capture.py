"""Crafted captures for end-to-end tests of the capture parser: Redis conversations (commands, their RESP
replies, and the trace rows they must give) cut into TCP segments, built into packets with scapy, and
written as pcap or pcapng files.

A `Conversation` is one TCP connection between a client port and 6379: a list of batches, each the commands
the client pipelines in one go, then the server's replies to them. `segments()` lays the two byte streams
out as TCP segments that know their stream offsets, so a test can drop, repeat, reorder or overlap them, or
cut their tails, and `expected_rows()` still knows which bytes the capture holds. The rows a command must
give come from what was built (its arguments and its reply), never from a parser; a test only says which
commands must come out with their reply known, which with it unknown, and which must be lost.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import CookedLinuxV2, Dot1Q, Ether
from scapy.packet import Raw

T0 = 1_700_000_000 * 10**9
STEP = 50_000  # 50 µs between packets: whole microseconds, so a microsecond pcap keeps them exactly
LINKTYPE_ETHERNET, LINKTYPE_SLL2 = 1, 276

# ---- RESP ----


def command(*args) -> bytes:
    """A command as clients send it: a RESP array of bulk strings."""
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def bulk(value: bytes | None, resp3: bool = False) -> bytes:
    if value is None:
        return b"_\r\n" if resp3 else b"$-1\r\n"
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(items: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(items)


# ---- commands with their replies and rows ----


@dataclass
class Exchange:
    """One command, the reply the server sent it, and the rows it gives.

    `rows` are (op, cmd, key, field, value_size, found) with the reply known; reads lose `value_size` and
    `found` when it is not. `queued`: sent inside MULTI, so its reply is an element of EXEC's. `args[0]` of
    a `raw` request only names it."""

    args: tuple
    reply: bytes
    rows: list = field(default_factory=list)
    queued: bool = False
    raw: bytes | None = None  # the request's bytes, when they are not `args` as a RESP array
    error: str | None = None  # the code of the error `reply` is, which marks the rows (`error` column)

    @property
    def request(self) -> bytes:
        return self.raw if self.raw is not None else command(*self.args)

    def rows_for(self, known: bool) -> list:
        if known:
            return list(self.rows)
        return [(op, c, k, f, None, None) if op == "read" else (op, c, k, f, size, None)
                for op, c, k, f, size, _ in self.rows]


def _size(v):
    return None if v is None else len(v)


def hmget(key: str, values: dict, resp3: bool = False) -> Exchange:
    """HMGET key f1 f2 ...; `values` maps each field to its value (None: nil)."""
    reply = array([bulk(v, resp3) for v in values.values()])
    rows = [("read", "HMGET", key, f, _size(v), v is not None) for f, v in values.items()]
    return Exchange(("HMGET", key, *values), reply, rows)


def hget(key: str, fld: str, value, resp3: bool = False) -> Exchange:
    rows = [("read", "HGET", key, fld, _size(value), value is not None)]
    return Exchange(("HGET", key, fld), bulk(value, resp3), rows)


def get(key: str, value, resp3: bool = False) -> Exchange:
    return Exchange(("GET", key), bulk(value, resp3), [("read", "GET", key, None, _size(value), value is not None)])


def hgetall(key: str, values: dict) -> Exchange:
    """HGETALL answered with a RESP3 map."""
    reply = b"%%%d\r\n" % len(values) + b"".join(bulk(f.encode()) + bulk(v) for f, v in values.items())
    return Exchange(("HGETALL", key), reply, [("read", "HGETALL", key, f, len(v), True) for f, v in values.items()])


def hset(key: str, values: dict) -> Exchange:
    args = [x for f, v in values.items() for x in (f, v)]
    rows = [("write", "HSET", key, f, len(v), None) for f, v in values.items()]
    return Exchange(("HSET", key, *args), b":%d\r\n" % len(values), rows)


def other(*args, reply: bytes = b"+OK\r\n") -> Exchange:
    """A command that gives no row (AUTH, HELLO, PING, MULTI, ...)."""
    return Exchange(tuple(args), reply)


def answered_with_error(e: Exchange, line: bytes) -> Exchange:
    """`e` answered with the error `line` (`-LOADING ...\\r\\n`) instead: its rows carry the code (the first
    word), and its reads have no outcome."""
    code = line[1:].split(b" ")[0].rstrip(b"\r\n").decode()
    rows = [(op, c, k, f, None, None) if op == "read" else (op, c, k, f, size, None)
            for op, c, k, f, size, _ in e.rows]
    return replace(e, reply=line, rows=rows, error=code)


def transaction(*inner: Exchange) -> list[Exchange]:
    """MULTI, the commands (answered +QUEUED), EXEC (answered with their replies)."""
    queued = [replace(e, reply=b"+QUEUED\r\n", queued=True) for e in inner]
    return [other("MULTI"), *queued, other("EXEC", reply=array([e.reply for e in inner]))]


def feature_store_batches() -> list[list[Exchange]]:
    """Four batches of pipelined feature-store traffic. Every value has a size of its own, so a value size
    attributed to the wrong lookup cannot go unnoticed."""
    v = lambda n: bytes(ord("a") + i % 26 for i in range(n))  # noqa: E731
    return [
        [hset("st_1", {"2496559762": v(5), "1170383926": v(7)}),
         hmget("st_1", {"2496559762": v(5), "1170383926": v(7), "42": None}),
         get("plain_1", v(11))],
        [hget("st_2", "2496559762", None),
         hmget("st_3", {"2496559762": v(12), "1170383926": None}),
         get("plain_2", None),
         hmget("st_4", {"111": v(3), "222": v(13), "333": v(6)})],
        [hmget("st_5", {"2496559762": v(14), "1170383926": v(15)}),
         hset("st_5", {"777": v(1)}),
         hget("st_5", "777", v(1))],
        [hmget("st_6", {"1": v(16), "2": v(17), "3": None, "4": v(18)}),
         get("plain_3", v(40))],
    ]


# ---- segments ----


@dataclass(frozen=True)
class Seg:
    """One TCP segment of a conversation. `off` is the stream offset of its first payload byte."""

    client: bool
    seq: int
    ack: int
    flags: str
    payload: bytes = b""
    off: int = 0

    @property
    def end(self) -> int:
        return self.off + len(self.payload)


EACH = "each"  # as an mss: one segment per command or reply


def _cut(parts: list[bytes], size) -> list[bytes]:
    if size == EACH:
        return parts
    data = b"".join(parts)
    if size is None:
        return [data]
    return [data[i:i + size] for i in range(0, len(data), size)]


class Conversation:
    """One connection: `client` and `server` are (ip, port); IPv6 when the address has a colon."""

    def __init__(self, batches, client=("10.0.0.1", 51000), server=("10.0.0.2", 6379),
                 client_isn=1000, server_isn=5000):
        self.batches = batches
        self.client, self.server = client, server
        self.isn = {True: client_isn, False: server_isn}
        self.exchanges = [e for b in batches for e in b]
        self.stream = {True: b"", False: b""}
        self.req_at: list[int] = []  # stream offset of each command's first byte
        self.rep_at: list[int] = []  # and of the first byte of the reply that settles it
        for batch in batches:
            for e in batch:
                self.req_at.append(len(self.stream[True]))
                self.stream[True] += e.request
            for e in batch:
                self.rep_at.append(len(self.stream[False]))
                self.stream[False] += e.reply
        for i, e in enumerate(self.exchanges):  # a queued command is settled by EXEC's reply
            if e.queued:
                j = next(j for j in range(i, len(self.exchanges)) if self.exchanges[j].args[0] == "EXEC")
                self.rep_at[i] = self.rep_at[j]

    def seq(self, client: bool, off: int) -> int:
        return (self.isn[client] + 1 + off) % 2**32

    def piece(self, start: int, end: int, like: Seg) -> Seg:
        """A segment carrying bytes `start:end` of the direction of `like`, acknowledging what `like` does
        (a retransmission of other bounds, or an overlap)."""
        c = like.client
        return Seg(c, self.seq(c, start), like.ack, like.flags, self.stream[c][start:end], start)

    def segments(self, mss_client: int | None = 40, mss_server: int | None = 30, handshake: bool = True,
                 close: bool = True) -> list[Seg]:
        """The connection as segments in the order they were sent: handshake, then per batch the client's
        commands and the server's replies, each cut every `mss` bytes (None: one segment per batch), then the
        close (`EACH`: one segment per command or reply). Each segment acknowledges everything the other side
        had sent."""
        sent = {True: 0, False: 0}
        out = []

        def send(client, payload=b"", flags="PA"):
            ack = self.seq(not client, sent[not client]) if "A" in flags else 0
            out.append(Seg(client, self.seq(client, sent[client]), ack, flags, payload, sent[client]))
            sent[client] += len(payload)

        if handshake:
            out.append(Seg(True, self.isn[True], 0, "S"))
            out.append(Seg(False, self.isn[False], self.seq(True, 0), "SA"))
            send(True, flags="A")
        for batch in self.batches:
            for chunk in _cut([e.request for e in batch], mss_client):
                send(True, chunk)
            for chunk in _cut([e.reply for e in batch], mss_server):
                send(False, chunk)
        if close:
            send(True, flags="FA")
            out.append(Seg(False, self.seq(False, sent[False]), self.seq(True, sent[True] + 1), "FA"))
            out.append(Seg(True, self.seq(True, sent[True] + 1), self.seq(False, sent[False] + 1), "A"))
        return out

    # ---- packets ----

    def ip_packet(self, s: Seg):
        src, dst = (self.client, self.server) if s.client else (self.server, self.client)
        tcp = TCP(sport=src[1], dport=dst[1], seq=s.seq, ack=s.ack, flags=s.flags, window=65535)
        if s.payload:
            tcp = tcp / Raw(s.payload)
        if ":" in src[0]:
            return IPv6(src=src[0], dst=dst[0]) / tcp
        return IP(src=src[0], dst=dst[0], flags="DF") / tcp

    def endpoints(self) -> tuple[str, str]:
        fmt = lambda a: f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"  # noqa: E731
        return fmt(self.client), fmt(self.server)

    # ---- the oracle ----

    def expected_rows(self, captured: list[tuple[int, Seg]], conn: int = 0, req0: int = 0,
                      status: dict | None = None) -> list[dict]:
        """The rows the capture must give. `captured`: (ts_ns, segment) as written. `status` maps exchange
        indices to "unknown" (reply not known) or "lost" (no rows, and no command number); the rest must come
        out with their reply. A command's time is that of the first captured segment holding its first byte,
        the reply's likewise (the copy seen first wins). Rows come in send order (DESIGN.md): by time, then
        command, so a command whose first byte was captured early (segments reordered) comes first."""
        status = status or {}
        client, server = self.endpoints()
        rows, req = [], req0
        for i, e in enumerate(self.exchanges):
            how = status.get(i, "known")
            if how == "lost":
                continue
            ts = _first_cover(captured, True, self.req_at[i])
            assert ts is not None, f"exchange {i} is not in the capture: mark it lost"
            latency = None
            if how == "known":
                reply_ts = _first_cover(captured, False, self.rep_at[i])
                assert reply_ts is not None, f"the reply of exchange {i} is not in the capture"
                latency = reply_ts - ts
            for op, c, k, f, size, found in e.rows_for(how == "known"):
                rows.append(dict(ts_ns=ts, conn=conn, req=req, op=op, cmd=c, key=k, field=f, value_size=size,
                                 found=found, latency_ns=latency, client=client, server=server,
                                 error=e.error if how == "known" else None))
            req += 1
        rows.sort(key=lambda r: (r["ts_ns"], r["conn"], r["req"]))
        return rows


def _first_cover(captured, client: bool, off: int):
    for ts, s in captured:
        if s.client == client and s.off <= off < s.end:
            return ts
    return None


def timed(segs: list[Seg], t0: int = T0, step: int = STEP) -> list[tuple[int, Seg]]:
    """Capture times by position: a capture lists packets in the order they were seen."""
    return [(t0 + i * step, s) for i, s in enumerate(segs)]


# ---- link layers and files ----


def ethernet(ip, vlan: int | None = None) -> bytes:
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    return bytes(eth / Dot1Q(vlan=vlan) / ip if vlan is not None else eth / ip)


def sll2(ip) -> bytes:
    proto = 0x86DD if isinstance(ip, IPv6) else 0x0800
    mac = b"\x02\x00\x00\x00\x00\x01\x00\x00"
    return bytes(CookedLinuxV2(proto=proto, ifindex=2, lladdrtype=1, lladdrlen=6, src=mac) / ip)


def pcap(packets: list[tuple[int, bytes]], linktype: int = LINKTYPE_ETHERNET, snaplen: int = 262144,
         nano: bool = False) -> bytes:
    """A classic little-endian pcap; frames longer than `snaplen` are cut as tcpdump -s would."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype))
    for ts, frame in packets:
        sec, frac = divmod(ts, 10**9)
        cut = frame[:snaplen]
        out += struct.pack("<IIII", sec, frac if nano else frac // 1000, len(cut), len(frame)) + cut
    return bytes(out)


def pcapng(interfaces: list[tuple[int, int, int]], packets: list[tuple[int, int, bytes]]) -> bytes:
    """A pcapng section. `interfaces`: (link type, snap length, if_tsresol as a power of ten);
    `packets`: (interface, ts_ns, frame) as enhanced packet blocks."""

    def block(kind, body):
        body += b"\x00" * (-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    out = bytearray(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
    for link, snaplen, resol in interfaces:
        opts = struct.pack("<HHB3x", 9, 1, resol) + struct.pack("<HH", 0, 0)
        out += block(1, struct.pack("<HHI", link, 0, snaplen) + opts)
    for iface, ts, frame in packets:
        link, snaplen, resol = interfaces[iface]
        units = ts // 10 ** (9 - resol)
        cut = frame[:snaplen]
        out += block(6, struct.pack("<IIIII", iface, units >> 32, units & 0xFFFFFFFF, len(cut), len(frame)) + cut)
    return bytes(out)


def ethernet_pcap(conv: Conversation, captured: list[tuple[int, Seg]], **kw) -> bytes:
    return pcap([(ts, ethernet(conv.ip_packet(s))) for ts, s in captured], **kw)
