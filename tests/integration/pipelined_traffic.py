"""Pipelining traffic against a real Redis, with what every command returned: the truth the loss test holds the
parser to (test_resume_after_loss.py).

One connection loads strings `k:<n>` and hashes `h:<n>` (fields `f0`..`f9`) with values of varied size (mostly
small, some of a few KB, a few of tens of KB, so that one reply spans many segments). Then four connections at
once, each its own redis-py connection (a pool of one, so its pipelines use it; RESP2), send pipelines (`pipeline(transaction=False)`) of 20 to 120
commands drawn from GET, MGET, HGET, HMGET, SET and DEL; some keys exist, some do not, so replies carry nils.

The truth (JSON): per connection, its client address as the server saw it (`CLIENT INFO` addr) and its
pipelines in order, each with the wall-clock times just before it was sent and just after its last reply was
read (`t0`, `t1`, ns; the capture's clock) and its commands: `{"cmd", "keys", "fields", "reply"}`, where the
reply is what redis-py returned, as sizes only (never a value): GET/HGET a size or null; MGET/HMGET a list
of them; SET "OK"; DEL the integer.

Run alone (the test runs it inside a network namespace this way):
    python pipelined_traffic.py --port 6379 --truth truth.json [--seed 1] [--pipelines 60]
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time

import redis

KEYS = 2000
HASHES = 600
FIELDS = [f"f{i}" for i in range(10)]
CONNECTIONS = 4


def value_size(rng: random.Random) -> int:
    r = rng.random()
    return rng.randint(1, 100) if r < 0.85 else rng.randint(100, 3000) if r < 0.98 else rng.randint(3000, 20000)


def value(rng: random.Random) -> bytes:
    # Bytes of every kind, CRLF and RESP type bytes included: a reply's value may look like replies.
    return rng.randbytes(value_size(rng))


def size(v):
    return None if v is None else len(v)


class Connection:
    def __init__(self, port: int, name: str):
        self.name = name
        self.r = redis.Redis(host="127.0.0.1", port=port, protocol=2, max_connections=1,
                             socket_timeout=60)
        self.client = self.r.client_info()["addr"]
        self.pipelines: list[dict] = []

    def pipeline(self, ops):
        """`ops`: (cmd, keys, fields, send) tuples; sends them in one pipeline and records what came back."""
        p = self.r.pipeline(transaction=False)
        for _, _, _, send in ops:
            send(p)
        t0 = time.time_ns()
        results = p.execute(raise_on_error=True)
        t1 = time.time_ns()
        commands = []
        for (cmd, keys, fields, _), res in zip(ops, results):
            reply = {"GET": size, "HGET": size, "MGET": lambda r: [size(v) for v in r],
                     "HMGET": lambda r: [size(v) for v in r], "SET": lambda r: "OK" if r is True else repr(r),
                     "DEL": int, "HSET": int}[cmd](res)
            commands.append({"cmd": cmd, "keys": keys, "fields": fields, "reply": reply})
        self.pipelines.append({"t0": t0, "t1": t1, "commands": commands})

    def truth(self) -> dict:
        return {"name": self.name, "client": self.client, "pipelines": self.pipelines}


def load(conn: Connection, rng: random.Random):
    ops = []
    for n in range(KEYS):
        if rng.random() < 0.75:
            key, v = f"k:{n}", value(rng)
            ops.append(("SET", [key], None, lambda p, key=key, v=v: p.set(key, v)))
    for n in range(HASHES):
        key = f"h:{n}"
        mapping = {f: value(rng) for f in FIELDS if rng.random() < 0.7}
        if mapping:
            ops.append(("HSET", [key], list(mapping), lambda p, key=key, m=mapping: p.hset(key, mapping=m)))
    for i in range(0, len(ops), 200):
        conn.pipeline(ops[i:i + 200])


def random_op(rng: random.Random):
    kind = rng.choices(["GET", "MGET", "HGET", "HMGET", "SET", "DEL"], [30, 15, 20, 15, 12, 8])[0]
    key = f"k:{rng.randrange(KEYS)}"
    if kind == "GET":
        return ("GET", [key], None, lambda p: p.get(key))
    if kind == "MGET":
        keys = [f"k:{rng.randrange(KEYS)}" for _ in range(rng.randint(1, 8))]
        return ("MGET", keys, None, lambda p: p.mget(keys))
    hkey = f"h:{rng.randrange(HASHES)}"
    if kind == "HGET":
        field = rng.choice(FIELDS)
        return ("HGET", [hkey], [field], lambda p: p.hget(hkey, field))
    if kind == "HMGET":
        fields = rng.sample(FIELDS, rng.randint(1, 6))
        return ("HMGET", [hkey], fields, lambda p: p.hmget(hkey, fields))
    if kind == "SET":
        v = value(rng)
        return ("SET", [key], None, lambda p: p.set(key, v))
    keys = [f"k:{rng.randrange(KEYS)}" for _ in range(rng.randint(1, 3))]
    return ("DEL", keys, None, lambda p: p.delete(*keys))


def drive(port: int, seed: int, pipelines: int) -> dict:
    loader = Connection(port, "loader")
    load(loader, random.Random(seed))
    conns = [Connection(port, f"pipelining-{i}") for i in range(CONNECTIONS)]
    errors = []

    def run(conn: Connection, rng: random.Random):
        try:
            for _ in range(pipelines):
                conn.pipeline([random_op(rng) for _ in range(rng.randint(20, 120))])
                time.sleep(rng.random() * 0.002)
        except Exception as e:  # noqa: BLE001 (re-raised below, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c, random.Random(seed * 100 + i))) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    for c in [loader, *conns]:
        c.r.close()
    return {"connections": [c.truth() for c in [loader, *conns]]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pipelines", type=int, default=60)
    a = ap.parse_args()
    with open(a.truth, "w") as f:
        json.dump(drive(a.port, a.seed, a.pipelines), f)


if __name__ == "__main__":
    main()
