"""Regenerates the small crafted captures the Rust tests read (tests/capture_files.rs).

Each capture holds one or two Redis sessions between a client port and 6379 (handshake, HMGET commands,
one split over two segments, replies, close), built with scapy, plus a few frames the decoder must skip.
Next to each capture, `<name>.expected` lists what decoding must give, one line per packet, written from
the values the packets were built from (not from any decoder):

    tcp <ts_ns> <src> <dst> <seq> <ack> <flags> <missing_tail> <payload hex or ->
    skip <reason>

Run from anywhere: `python tests/data/captures/make.py` (needs scapy). With `--real` it also records
`tcpdump_lo.pcap` and `tcpdump_any.pcap`: real tcpdump captures (`-i lo`, and `-i any` in nanoseconds) of a
client talking to a real redis-server on a free loopback port (needs root, tcpdump and redis-server); their
`.expected` come from scapy's own parse of the captured packets.
"""

import socket
import struct
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, CookedLinuxV2, Dot1AD, Dot1Q, Ether
from scapy.packet import Padding, Raw
from scapy.utils import PcapNgWriter, PcapWriter, rdpcap

HERE = Path(__file__).resolve().parent
T0 = Decimal(1_700_000_000)

HMGET_1 = b"*3\r\n$5\r\nHMGET\r\n$8\r\nst_12345\r\n$10\r\n2496559762\r\n"
HMGET_2 = b"*4\r\n$5\r\nHMGET\r\n$8\r\nst_67890\r\n$10\r\n2496559762\r\n$10\r\n1170383926\r\n"
REPLY_1 = b"*1\r\n$5\r\n0.125\r\n"
REPLY_2 = b"*2\r\n$4\r\n0.25\r\n$-1\r\n"
FLAGS = {"S": 0x02, "SA": 0x12, "A": 0x10, "PA": 0x18, "FA": 0x11}


def session(client, server, cport, client_isn=1000, server_isn=5000):
    """The segments of one Redis session, as dicts of what they carry."""
    steps = [
        ("S", True, b""), ("SA", False, b""), ("A", True, b""),
        ("PA", True, HMGET_1), ("PA", False, REPLY_1),
        ("PA", True, HMGET_2[:20]), ("PA", True, HMGET_2[20:]), ("PA", False, REPLY_2),
        ("A", True, b""), ("FA", True, b""), ("FA", False, b""), ("A", True, b""),
    ]
    seq = {True: client_isn, False: server_isn}
    out = []
    for flags, from_client, payload in steps:
        me, peer = from_client, not from_client
        ack = seq[peer] if "A" in flags else 0
        src, dst = (client, server) if from_client else (server, client)
        sport, dport = (cport, 6379) if from_client else (6379, cport)
        out.append(dict(src=src, dst=dst, sport=sport, dport=dport, seq=seq[me], ack=ack,
                        flags=FLAGS[flags], payload=payload))
        seq[me] += len(payload) + (1 if flags in ("S", "SA", "FA") else 0)
    return out


def ip_tcp(s, ext=None):
    """scapy layers from the IP header down for segment `s`; `ext` are IPv6 extension headers."""
    tcp = TCP(sport=s["sport"], dport=s["dport"], seq=s["seq"], ack=s["ack"], flags=s["flags"], window=65535)
    if s["payload"]:
        tcp = tcp / Raw(s["payload"])
    if ":" in s["src"]:
        ip = IPv6(src=s["src"], dst=s["dst"])
        for header in ext or []:
            ip = ip / header
        return ip / tcp
    return IP(src=s["src"], dst=s["dst"], flags="DF") / tcp


def addr(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def tcp_line(ts_ns, s, missing_tail=0):
    payload = s["payload"][: len(s["payload"]) - missing_tail]
    return " ".join(str(x) for x in [
        "tcp", ts_ns, addr(s["src"], s["sport"]), addr(s["dst"], s["dport"]), s["seq"], s["ack"], s["flags"],
        missing_tail, payload.hex() or "-",
    ])


def ns(t):
    return int(t * 1_000_000_000)


def write_expected(name, lines):
    (HERE / f"{name}.expected").write_text("\n".join(lines) + "\n")


def eth_vlan_ipv4():
    """Ethernet, 802.1Q VLAN 100 (one packet double-tagged 802.1ad), IPv4; little-endian microsecond pcap.
    Small frames are padded to 60 bytes as on the wire. Plus an ARP and a UDP frame."""
    mac = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames, lines = [], []
    for i, s in enumerate(session("10.0.0.1", "10.0.0.2", 51000)):
        t = T0 + Decimal(i) * Decimal("0.000125")
        if i == 4:
            frame = Ether(**mac) / Dot1AD(vlan=10) / Dot1Q(vlan=100) / ip_tcp(s)
        else:
            frame = Ether(**mac) / Dot1Q(vlan=100) / ip_tcp(s)
        short = 60 - len(frame)
        if short > 0:
            frame = frame / Padding(b"\x00" * short)
        frame.time = t
        frames.append(frame)
        lines.append(tcp_line(ns(t), s))
    arp = Ether(**mac) / Dot1Q(vlan=100) / ARP(psrc="10.0.0.1", pdst="10.0.0.2")
    udp = Ether(**mac) / Dot1Q(vlan=100) / IP(src="10.0.0.1", dst="10.0.0.53") / UDP(sport=5353, dport=53) / Raw(b"q")
    for extra, reason in [(arp, "NotIp"), (udp, "NotTcp")]:
        extra.time = T0 + Decimal(1)
        frames.append(extra)
        lines.append(f"skip {reason}")
    with PcapWriter(str(HERE / "eth_vlan_ipv4.pcap"), linktype=1, endianness="<", snaplen=262144) as w:
        for f in frames:
            w.write(f)
    write_expected("eth_vlan_ipv4", lines)


def sll2_ipv4():
    """Linux cooked v2 (`tcpdump -i any`), IPv4; big-endian nanosecond pcap."""
    frames, lines = [], []
    for i, s in enumerate(session("192.168.7.10", "192.168.7.20", 40123, 7, 3_000_000_000)):
        t = T0 + Decimal(i) * Decimal("0.000000789")
        outgoing = s["sport"] != 6379
        frame = CookedLinuxV2(proto=0x0800, ifindex=2, lladdrtype=1, pkttype=4 if outgoing else 0,
                              lladdrlen=6, src=b"\x02\x00\x00\x00\x00\x01\x00\x00") / ip_tcp(s)
        frame.time = t
        frames.append(frame)
        lines.append(tcp_line(ns(t), s))
    with PcapWriter(str(HERE / "sll2_ipv4.pcap"), linktype=276, endianness=">", nano=True, snaplen=262144) as w:
        for f in frames:
            w.write(f)
    write_expected("sll2_ipv4", lines)


def ipv6_pcapng():
    """Ethernet, IPv6 with hop-by-hop and destination-options headers on some packets, written by scapy's
    own pcapng writer (microseconds), plus an IPv6 fragment to skip."""
    mac = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames, lines = [], []
    for i, s in enumerate(session("fd00::10", "fd00::6379", 52000)):
        t = T0 + Decimal(i) * Decimal("0.001")
        ext = [IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt()] if i % 3 == 0 else None
        frame = Ether(**mac) / ip_tcp(s, ext)
        frame.time = t
        frames.append(frame)
        lines.append(tcp_line(ns(t), s))
    frag = Ether(**mac) / IPv6(src="fd00::10", dst="fd00::6379") / IPv6ExtHdrFragment(offset=0, m=1, id=7) / \
        TCP(sport=52000, dport=6379) / Raw(b"x" * 16)
    frag.time = T0 + Decimal(1)
    frames.append(frag)
    lines.append("skip Fragment")
    w = PcapNgWriter(str(HERE / "ipv6.pcapng"))
    for f in frames:
        w.write(f)
    w.close()
    write_expected("ipv6", lines)


class NgFile:
    """A hand-written pcapng file, for what scapy's writer does not offer: per-interface timestamp
    resolutions and snap lengths, and blocks a reader must skip."""

    def __init__(self):
        self.out = bytearray()
        self.resol = []

    def block(self, kind, body):
        body = body + b"\x00" * (-len(body) % 4)
        length = 12 + len(body)
        self.out += struct.pack("<II", kind, length) + body + struct.pack("<I", length)

    def section(self):
        self.block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))

    def interface(self, link_type, snaplen, tsresol=None):
        options = b""
        if tsresol is not None:
            options += struct.pack("<HHB3x", 9, 1, tsresol)
        options += struct.pack("<HH", 2, 4) + b"eth0" + struct.pack("<HH", 0, 0)
        self.block(1, struct.pack("<HHI", link_type, 0, snaplen) + options)
        self.resol.append((snaplen, 10 ** (tsresol if tsresol is not None else 6)))

    def packet(self, iface, t, data):
        snaplen, per_second = self.resol[iface]
        units = int(t * per_second)
        cut = data[:snaplen]
        self.block(6, struct.pack("<IIIII", iface, units >> 32, units & 0xFFFFFFFF, len(cut), len(data)) + cut)
        return len(data) - len(cut)


def two_interfaces():
    """One pcapng section with two interfaces: Ethernet in microseconds and Linux cooked v2 in nanoseconds
    with a 96-byte snap length (so a long reply is cut), carrying two interleaved sessions. A name
    resolution block and an interface statistics block sit between the packets and must be skipped."""
    ng = NgFile()
    ng.section()
    ng.interface(1, 262144)
    ng.interface(276, 96, tsresol=9)
    ng.block(4, struct.pack("<HH4s", 1, 4 + 6, bytes([10, 0, 0, 2])) + b"redis\x00" + b"\x00" * 2 + b"\x00" * 4)
    eth = session("10.0.0.1", "10.0.0.2", 51001)
    sll = session("10.9.0.1", "10.9.0.2", 33333, 100, 200)
    long_reply = b"*1\r\n$100\r\n" + b"v" * 100 + b"\r\n"
    sll[7] = dict(sll[7], payload=long_reply)  # REPLY_2's slot; later sequence numbers do not matter here
    lines = []
    for i, (a, b) in enumerate(zip(eth, sll)):
        t = T0 + Decimal(i) * Decimal("0.01")
        mac = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        ng.packet(0, t, bytes(Ether(**mac) / ip_tcp(a)))
        lines.append(tcp_line(ns(t) // 1000 * 1000, a))
        tb = t + Decimal("0.000000123")
        missing = ng.packet(1, tb, bytes(CookedLinuxV2(proto=0x0800, lladdrtype=1) / ip_tcp(b)))
        lines.append(tcp_line(ns(tb), b, missing))
        if i == 5:
            ng.block(5, struct.pack("<III", 0, 0, 0))  # interface statistics, no options
    (HERE / "two_interfaces.pcapng").write_bytes(bytes(ng.out))
    write_expected("two_interfaces", lines)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def real():
    """Real tcpdump captures of a real Redis session on loopback."""
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)
    dumps = [
        subprocess.Popen(["tcpdump", "-i", iface, "-U", "-w", str(HERE / name), *extra, f"tcp port {port}"],
                         stderr=subprocess.PIPE)
        for iface, name, extra in [("lo", "tcpdump_lo.pcap", []),
                                   ("any", "tcpdump_any.pcap", ["--time-stamp-precision=nano"])]
    ]
    try:
        for d in dumps:
            d.stderr.readline()  # "listening on ...": the capture is running
        time.sleep(0.5)
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(resp(b"HSET", b"st_12345", b"2496559762", b"0.125", b"1170383926", b"0.25"))
            c.recv(100)
            for command in [resp(b"HMGET", b"st_12345", b"2496559762"),
                            resp(b"HMGET", b"st_12345", b"2496559762", b"1170383926", b"42")]:
                c.sendall(command)
                time.sleep(0.05)
                c.recv(1000)
        time.sleep(0.5)
    finally:
        for d in dumps:
            d.terminate()
            d.wait()
        redis.terminate()
        redis.wait()
    for name in ["tcpdump_lo", "tcpdump_any"]:
        lines = []
        for pkt in rdpcap(str(HERE / f"{name}.pcap")):
            ip = pkt[IP] if IP in pkt else pkt[IPv6]
            tcp = pkt[TCP]
            ip_len = ip.len if IP in pkt else ip.plen + 40
            header = (ip.ihl * 4 if IP in pkt else 40) + tcp.dataofs * 4
            payload = bytes(ip)[header:ip_len]
            seg = dict(src=ip.src, dst=ip.dst, sport=tcp.sport, dport=tcp.dport, seq=tcp.seq, ack=tcp.ack,
                       flags=int(tcp.flags) & 0xFF, payload=payload)
            lines.append(tcp_line(int(pkt.time * 1_000_000_000), seg))
        write_expected(name, lines)


if __name__ == "__main__":
    if "--real" in sys.argv:
        real()
    eth_vlan_ipv4()
    sll2_ipv4()
    ipv6_pcapng()
    two_interfaces()
    for p in sorted(HERE.glob("*.pcap*")):
        print(f"{p.name}: {p.stat().st_size} bytes")
