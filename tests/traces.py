"""Random feature-store traces for the tests, written in every text format."""

import random


def random_commands(seed, n_commands=400, n_entities=30, n_fields=12, write_share=0.1):
    """A list of (cmd, key, fields) with Zipf-ish popularity so that small caches see both hits and misses."""
    rng = random.Random(seed)
    entities = [f"st_{rng.randrange(10**7)}" for _ in range(n_entities)]
    fields = [str(rng.randrange(2**32)) for _ in range(n_fields)]
    weights = [1 / (i + 1) for i in range(n_entities)]
    out = []
    for _ in range(n_commands):
        key = rng.choices(entities, weights)[0]
        r = rng.random()
        if r < write_share:
            out.append(("HSET", key, [rng.choice(fields)]))
        elif r < write_share + 0.1:
            out.append(("GET", key, []))
        else:
            out.append(("HMGET", key, rng.sample(fields, rng.randint(1, 6))))
    return out


def lookups_of(commands, granularity="field"):
    """The cache keys the commands read, in order: what any simulator should see."""
    keys = []
    for cmd, key, fields in commands:
        if cmd == "HMGET":
            keys.extend((key, f) if granularity == "field" else (key,) for f in fields)
        elif cmd == "GET":
            keys.append((key,))
    return keys


def as_commands_text(commands):
    lines = []
    for cmd, key, fields in commands:
        if cmd == "HSET":
            lines.append(f"HSET {key} {fields[0]} 1.5")
        else:
            lines.append(" ".join([cmd, key, *fields]))
    return "\n".join(lines) + "\n"


def as_monitor_text(commands, t0=1_700_000_000.0, step=0.001):
    lines = ["OK"]
    for i, (cmd, key, fields) in enumerate(commands):
        args = [cmd, key, *fields] + (["1.5"] if cmd == "HSET" else [])
        quoted = " ".join(f'"{a}"' for a in args)
        lines.append(f"{t0 + i * step:.6f} [0 10.0.0.{i % 3}:5000{i % 2}] {quoted}")
    return "\n".join(lines) + "\n"


def as_keys_text(keys):
    return "\n".join("/".join(k) for k in keys) + "\n"
