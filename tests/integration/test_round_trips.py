"""Round trips on a real capture: redis-py clients send pipelines of HMGETs of known sizes (and single commands
without a pipeline) to a real redis-server, three connections at once, while tcpdump records loopback. The
batches the parser infers must be the pipelines each client sent, and a batch is saved only when every lookup
in it hits: checked against an LRU over the send-order stream, for one cache and for fleets."""

from __future__ import annotations

import json
import threading
import time

import redis

import cachescope
from conftest import reference_lru, run_cli

from .servers import RedisServer, Tcpdump

CLIENTS = 3
# Each client's batch sizes, in order (1 = a command sent without a pipeline).
PLANS = [[13, 1, 5, 1, 1, 40, 2] * 6, [1, 1, 2, 13, 7] * 8, [5, 5, 1, 20] * 9]
CAPACITIES = [20, 200]


def _client(port: int, plan: list[int], c: int, start: threading.Barrier) -> None:
    # One thread, one pool: single commands and pipelines share the pool's one connection.
    r = redis.Redis(host="127.0.0.1", port=port, protocol=2)
    start.wait()
    for i, size in enumerate(plan):
        keys = [f"st_{(c * 11 + i * 5 + j) % 60}" for j in range(size)]
        if size == 1:
            r.hmget(keys[0], ["f1", "f2"])
        else:
            p = r.pipeline(transaction=False)
            for k in keys:
                p.hmget(k, ["f1", "f2"])
            p.execute()
        time.sleep(0.001 * (i % 3))
    r.close()


def _capture(tmp_path):
    with RedisServer(tmp_path) as server:
        r = redis.Redis(host=server.host, port=server.port, protocol=2)
        for i in range(0, 60, 3):
            r.hset(f"st_{i}", mapping={"f1": "x" * i, "f2": "y"})
        r.close()
        pcap = tmp_path / "trips.pcap"
        with Tcpdump(pcap, server.port, "lo") as dump:
            start = threading.Barrier(CLIENTS)
            threads = [threading.Thread(target=_client, args=(server.port, PLANS[c], c, start)) for c in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            dump.stop()
    return pcap, server.port


def test_batches_are_the_pipelines_the_clients_sent(tmp_path):
    pcap, port = _capture(tmp_path)
    df = cachescope.parse_capture(str(pcap), ports=(port,))
    reads = df[df["cmd"] == "HMGET"]
    per_conn = []
    for _, rows in reads.groupby("conn"):
        sizes = rows.groupby("batch", sort=True)["req"].nunique().tolist()
        per_conn.append(sizes)
    assert sorted(per_conn) == sorted(PLANS)

    # One cache: a batch is saved when all its lookups hit an LRU over the send-order stream.
    keys = [f"{k}\0{f}" for k, f in zip(df["key"], df["field"])]
    trips = list(zip(df["conn"], df["batch"]))
    result = cachescope.simulate_trace(str(pcap), lru=CAPACITIES, ports=(port,))
    summary = result.summary.set_index("capacity")
    for cap in CAPACITIES:
        hits = reference_lru(keys, cap)
        served: dict = {}
        for trip, hit in zip(trips, hits):
            served[trip] = served.get(trip, True) and hit
        row = summary.loc[cap]
        assert row["round_trips"] == sum(map(len, PLANS)), cap
        assert row["round_trips_saved"] == sum(served.values()), cap
        commands = {}
        for req, hit in zip(df["req"], hits):
            commands[req] = commands.get(req, True) and hit
        assert (row["commands"], row["commands_served"]) == (len(commands), sum(commands.values())), cap

    # Fleets: one pod is the single cache; a replicated fleet sends each batch whole to one pod, so every
    # pod sees whole batches and the fleet's round trips are those of the pods added up.
    out = run_cli("simulate.py", pcap, "--port", port, "--lru", "200", "--pods", "1,4", "--route", "random,entity",
                  "--json", check_rc=0)
    doc = json.loads(out.stdout)
    assert doc["trace"]["round_trips_known"]
    results = doc["results"]
    single = summary.loc[200]
    assert {(r["pods"], r["route"]) for r in results if r["pods"] == 4} == {(4, "random"), (4, "entity")}
    assert any(r["pods"] == 1 for r in results)
    for r in results:
        assert r["round_trips"] == single["round_trips"], r
        if r["pods"] == 1:
            assert r["round_trips_saved"] == single["round_trips_saved"], r
        if r["route"] == "random":
            assert sum(p["round_trips"] for p in r["per_pod"]) == r["round_trips"], r
        else:  # a sharded batch reaches several pods: the pods see more (partial) batches than the fleet
            assert r["pods"] == 1 or sum(p["round_trips"] for p in r["per_pod"]) > r["round_trips"], r


def test_the_summary_shows_round_trips_next_to_commands(tmp_path):
    pcap, port = _capture(tmp_path)
    out = run_cli("simulate.py", pcap, "--port", port, "--lru", "200", check_rc=0)
    assert "cmds served" in out.stdout and "trips saved" in out.stdout
    assert "trips saved = Redis round trips" in out.stdout
