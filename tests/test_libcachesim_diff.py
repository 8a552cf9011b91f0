"""Differential test against libCacheSim (an independent C simulator) on random traces: the keys go through
our text reader and CLI, and through libCacheSim's own oracleGeneral reader; the LRU hit counts must agree."""

import json

import libcachesim
import numpy as np
import pytest

from conftest import run_cli


def libcachesim_lru_hits(path, capacity, n):
    reader = libcachesim.TraceReader(str(path), libcachesim.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, _ = libcachesim.LRU(cache_size=capacity).process_trace(reader)
    return round((1 - miss_ratio) * n)


def write_oracle_general(path, keys):
    rec = np.zeros(len(keys), dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["id"], rec["size"], rec["next"] = keys, 1, -1
    rec.tofile(path)


def zipf_trace(tmp, rng, alpha, universe):
    """40,000 Zipf keys written twice: as our keys text trace and as libCacheSim's oracleGeneral file."""
    keys = (rng.zipf(alpha, 40_000) % universe + 1).astype(np.uint64)
    (tmp / "t.keys").write_text("\n".join(map(str, keys.tolist())) + "\n")
    write_oracle_general(tmp / "t.oracleGeneral", keys)
    return keys


@pytest.mark.parametrize("seed,alpha,universe", [(1, 1.1, 2_000), (2, 1.4, 50_000), (3, 1.01, 500), (4, 2.0, 10**6)])
def test_lru_matches_libcachesim(tmp, seed, alpha, universe):
    rng = np.random.default_rng(seed)
    keys = zipf_trace(tmp, rng, alpha, universe)
    capacities = sorted({int(c) for c in rng.integers(1, 3_000, 5)} | {1, 64})
    out = run_cli("simulate.py", tmp / "t.keys", "--lru", ",".join(map(str, capacities)), "--json", check_rc=0)
    for row in json.loads(out.stdout)["results"]:
        assert row["hits"] == libcachesim_lru_hits(tmp / "t.oracleGeneral", row["capacity"], len(keys)), row


@pytest.mark.parametrize("seed,alpha,universe", [(5, 1.1, 2_000), (6, 1.01, 30_000)])
def test_the_exact_curve_matches_libcachesim_at_every_capacity_asked(tmp, seed, alpha, universe):
    """One pass of the stack algorithm against one libCacheSim run per capacity."""
    rng = np.random.default_rng(seed)
    keys = zipf_trace(tmp, rng, alpha, universe)
    capacities = sorted({int(c) for c in rng.integers(1, 5_000, 8)} | {1, 2})
    out = run_cli("simulate.py", tmp / "t.keys", "--curve", "lru", "--curve-capacities",
                  ",".join(map(str, capacities)), "--json", check_rc=0)
    (curve,) = json.loads(out.stdout)["curves"]
    points = curve["points"]
    assert curve["method"] == "exact" and len(points) >= 3
    for point in points:
        assert point["hits"] == libcachesim_lru_hits(tmp / "t.oracleGeneral", point["capacity"], len(keys)), point
