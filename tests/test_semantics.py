"""The feature-store semantics (writes, TTL, restarts, batch refreshes, allow-lists, byte capacities,
command-level hit rate) against a plain Python model of them, on random traces, every counter exactly."""

import random
from dataclasses import asdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cachescope
from reference_sim import Event, Setup, simulate

T0 = 1_700_000_000 * 10**9
FIELDS = [str(n) for n in random.Random(9).sample(range(2**32), 8)]


def random_events(seed, n_commands=400):
    rng = random.Random(seed)
    entities = [f"st_{i}" for i in range(12)]
    weights = [1 / (i + 1) for i in range(len(entities))]
    events, ts = [], T0
    for req in range(n_commands):
        ts += rng.randrange(0, 3 * 10**9)  # up to 3 s apart, sometimes simultaneous
        entity = rng.choices(entities, weights)[0]
        r = rng.random()
        if r < 0.08:
            events.append(Event("write", entity, rng.choice(FIELDS), ts, req))
        elif r < 0.11:
            events.append(Event("delete", entity, None, ts, req))
        elif r < 0.14:
            events.append(Event("delete", entity, rng.choice(FIELDS), ts, req))
        else:
            for f in rng.sample(FIELDS, rng.randint(1, 5)):
                size = rng.choice([0, 8, 100, 1000, 5000])
                events.append(Event("read", entity, f, ts, req, size, len(entity) + len(f)))
    return events


def write_parquet(events, path):
    pq.write_table(pa.table({
        "ts_ns": [e.ts for e in events], "req": [e.req for e in events], "op": [e.op for e in events],
        "key": [e.entity for e in events], "field": [e.field for e in events],
        "value_size": pa.array([e.value_size if e.op == "read" else None for e in events], pa.int32()),
    }), path)


def counters_of(row):
    names = asdict(simulate([Event("read", "a", None, 0, 0)], Setup(1))).keys()
    out = {k: row[k] for k in names if k in row}
    out["commands_served"] = row["round_trips_saved"]
    if "bytes_hit" not in row:  # an entry capacity reports no byte metrics; compare what it has
        out["bytes_looked_up"] = out["bytes_hit"] = None
    return out


def expected(events, setup):
    c = asdict(simulate(events, setup))
    if setup.overhead is None:
        c["bytes_looked_up"] = c["bytes_hit"] = None
    return c


# Each case names the counter it exists to exercise: it must not be zero, or the case proves nothing.
EXERCISED = {"plain": "stale_reads", "invalidate": "invalidations", "update": "invalidations", "ttl": "expirations",
             "restarts": "restarts", "refresh": "refresh_refetches", "allow": "uncacheable", "bytes": "bytes_hit",
             "everything": "invalidations", "refreshes and the rest": "refresh_refetches"}
# Refreshes of three features every 70 s (times in seconds after T0): with restarts, TTLs and invalidations
# that take the blame for some misses instead.
REFRESHES = [(FIELDS[i], 70 * k + 5 * i) for k in range(1, 12) for i in range(3)]

CASES = {
    "plain": ({}, Setup(20)),
    "invalidate": ({"writes": "invalidate"}, Setup(20, writes="invalidate")),
    "update": ({"writes": "update"}, Setup(20, writes="update")),
    "ttl": ({"ttl": "20s"}, Setup(20, ttl=20 * 10**9)),
    "restarts": ({"restart_every": "2min", "restart_at": [str(T0 // 10**9 + 100)]},
                 Setup(20, restart_every=120 * 10**9, restarts_at=[T0 + 100 * 10**9])),
    "refresh": ({"refresh_schedule": [(FIELDS[0], str(T0 // 10**9 + 60)), (FIELDS[1], str(T0 // 10**9 + 200))]},
                Setup(20, refreshes=[(T0 + 60 * 10**9, FIELDS[0]), (T0 + 200 * 10**9, FIELDS[1])])),
    "allow": ({"allow_list": FIELDS[:3]}, Setup(20, allow=set(FIELDS[:3]))),
    "bytes": ({"entry_overhead": 50}, Setup(20_000, overhead=50)),
    "refreshes and the rest": (
        {"refresh_schedule": [(f, str(T0 // 10**9 + t)) for f, t in REFRESHES], "writes": "invalidate",
         "ttl": "100s", "restart_every": "4min"},
        Setup(30, refreshes=[(T0 + t * 10**9, f) for f, t in REFRESHES], writes="invalidate", ttl=100 * 10**9,
              restart_every=240 * 10**9)),
    "everything": ({"writes": "invalidate", "ttl": "30s", "restart_every": "3min", "allow_list": FIELDS[:6],
                    "entry_overhead": 40},
                   Setup(15_000, overhead=40, writes="invalidate", ttl=30 * 10**9, restart_every=180 * 10**9,
                         allow=set(FIELDS[:6]))),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", CASES)
def test_counters_match_the_model(tmp, case, seed):
    events = random_events(seed)
    write_parquet(events, tmp / "t.parquet")
    kwargs, setup = CASES[case]
    capacity = f"{setup.capacity}B" if setup.overhead is not None else setup.capacity
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=[capacity], window=50, **kwargs)
    row = result.summary.to_dict("records")[0]
    want = expected(events, setup)
    assert counters_of(row) == want
    assert want[EXERCISED[case]] > 0 and 0 < want["hits"] < want["lookups"]
    if setup.refreshes:
        per_field = simulate(events, setup).refresh_by_field
        got = {f["field"]: (f["refresh_evictions"], f["refresh_refetches"]) for f in row["refresh_by_feature"]}
        assert got == {f: per_field.get(f, (0, 0)) for f in got} and set(per_field) <= set(got)
        assert sum(r for _, r in got.values()) == want["refresh_refetches"]


@pytest.mark.parametrize("writes", ["ignore", "invalidate"])
def test_entity_granularity_with_deletes(tmp, writes):
    events = random_events(7)
    write_parquet(events, tmp / "t.parquet")
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=[4], granularity="entity", writes=writes)
    row = result.summary.to_dict("records")[0]
    setup = Setup(4, writes=writes)
    c = asdict(simulate(events, setup, granularity="entity"))
    c["bytes_looked_up"] = c["bytes_hit"] = None
    assert counters_of(row) == c


@pytest.mark.parametrize("seed", range(3))
def test_belady_walks_the_future_of_the_lookups_that_reach_it(tmp, seed):
    """With an allow-list, Belady's future must skip the lookups kept out of the cache: its hits equal those on
    a trace of only the allowed lookups. And, optimal, it never does worse than LRU, restarts or not."""
    events = random_events(seed)
    write_parquet(events, tmp / "all.parquet")
    allowed = [e for e in events if e.op == "read" and e.field in FIELDS[:4]]
    write_parquet(allowed, tmp / "allowed.parquet")
    full = cachescope.simulate_trace(str(tmp / "all.parquet"), belady=[6], lru=[6], allow_list=FIELDS[:4])
    only = cachescope.simulate_trace(str(tmp / "allowed.parquet"), belady=[6])
    hits = dict(zip(full.summary["policy"], full.summary["hits"]))
    assert hits["belady"] == only.summary["hits"][0]
    assert hits["belady"] > hits["lru"]
    restarted = cachescope.simulate_trace(str(tmp / "all.parquet"), belady=[6], lru=[6], restart_every="90s")
    r = dict(zip(restarted.summary["policy"], restarted.summary["hits"]))
    assert r["belady"] >= r["lru"] and restarted.summary["restarts"].min() > 0
