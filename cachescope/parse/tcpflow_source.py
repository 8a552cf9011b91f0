"""A tcpflow output directory read as trace rows: what users of the older tcpflow-based method have
(`tcpflow -r capture.pcap -o DIR`: one file per direction of each connection, holding its reassembled bytes,
named like `010.000.000.001.51234-010.000.000.002.06379`).

The two files of a connection are paired by name (`SRC-DST` with `DST-SRC`, with the same VLAN and
connection-count suffixes tcpflow adds, `--100`, `c1`); the file sent to a Redis port is the client's.
Connections are numbered in the order of their first packet's time (tcpflow's file time; then by client-file
name), so that rows come in send order, `ts_ns` never decreasing, as a capture's do. The bytes go through the same Rust
RESP session as a capture's (`_native.StreamParser`), so rows have the same columns and meaning, with two
differences tcpflow forces:

- it keeps no packet times: every row of a connection has as `ts_ns` the modification time tcpflow gives
  the client file (the time of its first packet), and `latency_ns` is null;
- a connection is read from its start only when its client file's time is older than its server file's and
  both begin at a command and a reply; otherwise its replies are unknown (`src/parse/streams.rs` says why).
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from typing import Iterator

import pyarrow as pa

from cachescope import _native
from cachescope.errors import TraceFormatError
from cachescope.parse.capture_source import BATCH_ROWS, DEFAULT_PORTS, check_ports
from cachescope.parse.schema import record_batch

# tcpflow's default file name template, `%A.%a-%B.%b%V%v%C%c`: addresses (IPv4 with zero-padded octets),
# five-digit ports, `--<vlan>` when tagged, `c<n>` for the n-th reuse of the same 4-tuple.
_NAME = re.compile(r"^(?P<src>.+)\.(?P<sport>\d{5})-(?P<dst>.+)\.(?P<dport>\d{5})(?P<suffix>(?:--\d+)?(?:c\d+)?)$")


def _endpoint(host: str, port: str) -> str | None:
    """`ip:port` (IPv6 in brackets) of a name's address and port; None when it is not one."""
    try:
        if ":" in host:
            return f"[{ipaddress.IPv6Address(host)}]:{int(port)}"
        return f"{ipaddress.IPv4Address('.'.join(str(int(p)) for p in host.split('.')))}:{int(port)}"
    except ValueError:
        return None


class _Flow:
    """One connection: its client and server files (either may be missing)."""

    def __init__(self, client: str, server: str, name: str):
        self.client, self.server, self.name = client, server, name
        self.request: str | None = None
        self.reply: str | None = None


def _first_time(flow: _Flow) -> int:
    """Every row's time for a connection: tcpflow's time of the client file (else the server's)."""
    return os.stat(flow.request or flow.reply).st_mtime_ns


class TcpflowRows:
    """A tcpflow directory opened for parsing. Iterate `record_batches()` once; `stats` is complete afterwards."""

    def __init__(self, path: str, ports=DEFAULT_PORTS, anonymize: bool = False):
        self.path = os.fspath(path)
        self.ports = set(check_ports(ports))
        self.stats: dict = {"input_format": "tcpflow", "files": 0, "skipped_files": 0, "non_redis_files": 0}
        self.flows = self._pair()
        if not self.flows:
            raise TraceFormatError(f"{self.path}: no tcpflow files of a connection to port(s) "
                                   f"{', '.join(map(str, sorted(self.ports)))} in this directory")
        self.size_bytes = sum(os.path.getsize(p) for f in self.flows for p in (f.request, f.reply) if p)
        self.bytes_read = 0
        salt = secrets.randbits(64) if anonymize else None
        self._parser = _native.StreamParser(salt)

    def _pair(self) -> list[_Flow]:
        flows: dict[tuple, _Flow] = {}
        for entry in sorted(os.listdir(self.path)):
            full = os.path.join(self.path, entry)
            m = _NAME.match(entry)
            if not m or not os.path.isfile(full):
                # report.xml, *.findx indexes, anything else in the directory
                self.stats["skipped_files"] += 1
                continue
            src, dst = _endpoint(m["src"], m["sport"]), _endpoint(m["dst"], m["dport"])
            if src is None or dst is None:
                self.stats["skipped_files"] += 1
                continue
            self.stats["files"] += 1
            to_server = int(m["dport"]) in self.ports
            if not to_server and int(m["sport"]) not in self.ports:
                self.stats["non_redis_files"] += 1
                continue
            if to_server:
                client, server, name = src, dst, entry
            else:
                client, server = dst, src
                name = f"{m['dst']}.{m['dport']}-{m['src']}.{m['sport']}{m['suffix']}"
            flow = flows.setdefault((client, server, m["suffix"]), _Flow(client, server, name))
            if to_server:
                flow.request = full
            else:
                flow.reply = full
        return sorted(flows.values(), key=lambda f: (_first_time(f), f.name))

    def record_batches(self, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        conns = [(f.client, f.server) for f in self.flows]
        for conn, flow in enumerate(self.flows):
            ts_ns = _first_time(flow)
            client_first = flow.request is not None and (
                flow.reply is None or os.stat(flow.request).st_mtime_ns < os.stat(flow.reply).st_mtime_ns)
            self._parser.open(conn, flow.request, flow.reply, ts_ns, client_first)
            while True:
                try:
                    cols = self._parser.next_batch(batch_rows)
                finally:
                    self.stats.update(self._parser.stats())
                if cols is None:
                    break
                yield record_batch(cols, self._parser.cmd_names(), conns)
            self.bytes_read += sum(os.path.getsize(p) for p in (flow.request, flow.reply) if p)
