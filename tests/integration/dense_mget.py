"""A capture of dense MGETs, recorded from real traffic: the shape that made the parser's memory grow with the
capture (issue 27: 3.1 GiB in simulate.py on 210 MB of it). Used by `bench/bench_dense_mget.py` (into
bench/data/) and by `tests/integration/test_dense_mget_memory.py` (into the test's tmp folder).

Recording (`record`): a redis-server on a free port of 127.0.0.1 and `tcpdump -i lo -s 0 -B 65536 -w FILE port
P` (the integration harness's `RedisServer` and `Tcpdump`). The traffic (`traffic`, a child process): one
connection loads KEYS plain keys `k:<n>` with values of 4-64 bytes (log-uniform) in pipelined SETs; then
CONNECTIONS redis-py connections (RESP2, one thread each) send pipelines of PIPELINE MGETs, each of 100-500
keys (1 in 20 of them never set, so replies carry nils), until the capture file holds `size_mb` MB. Keys and
values are small, so a lookup costs about 40 bytes of capture: 210 MB hold about 5 M lookups. The capture
must have no kernel drops. What the driver sent (MGETs, keys asked) goes to a JSON sidecar `<pcap>.json`.

`client_side` writes the client's packets of a capture alone: what a capture of one direction holds (a
`dst port` filter, a mirror port that sees one way), where no reply ever answers the commands.
"""

from __future__ import annotations

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

KEYS = 200_000
MISSING = 10_000
CONNECTIONS = 4
PIPELINE = 8
MGET_KEYS = (100, 500)
VALUE_SIZES = (4, 64)
SEED = 11
ROOT = Path(__file__).resolve().parents[2]


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))


def _load(r, rng: random.Random) -> None:
    blob = rng.randbytes(1 << 16)
    pipe = r.pipeline(transaction=False)
    for n in range(KEYS):
        size = _log_uniform(rng, *VALUE_SIZES)
        at = rng.randrange(len(blob) - size)
        pipe.set(f"k:{n}", blob[at:at + size])
        if n % 1000 == 999:
            pipe.execute()
    pipe.execute()


def _drive(host: str, port: int, seed: int, full) -> dict:
    import redis

    rng = random.Random(seed)
    r = redis.Redis(host=host, port=port, protocol=2, max_connections=1, socket_timeout=120)
    sent = {"mget": 0, "mget_keys": 0}
    while not full():
        pipe = r.pipeline(transaction=False)
        for _ in range(PIPELINE):
            n = rng.randint(*MGET_KEYS)
            pipe.mget([f"k:{rng.randrange(KEYS + MISSING)}" for _ in range(n)])
            sent["mget"] += 1
            sent["mget_keys"] += n
        pipe.execute()
    r.close()
    return sent


def traffic(host: str, port: int, seed: int, target: int, growing: str) -> dict:
    """The load, then CONNECTIONS connections of MGETs until the file `growing` holds `target` bytes."""
    import redis

    loader = redis.Redis(host=host, port=port, protocol=2, max_connections=1)
    _load(loader, random.Random(seed))
    loader.close()
    full = lambda: os.path.getsize(growing) >= target  # noqa: E731
    results: list[dict] = []
    errors: list[BaseException] = []

    def run(i):
        try:
            results.append(_drive(host, port, seed * 1000 + i, full))
        except BaseException as e:  # noqa: BLE001 - reported below, in the main thread
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(CONNECTIONS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return {k: sum(r[k] for r in results) for k in ("mget", "mget_keys")}


def record(pcap: Path, size_mb: float, seed: int = SEED) -> dict:
    """Records the capture into `pcap` and returns its description (also written to `<pcap>.json`)."""
    sys.path.insert(0, str(ROOT))
    from tests.integration.servers import RedisServer, Tcpdump

    tmp = pcap.with_name(pcap.name + ".tmp")
    workdir = pcap.parent / "redis-work"
    workdir.mkdir(exist_ok=True)
    t = time.perf_counter()
    with RedisServer(workdir) as server:
        with Tcpdump(tmp, server.port, "lo") as dump:
            out = subprocess.run([sys.executable, __file__, "--traffic", server.host, str(server.port), str(seed),
                                  str(int(size_mb * 1e6)), str(tmp)],
                                 capture_output=True, text=True, timeout=1800)
            if out.returncode != 0:
                raise SystemExit(f"the traffic driver failed ({out.returncode}):\n{out.stderr[-2000:]}")
            sent = json.loads(out.stdout)
            stats = dump.stop()
    if stats.get("dropped by kernel", 0):
        raise SystemExit(f"tcpdump dropped {stats['dropped by kernel']} packets while recording {tmp}: the "
                         "capture has holes; run again on a quieter machine")
    desc = {"port": server.port, "seed": seed, "size_mb": size_mb, "bytes": os.path.getsize(tmp), "sent": sent,
            "loaded_keys": KEYS, "tcpdump": stats, "record_s": round(time.perf_counter() - t, 1)}
    os.replace(tmp, pcap)
    Path(f"{pcap}.json").write_text(json.dumps(desc, indent=2) + "\n")
    return desc


def client_side(src: Path, dst: Path, server_port: int, share: float = 1.0) -> int:
    """The first `share` of `src`'s packets (a little-endian pcap of Ethernet frames, as tcpdump -i lo
    writes), those sent to `server_port` only, into `dst`; returns how many were written."""
    data = src.read_bytes()
    records, at = [], 24
    while at + 16 <= len(data):
        incl = struct.unpack_from("<IIII", data, at)[2]
        if at + 16 + incl > len(data):
            break
        records.append((at, 16 + incl))
        at += 16 + incl
    kept = 0
    with open(dst, "wb") as out:
        out.write(data[:24])
        for at, n in records[:int(len(records) * share)]:
            ip = at + 16 + 14
            tcp = ip + (data[ip] & 0x0F) * 4
            if struct.unpack_from(">H", data, tcp + 2)[0] == server_port:
                out.write(data[at:at + n])
                kept += 1
    return kept


def cached(data: Path, size_mb: float, seed: int = SEED) -> tuple[Path, dict]:
    """The capture for these parameters under `data`, recorded first if it is not there yet."""
    data.mkdir(parents=True, exist_ok=True)
    pcap = data / f"dense_mget_{size_mb:g}mb_s{seed}.pcap"
    meta = Path(f"{pcap}.json")
    if not (pcap.exists() and meta.exists()):
        print(f"recording {pcap} ({size_mb:g} MB of dense MGETs) ...", flush=True)
        desc = record(pcap, size_mb, seed)
        print(f"  recorded {desc['bytes'] / 1e6:.1f} MB in {desc['record_s']} s", flush=True)
    return pcap, json.loads(meta.read_text())


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--traffic":  # record()'s child: host port seed target file
        host, port, seed, target, growing = sys.argv[2:]
        print(json.dumps(traffic(host, int(port), int(seed), int(target), growing)))
        sys.exit(0)
    if len(sys.argv) == 3:  # python tests/integration/dense_mget.py FOLDER SIZE_MB
        print(cached(Path(sys.argv[1]), float(sys.argv[2]))[0])
        sys.exit(0)
    sys.exit("usage: python tests/integration/dense_mget.py FOLDER SIZE_MB")
