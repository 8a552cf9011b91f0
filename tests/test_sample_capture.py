"""The committed capture of real Redis traffic (`sample_traces/feature_store.pcap`, made by
`sample_traces/record_capture.py`) parses into exactly what was sent and answered, per its truth JSON, and
simulates from the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cachescope
from capture_truth import assert_matches_truth, field_writes, load_truth, lookups
from conftest import REPO, run_cli

SAMPLES = REPO / "sample_traces"


@pytest.fixture(scope="module", params=["feature_store", "feature_store_paced"])
def sample(request):
    """The quick capture (replayed as fast as the server answers) and the paced one (the log's clock 6x)."""
    return SAMPLES / f"{request.param}.pcap", SAMPLES / f"{request.param}.truth.json"


@pytest.fixture(scope="module")
def truth(sample):
    return load_truth(sample[1])


@pytest.fixture(scope="module")
def parsed(sample, truth):
    return cachescope.parse_capture(str(sample[0]), ports=(truth["port"],))


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


def test_simulate_runs_on_the_capture(sample, truth):
    proc = run_cli("simulate.py", sample[0], "--port", truth["port"], "--lru", "1e3,1e4", "--json", check_rc=0)
    out = json.loads(proc.stdout)
    looked_up = lookups(truth)
    assert out["trace"]["lookups"] == len(looked_up)
    assert out["trace"]["writes"] == field_writes(truth)
    # An infinite cache misses once per distinct (entity, field): the first time each is looked up.
    assert out["infinite"]["misses"] == len(set(looked_up))
    small, large = out["results"]
    assert (small["capacity"], large["capacity"]) == (1000, 10000)
    assert 0 < small["hits"] <= large["hits"] <= out["infinite"]["hits"]  # LRU's inclusion property


def test_the_paced_capture_has_a_clock_that_means_something(sample, truth, parsed):
    """The paced capture went out at the log's pace (sped up `pace` times), so its span is minutes of real time,
    that of the log over the pace; the quick one spans a fraction of a second."""
    reads = parsed[parsed["op"] == "read"]
    span = (reads["ts_ns"].max() - reads["ts_ns"].min()) / 1e9
    if "pace" not in truth:
        assert span < 5
        return
    assert 120 < span < 600
    # the log's requests are spread over its span: the capture's lookups are too, not bunched at one end
    minutes = np.histogram(reads["ts_ns"], bins=int(span // 60))[0]
    assert minutes.min() > 0.5 * minutes.mean()
