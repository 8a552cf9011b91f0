"""Differential tests of ARC, 2Q and S3-FIFO against libCacheSim (an independent C simulator) on random Zipf
traces: the keys go through our text reader and CLI, and through libCacheSim's own oracleGeneral reader; the
hit counts must be equal at every capacity, with the default parameters and others, unit and byte sizes.
Removal (invalidation), which libCacheSim cannot check, is checked against plain Python models."""

import json

import libcachesim
import numpy as np
import pytest

from adaptive_reference import MODELS
from conftest import run_cli
from traces import as_commands_text, random_commands

# Our registry name -> (libCacheSim's class, our parameter -> its keyword argument).
LIBCACHESIM = {
    "arc": ("ARC", {}),
    "2q": ("TwoQ", {"kin": "a_in_size_ratio", "kout": "a_out_size_ratio"}),
    "s3fifo": ("S3FIFO", {"small_ratio": "small_size_ratio", "ghost_ratio": "ghost_size_ratio",
                          "move_to_main_threshold": "move_to_main_threshold"}),
}
DEFAULTS = {"2q": {"kin": 0.25, "kout": 0.5}, "s3fifo": {"small_ratio": 0.1, "ghost_ratio": 0.9,
                                                          "move_to_main_threshold": 2}}
# The least capacity each accepts with the default parameters: below, 2Q's A1in and S3-FIFO's small queue
# could admit nothing of size 1 (see test_refused_capacities_are_the_ones_libcachesim_cannot_use).
SMALLEST = {"arc": 1, "2q": 4, "s3fifo": 20}


def write_oracle_general(path, keys, sizes=None):
    # clock_time 0 throughout: libCacheSim's default TTL (300 days of clock) then never expires anything.
    rec = np.zeros(len(keys), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["id"], rec["size"], rec["next"] = keys, 1 if sizes is None else sizes, -1
    rec.tofile(path)


def libcachesim_hits(path, policy, capacity, n, params=None):
    cls, names = LIBCACHESIM[policy]
    kwargs = {names[k]: v for k, v in (params or {}).items()}
    reader = libcachesim.TraceReader(str(path), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    # hashpower only sizes libCacheSim's initial hash table (2^24 slots by default); hits do not depend on it.
    cache = getattr(libcachesim, cls)(cache_size=capacity, hashpower=16, **kwargs)
    miss_ratio, _ = cache.process_trace(reader)
    return round((1 - miss_ratio) * n)


def zipf_keys(seed, alpha, universe, n):
    rng = np.random.default_rng(seed)
    if alpha > 1:
        return (rng.zipf(alpha, n) % universe + 1).astype(np.uint64), rng
    # numpy's zipf needs alpha > 1: a bounded Zipf by inverse CDF over the universe instead.
    cdf = np.cumsum(np.arange(1, universe + 1, dtype=np.float64) ** -alpha)
    ranks = np.minimum(np.searchsorted(cdf / cdf[-1], rng.random(n), side="right"), universe - 1)
    return (ranks + 1).astype(np.uint64), rng


@pytest.mark.parametrize("seed,alpha,universe,n", [
    (1, 1.1, 2_000, 40_000),
    (2, 1.4, 50_000, 40_000),
    (3, 1.01, 500, 40_000),
    (4, 2.0, 10**6, 40_000),
    (5, 0.8, 30_000, 40_000),  # flat: mostly misses, the ghosts and p working hard
    (6, 1.2, 12, 5_000),  # a dozen keys: tiny caches, ghosts and queues cycling all the time
])
def test_cli_hits_equal_libcachesim(tmp, seed, alpha, universe, n):
    keys, rng = zipf_keys(seed, alpha, universe, n)
    (tmp / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp / "t.oracleGeneral", keys)
    top = min(3_000, len(set(keys.tolist())) + 30)
    random_caps = {int(c) for c in rng.integers(20, top, 4)}
    capacities = {p: sorted(random_caps | {low, low + 1, low + 7, 64}) for p, low in SMALLEST.items()}
    flags = [arg for p, caps in capacities.items() for arg in (f"--{p}", ",".join(map(str, caps)))]
    out = run_cli("simulate.py", tmp / "t.keys", *flags, "--json", check_rc=0)
    rows = json.loads(out.stdout)["results"]
    assert sorted((r["policy"], r["capacity"]) for r in rows) == sorted((p, c) for p in capacities
                                                                        for c in capacities[p])
    got = {(r["policy"], r["capacity"]): r["hits"] for r in rows}
    want = {(p, c): libcachesim_hits(tmp / "t.oracleGeneral", p, c, n) for p, c in got}
    assert got == want
    # The three really differ (the comparison is not three times the same number).
    if universe > 100:
        assert len({got[p, 64] for p in LIBCACHESIM}) == 3


@pytest.mark.parametrize("policy,params", [
    ("2q", {"kin": 0.1, "kout": 1.0}),
    ("2q", {"kin": 0.5, "kout": 0.2}),
    ("s3fifo", {"small_ratio": 0.25, "ghost_ratio": 0.5, "move_to_main_threshold": 1}),
    ("s3fifo", {"small_ratio": 0.05, "ghost_ratio": 2.0, "move_to_main_threshold": 3}),
    ("s3fifo", {"small_ratio": 0.1, "ghost_ratio": 0.0, "move_to_main_threshold": 2}),  # no ghost queue
])
def test_parameters_reach_the_policy(tmp, policy, params):
    keys, _ = zipf_keys(7, 1.1, 5_000, 30_000)
    (tmp / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp / "t.oracleGeneral", keys)
    capacities = [100, 555, 2_000]
    flags = [f"--{policy}-{name.replace('_', '-')}={value}" for name, value in params.items()]
    out = run_cli("simulate.py", tmp / "t.keys", f"--{policy}", ",".join(map(str, capacities)), *flags, "--json",
                  check_rc=0)
    doc = json.loads(out.stdout)
    assert doc["params"] == {policy: {k: float(v) for k, v in params.items()}}
    got = [r["hits"] for r in doc["results"]]
    assert got == [libcachesim_hits(tmp / "t.oracleGeneral", policy, c, len(keys), params) for c in capacities]
    defaults = [libcachesim_hits(tmp / "t.oracleGeneral", policy, c, len(keys), DEFAULTS.get(policy))
                for c in capacities]
    assert got != defaults  # the parameters changed something


@pytest.mark.parametrize("seed,alpha,universe,per_request", [
    (11, 1.1, 5_000, False), (12, 1.3, 300, False), (13, 1.05, 100_000, False),
    (14, 1.2, 2_000, True),  # a new size at every lookup, as values rewritten in Redis have
])
def test_sized_objects_equal_libcachesim(tmp, seed, alpha, universe, per_request):
    """Objects of 2 bytes to 64 KiB and capacities in bytes: queue budgets, ghosts and p all count bytes, an
    object too large for the policy is not admitted, and a hit keeps the size the entry was admitted with."""
    from cachescope import _native

    n = 30_000
    keys, rng = zipf_keys(seed, alpha, universe, n)
    if per_request:
        sizes = rng.integers(2, 1 << 16, n, dtype=np.uint32)
    else:
        sizes = rng.integers(2, 1 << 16, universe + 1, dtype=np.uint32)[keys.astype(np.int64)]
    write_oracle_general(tmp / "t.oracleGeneral", keys, sizes)
    capacities = [1 << 16, 1 << 18, 1 << 20, 10 << 20, int(rng.integers(1 << 17, 1 << 24))]
    for policy in LIBCACHESIM:
        params = {k: float(v) for k, v in DEFAULTS.get(policy, {}).items()}
        # A byte capacity with no per-entry overhead and no key bytes: an entry weighs its value size.
        sim = _native.Simulation([(policy, c, 0, params) for c in capacities], 1_000_000)
        sim.feed(keys, value_sizes=sizes)
        got = [r["hits"] for r in sim.results()]
        want = [libcachesim_hits(tmp / "t.oracleGeneral", policy, c, n, DEFAULTS.get(policy)) for c in capacities]
        assert got == want, policy
        assert got[-1] > 0


def test_refused_capacities_are_the_ones_libcachesim_cannot_use(tmp):
    """2Q below 4 entries and S3-FIFO below 20 are refused with a clear error: there, libCacheSim admits nothing
    (0 hits) or, for S3-FIFO below 10, aborts; the refusal hides no result."""
    keys, _ = zipf_keys(8, 1.5, 50, 5_000)
    (tmp / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp / "t.oracleGeneral", keys)
    for policy, capacity in (("2q", 3), ("2q", 1), ("s3fifo", 19), ("s3fifo", 10)):
        assert libcachesim_hits(tmp / "t.oracleGeneral", policy, capacity, len(keys)) == 0
        out = run_cli("simulate.py", tmp / "t.keys", f"--{policy}", str(capacity), check_rc=2)
        assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1
        assert "give at least" in out.stderr and "Traceback" not in out.stderr
    run_cli("simulate.py", tmp / "t.keys", "--2q", "4", "--s3fifo", "20", check_rc=0)


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_invalidation_drops_residents_and_keeps_ghosts(tmp, seed):
    """Writes invalidate (`--writes invalidate`): the written key leaves the cache, its ghost (if any) stays.
    libCacheSim cannot say what a removal should do to the ghosts, so the oracle is the plain Python model."""
    commands = random_commands(seed, n_commands=3_000, n_entities=200, n_fields=10, write_share=0.15)
    (tmp / "t.txt").write_text(as_commands_text(commands))
    capacities = [20, 37, 150]
    flags = [arg for p in MODELS for arg in (f"--{p}", ",".join(map(str, capacities)))]
    out = run_cli("simulate.py", tmp / "t.txt", *flags, "--writes", "invalidate", "--json", check_rc=0)
    got = {(r["policy"], r["capacity"]): (r["hits"], r["invalidations"]) for r in json.loads(out.stdout)["results"]}
    for policy, model in MODELS.items():
        for capacity in capacities:
            cache, hits, invalidated = model(capacity), 0, 0
            for cmd, key, fields in commands:
                if cmd == "HSET":
                    invalidated += cache.remove((key, fields[0]))
                else:
                    for f in fields or [None]:
                        hits += cache.access((key, f), 1)
            assert got[policy, capacity] == (hits, invalidated), (policy, capacity)
    assert all(inv > 0 for _, inv in got.values())


def test_python_keywords_and_parameter_errors(tmp):
    """2Q is `--2q` and `"2q"` in the JSON but `two_q=` in Python; parameters default from the registry."""
    import cachescope
    from cachescope import UsageError

    path = tmp / "t.keys"
    path.write_text("\n".join(map(str, zipf_keys(9, 1.2, 400, 3_000)[0].tolist())) + "\n")
    r = cachescope.simulate_trace(path, two_q=[100], s3fifo="100", params={"s3fifo": {"small_ratio": 0.2}})
    assert list(r.summary["policy"]) == ["2q", "s3fifo"]
    assert r.params == {"2q": {"kin": 0.25, "kout": 0.5},
                        "s3fifo": {"small_ratio": 0.2, "ghost_ratio": 0.9, "move_to_main_threshold": 2.0}}
    assert r.to_json()["params"] == r.params
    for kwargs, message in [
        ({"arc": 10, "params": {"arc": {"p": 1}}}, "arc has no parameter 'p'; it has none"),
        ({"arc": 10, "params": {"two_q": {"kin": 0.3}}}, "not simulated"),
        ({"two_q": 10, "params": {"two_q": {"kin": "x"}}}, "not a number"),
        ({"two_q": 10, "params": {"two_q": {"kin": 0}}}, "kin must be between 0 and 1"),
        ({"2q": 10}, "unknown policy '2q'"),
        ({"s3fifo": 10}, "give at least 20"),
    ]:
        with pytest.raises(UsageError, match=message):
            cachescope.simulate_trace(path, **kwargs)
