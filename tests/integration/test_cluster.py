"""A real Redis Cluster resharded while a redis-py `RedisCluster` client reads: a lookup is what the service
asked, not every attempt on the wire.

A cluster client sends a command answered -ASK (its slot is half moved) or -MOVED (moved) again to the right
node; the in-process cache in front of the client library sees one lookup. The capture holds every attempt
(and ASKING, the resharding's MIGRATE and RESTORE-ASKING, the cluster bus): the simulation must count the
client's logical lookups, and hit as an LRU over them does.
"""

from __future__ import annotations

import json
import random

import redis
from redis.cluster import RedisCluster

import cachescope
from cachescope.parse.discover import find_redis_ports

from .cluster import BUS_OFFSET
from .servers import Tcpdump
from conftest import reference_lru, run_cli

GROUPS = 6  # hash tags: each group's entities share one slot
ENTITIES = 25
FIELDS = ["2496559762", "1170383926", "42"]
CAPACITY = 100


def key(group: int, entity: int) -> str:
    return f"{{g{group}}}:st_{entity}"


class Service:
    """The service's reads through one `RedisCluster` client, and the lookups its cache would see."""

    def __init__(self, client: RedisCluster, rng: random.Random):
        self.client, self.rng = client, rng
        self.logical: list[tuple[str, str | None]] = []
        self.wrongtype = 0

    def lookup(self) -> tuple[int, int]:
        """One HMGET of a popular entity (Zipf-like); returns (group, entity)."""
        g = self.rng.randrange(GROUPS)
        e = self.rng.choices(range(ENTITIES), weights=[1 / (i + 1) for i in range(ENTITIES)])[0]
        fields = self.rng.sample(FIELDS, self.rng.randint(1, len(FIELDS)))
        self.client.hmget(key(g, e), fields)
        self.logical += [(key(g, e), f) for f in fields]
        return g, e

    def wrong_type(self, g: int):
        """A GET of a hash: Redis refuses it (-WRONGTYPE); the service got no value, its cache no entry."""
        try:
            self.client.get(key(g, 0))
        except redis.ResponseError as e:
            assert str(e).startswith("WRONGTYPE")
            self.wrongtype += 1

    def pipelined_once(self, groups: list[int], n: int, tag: str):
        """A cluster pipeline of HMGETs of keys looked up nowhere else (so the order its retries take on the
        wire cannot change an LRU's hits)."""
        pipe = self.client.pipeline()
        for i in range(n):
            k = f"{{g{groups[i % len(groups)]}}}:once_{tag}_{i}"
            pipe.hmget(k, FIELDS[:2])
            self.logical += [(k, f) for f in FIELDS[:2]]
        pipe.execute()


def test_resharding_a_cluster_under_reads(redis_cluster, tmp_path):
    cluster = redis_cluster
    nodes = cluster.nodes
    loader = RedisCluster(host="127.0.0.1", port=nodes[0].port)
    for g in range(GROUPS):
        for e in range(ENTITIES):
            loader.hset(key(g, e), mapping={f: "v" * (1 + (g + e) % 9) for f in FIELDS[:2]})
    slots = {g: loader.keyslot(key(g, 0)) for g in range(GROUPS)}
    loader.close()
    # Two groups' slots move, each from its owner to the next node.
    moving = [0, 1]
    moves = {g: (cluster.owner(slots[g]), nodes[(nodes.index(cluster.owner(slots[g])) + 1) % len(nodes)])
             for g in moving}
    half = ENTITIES // 2

    pcap = tmp_path / "cluster.pcap"
    ports = cluster.ports
    with Tcpdump(pcap, ports + [p + BUS_OFFSET for p in ports], "lo") as dump:
        client = RedisCluster(host="127.0.0.1", port=ports[0], reinitialize_steps=10**6)
        svc = Service(client, random.Random(16))
        for _ in range(150):
            svc.lookup()
        svc.wrong_type(3)

        # Half of each moving slot's keys migrated: the source answers -ASK for those.
        for g in moving:
            source, target = moves[g]
            cluster.start_moving(slots[g], source, target, [key(g, e) for e in range(half)])
        asked = 0
        for _ in range(200):
            g, e = svc.lookup()
            asked += g in moving and e < half
        # Keys that exist nowhere are not on the source either: -ASK inside the pipeline, and again when
        # redis-py retries each such command on its own.
        pipelined = 0
        for round_ in range(4):
            svc.pipelined_once([*moving, 4], 6, str(round_))
            pipelined += sum(1 for i in range(6) if [*moving, 4][i % 3] in moving)
        svc.wrong_type(4)

        # The slots moved: the old owner answers -MOVED, once per slot (the client then knows).
        for g in moving:
            source, target = moves[g]
            cluster.finish_moving(slots[g], source, target, [key(g, e) for e in range(half, ENTITIES)])
        touched = set()
        for _ in range(200):
            g, _e = svc.lookup()
            if g in moving:
                touched.add(g)
        client.close()
        dump.stop()

    # Discovery by content finds the three nodes, never a bus port.
    assert find_redis_ports(pcap) == sorted(ports)

    proc = run_cli("simulate.py", pcap, "--lru", str(CAPACITY), "--json", "--no-progress", check_rc=0)
    doc = json.loads(proc.stdout)
    (lru,) = doc["results"]
    logical = svc.logical
    assert lru["lookups"] == len(logical)
    assert lru["hits"] == sum(reference_lru(logical, CAPACITY))
    assert doc["infinite"]["hits"] == sum(reference_lru(logical, len(logical)))
    errors = doc["trace"]["error_replies"]
    assert asked > 0 and pipelined > 0 and touched
    assert asked + pipelined <= errors["ASK"] <= asked + 2 * pipelined
    assert errors["MOVED"] == len(touched)
    assert errors["WRONGTYPE"] == svc.wrongtype == 2
    by_server = doc["trace"]["lookups_by_server"]
    assert set(by_server) == {f"127.0.0.1:{p}" for p in ports}
    assert sum(by_server.values()) == len(logical)

    summary = run_cli("simulate.py", pcap, "--lru", str(CAPACITY), "--no-progress", check_rc=0).stdout
    assert f"MOVED {len(touched)}" in summary
    assert f"{errors['ASK'] + errors['MOVED']:,} of them redirected by the cluster" in summary
    assert "lookups by Redis server: 127.0.0.1:" in summary

    # Resharding traffic is known (MIGRATE to the source, RESTORE-ASKING between nodes); the bus gives no
    # row even when its ports are named.
    with_bus = cachescope.parse_capture(str(pcap), ports=ports + [p + BUS_OFFSET for p in ports])
    stats = with_bus.attrs["stats"]
    assert stats["unknown_commands"] == 0
    assert {"MIGRATE", "RESTORE-ASKING", "ASKING", "CLUSTER"} <= set(stats["other_commands"])
    assert stats["other_commands"]["ASKING"] >= asked
    assert set(with_bus["server"].astype(str)) == {f"127.0.0.1:{p}" for p in ports}
    assert len(with_bus) == len(cachescope.parse_capture(str(pcap), ports=None))
