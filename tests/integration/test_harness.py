"""The harness checks itself: everything up to the parser's call, with real parts.

A comparison test is only as good as its truth and its capture, so these check that the truth is what the
server did (its own command counters agree), that the truth covers the hard cases, and that the capture file
holds every connection completely (read independently with dpkt), with real segmentation in the namespace.
"""

from __future__ import annotations

import subprocess
from collections import Counter

from .pcapread import by_client, count_packets, flows_closed, read_segments

SYN, FIN = 0x02, 0x01
DATA_COMMANDS = ("HMGET", "HGET", "GET", "MGET", "HGETALL", "HSET", "SET", "HDEL", "DEL", "EXPIRE", "MULTI",
                 "EXEC")


def truth_counts(truth) -> Counter:
    return Counter(c["cmd"] for conn in truth["connections"] for c in conn["commands"])


def test_truth_agrees_with_the_servers_own_counters(real_capture):
    counted = truth_counts(real_capture.truth)
    for cmd in DATA_COMMANDS:
        assert real_capture.commandstats.get(cmd, 0) == counted[cmd], cmd


def test_truth_covers_the_hard_cases(real_capture):
    conns = real_capture.truth["connections"]
    assert [c["protocol"] for c in conns].count(3) >= 2 and [c["protocol"] for c in conns].count(2) >= 2
    assert len({c["client"] for c in conns}) == len(conns)
    reads = [r for c in conns for cmd in c["commands"] if cmd["op"] == "read" for r in cmd["rows"]]
    sizes = [r[2] for r in reads]
    assert sum(s is None for s in sizes) > 100, "nils"
    assert sum(s is not None and s > 64 * 1024 for s in sizes) >= 10, "values over 64 KiB"
    assert 0 in sizes, "an empty value"
    assert sum(len(r) for r in reads) and 2000 < sum(len(c["commands"]) for c in conns) < 5000
    cmds = truth_counts(real_capture.truth)
    assert all(cmds[c] > 0 for c in DATA_COMMANDS)
    total = sum(s or 0 for s in sizes)
    assert 2e6 < total < 30e6, "a few MB of replies"


def test_capture_holds_every_connection_whole(real_capture):
    segments = read_segments(real_capture.pcap)
    assert count_packets(real_capture.pcap) == real_capture.tcpdump_stats["captured"] == len(segments)
    assert real_capture.tcpdump_stats["dropped by kernel"] == 0
    flows = by_client(segments, real_capture.port)
    truth = {c["client"]: c for c in real_capture.truth["connections"]}
    assert set(flows) == set(truth)  # one flow per driver connection, nothing else
    for client, flow in flows.items():
        sent, got = flow["to_server"], flow["to_client"]
        assert sent[0].flags & SYN and any(s.flags & FIN for s in sent), client  # from handshake to close
        read_bytes = sum(r[2] or 0 for c in truth[client]["commands"] if c["op"] == "read" for r in c["rows"])
        written = sum(r[2] or 0 for c in truth[client]["commands"] if c["op"] == "write" for r in c["rows"])
        assert sum(s.payload for s in got) > read_bytes, client
        assert sum(s.payload for s in sent) > written, client


def test_segmentation_follows_the_link(real_capture):
    payloads = [s.payload for s in read_segments(real_capture.pcap)]
    largest = max(payloads)
    if real_capture.mtu == 1500:
        assert largest <= 1460  # MSS of a 1500-byte MTU, less TCP options
        assert sum(p == largest for p in payloads) > 2000  # the large replies, cut into full segments
    else:
        assert largest > 16 * 1024  # loopback with offloads hands over segments far beyond any Ethernet MTU


def test_namespace_loopback_is_an_ethernet_sized_link(netns):
    link = subprocess.run(netns.prefix + ["ip", "link", "show", "lo"], capture_output=True, text=True, check=True)
    assert " mtu 1500 " in link.stdout and "UP" in link.stdout
    features = subprocess.run(netns.prefix + ["ethtool", "-k", "lo"], capture_output=True, text=True,
                              check=True).stdout
    for feature in ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload"):
        assert f"{feature}: off" in features, feature


def test_tcpdump_fixture_captures_a_client(redis_server, tcpdump_lo):
    import redis

    r = redis.Redis(host=redis_server.host, port=redis_server.port, protocol=2, max_connections=1)
    r.hset("st_1", mapping={"2496559762": b"x" * 100_000})
    assert len(r.hmget("st_1", ["2496559762", "1"])[0]) == 100_000
    client = r.client_info()["addr"]
    r.close()
    stats = tcpdump_lo.stop(settled=lambda: flows_closed(tcpdump_lo.path, redis_server.port, [client]))
    segments = read_segments(tcpdump_lo.path)
    assert stats["captured"] == len(segments) > 0
    mine = by_client(segments, redis_server.port)[client]
    assert sum(s.payload for s in mine["to_client"]) > 100_000
