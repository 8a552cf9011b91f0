"""Crafted captures of a small fleet for the tests of several captures: each host's connections to one Redis
server, with known keys and times, and a capture of the Redis host that saw one host's connection again on a
clock of its own."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from crafted_capture import STEP, T0, Conversation, ethernet, get, hmget, hset, pcap, timed

SERVER_SKEW_NS = 2_500_000  # the Redis host's clock runs 2.5 ms ahead of web1's
SAMPLE = Path(__file__).resolve().parents[1] / "sample_traces" / "feature_store.pcap"
REDIS_PORT = 16379


def _conversation(rng: random.Random, ip: str, port: int, commands: int) -> Conversation:
    batches = []
    for _ in range(commands):
        k = f"st_{rng.randrange(12)}"
        r = rng.random()
        if r < 0.7:
            batches.append([hmget(k, {str(f): (b"v" * rng.randrange(1, 9) if rng.random() < 0.9 else None)
                                      for f in rng.sample(range(6), 3)})])
        elif r < 0.9:
            batches.append([get(k, b"x" * rng.randrange(1, 20))])
        else:
            batches.append([hset(k, {"1": b"new"})])
    return Conversation(batches, client=(ip, port), server=("10.0.0.100", 6379))


def capture_bytes(conversations: list[tuple[Conversation, int]]) -> bytes:
    """Several connections in one capture, each starting at its own time; packets sorted by time."""
    packets = []
    for conv, t0 in conversations:
        packets += [(ts, ethernet(conv.ip_packet(s))) for ts, s in timed(conv.segments(), t0=t0, step=STEP * 3)]
    packets.sort(key=lambda p: p[0])
    return pcap(packets)


def write_fleet(folder, hosts: int = 3, seed: int = 7) -> dict:
    """Writes `hostN.pcap` for each host (two connections each, interleaved in time with the other hosts')
    and `redis.pcap`, the Redis host's capture of host1's first connection on its skewed clock. Returns
    {name: path}."""
    rng = random.Random(seed)
    paths = {}
    shared = None
    for h in range(1, hosts + 1):
        convs = [(_conversation(rng, f"10.0.0.{h}", 50000 + c, 12), T0 + (h * 7 + c * 13) * STEP)
                 for c in range(2)]
        if h == 1:
            shared = convs[0]
        path = folder / f"host{h}.pcap"
        path.write_bytes(capture_bytes(convs))
        paths[f"host{h}"] = path
    conv, t0 = shared
    paths["redis"] = folder / "redis.pcap"
    paths["redis"].write_bytes(capture_bytes([(conv, t0 + SERVER_SKEW_NS)]))
    return paths


def replicate(sample: bytes, copies: int, host: int, out: Path) -> None:
    """`copies` of the sample's packets: client ports moved by (host, copy), times shifted past the last copy."""
    header, body = sample[:24], sample[24:]
    records, at = [], 0
    while at + 16 <= len(body):
        sec, usec, incl, orig = struct.unpack_from("<IIII", body, at)
        records.append((sec * 10**6 + usec, body[at + 16: at + 16 + incl], orig))
        at += 16 + incl
    span = records[-1][0] - records[0][0] + 1000
    with open(out, "wb") as f:
        f.write(header)
        for c in range(copies):
            shift = c * span + host * 37
            delta = (host * copies + c) % 2000 + 1
            for ts, frame, orig in records:
                frame = bytearray(frame)
                ip = 14
                tcp = ip + (frame[ip] & 0x0F) * 4
                sport, dport = struct.unpack_from(">HH", frame, tcp)
                if sport != REDIS_PORT:
                    struct.pack_into(">H", frame, tcp, (sport + delta * 13) % 60000 + 1024)
                if dport != REDIS_PORT:
                    struct.pack_into(">H", frame, tcp + 2, (dport + delta * 13) % 60000 + 1024)
                t = ts + shift
                f.write(struct.pack("<IIII", t // 10**6, t % 10**6, len(frame), orig) + frame)
