"""A fleet of independent pods (sharded, or one per client) simulated in parts, each part running only the
pods `p % of == part` as a task of a split sweep does, and the parts put back together: the whole fleet's
numbers, exactly, including the commands served and round trips saved of batches that reached pods of
different parts (which summing would get wrong)."""

import numpy as np
import pytest

import cachescope
from batched_trace import KEY_PATTERN, write_batched_trace
from cachescope.simulate.fleet_parts import merge_fleet_parts
from cachescope.simulate.sweep import _units


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    return write_batched_trace(tmp_path_factory.mktemp("parts") / "batched.parquet")


def _fleet(trace, route, pods, subset=None, **extra):
    kw = dict(lru=[60], pods=pods, route=route, window=700, writes="invalidate",
              key_pattern=KEY_PATTERN if route == "key-pattern" else None, **extra)
    if subset is None:
        return cachescope.simulate_trace(trace, **kw)
    return cachescope.simulate_trace(trace, _subset=([], [subset], False), **kw)["fleets"][0]


def _same(a, b):
    assert set(a) == set(b)
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


ROLLING = {"rolling_restart_every": "8s", "rolling_over": "3s"}  # the trace spans 30 s


@pytest.mark.parametrize("route,pods,of,extra", [("entity", 5, 2, {}), ("key-pattern", 4, 3, {}),
                                                ("client", None, 2, {}), ("entity", 3, 3, {}),
                                                ("entity", 4, 2, ROLLING), ("entity", 4, 2, {"one_pod_of": 4})])
def test_the_parts_of_a_fleet_put_together_are_the_whole_fleet(batched, route, pods, of, extra):
    at = 0
    if "one_pod_of" in extra:  # the sharded what-if of one pod's capture: its fleet of 4 on a faster clock
        route, pods, at = "random", None, 1
    parts = [_fleet(batched, route, pods, (at, part, of), **extra) for part in range(of)]
    assert all(len(p["per_pod"]) < (pods or 3) for p in parts)  # each part ran only its own pods
    # The whole fleet as the core gives it, from one run of all its pods.
    whole = _fleet(batched, route, pods, (at, 0, 1), **extra)
    assert whole["time_factor"] == (4 if at else 1)
    if extra is ROLLING:
        assert all(len(p["restart_times"]) == 3 for p in whole["per_pod"])
        assert len({p["restart_times"][0] for p in whole["per_pod"]}) == 4  # each pod at its own time
    _same(merge_fleet_parts(parts), whole)
    served = whole["served"]
    assert 0 < served["round_trips_saved"] < served["round_trips"]
    assert 0 < served["commands_served"] < served["commands"]
    assert not np.isnan(whole["window_spread"]).any() and len(whole["window_spread"]) > 10
    if whole["route"] != "client":
        # A batch reaches several pods: the fleet's saved round trips are not the pods' summed.
        assert served["round_trips_saved"] < sum(p["round_trips_saved"] for p in whole["per_pod"])
    assert _fleet(batched, route, pods, **extra).summary["round_trips_saved"].iloc[at] == served["round_trips_saved"]


def test_only_fleets_of_independent_pods_are_split():
    from cachescope.simulate.capacity import parse_capacities

    cap = parse_capacities(10)[0]
    fleets = [("lru", cap, 8, "random"), ("lru", cap, 8, "entity"), ("lru", cap, 2, "key-pattern"),
              ("lru", cap, 0, "client"), ("lru", cap, 1, "entity")]
    units = _units([("lru", cap)], fleets, True, 4)
    assert units == [("run", 0), ("fleet", (0, 0, 1)), *[("fleet", (1, p, 4)) for p in range(4)],
                     ("fleet", (2, 0, 2)), ("fleet", (2, 1, 2)), *[("fleet", (3, p, 4)) for p in range(4)],
                     ("fleet", (4, 0, 1)), ("curves", 0)]
