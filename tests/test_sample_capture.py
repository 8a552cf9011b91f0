"""The committed capture of real Redis traffic (`sample_traces/feature_store.pcap`, made by
`sample_traces/record_capture.py`) parses into exactly what was sent and answered, per its truth JSON, and
simulates from the command line."""

from __future__ import annotations

import json

import pytest

import cachescope
from capture_truth import assert_matches_truth, field_writes, load_truth, lookups
from conftest import REPO, run_cli

PCAP = REPO / "sample_traces" / "feature_store.pcap"
TRUTH = REPO / "sample_traces" / "feature_store.truth.json"


@pytest.fixture(scope="module")
def truth():
    return load_truth(TRUTH)


@pytest.fixture(scope="module")
def parsed(truth):
    return cachescope.parse_capture(str(PCAP), ports=(truth["port"],))


def test_the_capture_is_complete(parsed):
    stats = parsed.attrs["stats"]
    lost = {k: stats[k] for k in ("gaps", "gap_bytes", "mid_stream_connections", "unknown_replies",
                                  "unpaired_replies", "resyncs", "damaged_commands", "malformed_commands")}
    assert set(lost.values()) == {0}, lost


def test_every_command_equals_the_truth(parsed, truth):
    assert_matches_truth(parsed, truth)


def test_the_truth_holds_what_the_readme_says(truth):
    protocols = [c["protocol"] for c in truth["connections"]]
    assert protocols.count(3) == 1 and len(protocols) > 2
    assert truth["replayed"] == sum(c["cmd"] in ("HMGET", "HSET") for conn in truth["connections"][1:]
                                    for c in conn["commands"])


def test_simulate_runs_on_the_capture(truth):
    proc = run_cli("simulate.py", PCAP, "--port", truth["port"], "--lru", "1e3,1e4", "--json", check_rc=0)
    out = json.loads(proc.stdout)
    looked_up = lookups(truth)
    assert out["trace"]["lookups"] == len(looked_up)
    assert out["trace"]["writes"] == field_writes(truth)
    # An infinite cache misses once per distinct (entity, field): the first time each is looked up.
    assert out["infinite"]["misses"] == len(set(looked_up))
    small, large = out["results"]
    assert (small["capacity"], large["capacity"]) == (1000, 10000)
    assert 0 < small["hits"] <= large["hits"] <= out["infinite"]["hits"]  # LRU's inclusion property
