"""The exact LRU curve (one pass, every capacity) against separate LRU runs, and the sizing answer against
the curve and against runs at the sizes it names."""

import json
import zlib
from dataclasses import replace

import numpy as np
import pytest

import cachescope
from conftest import run_cli
from test_semantics import FIELDS, random_events, write_parquet

CAPACITIES = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]
BYTE_CAPACITIES = [6_000, 9_000, 15_000, 30_000, 60_000, 200_000]

CASES = {
    "plain": {},
    "invalidate": {"writes": "invalidate"},
    "update": {"writes": "update"},
    "restarts": {"restart_every": "2min"},
    "allow": {"allow_list": FIELDS[:3]},
    "entity": {"granularity": "entity", "writes": "invalidate"},
}


def _same(curve, runs, columns=("hits", "round_trips_saved")):
    runs = runs.set_index("capacity")
    for column in columns:
        assert curve.set_index("capacity")[column].to_dict() == runs[column].to_dict(), column


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", CASES)
def test_the_curve_equals_lru_runs_at_every_capacity(tmp, case, seed):
    write_parquet(random_events(seed, n_commands=600), tmp / "t.parquet")
    kwargs = CASES[case]
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=CAPACITIES, curve="lru",
                                       curve_capacities=CAPACITIES, window=100, **kwargs)
    curve = result.curves
    assert list(curve["method"].unique()) == ["exact"]
    # The curve stops once a capacity holds every unique key; the runs above it hit as much as it does there.
    _same(curve, result.summary[result.summary["capacity"].isin(curve["capacity"])])
    assert curve["hits"].is_monotonic_increasing and curve["hits"].iloc[0] < curve["hits"].iloc[-1]
    # The timeline's windows add up to the curve at each timeline capacity.
    totals = result.curve_timeline.groupby("capacity")["hits"].sum()
    assert totals.to_dict() == curve.set_index("capacity").loc[totals.index, "hits"].to_dict()


def stable_sizes(events):
    """The same value size at every read of a key, as a feature's value mostly keeps its size."""
    return [replace(e, value_size=zlib.crc32(f"{e.entity}/{e.field}".encode()) % 5000) if e.op == "read" else e
            for e in events]


@pytest.mark.parametrize("seed", range(3))
def test_the_byte_curve_equals_byte_lru_runs(tmp, seed):
    """Every entry here fits the smallest capacity (values under 5,000 bytes, 6,000-byte caches) and keeps its
    size: the case where a byte LRU is a stack algorithm."""
    write_parquet(stable_sizes(random_events(seed, n_commands=600)), tmp / "t.parquet")
    caps = [f"{c}B" for c in BYTE_CAPACITIES]
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=caps, curve="lru", curve_capacities=caps,
                                       entry_overhead=60)
    assert set(result.curves["capacity_unit"]) == {"bytes"}
    _same(result.curves, result.summary[result.summary["capacity"].isin(result.curves["capacity"])],
          ("hits", "bytes_hit", "round_trips_saved"))


def test_a_key_whose_size_changes_keeps_its_admitted_size_on_the_curve(tmp):
    """A byte LRU keeps the size an entry was admitted with while it hits, and takes the new size when it is
    admitted again; the curve keeps the admitted size at every capacity (documented in src/curve/stack.rs).
    On this trace every read draws a new size (0 to 5,000 bytes), the worst case: the curve counts fewer
    hits than the runs, by up to a third at the smallest capacities."""
    write_parquet(random_events(3, n_commands=600), tmp / "t.parquet")
    caps = [f"{c}B" for c in BYTE_CAPACITIES]
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), lru=caps, curve="lru", curve_capacities=caps,
                                       entry_overhead=60)
    runs = result.summary.set_index("capacity")["hits"]
    curve = result.curves.set_index("capacity")["hits"]
    assert (curve <= runs).all() and (curve != runs).any()
    assert ((runs - curve) / runs).max() < 0.35


def test_auto_capacities_reach_the_unique_keys_and_the_bound(tmp):
    write_parquet(random_events(4, n_commands=600), tmp / "t.parquet")
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), curve="lru")
    caps = result.curves["capacity"].to_numpy()
    assert caps[0] == 1 and caps[-1] >= result.unique_keys > caps[-2]
    assert np.all(caps[1:] <= np.ceil(caps[:-1] * 1.02) + 1)  # 2% apart, or the next whole number
    assert result.curves["hits"].iloc[-1] == result.infinite["hits"]
    assert result.summary.empty  # a curve alone needs no single-capacity run


@pytest.mark.parametrize("target", [0.3, 0.5, 0.6])
def test_the_sizing_answer_reaches_the_target_and_two_percent_less_does_not(tmp, target):
    write_parquet(random_events(5, n_commands=3000), tmp / "t.parquet")
    trace = str(tmp / "t.parquet")
    result = cachescope.simulate_trace(trace, curve="lru", target=target, curve_capacities="1:200:400")
    row = result.sizing.iloc[0]
    assert row["reachable"] and row["hit_rate"] >= target
    size = int(row["capacity"])
    check = cachescope.simulate_trace(trace, lru=[size, int(size * 0.98)]).summary.set_index("capacity")
    assert check.loc[size, "hit_rate"] >= target
    assert check.loc[int(size * 0.98), "hit_rate"] < target
    assert row["lookups_saved_per_s"] > 0 and row["knee_capacity"] is not None
    # Warm-up read off the curve's timeline at the first timeline capacity at or above the answer.
    assert row["warmup_capacity"] >= size and row["warmup_s"] >= 0


def test_an_unreachable_target_says_so_and_gives_the_bound(tmp):
    write_parquet(random_events(5), tmp / "t.parquet")
    result = cachescope.simulate_trace(str(tmp / "t.parquet"), curve="lru", target="99%")
    row = result.sizing.iloc[0]
    assert not row["reachable"] and row["bound_hit_rate"] == result.infinite["hit_rate"] < 0.99


@pytest.mark.parametrize("args, message", [
    (["--ttl", "10s"], "cannot model a TTL"),
    (["--curve-capacities", "64MiB,1GiB", "--writes", "invalidate"], "cannot model invalidation"),
    (["--target", "70%", "--lru", "10"], "give --curve"),
    (["--curve", "belady"], "no curve for policy 'belady'"),
    (["--sample", "40%", "--salts", "4"], "do not fit in all the keys"),
    (["--target", "170%"], "at most 100%"),
    (["--curve-capacities", "10:5:3"], "MIN < MAX"),
])
def test_what_a_curve_cannot_do_is_one_line_and_exit_2(tmp, args, message):
    write_parquet(random_events(1), tmp / "t.parquet")
    if "--curve" not in args and "--lru" not in args:
        args = ["--curve", "lru", *args]
    proc = run_cli("simulate.py", tmp / "t.parquet", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_the_command_line_prints_and_writes_the_curve_and_the_sizing(tmp):
    write_parquet(random_events(2, n_commands=2000), tmp / "t.parquet")
    out = run_cli("simulate.py", tmp / "t.parquet", "--curve", "lru", "--target", "40%,99%", "--json",
                  "--plot", tmp / "curve.png", check_rc=0).stdout
    doc = json.loads(out)
    (curve,) = doc["curves"]
    assert curve["policy"] == "lru" and curve["method"] == "exact" and curve["sample_rate"] == 1.0
    assert curve["points"][0]["capacity"] == 1 and {"hits", "hit_rate"} <= set(curve["points"][0])
    sizing = {s["target"]: s for s in doc["sizing"]}
    assert sizing[0.4]["reachable"] and sizing[0.4]["capacity"] >= 1 and not sizing[0.99]["reachable"]
    assert (tmp / "curve.png").stat().st_size > 10_000
    text = run_cli("simulate.py", tmp / "t.parquet", "--curve", "lru", "--target", "40%", check_rc=0).stdout
    assert "LRU curve (exact" in text and "for 40%" in text
