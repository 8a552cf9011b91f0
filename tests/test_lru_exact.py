"""The LRU gives exact hit counts: against a plain Python LRU and cachetools, on random traces in every
format, several capacities in one run, and per timeline window."""

import json

import cachetools
import numpy as np
import pytest

import cachescope
from conftest import reference_lru, run_cli
from traces import as_commands_text, as_keys_text, as_monitor_text, lookups_of, random_commands

CAPACITIES = [1, 2, 5, 17, 60, 1000]


def cachetools_hits(keys, capacity):
    cache = cachetools.LRUCache(maxsize=capacity)
    hits = 0
    for k in keys:
        if k in cache:
            cache[k]  # a read refreshes recency
            hits += 1
        else:
            cache[k] = True
    return hits


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fmt", ["commands", "monitor"])
def test_commands_and_monitor_traces(tmp, seed, fmt):
    commands = random_commands(seed)
    text = as_commands_text(commands) if fmt == "commands" else as_monitor_text(commands)
    path = tmp / f"t.{fmt}"
    path.write_text(text)
    keys = lookups_of(commands)
    result = cachescope.simulate_trace(str(path), lru=CAPACITIES, window=37)
    got = dict(zip(result.summary["capacity"], result.summary["hits"]))
    for cap in CAPACITIES:
        expected = sum(reference_lru(keys, cap))
        assert got[cap] == expected == cachetools_hits(keys, cap), cap
    assert result.trace.lookups == len(keys)
    assert result.unique_keys == len(set(keys))
    assert result.infinite["hits"] == len(keys) - len(set(keys))


@pytest.mark.parametrize("seed", range(3))
def test_keys_trace_through_the_cli(tmp, seed):
    rng = np.random.default_rng(seed)
    keys = [(str(k),) for k in rng.zipf(1.3, 5000) % 400]
    path = tmp / "t.keys"
    path.write_text(as_keys_text(keys))
    out = run_cli("simulate.py", path, "--lru", "3,30,300", "--json", check_rc=0)
    doc = json.loads(out.stdout)
    for row in doc["results"]:
        assert row["hits"] == sum(reference_lru(keys, row["capacity"]))
        assert row["hits"] + row["misses"] == row["lookups"] == len(keys)


def test_entity_granularity_caches_whole_keys(tmp):
    commands = random_commands(11)
    path = tmp / "t.txt"
    path.write_text(as_commands_text(commands))
    keys = lookups_of(commands, granularity="entity")
    result = cachescope.simulate_trace(str(path), lru=[3, 10], granularity="entity")
    for row in result.summary.itertuples():
        assert row.hits == sum(reference_lru(keys, row.capacity))


def test_timeline_windows_match_the_reference(tmp):
    commands = random_commands(5, n_commands=700)
    path = tmp / "t.monitor"
    path.write_text(as_monitor_text(commands, step=0.5))
    keys = lookups_of(commands)
    window = 50
    result = cachescope.simulate_trace(str(path), lru=[20], window=window)
    tl = result.timeline[result.timeline["policy"] == "lru"]
    flags = reference_lru(keys, 20)
    expected = [sum(flags[i:i + window]) for i in range(0, len(flags), window)]
    assert tl["hits"].tolist() == expected
    assert tl["lookups"].sum() == len(keys)
    assert tl["cumulative_hit_rate"].iloc[-1] == pytest.approx(sum(flags) / len(flags))
    # On the trace's own clock: each window sits at the time of its last lookup's command.
    assert tl["ts_ns"].is_monotonic_increasing
    assert tl["seconds"].iloc[-1] == pytest.approx((len(commands) - 1) * 0.5, abs=1e-3)


def test_large_random_stream_against_cachetools():
    """Bulk path (numpy in, several capacities on parallel threads) on a stream big enough to span batches."""
    from cachescope import _native

    rng = np.random.default_rng(3)
    keys = (rng.zipf(1.2, 300_000) % 20_000).astype(np.uint64)
    caps = [100, 1_000, 10_000]
    sim = _native.Simulation([("lru", c) for c in caps], 10_000)
    for chunk in np.array_split(keys, 7):
        sim.feed(chunk)
    py_keys = keys.tolist()
    for row in sim.results():
        assert row["hits"] == cachetools_hits(py_keys, row["capacity"])
        assert row["resident"] == min(row["capacity"], len(set(py_keys)))
