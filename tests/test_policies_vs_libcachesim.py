"""Differential test of every simple policy against libCacheSim (an independent C simulator) on random Zipf
traces: the keys go through our text reader and CLI, and through libCacheSim's own oracleGeneral reader;
the hit counts must be equal at every capacity, for LRU, LFU, FIFO, CLOCK and SIEVE alike."""

import json

import libcachesim
import numpy as np
import pytest

from conftest import run_cli

# Our registry name -> libCacheSim's class, run with its defaults (CLOCK: 1-bit counter, init_freq=0).
LIBCACHESIM = {"lru": "LRU", "lfu": "LFU", "fifo": "FIFO", "clock": "Clock", "sieve": "Sieve"}


def write_oracle_general(path, keys, sizes=None):
    rec = np.zeros(len(keys), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["t"] = np.arange(len(keys), dtype=np.uint32)
    rec["id"], rec["size"], rec["next"] = keys, 1 if sizes is None else sizes, -1
    rec.tofile(path)


def libcachesim_hits(path, policy, capacity, n):
    reader = libcachesim.TraceReader(str(path), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    # hashpower only sizes libCacheSim's initial hash table (2^24 slots by default: a 128 MiB allocation per
    # cache, most of this test's time); the hits do not depend on it.
    miss_ratio, _ = getattr(libcachesim, LIBCACHESIM[policy])(cache_size=capacity, hashpower=16).process_trace(reader)
    return round((1 - miss_ratio) * n)


def zipf_keys(seed, alpha, universe, n):
    rng = np.random.default_rng(seed)
    return (rng.zipf(alpha, n) % universe + 1).astype(np.uint64), rng


@pytest.mark.parametrize("seed,alpha,universe,n", [
    (1, 1.1, 2_000, 40_000),
    (2, 1.4, 50_000, 40_000),
    (3, 1.01, 500, 40_000),
    (4, 2.0, 10**6, 40_000),
    (5, 1.2, 12, 5_000),  # a dozen keys: tiny caches wrap their hands and tie their counts all the time
])
def test_hits_equal_libcachesim(tmp, seed, alpha, universe, n):
    keys, rng = zipf_keys(seed, alpha, universe, n)
    (tmp / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp / "t.oracleGeneral", keys)
    top = min(3_000, len(set(keys.tolist())) + 2)
    capacities = sorted({int(c) for c in rng.integers(1, top, 4)} | {1, 2, 3, 64})
    caps = ",".join(map(str, capacities))
    flags = [arg for policy in LIBCACHESIM for arg in (f"--{policy}", caps)]
    out = run_cli("simulate.py", tmp / "t.keys", *flags, "--json", check_rc=0)
    rows = [r for r in json.loads(out.stdout)["results"] if r["policy"] in LIBCACHESIM]
    assert {(r["policy"], r["capacity"]) for r in rows} == {(p, c) for p in LIBCACHESIM for c in capacities}
    mismatches = [(r["policy"], r["capacity"], r["hits"], libcachesim_hits(tmp / "t.oracleGeneral", r["policy"],
                                                                          r["capacity"], n)) for r in rows]
    assert [m for m in mismatches if m[2] != m[3]] == []
    # The policies really differ on these traces (the comparison is not five times the same number).
    if universe > 100:
        assert len({r["hits"] for r in rows if r["capacity"] == 64}) >= 4


@pytest.mark.parametrize("seed,alpha,universe", [(11, 1.1, 5_000), (12, 1.3, 300), (13, 1.05, 100_000)])
def test_sized_objects_equal_libcachesim(tmp, seed, alpha, universe):
    """Objects of 1 byte to 64 KiB (one size per key, as the trace format records it) and capacities in bytes:
    every policy evicts until the new object fits and never admits one larger than the whole cache."""
    from cachescope import _native

    n = 30_000
    keys, rng = zipf_keys(seed, alpha, universe, n)
    size_of = rng.integers(2, 1 << 16, universe + 1, dtype=np.uint32)  # wide spread: several evictions a miss
    sizes = size_of[keys.astype(np.int64)]
    write_oracle_general(tmp / "t.oracleGeneral", keys, sizes)
    capacities = [1, 1 << 15, 1 << 16, 1 << 20, 10 << 20, int(rng.integers(1 << 17, 1 << 24))]
    for policy in LIBCACHESIM:
        # A byte capacity with no per-entry overhead and no key bytes: an entry weighs its value size.
        sim = _native.Simulation([(policy, c, 0) for c in capacities], 1_000_000)
        sim.feed(keys, value_sizes=sizes)
        got = [r["hits"] for r in sim.results()]
        want = [libcachesim_hits(tmp / "t.oracleGeneral", policy, c, n) for c in capacities]
        assert got == want, policy
        assert got[0] == 0 and got[-1] > 0  # nothing fits in 1 byte; the big caches hit


def libcachesim_hits_with_deletes(policy, capacity, keys, ops, sizes):
    """Request by request through libCacheSim's own get/remove (its trace readers have no deletes)."""
    cache = getattr(libcachesim, LIBCACHESIM[policy])(cache_size=capacity, hashpower=12)
    hits = 0
    for k, op, s in zip(keys.tolist(), ops.tolist(), sizes.tolist()):
        if op == OP_DELETE:
            cache.remove(k)
        else:
            hits += cache.get(libcachesim.Request(obj_size=s, obj_id=k))
    return hits


OP_READ, OP_DELETE = 0, 2  # the trace reader's op codes (src/trace/reader.rs)


@pytest.mark.parametrize("seed,universe,sized", [(21, 40, False), (22, 400, False), (23, 60, True), (24, 500, True)])
def test_deletes_equal_libcachesim(tmp, seed, universe, sized):
    """Invalidation calls each policy's `remove`: deletes interleaved with reads, against libCacheSim's `remove`
    (which unlinks the object and, in SIEVE, first moves the hand off it)."""
    from cachescope import _native

    n = 6_000
    keys, rng = zipf_keys(seed, 1.1, universe, n)
    ops = np.where(rng.random(n) < 0.12, OP_DELETE, OP_READ).astype(np.uint8)
    sizes = (rng.integers(2, 200, universe + 1, dtype=np.uint32)[keys.astype(np.int64)] if sized
             else np.ones(n, dtype=np.uint32))
    capacities = [1, 3, 7, 25] if not sized else [150, 600, 2_500]
    for policy in LIBCACHESIM:
        runs = [(policy, c, 0) if sized else (policy, c) for c in capacities]
        sim = _native.Simulation(runs, 1_000_000, writes="invalidate")
        # A non-zero field makes each delete name exactly its own cache key.
        sim.feed(keys, ops=ops, fields=np.ones(n, dtype=np.uint64), value_sizes=sizes)
        got = [r["hits"] for r in sim.results()]
        assert sum(r["invalidations"] for r in sim.results()) > 0
        want = [libcachesim_hits_with_deletes(policy, c, keys, ops, sizes) for c in capacities]
        assert got == want, policy
