"""Golden numbers from an independent simulator (libCacheSim) on a real block I/O trace, exactly."""

import json

import pytest

import cachescope
from conftest import REFERENCE

EXPECTED = json.loads((REFERENCE / "cloudPhysicsIO.expected.json").read_text())
TRACE = str(REFERENCE / "cloudPhysicsIO.keys.txt")


@pytest.fixture(scope="module")
def result():
    caps = EXPECTED["trace"]["capacities"] + EXPECTED["pinned"]["LRU_miss_cnt_test_simulator_c_L17"]["capacities"]
    caps += EXPECTED["pinned"]["LRU_miss_ratio_test_profilerLRU_c_L13_L17"]["capacities"]
    return cachescope.simulate_trace(TRACE, lru=caps)


def hits_by_capacity(result):
    return dict(zip(result.summary["capacity"], result.summary["hits"]))


def test_lru_hits_equal_libcachesim(result):
    got = hits_by_capacity(result)
    for cap, hits in zip(EXPECTED["trace"]["capacities"], EXPECTED["trace"]["hits"]["LRU"]):
        assert got[cap] == hits, cap


def test_pinned_miss_counts(result):
    pinned = EXPECTED["pinned"]["LRU_miss_cnt_test_simulator_c_L17"]
    got = hits_by_capacity(result)
    for cap, misses in zip(pinned["capacities"], pinned["miss_cnt"]):
        assert pinned["n_req"] - got[cap] == misses, cap


def test_pinned_miss_ratios(result):
    pinned = EXPECTED["pinned"]["LRU_miss_ratio_test_profilerLRU_c_L13_L17"]
    got = hits_by_capacity(result)
    for cap, ratio in zip(pinned["capacities"], pinned["miss_ratio"]):
        assert 1 - got[cap] / EXPECTED["trace"]["n_req"] == pytest.approx(ratio, abs=pinned["tol"]), cap


def test_trace_counts(result):
    assert result.trace.lookups == EXPECTED["trace"]["n_req"]
    assert result.unique_keys == EXPECTED["trace"]["n_unique"]
    assert result.infinite["hits"] == EXPECTED["trace"]["n_req"] - EXPECTED["trace"]["n_unique"]


def test_belady_hits_equal_libcachesim():
    caps = EXPECTED["trace"]["capacities"]
    result = cachescope.simulate_trace(TRACE, belady=caps, lru=caps[:1])
    rows = result.summary[result.summary["policy"] == "belady"]
    assert rows["hits"].tolist() == EXPECTED["trace"]["hits"]["Belady"]
    assert (rows["hits"].to_numpy() >= result.summary[result.summary["policy"] == "lru"]["hits"].max()).all()
