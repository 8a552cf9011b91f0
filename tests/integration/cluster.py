"""A real Redis Cluster on loopback for the tests: three masters, no replicas, and slots moved by hand.

Each node is a `redis-server --cluster-enabled yes` in a directory of its own (its nodes.conf cannot clash
with another test's), joined with `redis-cli --cluster create`, and stopped (by process id) when the context
ends, pass or fail. A slot is moved as `redis-cli --cluster reshard` moves it (CLUSTER SETSLOT IMPORTING on
the target, MIGRATING on the source, MIGRATE of its keys, SETSLOT NODE on every node), but in two steps the
test calls between lookups: while the slot is half moved a client gets -ASK, once it is moved -MOVED.
"""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import time

from .servers import START_TIMEOUT, HarnessError, RedisServer

BUS_OFFSET = 10000


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_ports(n: int) -> list[int]:
    """`n` ports whose cluster bus port (+10000) is free too, both below Linux's ephemeral range (32768 on), so
    that no outgoing connection takes one between the probe and the bind."""
    rng = random.Random()
    ports: list[int] = []
    while len(ports) < n:
        p = rng.randrange(20000, 22700)
        if p not in ports and _free(p) and _free(p + BUS_OFFSET):
            ports.append(p)
    return ports


class Cluster:
    """Three masters on 127.0.0.1 holding every slot; `nodes` are their `RedisServer`s."""

    def __init__(self, workdir, masters: int = 3):
        self.workdir, self.masters = workdir, masters
        self.nodes: list[RedisServer] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        try:
            for attempt in range(3):  # a port can be taken between the probe and the bind: try others
                try:
                    self._start_nodes(attempt)
                    break
                except HarnessError:
                    self._stack.close()
                    self.nodes = []
                    if attempt == 2:
                        raise
            self._create()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc):
        self._stack.close()

    def _start_nodes(self, attempt: int):
        for i, port in enumerate(cluster_ports(self.masters)):
            d = self.workdir / f"try{attempt}-node{i}"
            d.mkdir(parents=True)
            node = RedisServer(d, port, extra_args=["--cluster-enabled", "yes", "--cluster-config-file",
                                                    f"nodes-{port}.conf", "--cluster-node-timeout", "5000"])
            self.nodes.append(self._stack.enter_context(node))

    def _create(self):
        out = subprocess.run(["redis-cli", "--cluster", "create", *(n.address for n in self.nodes),
                              "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True,
                             timeout=60)
        if out.returncode != 0:
            raise HarnessError(f"redis-cli --cluster create failed: {(out.stdout + out.stderr)[-600:]}")
        deadline = time.monotonic() + START_TIMEOUT
        while not all(self._ready(n) for n in self.nodes):
            if time.monotonic() > deadline:
                raise HarnessError("the cluster did not reach cluster_state:ok")
            time.sleep(0.1)

    def _ready(self, node) -> bool:
        info = node.cli("CLUSTER", "INFO")
        return ("cluster_state:ok" in info and "cluster_slots_assigned:16384" in info
                and f"cluster_known_nodes:{self.masters}" in info)

    @property
    def ports(self) -> list[int]:
        return [n.port for n in self.nodes]

    def node_id(self, node) -> str:
        return node.cli("CLUSTER", "MYID").strip()

    def owner(self, slot: int) -> RedisServer:
        """The node that serves `slot`, as the cluster says."""
        for line in self.nodes[0].cli("CLUSTER", "NODES").splitlines():
            words = line.split()
            port = int(words[1].split("@")[0].rsplit(":", 1)[1])
            for r in words[8:]:
                lo, _, hi = r.partition("-")
                if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                    return next(n for n in self.nodes if n.port == port)
        raise HarnessError(f"no node serves slot {slot}")

    def start_moving(self, slot: int, source, target, keys: list[str]):
        """Marks `slot` as moving from `source` to `target` and migrates `keys` (some of its keys): from now
        on `source` answers -ASK for a key of the slot it does not hold."""
        target.cli("CLUSTER", "SETSLOT", str(slot), "IMPORTING", self.node_id(source))
        source.cli("CLUSTER", "SETSLOT", str(slot), "MIGRATING", self.node_id(target))
        self._migrate(source, target, keys)

    def finish_moving(self, slot: int, source, target, keys: list[str]):
        """Migrates the rest of the slot's `keys` and gives the slot to `target` on every node: from now on
        the others answer -MOVED."""
        self._migrate(source, target, keys)
        target_id = self.node_id(target)
        for node in [target, source, *(n for n in self.nodes if n not in (source, target))]:
            node.cli("CLUSTER", "SETSLOT", str(slot), "NODE", target_id)

    @staticmethod
    def _migrate(source, target, keys: list[str]):
        if keys:
            said = source.cli("MIGRATE", target.host, str(target.port), "", "0", "5000", "KEYS", *keys)
            if said.strip() not in ("OK", "NOKEY"):
                raise HarnessError(f"MIGRATE failed: {said}")
