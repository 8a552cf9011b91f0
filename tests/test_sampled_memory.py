"""SHARDS in memory that follows the sample, not the trace: with only sampled curves asked for, the infinite bound
is counted by a sketch instead of a set of every key, and says it is estimated, with its band."""

import json
import subprocess
import sys

import numpy as np
import pytest

import cachescope
from conftest import REPO
from script_prelude import PEAK


def _keys_trace(path, lookups: int, keys: int, seed: int) -> str:
    """Every key of `keys` once, and `lookups` more of Zipf-popular ones, shuffled, as a keys text trace."""
    rng = np.random.default_rng(seed)
    ids = np.concatenate([np.arange(keys), rng.zipf(1.2, lookups) % keys])
    rng.shuffle(ids)
    with open(path, "w") as f:
        f.write("\n".join(map("k{}".format, ids.tolist())) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sampled_memory")
    return (_keys_trace(folder / "small.keys", 1_000, 500, 1),
            _keys_trace(folder / "large.keys", 3_000_000, 1_500_000, 2))


def _peak_and_json(path: str, *args) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-c", PEAK, str(REPO / "simulate.py"), path, "--json", *args],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stderr.strip().splitlines()[-1].split()[1])
    return peak * 1024, json.loads(proc.stdout)


def test_a_fixed_size_sample_keeps_no_state_per_key_of_the_trace(traces):
    """4.5 M lookups over 1.5 M keys cost at most 60 MB beyond 1,500 lookups over 500 keys: what the sample
    holds (4 samples of 32,768 keys) and the reader's batches, measured at 44 MB, and flat as the trace grows
    (47 MB at 13 M lookups over 4 M keys). The set of every key the exact infinite bound kept made it 80 MB
    here, growing with the keys."""
    small, large = traces
    base, _ = _peak_and_json(small, "--curve", "lru", "--sample-keys", "32768")
    peak, doc = _peak_and_json(large, "--curve", "lru", "--sample-keys", "32768")
    assert peak - base < 60e6, f"{(peak - base) / 1e6:.0f} MB beyond the small trace's {base / 1e6:.0f} MB"
    assert doc["infinite"]["estimated"] is True


def test_the_estimated_bound_is_within_its_band_of_the_exact_one(traces):
    _, large = traces
    exact = cachescope.simulate_trace(large, lru=10, curve="lru", sample="1%")  # a single run: the exact bound
    estimated = cachescope.simulate_trace(large, curve="lru", sample="1%")
    assert not exact.infinite.get("estimated")
    inf, truth = estimated.infinite, exact.infinite
    assert inf["estimated"] and inf["method"] == "hyperloglog" and 0 < inf["relative_error"] < 0.01
    assert inf["misses_low"] <= truth["misses"] <= inf["misses_high"]
    assert inf["hit_rate_low"] <= truth["hit_rate"] <= inf["hit_rate_high"]
    assert abs(inf["misses"] - truth["misses"]) <= 3 * inf["relative_error"] * truth["misses"]
    assert inf["lookups"] == truth["lookups"] and inf["commands"] == truth["commands"]
    assert estimated.unique_keys == inf["misses"] and estimated.unique_keys_high == inf["misses_high"]
    # Every key the exact bound has, and the timeline's bound ends where the summary does.
    assert set(truth) <= set(inf)
    bound = estimated.timeline[estimated.timeline["policy"] == "infinite"]
    assert bound["hits"].sum() == inf["hits"] and (bound["hits"] <= bound["lookups"]).all()
    doc = estimated.to_json()
    assert doc["trace"]["unique_keys_estimated"] is True
    assert doc["trace"]["unique_keys_low"] <= exact.unique_keys <= doc["trace"]["unique_keys_high"]


def test_the_summary_says_the_bound_is_estimated(traces):
    from conftest import run_cli

    small, _ = traces
    proc = run_cli("simulate.py", small, "--curve", "lru", "--sample", "10%", "--salts", "2", check_rc=0)
    assert "infinite (bound) ~" in proc.stdout and "is estimated" in proc.stdout
    assert "lookups of ~" in proc.stdout
    exact = run_cli("simulate.py", small, "--lru", "10", "--curve", "lru", "--sample", "10%", check_rc=0)
    assert "estimated" not in exact.stdout and "infinite (bound) ~" not in exact.stdout


# ---- traces of HMGETs: commands served estimated from a sample of entities ------------------------------------
def _hmget_trace(path, commands: int, entities: int, fields: int, seed: int) -> str:
    """A Parquet trace of HMGETs as parse.py writes them: command `req` reads `fields` fields of one entity
    (every entity once, then Zipf-popular ones), each command its own round trip on one of 8 connections."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    ids = np.concatenate([np.arange(entities), rng.zipf(1.2, commands - entities) % entities])
    rng.shuffle(ids)
    names = np.array([f"user:{e}" for e in range(entities)], dtype=object)
    req = np.repeat(np.arange(commands, dtype=np.uint64), fields)
    pq.write_table(pa.table({
        "ts_ns": pa.array(1_700_000_000_000_000_000 + req.astype(np.int64) * 1000, pa.int64()),
        "conn": pa.array(req % 8, pa.uint32()),
        "req": pa.array(req, pa.uint64()),
        "batch": pa.array(req // 8, pa.uint64()),
        "op": pa.array(["read"] * len(req)),
        "key": pa.array(names[np.repeat(ids, fields)]),
        "field": pa.array(np.tile(np.array([f"f{j}" for j in range(fields)], dtype=object), commands)),
    }), path, row_group_size=1 << 20)
    return str(path)


@pytest.fixture(scope="module")
def hmget_traces(tmp_path_factory):
    """2.2 M lookups over 0.6 M keys and 4 M over 3 M, both in row groups of 2^20 rows (the reader holds a row
    group and the next batch, whatever the trace's length: both traces have at least three)."""
    folder = tmp_path_factory.mktemp("sampled_memory_hmget")
    return (_hmget_trace(folder / "fewer_keys.parquet", 220_000, 60_000, 10, 5),
            _hmget_trace(folder / "more_keys.parquet", 400_000, 300_000, 10, 6))


@pytest.mark.slow
def test_a_trace_of_hmgets_keeps_no_state_per_key_either(hmget_traces):
    """2.4 M more unique keys cost at most 50 MB more (measured: 30 MB, 20 MB of it what reading the larger
    trace's row groups takes alone). Before, the exact bound's set of every key and the list of each hash's
    fields (kept for invalidations that sampled curves never make) cost 165 MB more."""
    fewer, more = hmget_traces
    base, _ = _peak_and_json(fewer, "--curve", "lru", "--sample-keys", "32768")
    peak, doc = _peak_and_json(more, "--curve", "lru", "--sample-keys", "32768")
    assert doc["infinite"]["estimated"] is True and doc["infinite"]["served_method"] == "entity sample"
    assert peak - base < 50e6, f"{(peak - base) / 1e6:.0f} MB beyond the smaller trace's {base / 1e6:.0f} MB"


@pytest.mark.slow
def test_the_commands_served_of_hmgets_are_within_their_band(hmget_traces):
    _, more = hmget_traces
    exact = cachescope.simulate_trace(more, lru=10, curve="lru", sample="1%").infinite
    inf = cachescope.simulate_trace(more, curve="lru", sample="1%").infinite
    assert not exact.get("estimated") and inf["estimated"]
    assert inf["commands"] == exact["commands"] == 400_000 and inf["round_trips"] == exact["round_trips"]
    # The sample is of entities, not of all of them: its rate is below 1 and the band is not empty.
    assert 0 < inf["served_sample_rate"] < 1 and inf["commands_over_several_entities"] == 0
    assert inf["commands_served_low"] <= exact["commands_served"] <= inf["commands_served_high"]
    assert inf["commands_served_high"] - inf["commands_served_low"] < 0.05 * exact["commands"]
    assert abs(inf["commands_served"] - exact["commands_served"]) < 0.02 * exact["commands"]
    assert inf["round_trips_saved_low"] <= exact["round_trips_saved"] <= inf["round_trips_saved_high"]
    # Commands, not lookups: a count of unique keys alone would have made them the hits (a first visit misses 10
    # fields in one command).
    assert inf["commands_served"] < inf["commands"] < inf["hits"]
