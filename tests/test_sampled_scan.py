"""An oracleGeneral trace read for SHARDS alone: the core keeps only the sampled lookups, the sketch's raises
and the window times (`TraceSource.feed_sampled`, `src/simulation/sampled_scan.rs`). The same answer as
reading every lookup into batches, byte for byte, and the same errors."""

import json

import numpy as np
import pytest

from cachescope.cli.common import run
from cachescope.cli.simulate import main
from cachescope.simulate import engine
from cachescope.simulate.engine import simulate_trace
from cachescope.trace.readers import TraceSource

DTYPE = np.dtype([("ts", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """400,000 records of Zipf-popular ids (up to 10 digits), a second every 40 records, a size of 0 now and
    then (left out, as libCacheSim leaves them)."""
    rng = np.random.default_rng(29)
    n = 400_000
    rec = np.zeros(n, DTYPE)
    rec["ts"] = 1_000 + np.arange(n) // 40
    rec["id"] = (rng.zipf(1.1, n) * 2_654_435_761) % 9_000_000_000
    rec["size"] = rng.integers(1, 5_000, n)
    rec["size"][rng.random(n) < 0.01] = 0
    rec["next"] = -1
    path = tmp_path_factory.mktemp("og") / "zipf.oracleGeneral"
    rec.tofile(path)
    return str(path)


@pytest.fixture
def scans(monkeypatch):
    """How many times the core was fed a sample of the records (`TraceSource.feed_sampled`)."""
    calls = []
    feed = TraceSource.feed_sampled

    def counted(self, sim, *args, **kwargs):
        calls.append(self.path)
        return feed(self, sim, *args, **kwargs)

    monkeypatch.setattr(TraceSource, "feed_sampled", counted)
    return calls


def _every_lookup(monkeypatch):
    monkeypatch.setattr(engine, "_reads_a_sample", lambda source, sim, live: False)


@pytest.mark.parametrize("ask", [
    dict(sample="1%", salts=1, curve_capacities="auto"),
    dict(sample="5%", salts=3, curve_capacities="100:20000:15", window=777),
    dict(sample_keys=300, salts=2, curve_capacities="100:20000:15", window=1),
    dict(sample="2%", salts=2, curve_capacities="64KiB:64MiB:12"),
])
def test_a_sample_of_the_records_gives_the_answer_every_record_gives(trace, scans, monkeypatch, ask):
    sampled = simulate_trace(trace, format="oracleGeneral", curve="lru", **ask)
    assert scans == [trace]
    _every_lookup(monkeypatch)
    every = simulate_trace(trace, format="oracleGeneral", curve="lru", **ask)
    assert scans == [trace]
    assert json.dumps(sampled.to_json(), indent=2) == json.dumps(every.to_json(), indent=2)
    assert sampled.to_json()["trace"]["zero_size_requests"] > 0
    assert sampled.timeline.equals(every.timeline)


def test_anything_that_reads_every_lookup_reads_them_all(trace, scans):
    for ask in (dict(curve="lru"), dict(curve="lru", sample="1%", lru="1000"),
                dict(curve="lru", sample="1%", pods="4", route="round-robin"),
                dict(curve="s3fifo", sample="10%")):
        simulate_trace(trace, format="oracleGeneral", curve_capacities="1000:20000:5", **ask)
    assert scans == []


@pytest.mark.parametrize("cut", [b"", b"\x01" * 30])
def test_the_same_errors(tmp, capsys, monkeypatch, cut):
    path = tmp / "cut.oracleGeneral"
    rec = np.zeros(3, DTYPE)
    rec["size"] = 1
    path.write_bytes((rec.tobytes() if cut else b"") + cut)
    argv = [str(path), "--format", "oracleGeneral", "--curve", "lru", "--sample", "1%", "--json", "--no-progress"]
    outcomes = []
    for reads_every_lookup in (False, True):
        if reads_every_lookup:
            _every_lookup(monkeypatch)
        status = run("simulate.py", main, argv)
        outcomes.append((status, capsys.readouterr().err))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 2 and outcomes[0][1].count("\n") == 1
    assert ("cut short" in outcomes[0][1]) == bool(cut), outcomes[0][1]
