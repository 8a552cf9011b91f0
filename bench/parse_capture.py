"""The captures `bench_parse.py` parses: real feature-store traffic to a real redis-server, recorded by tcpdump,
generated once and cached under bench/data/; and their 4x-longer twins for the memory check.

Recording (`record`): a redis-server and `tcpdump -i lo -s 0 -B 65536 -w FILE port P` (the integration harness's
`RedisServer` and `Tcpdump`, tests/integration/servers.py), either on the host's loopback (a free port of
127.0.0.1; MTU 64 KiB, so replies travel in segments of up to 64 KiB, as in the DESIGN's tcpflow anchor, a
273 MB loopback capture) or, with `mtu=1500`, inside a fresh network namespace whose loopback has MTU 1500 and
no segmentation offloads (the harness's `Netns`; port 6379), so TCP sends real ~1448-byte segments as on a
production network. The traffic (`traffic`, run in a child process, inside the namespace if there is one): one
connection loads ENTITIES hashes `st_<n>`, each holding 60-100 of the 100 features (field = decimal xxHash32 of
the feature name, as the feature store writes them) with binary values of 10-500 bytes, log-uniform (mean ~125
bytes), in pipelined HSETs. Then CONNECTIONS redis-py connections (RESP2, one thread each) send pipelines of
PIPELINE commands: HMGETs of 10-100 features of an entity (about 1 in 50 of an entity that does not exist, so
replies carry nils besides the features an entity lacks) and, 1 in 20, an HSET of 1-10 fields with new values.
They stop once the capture file holds `size_mb` MB. The capture must have no kernel drops: a drop is a hole in
a stream.

The driver counts what it sent (HMGETs, HSETs, fields asked, fields written) into a JSON sidecar next to the
capture, with the server port, the MTU and tcpdump's counters; the benchmark checks the parsers against those
counts.

Longer twin (`concatenate`): the capture written `copies` times back to back, each copy shifted in time past
the end of the previous one and with its client ports renumbered, so every copy's connections are new ones
(same server, new 4-tuples). The parser then sees `copies` times the traffic, of the same shape.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ENTITIES = 4000
FEATURES = 100
CONNECTIONS = 6
PIPELINE = 16
WRITE_SHARE = 0.05
ABSENT_SHARE = 0.02
VALUE_SIZES = (10, 500)
SEED = 7
LOOPBACK_MTU = 65536  # Linux's default for lo


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))


class Values:
    """Value bytes: slices of one random blob at random offsets, so making them costs nothing per value."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.blob = rng.randbytes(1 << 20)

    def __call__(self) -> bytes:
        n = log_uniform(self.rng, *VALUE_SIZES)
        at = self.rng.randrange(len(self.blob) - n)
        return self.blob[at:at + n]


def feature_ids() -> list[str]:
    import xxhash

    return [str(xxhash.xxh32_intdigest(f"feature_{i}".encode())) for i in range(FEATURES)]


def load(r, rng: random.Random, entities: list[str], features: list[str]) -> dict:
    values = Values(rng)
    sent = {"hset": 0, "hset_fields": 0}
    pipe = r.pipeline(transaction=False)
    for i, key in enumerate(entities):
        held = rng.sample(features, rng.randint(60, FEATURES))
        pipe.hset(key, mapping={f: values() for f in held})
        sent["hset"] += 1
        sent["hset_fields"] += len(held)
        if i % 200 == 199:
            pipe.execute()
    pipe.execute()
    return sent


def drive(host: str, port: int, seed: int, entities, features, absent, full) -> dict:
    """One connection's reads and writes until `full()`; returns what it sent."""
    import redis

    rng = random.Random(seed)
    values = Values(rng)
    r = redis.Redis(host=host, port=port, protocol=2, max_connections=1, socket_timeout=120)
    sent = {"hmget": 0, "hmget_fields": 0, "hset": 0, "hset_fields": 0}
    while not full():
        pipe = r.pipeline(transaction=False)
        for _ in range(PIPELINE):
            if rng.random() < WRITE_SHARE:
                fields = rng.sample(features, rng.randint(1, 10))
                pipe.hset(rng.choice(entities), mapping={f: values() for f in fields})
                sent["hset"] += 1
                sent["hset_fields"] += len(fields)
            else:
                key = rng.choice(absent) if rng.random() < ABSENT_SHARE else rng.choice(entities)
                fields = rng.sample(features, rng.randint(10, FEATURES))
                pipe.hmget(key, fields)
                sent["hmget"] += 1
                sent["hmget_fields"] += len(fields)
        pipe.execute()
    r.close()
    return sent


def traffic(host: str, port: int, seed: int, target: int, growing: str) -> dict:
    """The whole traffic: the load, then CONNECTIONS connections until the file `growing` (the capture being
    written) holds `target` bytes; returns what was sent."""
    import redis

    rng = random.Random(seed)
    features = feature_ids()
    ids = rng.sample(range(1, 10**8), ENTITIES + 100)
    entities = [f"st_{n}" for n in ids[:ENTITIES]]
    absent = [f"st_{n}" for n in ids[ENTITIES:]]
    loader = redis.Redis(host=host, port=port, protocol=2, max_connections=1)
    totals = load(loader, rng, entities, features)
    loader.close()
    full = lambda: os.path.getsize(growing) >= target  # noqa: E731
    results: list[dict] = []
    errors: list[BaseException] = []

    def run(i):
        try:
            results.append(drive(host, port, seed * 1000 + i, entities, features, absent, full))
        except BaseException as e:  # noqa: BLE001 - reported below, in the main thread
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(CONNECTIONS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    for r in results:
        for k, v in r.items():
            totals[k] = totals.get(k, 0) + v
    return totals


def record(pcap: Path, size_mb: float, seed: int = SEED, mtu: int = LOOPBACK_MTU) -> dict:
    """Records the capture into `pcap` and returns its description (also written to `<pcap>.json`). With
    `mtu` 1500, server, tcpdump and traffic run in a network namespace whose loopback has MTU 1500 and no
    segmentation offloads (the integration harness's `Netns`), so TCP sends real ~1448-byte segments."""
    from tests.integration.servers import Netns, RedisServer, Tcpdump

    target = int(size_mb * 1e6)
    tmp = pcap.with_name(pcap.name + ".tmp")
    workdir = pcap.parent / "redis-work"
    workdir.mkdir(exist_ok=True)
    t = time.perf_counter()
    with (Netns() if mtu == 1500 else contextlib.nullcontext()) as ns:
        prefix = ns.prefix if ns else []
        # In a namespace of its own the server's port is free by construction; on the host, any free one.
        with RedisServer(workdir, port=6379 if ns else None, prefix=prefix) as server:
            with Tcpdump(tmp, server.port, "lo", prefix=prefix) as dump:
                # The traffic runs in a child process, inside the namespace when there is one.
                out = subprocess.run(prefix + [sys.executable, __file__, "--traffic", server.host, str(server.port),
                                               str(seed), str(target), str(tmp)],
                                     capture_output=True, text=True, timeout=1800)
                if out.returncode != 0:
                    raise SystemExit(f"the traffic driver failed ({out.returncode}):\n{out.stderr[-2000:]}")
                totals = json.loads(out.stdout)
                stats = dump.stop()
    dropped = stats.get("dropped by kernel", 0)
    if dropped:
        raise SystemExit(f"tcpdump dropped {dropped} packets while recording {tmp}: the capture has holes; "
                         f"run again on a quieter machine")
    desc = {"port": server.port, "seed": seed, "size_mb": size_mb, "mtu": mtu, "bytes": os.path.getsize(tmp),
            "connections": CONNECTIONS + 1, "sent": totals, "tcpdump": stats,
            "record_s": round(time.perf_counter() - t, 1)}
    os.replace(tmp, pcap)
    Path(f"{pcap}.json").write_text(json.dumps(desc, indent=2) + "\n")
    return desc


def cached(data: Path, size_mb: float, seed: int = SEED, mtu: int = LOOPBACK_MTU) -> tuple[Path, dict]:
    """The capture for these parameters, recorded first if it is not there yet."""
    data.mkdir(parents=True, exist_ok=True)
    where = "lo" if mtu == LOOPBACK_MTU else f"mtu{mtu}"
    pcap = data / f"redis_{where}_{size_mb:g}mb_s{seed}.pcap"
    meta = Path(f"{pcap}.json")
    if not (pcap.exists() and meta.exists()):
        print(f"recording {pcap} ({size_mb:g} MB of feature-store traffic, MTU {mtu}; a minute or two) ...",
              flush=True)
        desc = record(pcap, size_mb, seed, mtu)
        print(f"  recorded {desc['bytes'] / 1e6:.1f} MB in {desc['record_s']} s, tcpdump: {desc['tcpdump']}",
              flush=True)
    return pcap, {"mtu": LOOPBACK_MTU, **json.loads(meta.read_text())}


# ---- the longer twin ------------------------------------------------------------------------------------
PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1


def concatenate(src: Path, dst: Path, copies: int, server_port: int) -> None:
    """`src` written `copies` times into `dst`; copy k is shifted k * (span + 1 s) in time and its client ports
    are renumbered (p -> 1024 + (p - 1024 + 4099 k) mod 64512), so its connections are new ones."""
    if dst.exists() and dst.stat().st_size == copies * src.stat().st_size - (copies - 1) * 24:
        return
    data = src.read_bytes()
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data, 0)
    if magic != PCAP_MAGIC_US or linktype != LINKTYPE_ETHERNET:
        raise SystemExit(f"{src}: expected a little-endian microsecond pcap of Ethernet frames (tcpdump -i lo)")
    records = list(_records(data))
    first, last = records[0][1], records[-1][1]
    shift_s = int(last - first) + 1
    tmp = dst.with_name(dst.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(data[:24])
        for k in range(copies):
            for at, _, length in records:
                rec = bytearray(data[at:at + 16 + length])
                sec = struct.unpack_from("<I", rec, 0)[0]
                struct.pack_into("<I", rec, 0, sec + k * shift_s)
                if k:
                    _renumber_client_port(rec, 16, server_port, k)
                out.write(rec)
    os.replace(tmp, dst)


def _records(data: bytes):
    """(offset, ts in s, captured length) of each record."""
    at = 24
    while at + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, at)
        if at + 16 + incl > len(data):
            break  # a cut last record (tcpdump stopped mid-write): leave it out
        yield at, sec + usec / 1e6, incl
        at += 16 + incl


def _renumber_client_port(rec: bytearray, frame: int, server_port: int, k: int) -> None:
    ethertype = struct.unpack_from(">H", rec, frame + 12)[0]
    ip = frame + 14
    if ethertype == 0x0800 and rec[ip + 9] == 6:
        tcp = ip + (rec[ip] & 0x0F) * 4
    elif ethertype == 0x86DD and rec[ip + 6] == 6:
        tcp = ip + 40
    else:
        return
    sport, dport = struct.unpack_from(">HH", rec, tcp)
    at, port = (tcp + 2, dport) if sport == server_port else (tcp, sport)
    new = 1024 + (port - 1024 + 4099 * k) % 64512
    if new == server_port:
        raise SystemExit(f"renumbering client port {port} for copy {k} hits the server port; use another seed")
    struct.pack_into(">H", rec, at, new)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--traffic":  # record()'s child: host port seed target file
        host, port, seed, target, growing = sys.argv[2:]
        print(json.dumps(traffic(host, int(port), int(seed), int(target), growing)))
        sys.exit(0)
    sys.exit("run bench/bench_parse.py; this module only records its captures")
