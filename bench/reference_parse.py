"""The reference parser of `bench_parse.py`: what a capture-to-trace parser looks like in plain Python with the
usual libraries. dpkt decodes the pcap, a per-flow in-order reassembly puts each direction's bytes together,
hiredis (the C RESP parser redis-py uses) parses requests and replies, and requests are paired with replies in
order, as Redis answers them. It yields the trace rows of DESIGN.md (as tuples, see ROW).

What it does not do, on purpose (the benchmark's captures need none of it):
- simple reordering only: a segment that starts beyond the next expected byte (a hole: a late or lost segment)
  is held, unbounded, until the bytes before it arrive, then delivered with its own capture time; a hole never
  filled leaves the rest of its direction unread (the flow counts as broken, the commands still waiting at
  the end as `unsupported`); no gaps reported, no limits;
- retransmissions: bytes already delivered are cut off, and of two held copies of one segment the first wins;
- RESP2 only (hiredis's defaults), no MULTI/EXEC, pub/sub, CLIENT REPLY or RESP3 pushes;
- a connection is its 4-tuple for the whole capture (no port reuse), the server the side on `port`.

Timestamps follow cachescope's definitions: a command's `ts_ns` is the capture time of the segment that held
its first byte, `latency_ns` the reply's first byte's time minus that.
"""

from __future__ import annotations

from collections import deque

import dpkt
import hiredis

ROW = ("ts_ns", "conn", "req", "op", "cmd", "key", "field", "value_size", "found", "latency_ns")


def _ahead(seq: int, next_seq: int) -> int:
    """How far `seq` lies beyond `next_seq`, in sequence space (negative: before it)."""
    return ((seq - next_seq + 2**31) & 0xFFFFFFFF) - 2**31


class Direction:
    """One direction of a flow: the next expected sequence number, the segments held beyond a hole, and a
    hiredis reader fed in order."""

    def __init__(self):
        self.next_seq = None
        self.held = {}  # seq -> (ts, payload) of segments that arrived beyond the next expected byte
        self.reader = hiredis.Reader()
        self.start_ts = None  # capture time of the first byte of the message in progress, None if none is
        self.bytes = 0

    def feed(self, seq: int, ts: int, payload: bytes, syn: bool):
        """The messages completed by this segment (and by the held ones it lets through), as (first byte's
        ts, message)."""
        if syn:
            self.next_seq = (seq + 1) & 0xFFFFFFFF
        if not payload:
            return []
        if self.next_seq is None:
            self.next_seq = seq  # picked up mid-stream
        ahead = _ahead(seq, self.next_seq)
        if ahead > 0:
            self.held.setdefault(seq, (ts, payload))  # the first copy wins
            return []
        out = self._deliver(ts, payload[-ahead:])  # a retransmission's bytes already delivered are cut off
        while self.held:
            ready = [s for s in self.held if _ahead(s, self.next_seq) <= 0]  # in arrival order
            if not ready:
                break
            for s in ready:
                t, p = self.held.pop(s)
                out += self._deliver(t, p[-_ahead(s, self.next_seq):])
        return out

    def _deliver(self, ts: int, payload: bytes):
        if not payload:
            return []
        self.next_seq = (self.next_seq + len(payload)) & 0xFFFFFFFF
        self.bytes += len(payload)
        if self.start_ts is None:
            self.start_ts = ts
        self.reader.feed(payload)
        out = []
        while (msg := self.reader.gets()) is not False:
            out.append((self.start_ts, msg))
            # Parsing stops right after a complete message: bytes left over are the next one's start.
            self.start_ts = ts if self.reader.has_data() else None
        return out


class Flow:
    def __init__(self, conn: int):
        self.conn = conn
        self.requests = Direction()
        self.replies = Direction()
        self.waiting = deque()  # (ts, args) of commands sent and not answered yet


def rows(path: str, port: int, stats: dict):
    """Yields the capture's trace rows (ROW); fills `stats`: commands, unsupported (commands sent and never
    answered: behind a hole never filled, or cut off by the end of the capture), broken_flows (with a hole
    never filled), unpaired_replies (replies with no command waiting), stream_bytes (reassembled bytes of
    both directions), packets."""
    flows: dict = {}
    for key in ("packets", "commands", "unsupported", "broken_flows", "unpaired_replies", "stream_bytes"):
        stats[key] = 0
    with open(path, "rb") as f:
        for ts, frame in dpkt.pcap.Reader(f):
            stats["packets"] += 1
            ip = dpkt.ethernet.Ethernet(frame).data
            tcp = getattr(ip, "data", None)
            if not isinstance(tcp, dpkt.tcp.TCP):
                continue
            if tcp.dport == port:
                flow_key, to_server = (ip.src, tcp.sport), True
            elif tcp.sport == port:
                flow_key, to_server = (ip.dst, tcp.dport), False
            else:
                continue
            flow = flows.get(flow_key)
            if flow is None:
                flow = flows[flow_key] = Flow(len(flows))
            ts_ns = round(ts * 1e6) * 1000  # pcap stores microseconds; the float holds them exactly
            side = flow.requests if to_server else flow.replies
            messages = side.feed(tcp.seq, ts_ns, tcp.data, bool(tcp.flags & dpkt.tcp.TH_SYN))
            if to_server:
                flow.waiting.extend(messages)
                continue
            for reply_ts, reply in messages:
                if not flow.waiting:
                    stats["unpaired_replies"] += 1
                    continue
                req_ts, args = flow.waiting.popleft()
                req = stats["commands"]
                stats["commands"] += 1
                yield from command_rows(flow.conn, req, req_ts, args, reply, reply_ts - req_ts)
    for flow in flows.values():
        stats["stream_bytes"] += flow.requests.bytes + flow.replies.bytes
        stats["broken_flows"] += bool(flow.requests.held or flow.replies.held)  # a hole never filled
        stats["unsupported"] += len(flow.waiting)  # sent, never answered within the capture


def command_rows(conn, req, ts, args, reply, latency):
    """The rows of one command (the benchmark's traffic: HMGET and HSET; other commands make no rows)."""
    cmd = args[0].upper()
    if cmd == b"HMGET" and isinstance(reply, list):
        key = args[1].decode("utf-8", "backslashreplace")
        for field, value in zip(args[2:], reply):
            found = value is not None
            yield (ts, conn, req, "read", "HMGET", key, field.decode("utf-8", "backslashreplace"),
                   len(value) if found else None, found, latency)
    elif cmd in (b"HSET", b"HMSET"):
        key = args[1].decode("utf-8", "backslashreplace")
        for i in range(2, len(args) - 1, 2):
            yield (ts, conn, req, "write", cmd.decode(), key, args[i].decode("utf-8", "backslashreplace"),
                   len(args[i + 1]), None, latency)
