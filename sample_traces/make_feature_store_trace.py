#!/usr/bin/env python3
"""Synthetic ML feature-store traffic, as `redis-cli MONITOR` prints it, for cachescope's committed sample.

The traffic model, one prediction-service pod talking to the feature store:

- Features live in Redis hashes: `HSET <entity_id> <xxHash32(feature_name)> <value>`, the key an entity id
  such as `st_1426727`, the field the decimal unsigned xxHash32 of a name such as
  `daf_st_p6m_avg_delivery_time_float`.
- Entity types (stores, consumers, dashers, items, markets) each have a finite population with Zipf-like
  popularity, p(rank) ~ rank^-s; ranks map to randomly drawn numeric ids so an id says nothing of its rank.
  Half the draws of most types instead repeat one of the type's recent draws: the time locality of
  consumer sessions, busy neighbourhoods and orders in flight, which popularity alone lacks.
- Models read a fixed feature list per entity type. A prediction request picks a model by traffic share,
  then its entities (a store ranker: one consumer plus 8-30 candidate stores), and sends one
  `HMGET <entity> <f1> <f2> ...` per entity, back to back on one of the pod's connections.
- Requests arrive as a Poisson process; a real-time feature pipeline on its own connection writes a few
  `HSET`s (about 0.7% of commands); connections `PING` now and then.

Only numpy's default_rng draws randomness, in a fixed order: the same arguments give byte-identical output.
Usage: python sample_traces/make_feature_store_trace.py -o OUT [--seed N] [--requests N] [--minutes M] [--names FILE]
"""

from __future__ import annotations

import argparse
import itertools
from typing import NamedTuple

import numpy as np
import xxhash

# Populations are the entities one pod meets in half an hour, not the whole business; exponents, repeats and
# populations are tuned so the sample's hit rates land near production's (70-80% for a big enough cache).


class EntityType(NamedTuple):
    population: int
    exponent: float  # Zipf exponent of their popularity
    repeat: float  # chance a draw is an entity drawn lately: sessions, neighbourhoods, orders in flight
    tag: str  # how feature names spell the type
    topics: list[str]  # what its features describe
    embeddings: list[str]


ENTITIES = {
    "st": EntityType(2_000, 1.1, 0.5, "st", ["delivery_time", "prep_time", "order_value", "rating",
                                             "cancellation", "conversion", "menu_views", "dasher_wait",
                                             "refund", "tip"], ["store2vec"]),
    "cx": EntityType(10_000, 1.0, 0.5, "cs", ["order_count", "basket_size", "tip", "cuisine_affinity",
                                              "promo_usage", "session_length", "refund", "app_opens", "spend"],
                     ["consumer2vec"]),
    "dx": EntityType(1_500, 1.0, 0.5, "dx", ["acceptance", "on_time", "active_hours", "speed", "rating",
                                             "distance", "late_pickup"], ["dasher2vec"]),
    "it": EntityType(6_000, 1.1, 0.5, "it", ["price", "popularity", "add_to_cart", "reorder", "photo_views",
                                             "rating", "substitution"], ["item2vec", "cuisine2vec"]),
    "mk": EntityType(120, 1.1, 0.0, "mkt", ["supply", "demand", "surge", "wait_time", "weather",
                                            "active_dashers"], []),
}
# A type's ids are drawn from [first, 91 * first), so they have as many digits as real ones (st_1426727).
FIRST_ID = {"st": 100_000, "cx": 10_000_000, "dx": 1_000_000, "it": 10_000_000, "mk": 100}
RECENT = 2_000  # a repeat picks one of the type's latest draws: minutes of stores, all recent consumers
WINDOWS = ["p1d", "p7d", "p28d", "p3m", "p6m", "p1y", "ltd"]
AGGREGATIONS = ["avg", "sum", "cnt", "max", "min", "pct", "med", "std"]
VALUE_TYPES = ["float", "int", "ratio", "bool", "cat"]
RT_WINDOWS = ["l10m", "l1h"]  # real-time features, the ones the pipeline keeps writing
FEATURES_PER_TYPE = 160

# name: (traffic share, {entity prefix: (features read, min entities, max entities) per request}).
MODELS = {
    "store_ranking": (0.28, {"cx": (24, 1, 1), "st": (16, 8, 30)}),
    "eta_prediction": (0.20, {"st": (28, 1, 1), "dx": (12, 1, 1), "mk": (14, 1, 1)}),
    "dasher_assignment": (0.14, {"st": (10, 1, 1), "dx": (18, 3, 10), "mk": (8, 1, 1)}),
    "item_recommendation": (0.12, {"cx": (14, 1, 1), "it": (12, 5, 25)}),
    "fraud_detection": (0.10, {"cx": (90, 1, 1), "dx": (20, 1, 1)}),
    "promo_targeting": (0.09, {"cx": (35, 1, 1), "mk": (10, 1, 1)}),
    "search_relevance": (0.07, {"cx": (10, 1, 1), "st": (12, 5, 15), "it": (10, 5, 15)}),
}
FEATURE_SHARING = 1.0  # Zipf exponent over a type's feature list: models mostly share the popular features
WRITE_SHARE = 0.007  # HSETs per HMGET
WRITE_TYPES = {"st": 0.6, "dx": 0.3, "cx": 0.1}  # who has real-time features updated
START_US = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC, in microseconds
PODS, PORTS_PER_POD = 4, 3


def feature_names(rng, prefix: str) -> list[str]:
    """Plausible feature names for one entity type, the most widely used (by model_fields) first."""
    tag, topics, embeddings = ENTITIES[prefix][3:]
    batch = [f"daf_{tag}_{w}_{a}_{t}_{v}" for w, a, t, v in itertools.product(WINDOWS, AGGREGATIONS, topics,
                                                                              VALUE_TYPES)]
    realtime = [f"rtf_{tag}_{w}_{a}_{t}_{v}" for w, a, t, v in itertools.product(RT_WINDOWS, ["cnt", "avg"],
                                                                                 topics[:3], ["int", "float"])]
    head = [f"daf_{tag}_{w}_{e}_emb" for e in embeddings for w in ("p28d", "p6m")]
    head += [realtime[i] for i in rng.choice(len(realtime), 8, replace=False)]
    batch = [batch[i] for i in rng.choice(len(batch), FEATURES_PER_TYPE - len(head), replace=False)]
    # Embeddings and real-time features go among the 40 most used, so the pipeline writes what models read.
    head += batch[: 40 - len(head)]
    return [head[i] for i in rng.permutation(len(head))] + batch[40 - len(head):]


def field(name: str) -> str:
    return str(xxhash.xxh32_intdigest(name.encode()))


def zipf_cdf(n: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


class Population:
    """Entities of one type: Zipf-popular ranks, each mapped to a random numeric id, plus short-term repeats."""

    def __init__(self, rng, prefix: str):
        kind = ENTITIES[prefix]
        self.cdf, self.repeat = zipf_cdf(kind.population, kind.exponent), kind.repeat
        # Ids are drawn without replacement from a wide range, in random order, so rank 0 is no small id.
        low = FIRST_ID[prefix]
        ids = rng.choice(90 * low, kind.population, replace=False) + low
        self.keys = np.array([f"{prefix}_{i}" for i in ids], dtype=object)
        # The capture starts mid-stream: sessions already under way, not an empty history that the first few
        # draws would dominate.
        self.recent = self.popular(rng, RECENT)

    def popular(self, rng, n: int) -> np.ndarray:
        ranks = np.searchsorted(self.cdf, rng.random(n), side="right")
        return self.keys[np.minimum(ranks, len(self.keys) - 1)]

    def sample(self, rng, n: int) -> np.ndarray:
        keys = self.popular(rng, n)
        # Popularity alone has no time locality; real traffic does (one consumer's session sends several
        # requests within minutes), so some draws repeat an entity from the type's latest draws.
        again = rng.random(n) < self.repeat
        keys[again] = self.recent[rng.integers(RECENT, size=int(again.sum()))]
        self.recent = np.concatenate([self.recent, keys])[-RECENT:]
        return keys


def quoted(*args: str) -> str:
    return " ".join(f'"{a}"' for a in args)


def model_fields(rng, names: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """Each model's HMGET fields per entity type, pre-quoted: the popular features are shared across models."""
    out = {}
    for model, (_, needs) in MODELS.items():
        out[model] = {}
        for prefix, (count, _, _) in needs.items():
            p = np.diff(zipf_cdf(FEATURES_PER_TYPE, FEATURE_SHARING), prepend=0.0)
            picked = np.sort(rng.choice(FEATURES_PER_TYPE, count, replace=False, p=p))
            out[model][prefix] = quoted(*(field(names[prefix][i]) for i in picked))
    return out


def connections(rng, pods: int, ports: int) -> list[str]:
    """`ip:port` of each client connection: a few pods, a few pooled connections each."""
    ips = [f"10.{rng.integers(1, 255)}.{rng.integers(0, 255)}.{rng.integers(2, 255)}" for _ in range(pods)]
    return [f"{ip}:{port}" for ip in ips for port in rng.integers(32768, 61000, ports)]


def monitor_line(ts_us: int, client: str, args: str) -> str:
    return f"{ts_us // 1_000_000}.{ts_us % 1_000_000:06d} [0 {client}] {args}"


def reads(rng, requests: int, span_us: int, populations, fields, clients) -> list[tuple[int, str]]:
    """The HMGETs of `requests` Poisson-arriving predictions, as (time in us, line)."""
    model_names = list(MODELS)
    shares = np.array([MODELS[m][0] for m in model_names])
    chosen = rng.choice(len(model_names), requests, p=shares / shares.sum())
    # Sorted uniform times are a Poisson process given its count, and end on time.
    starts = START_US + np.sort(rng.integers(0, span_us, requests))
    conns = rng.integers(len(clients), size=requests)
    out = []
    for model_i, start, conn in zip(chosen, starts, conns):
        model = model_names[model_i]
        ts = int(start)
        for prefix, (_, low, high) in MODELS[model][1].items():
            # A request's candidates are distinct entities, so duplicates drawn by popularity collapse.
            entities = dict.fromkeys(populations[prefix].sample(rng, int(rng.integers(low, high + 1))))
            prefix_fields = fields[model][prefix]
            # Pipelined on one connection: a few tens of microseconds between commands.
            gaps = rng.exponential(25.0, len(entities)).astype(np.int64) + 5
            for entity, gap in zip(entities, gaps):
                ts += int(gap)
                out.append((ts, monitor_line(ts, clients[conn], f'"HMGET" "{entity}" {prefix_fields}')))
    return out


def writes(rng, count: int, span_us: int, populations, names) -> list[tuple[int, str]]:
    """Real-time feature updates: HSET of 1-3 `rtf_` features of popular stores, dashers and consumers."""
    writer = connections(rng, 1, 2)
    prefixes = list(WRITE_TYPES)
    p = np.array(list(WRITE_TYPES.values()))
    out = []
    for _ in range(count):
        ts = START_US + int(rng.integers(0, span_us))
        prefix = prefixes[rng.choice(len(prefixes), p=p)]
        realtime = [n for n in names[prefix] if n.startswith("rtf_")]
        picked = rng.choice(len(realtime), int(rng.integers(1, 4)), replace=False)
        pairs = []
        for i in picked:
            value = str(rng.integers(0, 60)) if realtime[i].endswith("_int") else f"{rng.random() * 50:.4f}"
            pairs += [field(realtime[i]), value]
        # By popularity only: recent draws belong to the end of the trace, not to this write's time.
        args = quoted("HSET", populations[prefix].popular(rng, 1)[0], *pairs)
        out.append((ts, monitor_line(ts, writer[int(rng.integers(2))], args)))
    return out


def pings(rng, span_us: int, clients) -> list[tuple[int, str]]:
    """Connection-pool health checks: about one PING every two minutes."""
    count = max(1, span_us // 120_000_000)
    times = START_US + np.sort(rng.integers(0, span_us, count))
    return [(int(t), monitor_line(int(t), clients[int(rng.integers(len(clients)))], '"PING"')) for t in times]


def generate(seed: int, requests: int, minutes: float) -> list[str]:
    rng = np.random.default_rng(seed)
    names = {prefix: feature_names(rng, prefix) for prefix in ENTITIES}
    populations = {prefix: Population(rng, prefix) for prefix in ENTITIES}
    fields = model_fields(rng, names)
    clients = connections(rng, PODS, PORTS_PER_POD)
    span_us = int(minutes * 60e6)
    events = reads(rng, requests, span_us, populations, fields, clients)
    events += writes(rng, round(WRITE_SHARE * len(events)), span_us, populations, names)
    events += pings(rng, span_us, clients)
    # Requests overlap in time; a stable sort on time keeps each request's own commands in order.
    events.sort(key=lambda e: e[0])
    return ["OK"] + [line for _, line in events]  # redis-cli MONITOR prints OK first


def all_feature_names(seed: int) -> list[str]:
    """Every feature name the trace of `seed` can use, each type's in turn: the dictionary that names its field
    ids (`simulate.py --feature-names`). The names are the generator's first draws, so they are the same
    whatever the number of requests and minutes."""
    rng = np.random.default_rng(seed)
    return [name for prefix in ENTITIES for name in feature_names(rng, prefix)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True, help="the .monitor file to write")
    p.add_argument("--seed", type=int, default=20231114, help="random seed (default: %(default)s)")
    p.add_argument("--requests", type=int, default=1600, help="prediction requests (default: %(default)s)")
    p.add_argument("--minutes", type=float, default=25.0, help="span of the trace (default: %(default)s)")
    p.add_argument("--names", metavar="FILE", help="also write the feature names, one a line (the dictionary)")
    args = p.parse_args(argv)
    if args.requests < 1 or args.minutes <= 0:
        p.error("--requests must be >= 1 and --minutes > 0")
    lines = generate(args.seed, args.requests, args.minutes)
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    if args.names:
        with open(args.names, "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(all_feature_names(args.seed)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
