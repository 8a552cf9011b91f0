"""One contract, every registered policy: what any cache must do, whatever its eviction rule.

Never over capacity; hits never more than lookups nor than the infinite cache's; invalidation removes;
the same trace gives the same result, however it is cut into batches; Belady's MIN beats every policy."""

import numpy as np
import pytest

from cachescope import _native
from cachescope.simulate.registry import INFINITE, POLICIES

OPS_READ, OPS_WRITE = 0, 1


def params(spec):
    return {p.name: float(p.default) for p in spec.params}


def make_sim(name, capacity, future=None, overhead=None, **options):
    runs = [(name, capacity, overhead, params(POLICIES[name])), (INFINITE.name, 1, None, {})]
    return _native.Simulation(runs, 1000, future=future, **options)


def zipf_keys(seed, n=20_000, universe=3_000):
    rng = np.random.default_rng(seed)
    return (rng.zipf(1.15, n) % universe + 1).astype(np.uint64)


def run(name, capacity, keys, chunks=1, **kwargs):
    future = _native.next_access(keys) if name in _native.NEEDS_FUTURE else None
    sim = make_sim(name, capacity, future, **kwargs)
    for part in np.array_split(keys, chunks):
        sim.feed(part)
    return sim


def smallest_capacity(name):
    # 2Q and S3-FIFO refuse caches too small to split into their queues (libCacheSim caches nothing there).
    return {"2q": 4, "s3fifo": 20}.get(name, 1)


CAPACITIES = [1, 7, 64, 500, 5_000]


@pytest.mark.parametrize("name", POLICIES)
def test_capacity_hits_and_determinism(name):
    keys = zipf_keys(1)
    for capacity in [c for c in CAPACITIES if c >= smallest_capacity(name)]:
        sim = run(name, capacity, keys)
        policy, bound = sim.results()
        assert policy["resident"] <= capacity
        assert 0 <= policy["hits"] <= policy["lookups"] == len(keys)
        assert policy["hits"] <= bound["hits"]
        again = run(name, capacity, keys, chunks=7)  # other batch boundaries, same stream
        assert again.results()[0] == policy
        assert np.array_equal(again.timeline()[2], sim.timeline()[2])


@pytest.mark.parametrize("name", POLICIES)
def test_byte_capacity_is_never_exceeded(name):
    keys = zipf_keys(2, n=5_000)
    sizes = (keys % 97 + 1).astype(np.uint32)  # a key's size never changes
    capacity = 20_000
    future = _native.next_access(keys) if name in _native.NEEDS_FUTURE else None
    sim = make_sim(name, capacity, future, overhead=0)
    sim.feed(keys, value_sizes=sizes, key_bytes=np.zeros(len(keys), np.uint32))
    policy = sim.results()[0]
    assert policy["resident"] * int(sizes.min()) <= capacity
    assert 0 < policy["hits"] <= policy["lookups"] and policy["bytes_hit"] <= policy["bytes_looked_up"]


@pytest.mark.parametrize("name", POLICIES)
def test_invalidation_removes(name):
    # read, read, read, WRITE, read, read of one key in a roomy cache: reads 2 and 3 hit; the read after the
    # write misses when writes invalidate (3 hits in all) and hits when they are ignored (4 hits).
    keys = np.full(6, 5, dtype=np.uint64)
    ops = np.array([0, 0, 0, 1, 0, 0], dtype=np.uint8)
    for writes, hits, invalidations in (("invalidate", 3, 1), ("ignore", 4, 0)):
        future = _native.next_access(keys[ops == 0]) if name in _native.NEEDS_FUTURE else None
        sim = make_sim(name, max(64, smallest_capacity(name)), future, writes=writes)
        sim.feed(keys, ops=ops, reqs=np.arange(len(keys), dtype=np.uint64))
        policy = sim.results()[0]
        assert (policy["hits"], policy["invalidations"]) == (hits, invalidations), writes


@pytest.mark.parametrize("name", [n for n in POLICIES if n != "belady"])
def test_belady_is_the_bound(name):
    keys = zipf_keys(3)
    for capacity in (64, 500):
        if capacity < smallest_capacity(name):
            continue
        assert run(name, capacity, keys).results()[0]["hits"] <= run("belady", capacity, keys).results()[0]["hits"]


def test_every_policy_of_the_core_is_registered():
    assert set(_native.POLICY_NAMES) == set(POLICIES) | {INFINITE.name}
