"""Rows in send order on a real capture: several connections pipeline GETs to a real redis-server at once while
one of them waits on a BLPOP, so its next GET is answered long after commands sent later on the other
connections. The trace must list the rows by the time each command was sent (DESIGN.md), hold exactly the
lookups the clients sent, and the simulation must count the hits of an LRU over that send-order stream."""

from __future__ import annotations

import threading
import time
from collections import Counter

import redis

import cachescope
from conftest import reference_lru

from .servers import RedisServer, Tcpdump

CLIENTS = 4
ROUNDS = 30
CAPACITIES = [3, 10, 40]


def _client(host, port, c, sent, start):
    """Pipelines of GETs; connection 0 also blocks on an empty list between two of its GETs."""
    r = redis.Redis(host=host, port=port, protocol=2, single_connection_client=True)
    start.wait()
    for i in range(ROUNDS):
        p = r.pipeline(transaction=False)
        keys = [f"k{(c * 7 + i * 3 + j) % 25}" for j in range(3)]
        p.get(keys[0])
        if c == 0 and i % 5 == 0:
            p.blpop(["nothing_here"], timeout=0.05)
        for k in keys[1:]:
            p.get(k)
        p.execute()
        sent.extend(keys)
        time.sleep(0.002 * ((c + i) % 3))
    r.close()


def test_rows_of_concurrent_pipelines_come_in_send_order(tmp_path):
    with RedisServer(tmp_path) as server:
        r = redis.Redis(host=server.host, port=server.port, protocol=2)
        r.mset({f"k{i}": "v" * i for i in range(0, 25, 2)})
        r.close()
        pcap = tmp_path / "order.pcap"
        sent: list[str] = []
        with Tcpdump(pcap, server.port, "lo") as dump:
            start = threading.Barrier(CLIENTS)
            threads = [threading.Thread(target=_client, args=(server.host, server.port, c, sent, start))
                       for c in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            dump.stop()

    df = cachescope.parse_capture(str(pcap), ports=(server.port,))
    assert df.attrs["stats"]["rows_out_of_order"] == 0
    # The capture does what the test is about: some command completed after one sent later on another
    # connection (its reply came later), so completion order and send order differ.
    done = (df["ts_ns"] + df["latency_ns"]).tolist()
    conns = df["conn"].tolist()
    assert any(done[i] > done[j] and conns[i] != conns[j] for i in range(len(df)) for j in range(i + 1, min(i + 40, len(df))))
    assert df["ts_ns"].is_monotonic_increasing
    assert Counter(df["key"]) == Counter(sent) and set(df["op"].astype(str)) == {"read"}
    keys = df["key"].tolist()
    result = cachescope.simulate_trace(str(pcap), lru=CAPACITIES, ports=(server.port,))
    got = dict(zip(result.summary["capacity"], result.summary["hits"]))
    for cap in CAPACITIES:
        assert got[cap] == sum(reference_lru(keys, cap)), cap
