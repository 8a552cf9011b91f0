"""W-TinyLFU against a real Caffeine 3.2.3 cache on traces it was never tuned on (made by caffeine_oracle.py):
Zipf at four skews and universes, a scan-heavy trace, a loop, shifting popularity, and the sample capture's
lookups. The requirement: within 0.5 points of hit rate of Caffeine at every capacity. Caffeine's own hit count
varies from run to run (random admission of some warm candidates), by up to ~1.3 points on the loop trace, so
"Caffeine" is the range of several runs, and the distance is how far outside that range ours lies.

The fast tests compare with the numbers committed in tests/data/ (no Java needed); the slow one builds the
replay tool with Maven, reruns Caffeine on freshly generated traces and compares with those.
"""

import json

import pytest

import cachescope
from caffeine_oracle import DATA, TRACES, caffeine_hits, distance_points, replay_classpath, write_keys

TOLERANCE = 0.5  # points of hit rate
COMMITTED = json.loads(DATA.read_text())["traces"]


def our_hits(path, capacities):
    summary = cachescope.simulate_trace(str(path), wtinylfu=capacities).summary
    rows = summary[summary["policy"] == "wtinylfu"]
    return dict(zip(rows["capacity"], rows["hits"]))


def compare(name, ours, caffeine_runs, lookups):
    """Failure messages for every capacity where ours lies more than TOLERANCE outside Caffeine's range."""
    bad = []
    for capacity, runs in caffeine_runs.items():
        d = distance_points(ours[capacity], runs, lookups)
        if d > TOLERANCE:
            bad.append(f"{name} @ {capacity}: ours {ours[capacity]}, Caffeine {min(runs)}..{max(runs)} "
                       f"({d:.3f} points outside)")
    return bad


def test_committed_numbers_cover_every_trace():
    assert set(COMMITTED) == set(TRACES)
    for name, (_, capacities) in TRACES.items():
        assert COMMITTED[name]["capacities"] == capacities, name
        assert 100 in capacities and max(capacities) >= 2_000, name


@pytest.mark.parametrize("name", list(TRACES))
def test_within_half_a_point_of_committed_caffeine(name, tmp_path):
    make, capacities = TRACES[name]
    ref = COMMITTED[name]
    path = tmp_path / f"{name}.keys.txt"
    assert write_keys(make(), path) == ref["sha256"], f"{name}: the generator no longer makes the committed trace"
    ours = our_hits(path, capacities)
    runs = dict(zip(capacities, ref["caffeine_hits"]))
    assert not compare(name, ours, runs, ref["lookups"])


def test_closer_than_the_requirement_on_quiet_traces(tmp_path):
    """Where Caffeine's runs agree to within 0.05 points, it is effectively deterministic, and so are we: the
    replica then lands within 0.1 points of it (a check of faithfulness, tighter than the requirement)."""
    checked = 0
    for name, (make, capacities) in TRACES.items():
        ref = COMMITTED[name]
        quiet = [(c, r) for c, r in zip(capacities, ref["caffeine_hits"]) if (max(r) - min(r)) / ref["lookups"] < 5e-4]
        if not quiet:
            continue
        path = tmp_path / f"{name}.keys.txt"
        write_keys(make(), path)
        ours = our_hits(path, [c for c, _ in quiet])
        for c, r in quiet:
            assert distance_points(ours[c], r, ref["lookups"]) <= 0.1, (name, c, ours[c], r)
            checked += 1
    assert checked >= 20


@pytest.mark.slow
def test_within_half_a_point_of_real_caffeine(tmp_path):
    classpath = replay_classpath()
    bad = []
    for name, (make, capacities) in TRACES.items():
        keys = make()
        path = tmp_path / f"{name}.keys.txt"
        write_keys(keys, path)
        runs = caffeine_hits(path, capacities, classpath)
        bad += compare(name, our_hits(path, capacities), runs, len(keys))
    assert not bad, "\n".join(bad)
