"""Feature-store traffic against a real Redis, with the ground truth of what each connection sent and got back.

The data: entities `st_<n>` are hashes whose fields are feature ids (the decimal xxHash32 of a feature name,
as the feature store writes them) and whose values are binary (random bytes, `\\r\\n` included), mostly small,
some of a few KB and a few over 64 KiB so that one reply spans many TCP segments; plain keys `emb_<n>` hold
strings the same way. Lookups ask for features an entity lacks and for entities that do not exist, so
replies carry nils.

The traffic, after one connection loads the data (pipelined HSET/SET), runs four connections at once, each its
own redis-py connection (a pool of one), two speaking RESP2 and two RESP3:
  - `pipelined-resp2`, `pipelined-resp3`: batches of HMGETs in `pipeline(transaction=False)`;
  - `plain-resp2`: HGET, GET, MGET, HGETALL and HMGETs of the large values, one round trip each;
  - `writes-resp3`: MULTI/EXEC transactions, HSET/HDEL/DEL/EXPIRE/SET on its own keys, and reads that see them.
Writers touch only their own keys and readers only the loaded ones, so every reply is predictable; the driver
checks each against its model of the server and fails loudly on a difference, so the truth it saves is both
what went over the wire and what the server holds.

The truth (JSON): per connection, its client address as the server saw it (`CLIENT INFO` addr), its protocol,
and every command this driver sent, in order: `{"cmd", "args", "op", "rows"}`. `args` are the arguments after
the command name, as strings, except that a written value (HSET, SET) stands as its length in bytes (an
integer), to keep the file small; `op` is read/write/delete (null for CLIENT INFO, MULTI, EXEC); `rows` holds
one `[key, field, size]` per lookup or written field: the value's size in bytes as stored (null for a nil, or
for deletes and EXPIRE; for HGETALL, one row per field returned). redis-py's own handshake
(CLIENT SETINFO, HELLO 3, CLIENT MAINT_NOTIFICATIONS) goes over the wire too but is not listed.

Run alone (the tests run it inside a network namespace this way):
    python traffic.py --host 127.0.0.1 --port 6379 --truth truth.json [--seed 1] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading

import redis
import xxhash

LARGE_SIZES = (66_000, 90_000, 140_000, 260_000)  # > 64 KiB: replies of dozens to hundreds of segments
N_FEATURES = 48


def feature_ids(n=N_FEATURES) -> list[str]:
    return [str(xxhash.xxh32_intdigest(f"feature_{i}".encode())) for i in range(n)]


class Op:
    """One command: how to send it (on a client or a pipeline), which rows its reply makes, and whether the
    reply is what the model expected when the command was made (commands are made in the order they are sent,
    so each expectation is taken then, not when the reply comes)."""

    def __init__(self, cmd, args, op, send, rows, check=None):
        self.cmd, self.args, self.op, self.send, self.rows, self.check = cmd, args, op, send, rows, check


def size(v):
    return None if v is None else len(v)


def hmget(key, fields, model):
    expected = [model.field(key, f) for f in fields]
    return Op("HMGET", [key, *fields], "read", lambda t: t.hmget(key, fields),
              lambda res: [[key, f, size(v)] for f, v in zip(fields, res)],
              lambda res: [size(v) for v in res] == expected)


def hget(key, field, model):
    expected = model.field(key, field)
    return Op("HGET", [key, field], "read", lambda t: t.hget(key, field), lambda v: [[key, field, size(v)]],
              lambda v: size(v) == expected)


def get(key, model):
    expected = model.string(key)
    return Op("GET", [key], "read", lambda t: t.get(key), lambda v: [[key, None, size(v)]],
              lambda v: size(v) == expected)


def mget(keys, model):
    expected = [model.string(k) for k in keys]
    return Op("MGET", list(keys), "read", lambda t: t.mget(keys),
              lambda res: [[k, None, size(v)] for k, v in zip(keys, res)],
              lambda res: [size(v) for v in res] == expected)


def hgetall(key, model):
    """One lookup per field the reply holds (in the reply's order), each with its value's size; a missing hash
    is one row for the key, with no field and nothing found."""
    expected = dict(model.hashes.get(key, {}))

    def rows(d):
        return [[key, f.decode(), len(v)] for f, v in d.items()] if d else [[key, None, None]]
    return Op("HGETALL", [key], "read", lambda t: t.hgetall(key), rows,
              lambda d: {f.decode(): len(v) for f, v in d.items()} == expected)


def hset(key, mapping, model):
    model.hashes.setdefault(key, {}).update({f: len(v) for f, v in mapping.items()})
    args = [key] + [x for f, v in mapping.items() for x in (f, len(v))]
    return Op("HSET", args, "write", lambda t: t.hset(key, mapping=mapping),
              lambda _: [[key, f, len(v)] for f, v in mapping.items()])


def set_(key, value, model):
    model.strings[key] = len(value)
    return Op("SET", [key, len(value)], "write", lambda t: t.set(key, value),
              lambda _: [[key, None, len(value)]])


def hdel(key, fields, model):
    for f in fields:
        model.hashes.get(key, {}).pop(f, None)
    return Op("HDEL", [key, *fields], "delete", lambda t: t.hdel(key, *fields),
              lambda _: [[key, f, None] for f in fields])


def delete(keys, model):
    for k in keys:
        model.hashes.pop(k, None)
        model.strings.pop(k, None)
    return Op("DEL", list(keys), "delete", lambda t: t.delete(*keys),
              lambda _: [[k, None, None] for k in keys])


def expire(key, seconds, model):
    return Op("EXPIRE", [key, str(seconds)], "write", lambda t: t.expire(key, seconds),
              lambda _: [[key, None, None]])


class Model:
    """What the server holds, as sizes: the expected answer to every read."""

    def __init__(self):
        self.hashes: dict[str, dict[str, int]] = {}
        self.strings: dict[str, int] = {}

    def field(self, key, field):
        return self.hashes.get(key, {}).get(field)

    def string(self, key):
        return self.strings.get(key)


class Connection:
    """One redis-py connection (a pool of one, so pipelines reuse it too) and the commands sent on it."""

    def __init__(self, host, port, protocol, name):
        self.name, self.protocol = name, protocol
        self.r = redis.Redis(host=host, port=port, protocol=protocol, max_connections=1, socket_timeout=60)
        self.commands: list[dict] = []
        self.client = self.r.client_info()["addr"]
        self._other("CLIENT", "INFO")

    def _other(self, cmd, *args):
        self.commands.append({"cmd": cmd, "args": list(args), "op": None, "rows": []})

    def _record(self, op: Op, result):
        if op.check is not None and not op.check(result):
            raise AssertionError(f"{self.name}: {op.cmd} answered {result!r:.300}, not what the model holds")
        self.commands.append({"cmd": op.cmd, "args": op.args, "op": op.op, "rows": op.rows(result)})

    def run(self, op: Op):
        self._record(op, op.send(self.r))

    def pipeline(self, ops, transaction=False):
        p = self.r.pipeline(transaction=transaction)
        for op in ops:
            op.send(p)
        results = p.execute()
        if transaction:
            self._other("MULTI")
        for op, result in zip(ops, results):
            self._record(op, result)
        if transaction:
            self._other("EXEC")

    def close(self):
        self.r.close()

    def truth(self) -> dict:
        return {"name": self.name, "client": self.client, "protocol": self.protocol, "commands": self.commands}


class Dataset:
    """The loaded data, drawn from one seed: entities, their features and value sizes."""

    def __init__(self, rng: random.Random, scale: float):
        self.features = feature_ids()
        ids = rng.sample(range(1, 10**7), int(400 * scale) + 20)
        self.entities = [f"st_{n}" for n in ids[:-20]]
        self.absent = [f"st_{n}" for n in ids[-20:]]  # never written: HMGET answers all nils
        self.strings = [f"emb_{n}" for n in rng.sample(range(1, 10**6), int(150 * scale) + 2)]
        self.large = self.entities[:len(LARGE_SIZES)]
        self.rng = rng

    def value(self) -> bytes:
        r = self.rng.random()
        n = self.rng.randint(1, 64) if r < 0.93 else self.rng.randint(200, 4000) if r < 0.99 else 0
        return self.rng.randbytes(n)

    def hashes(self):
        for i, key in enumerate(self.entities):
            have = self.rng.sample(self.features, self.rng.randint(len(self.features) // 3, len(self.features) - 2))
            mapping = {f: self.value() for f in have}
            if i < len(LARGE_SIZES):
                mapping[have[0]] = self.rng.randbytes(LARGE_SIZES[i])
            yield key, mapping

    def string_values(self):
        for i, key in enumerate(self.strings):
            yield key, self.rng.randbytes(LARGE_SIZES[i] if i < 2 else self.rng.randint(8, 2000))


def load(conn: Connection, data: Dataset, model: Model):
    ops = [hset(k, m, model) for k, m in data.hashes()] + [set_(k, v, model) for k, v in data.string_values()]
    for i in range(0, len(ops), 50):
        conn.pipeline(ops[i:i + 50])


def lookup_fields(rng, data: Dataset):
    """A model's feature list: 5 to 25 features, so some of them are missing from most entities."""
    return rng.sample(data.features, rng.randint(5, 25))


def entity(rng, data: Dataset):
    r = rng.random()
    return rng.choice(data.absent) if r < 0.05 else rng.choice(data.large) if r < 0.07 else rng.choice(data.entities)


def pipelined(conn, rng, data, model, batches):
    for _ in range(batches):
        conn.pipeline([hmget(entity(rng, data), lookup_fields(rng, data), model) for _ in range(100)])


def plain(conn, rng, data, model, n):
    for _ in range(n):
        r = rng.random()
        key = entity(rng, data)
        if r < 0.35:
            conn.run(hget(key, rng.choice(data.features), model))
        elif r < 0.55:
            conn.run(get(rng.choice(data.strings + data.absent[:3]), model))
        elif r < 0.75:
            conn.run(mget(rng.sample(data.strings, rng.randint(2, 8)) + [rng.choice(data.absent)], model))
        elif r < 0.85:
            conn.run(hgetall(key, model))
        else:
            conn.run(hmget(rng.choice(data.large), lookup_fields(rng, data), model))


def writes(conn, rng, data, model, n):
    """On its own keys only (`st_w<i>`), so that the other connections' replies stay predictable."""
    own = [f"st_w{i}" for i in range(20)]
    for i in range(n):
        key, fields = rng.choice(own), rng.sample(data.features, 4)
        conn.run(hset(key, {f: data.value() for f in fields}, model))
        conn.run(hmget(key, fields + [rng.choice(data.features)], model))
        if i % 3 == 0:
            conn.run(hdel(key, fields[:2], model))
            conn.run(hmget(key, fields, model))
        if i % 5 == 0:
            conn.run(expire(key, 3600, model))
        if i % 7 == 0:
            conn.run(delete([key, f"emb_w{i}"], model))
            conn.run(hget(key, fields[0], model))
        if i % 4 == 0:
            conn.pipeline([hmget(rng.choice(own), fields, model), hget(entity(rng, data), fields[0], model),
                           set_(f"emb_w{i}", data.value(), model), get(f"emb_w{i}", model),
                           hset(key, {fields[1]: data.value()}, model), hgetall(key, model)], transaction=True)


def drive(host: str, port: int, seed: int = 1, scale: float = 1.0) -> dict:
    """Loads the data, runs the four connections at once, and returns the truth."""
    rng = random.Random(seed)
    data, model = Dataset(rng, scale), Model()
    loader = Connection(host, port, 2, "load")
    load(loader, data, model)
    loader.close()
    plans = [("pipelined-resp2", 2, pipelined, max(1, int(6 * scale))),
             ("pipelined-resp3", 3, pipelined, max(1, int(5 * scale))),
             ("plain-resp2", 2, plain, int(300 * scale)),
             ("writes-resp3", 3, writes, int(60 * scale))]
    conns = [Connection(host, port, proto, name) for name, proto, _, _ in plans]
    errors = []

    def work(conn, fn, n, worker_seed):
        try:
            fn(conn, random.Random(worker_seed), data, model, n)
        except Exception as e:  # noqa: BLE001 - reported below, with the connection's name
            errors.append(f"{conn.name}: {type(e).__name__}: {e}")
        finally:
            conn.close()

    threads = [threading.Thread(target=work, args=(c, fn, n, seed * 100 + i))
               for i, (c, (_, _, fn, n)) in enumerate(zip(conns, plans))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return {"server": f"{host}:{port}", "seed": seed, "scale": scale,
            "connections": [c.truth() for c in [loader, *conns]]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--truth", required=True, help="where to write the ground truth (JSON)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scale", type=float, default=1.0, help="multiplies the data and the number of commands")
    args = p.parse_args(argv)
    truth = drive(args.host, args.port, args.seed, args.scale)
    with open(args.truth, "w") as f:
        json.dump(truth, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
