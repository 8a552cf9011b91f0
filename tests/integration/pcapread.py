"""An independent look at a capture file (dpkt, not cachescope): the TCP segments in it, per connection.

Used to check the harness itself (the pcap holds every client's packets, real segmentation where expected) and
the capture command (the file holds as many packets as tcpdump said it captured).
"""

from __future__ import annotations

import socket
from collections import defaultdict
from dataclasses import dataclass

import dpkt
import dpkt.sll2

FIN = 0x01
_DECODERS = {
    dpkt.pcap.DLT_EN10MB: dpkt.ethernet.Ethernet,
    dpkt.pcap.DLT_LINUX_SLL: dpkt.sll.SLL,
    276: dpkt.sll2.SLL2,  # LINUX_SLL2, what `tcpdump -i any` writes
}


@dataclass(frozen=True)
class Segment:
    ts: float
    src: str  # ip:port
    dst: str
    flags: int
    seq: int
    payload: int  # bytes of TCP payload
    data: bytes = b""  # the payload itself, when asked for


def read_segments(path, with_payload: bool = False) -> list[Segment]:
    """Every IPv4/IPv6 TCP segment of a pcap, in file order."""
    out = []
    with open(path, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        decode = _DECODERS.get(reader.datalink())
        if decode is None:
            raise ValueError(f"{path}: link type {reader.datalink()} not handled here")
        for ts, buf in reader:
            ip = decode(buf).data
            if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            out.append(Segment(ts, f"{_addr(ip.src)}:{tcp.sport}", f"{_addr(ip.dst)}:{tcp.dport}", tcp.flags,
                               tcp.seq, len(tcp.data), bytes(tcp.data) if with_payload else b""))
    return out


def count_packets(path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in dpkt.pcap.Reader(f))


def by_client(segments, server_port: int) -> dict[str, dict[str, list[Segment]]]:
    """{client ip:port: {"to_server": [...], "to_client": [...]}} for the connections to `server_port`."""
    flows = defaultdict(lambda: {"to_server": [], "to_client": []})
    for s in segments:
        if s.dst.endswith(f":{server_port}"):
            flows[s.src]["to_server"].append(s)
        elif s.src.endswith(f":{server_port}"):
            flows[s.dst]["to_client"].append(s)
    return dict(flows)


def _addr(raw: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def flows_closed(path, server_port: int, clients) -> bool:
    """True once the (growing) capture holds a FIN in each direction of every client's connection: then
    everything those connections sent is in it. A record still being written reads as "not yet"."""
    try:
        flows = by_client(read_segments(path), server_port)
    except (dpkt.UnpackError, ValueError, OSError):
        return False
    return all(client in flows and all(any(s.flags & FIN for s in flows[client][side])
                                       for side in ("to_server", "to_client"))
               for client in clients)
