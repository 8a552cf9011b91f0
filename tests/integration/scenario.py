"""One recorded scenario: a fresh redis-server, tcpdump on its loopback, the feature-store traffic, and the truth.

`record_loopback` runs on the host's loopback (MTU 65536, offloads on: the kernel hands tcpdump segments of
up to 64 KiB); `record_in_netns` runs everything inside a new network namespace whose loopback has MTU 1500
and no offloads, so the capture holds the MSS-sized segments a real network carries. Both leave, next to each
other, `capture.pcap` and `truth.json` (see traffic.py for its layout).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import traffic
from .pcapread import flows_closed
from .servers import Netns, RedisServer, Tcpdump

TRAFFIC_SCRIPT = Path(traffic.__file__).resolve()


@dataclass
class RealCapture:
    name: str
    pcap: Path
    truth_path: Path
    truth: dict
    port: int
    mtu: int
    tcpdump_stats: dict = field(default_factory=dict)  # "packets captured" -> N, ...
    commandstats: dict = field(default_factory=dict)  # upper-case command -> calls, from the server itself

    @property
    def server(self) -> str:
        return self.truth["server"]


def record_loopback(workdir: Path, seed: int = 1, scale: float = 1.0) -> RealCapture:
    with RedisServer(workdir) as server:
        pcap, truth_path = workdir / "capture.pcap", workdir / "truth.json"
        with Tcpdump(pcap, server.port, "lo") as dump:
            truth = traffic.drive(server.host, server.port, seed, scale)
            truth_path.write_text(json.dumps(truth))
            stats = dump.stop(settled=_all_closed(pcap, server.port, truth))
        return RealCapture("loopback", pcap, truth_path, truth, server.port, 65536, stats, commandstats(server))


def record_in_netns(workdir: Path, seed: int = 2, scale: float = 1.0) -> RealCapture:
    with Netns() as ns, RedisServer(workdir, port=6379, prefix=ns.prefix) as server:
        pcap, truth_path = workdir / "capture.pcap", workdir / "truth.json"
        with Tcpdump(pcap, server.port, "lo", prefix=ns.prefix) as dump:
            subprocess.run(ns.prefix + [sys.executable, str(TRAFFIC_SCRIPT), "--port", str(server.port),
                                        "--truth", str(truth_path), "--seed", str(seed), "--scale", str(scale)],
                           check=True, timeout=300)
            truth = json.loads(truth_path.read_text())
            stats = dump.stop(settled=_all_closed(pcap, server.port, truth))
        return RealCapture("netns-mtu1500", pcap, truth_path, truth, server.port, 1500, stats, commandstats(server))


def _all_closed(pcap, port, truth):
    clients = [c["client"] for c in truth["connections"]]
    return lambda: flows_closed(pcap, port, clients)


def commandstats(server: RedisServer) -> dict[str, int]:
    """Calls per command as the server counted them (`INFO commandstats`), e.g. {"HMGET": 1100, ...}."""
    calls = {}
    for line in server.cli("info", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, _, rest = line[len("cmdstat_"):].partition(":")
            stats = dict(kv.split("=", 1) for kv in rest.strip().split(","))
            calls[name.upper()] = int(stats["calls"])
    return calls
