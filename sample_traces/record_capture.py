#!/usr/bin/env python3
"""A packet capture of real Redis traffic, made by replaying the synthetic feature-store sample, with its truth.

What runs: a real `redis-server` on loopback (no persistence) and `tcpdump` capturing its port, both started
and stopped by the integration tests' harness (`tests/integration/servers.py`). A `loader` connection stores
the feature-store data with pipelined HSETs. Then the first N HMGET/HSET commands of `feature_store.monitor` are
sent again over real redis-py connections, one per client address of the log, in the log's order. The
commands of one prediction request, that is, one client's commands less than a millisecond apart, go out as
one pipeline. One connection, that of the log's first client, speaks RESP3, and the others speak RESP2. The
log's PINGs are left out. Requests are sent one after another, never concurrently, so every reply is known
in advance. The script checks each reply against its model of what the server holds, and stops if one
differs.

The data: every entity that the replayed commands touch, with every feature that the sample's models read
for its type, except that about 2% of entities are never loaded and about 4% of features are missing from
each loaded entity (those lookups answer nil). A value is random bytes, shaped like a serialized feature
value and drawn from the seed and the entity alone. A value's size follows its feature's type, which comes
from the feature names of `make_feature_store_trace.py`: flags and counts take 8-14 bytes, floats and ratios
12-16 bytes, categories 12-48 bytes and embeddings 128-200 bytes (32-50 float32s).

The truth, `<capture stem>.truth.json` next to the capture, lists per connection, in the order the
connections opened (the loader first): `name` (the log's client address, or `loader`), `client` (the
`ip:port` the server saw), `client_port` and `protocol`. Its `commands` are every command the script sent on
that connection, in order, as `{"cmd", "args"}`. `args` are the arguments after the command name, except
that a written value (HSET) stands as its length in bytes. An HMGET also has `sizes`, one per field: the
size in bytes of the value the server returned, or null for a nil. The first command of each connection is
the `CLIENT INFO` that asked the server for the address. redis-py's handshake (`CLIENT SETINFO`, `HELLO 3`)
also goes over the wire but is not listed. Top-level keys: `server`, `port`, `seed`, `source`, `replayed`.

Needs root (or CAP_NET_RAW), redis-server, tcpdump, redis-py, xxhash, numpy and dpkt. From the repository root:
    python sample_traces/record_capture.py -o sample_traces/feature_store.pcap [--commands N] [--seed S]
                                           [--port P] [--monitor LOG]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the generator next to us; the test harness in tests/

import make_feature_store_trace as generator  # noqa: E402
from tests.integration.pcapread import flows_closed  # noqa: E402
from tests.integration.servers import HarnessError, RedisServer, Tcpdump, free_port  # noqa: E402

MONITOR = HERE / "feature_store.monitor"
GENERATOR_SEED = 20231114  # the seed feature_store.monitor was generated with: its feature names
DEFAULT_PORT = 16379
DEFAULT_COMMANDS = 2000
REQUEST_GAP_US = 1000  # a request's commands are tens of microseconds apart; requests, seconds
ABSENT_ENTITY, ABSENT_FIELD = 0.02, 0.04
LOAD_BATCH = 25  # entities per loader pipeline
# Value sizes in bytes per feature type (the name's last word), a serialized value with its type tag.
SIZES = {"bool": (8, 10), "int": (8, 14), "float": (12, 16), "ratio": (12, 16), "cat": (12, 48), "emb": (128, 200)}
_LINE = re.compile(r'^(\d+)\.(\d{6}) \[\d+ ([^\]]+)\] (.*)$')
_ARG = re.compile(r'"([^"\\]*)"')


@dataclass
class Command:
    ts_us: int
    client: str  # the log's client address
    cmd: str
    args: list[str]


def read_monitor(path: Path) -> list[Command]:
    """The HMGET and HSET commands of a MONITOR log written by make_feature_store_trace.py (no escapes)."""
    out = []
    with open(path, encoding="ascii") as f:
        for number, line in enumerate(f, 1):
            m = _LINE.match(line.rstrip("\n"))
            if m is None:
                if number == 1 and line.strip() == "OK":
                    continue
                raise ValueError(f"{path}:{number}: not a MONITOR line: {line[:80]!r}")
            args = _ARG.findall(m.group(4))
            if "\\" in m.group(4) or not args:
                raise ValueError(f"{path}:{number}: escaped or missing arguments, which the generator never writes")
            if args[0] in ("HMGET", "HSET"):
                out.append(Command(int(m.group(1)) * 1_000_000 + int(m.group(2)), m.group(3), args[0], args[1:]))
    return out


def requests(commands: list[Command]) -> list[list[Command]]:
    """Prediction requests in the order they began: each client's runs of commands sent close together."""
    out, open_by_client = [], {}
    for c in commands:
        current = open_by_client.get(c.client)
        if current is not None and c.ts_us - current[-1].ts_us < REQUEST_GAP_US:
            current.append(c)
        else:
            open_by_client[c.client] = [c]
            out.append(open_by_client[c.client])
    return out


def feature_types() -> dict[str, str]:
    """xxHash32 field id -> the type word of its feature's name (`float`, `emb`, ...), as the generator names
    them: its first draws from the seed are the feature names."""
    rng = np.random.default_rng(GENERATOR_SEED)
    types = {}
    for prefix in generator.ENTITIES:
        for name in generator.feature_names(rng, prefix):
            types[generator.field(name)] = name.rsplit("_", 1)[1]
    return types


def entity_data(key: str, fields: list[str], types: dict[str, str], seed: int) -> dict[str, bytes]:
    """The features stored for one entity ({} when it was never loaded), from the seed and the key alone, so
    an entity holds the same values whatever --commands is."""
    rng = random.Random(f"{seed}:{key}")
    if rng.random() < ABSENT_ENTITY:
        return {}
    data = {}
    for f in fields:
        low, high = SIZES[types[f]]
        value = rng.randbytes(rng.randint(low, high))
        if rng.random() >= ABSENT_FIELD:
            data[f] = value
    return data


def dataset(commands: list[Command], replayed: list[Command], seed: int) -> dict[str, dict[str, bytes]]:
    """Entity -> {field: value} for the entities the replayed commands touch, in order of first use. The fields
    of a type are all those the log's models read for it (over the whole log, so they do not depend on N)."""
    types = feature_types()
    by_type: dict[str, dict[str, None]] = {}
    for c in commands:
        if c.cmd == "HMGET":
            by_type.setdefault(c.args[0][:2], {}).update(dict.fromkeys(c.args[1:]))
    unknown = {f for fields in by_type.values() for f in fields} - types.keys()
    if unknown:
        raise ValueError(f"the log has fields that are no feature of the generator (seed {GENERATOR_SEED}): "
                         f"{sorted(unknown)[:5]}")
    entities = dict.fromkeys(c.args[0] for c in replayed)
    return {key: entity_data(key, list(by_type.get(key[:2], {})), types, seed) for key in entities}


class Connection:
    """One redis-py connection (a pool of one, so its pipelines use it too) and the truth of what it sent."""

    def __init__(self, host: str, port: int, name: str, protocol: int):
        self.name, self.protocol = name, protocol
        self.r = redis.Redis(host=host, port=port, protocol=protocol, max_connections=1, socket_timeout=60)
        self.client = self.r.client_info()["addr"]
        self.commands: list[dict] = [{"cmd": "CLIENT", "args": ["INFO"]}]

    def truth(self) -> dict:
        return {"name": self.name, "client": self.client, "client_port": int(self.client.rsplit(":", 1)[1]),
                "protocol": self.protocol, "commands": self.commands}


class Replay:
    """Sends pipelines and records them, checking every reply against the sizes the server must hold."""

    def __init__(self):
        self.stored: dict[tuple[str, str], int] = {}
        self.counts = {"load": Counter(), "replay": Counter()}

    def pipeline(self, conn: Connection, commands: list[tuple[str, str, list]]):
        """`commands` are (cmd, key, fields) for HMGET, (cmd, key, [(field, value), ...]) for HSET."""
        p = conn.r.pipeline(transaction=False)
        for cmd, key, args in commands:
            if cmd == "HMGET":
                p.hmget(key, args)
            else:
                p.hset(key, mapping=dict(args))
        for (cmd, key, args), reply in zip(commands, p.execute()):
            conn.commands.append(self._record(conn, cmd, key, args, reply))

    def _record(self, conn: Connection, cmd: str, key: str, args: list, reply) -> dict:
        counts = self.counts["load" if conn.name == "loader" else "replay"]
        counts[cmd] += 1
        if cmd == "HSET":
            counts["field writes"] += len(args)
            self.stored.update({(key, f): len(v) for f, v in args})
            return {"cmd": cmd, "args": [key] + [x for f, v in args for x in (f, len(v))]}
        sizes = [None if v is None else len(v) for v in reply]
        expected = [self.stored.get((key, f)) for f in args]
        if sizes != expected:
            raise RuntimeError(f"{conn.name}: HMGET {key} answered sizes {sizes}, not the {expected} stored")
        counts["lookups"] += len(args)
        counts["nils"] += sizes.count(None)
        return {"cmd": cmd, "args": [key, *args], "sizes": sizes}


def pipelined(c: Command) -> tuple[str, str, list]:
    """A log command as `Replay.pipeline` takes it: HMGET fields, or HSET (field, value) pairs."""
    if c.cmd == "HMGET":
        return c.cmd, c.args[0], c.args[1:]
    return c.cmd, c.args[0], [(f, v.encode()) for f, v in zip(c.args[1::2], c.args[2::2])]


def run(server: RedisServer, commands: list[Command], replayed: list[Command], seed: int, pace: float | None = None):
    """Loads the data, replays the requests, closes every connection; returns (connections, replay, data).
    With `pace`, each request goes out at its time in the log divided by `pace` (the log's clock run `pace`
    times faster; the capture's clock is the real one), else as fast as the server answers."""
    data = dataset(commands, replayed, seed)
    clients = list(dict.fromkeys(c.client for c in replayed))
    # Connect everyone first, so the capture's connections appear in the truth's order.
    loader = Connection(server.host, server.port, "loader", 2)
    conns = {c: Connection(server.host, server.port, c, 3 if i == 0 else 2) for i, c in enumerate(clients)}
    replay = Replay()
    loaded = [(key, fields) for key, fields in data.items() if fields]
    for i in range(0, len(loaded), LOAD_BATCH):
        replay.pipeline(loader, [("HSET", key, list(fields.items())) for key, fields in loaded[i:i + LOAD_BATCH]])
    start, first_us = time.monotonic(), replayed[0].ts_us if replayed else 0
    for request in requests(replayed):
        if pace:
            due = start + (request[0].ts_us - first_us) / 1e6 / pace
            time.sleep(max(0.0, due - time.monotonic()))
        conn = conns[request[0].client]
        replay.pipeline(conn, [pipelined(c) for c in request])
    everyone = [loader, *conns.values()]
    for conn in everyone:
        conn.r.close()
    return everyone, replay, data


def truth_json(meta: dict, connections: list[Connection]) -> str:
    """The truth as JSON, one command per line so that it reads and diffs well."""
    parts = []
    for conn in connections:
        head = json.dumps({k: v for k, v in conn.truth().items() if k != "commands"})[:-1]
        lines = ",\n".join(json.dumps(c) for c in conn.commands)
        parts.append(f'{head}, "commands": [\n{lines}\n]}}')
    return json.dumps(meta)[:-1] + ', "connections": [\n' + ",\n".join(parts) + "\n]}\n"


def pick_port(wanted: int) -> int:
    """`wanted` if nothing listens on it, else a free port (said on stderr: the truth records the one used)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", wanted))
            return wanted
        except OSError:
            pass
    port = free_port()
    print(f"record_capture: port {wanted} is taken, using {port} (recorded in the truth)", file=sys.stderr)
    return port


def record(output: Path, n: int, seed: int, port: int, monitor: Path = MONITOR, pace: float | None = None) -> dict:
    """Records the capture and writes its truth; returns what `report` prints."""
    commands = read_monitor(monitor)
    replayed = commands[:n]
    truth_path = output.with_name(output.stem + ".truth.json")
    with tempfile.TemporaryDirectory(prefix="record-capture-") as workdir, \
            RedisServer(workdir, port=pick_port(port)) as server:
        with Tcpdump(output, server.port, "lo") as dump:
            connections, replay, data = run(server, commands, replayed, seed, pace)
            clients = [c.client for c in connections]
            stats = dump.stop(settled=lambda: flows_closed(output, server.port, clients))
    if stats.get("dropped by kernel", 0):
        raise HarnessError(f"the kernel dropped packets, so the capture has holes: {stats}")
    meta = {"server": server.address, "port": server.port, "seed": seed, "source": monitor.name,
            "replayed": len(replayed), **({"pace": pace} if pace else {})}
    truth_path.write_text(truth_json(meta, connections))
    return {"truth": truth_path, "source": monitor.name, "port": server.port, "tcpdump": stats,
            "connections": connections, "counts": replay.counts, "entities": len(data), "loaded": sum(1 for v in data.values() if v)}


def report(output: Path, r: dict) -> str:
    load, replay, stats = r["counts"]["load"], r["counts"]["replay"], r["tcpdump"]
    return "\n".join([
        f"capture  {output}: {output.stat().st_size:,} bytes, {stats.get('captured', 0):,} packets "
        f"({stats.get('dropped by kernel', 0)} dropped by kernel); server 127.0.0.1:{r['port']}",
        f"truth    {r['truth']}: {r['truth'].stat().st_size:,} bytes",
        f"load     {load['HSET']:,} HSET ({load['field writes']:,} fields) on connection `loader`: "
        f"{r['loaded']:,} of the {r['entities']:,} entities the replay reads",
        f"replay   {replay['HMGET'] + replay['HSET']:,} commands of {r['source']} over "
        f"{len(r['connections']) - 1} connections (one RESP3): {replay['HMGET']:,} HMGET "
        f"({replay['lookups']:,} lookups, {replay['nils']:,} nil), {replay['HSET']:,} HSET "
        f"({replay['field writes']:,} fields)",
    ])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True, help="the .pcap to write; the truth goes next to it")
    p.add_argument("--commands", type=int, default=DEFAULT_COMMANDS,
                   help="HMGET/HSET commands of the log to replay (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seed of the stored values (default: %(default)s)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help="server port, if free; else any free port (default: %(default)s)")
    p.add_argument("--monitor", type=Path, default=MONITOR,
                   help="the MONITOR log to replay, made by make_feature_store_trace.py with its default --seed "
                        "(default: sample_traces/feature_store.monitor)")
    p.add_argument("--pace", type=float, metavar="F",
                   help="send each request at its time in the log divided by F (the log's clock F times faster), "
                        "so the capture's clock means something; default: as fast as the server answers")
    args = p.parse_args(argv)
    if args.pace is not None and not args.pace > 0:
        p.error("--pace must be above 0")
    if args.commands < 1:
        p.error("--commands must be >= 1")
    missing = [tool for tool in ("redis-server", "tcpdump") if shutil.which(tool) is None]
    if missing:
        p.error(f"needs {' and '.join(missing)} on PATH (apt-get install redis-server tcpdump)")
    if os.geteuid() != 0:
        print("record_capture: not root; tcpdump needs CAP_NET_RAW to capture", file=sys.stderr)
    output = Path(args.output)
    try:
        result = record(output, args.commands, args.seed, args.port, args.monitor, args.pace)
    except (HarnessError, ValueError, RuntimeError, redis.RedisError) as e:
        print(f"record_capture: {e}", file=sys.stderr)
        return 1
    print(report(output, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
