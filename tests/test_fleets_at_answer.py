"""Fleets asked for with curves and no capacity of their own run at the size the curves answer: the first
target's size where it is reachable, else the curve's knee; the single pod equals a plain run at that size."""

import re
import subprocess
import sys

import pytest

import cachescope
from conftest import REPO
from test_fleet import trace  # noqa: F401  (the fixture)


def test_fleets_run_at_the_size_each_answers_for_the_target(trace):  # noqa: F811
    path, _ = trace
    result = cachescope.simulate_trace(path, curve="lru", target="40%", pods="1,3", route="entity")
    answers = {(r["pods"], r["route"]): r for r in result.to_json()["sizing"]}
    assert set(answers) == {(1, None), (3, "entity")} and all(a["reached"] for a in answers.values())
    fleet = answers[(3, "entity")]
    assert result.fleet_sizes == [{"policy": "lru", "pods": 3, "route": "entity", "capacity": fleet["capacity"],
                                   "why": "the size LRU x3 entity needs for 40%"}]
    (row,) = result.summary.to_dict("records")
    assert (row["pods"], row["route"], row["capacity"]) == (3, "entity", fleet["capacity"])
    assert row["hits"] == round(fleet["hit_rate"] * row["lookups"])
    # Three sharded pods hold about what one cache three times as large does.
    assert fleet["capacity"] * 3 == pytest.approx(answers[(1, None)]["capacity"], rel=0.25)
    # The curve is the curve pass's, whole: the fleets did not cut it short.
    assert len(result.curves) > 10 and result.to_json()["fleet_sizes"] == result.fleet_sizes


def test_a_target_out_of_reach_gives_the_knee(trace):  # noqa: F811
    path, _ = trace
    result = cachescope.simulate_trace(path, curve="lru", target="99%", pods=2, route="entity,random")
    rows = {(r["pods"], r["route"]): r for r in result.to_json()["sizing"]}
    assert not any(r["reached"] for r in rows.values())
    for size in result.fleet_sizes:
        assert "99% is out of reach" in size["why"]
        assert size["capacity"] == rows[(2, size["route"])]["knee_capacity"]
    assert {(r["route"], r["capacity"]) for r in result.summary.to_dict("records")} == \
        {(s["route"], s["capacity"]) for s in result.fleet_sizes}


def test_the_summary_and_the_report_say_where_the_size_came_from(trace, tmp):  # noqa: F811
    path, _ = trace
    report = tmp / "r.html"
    proc = subprocess.run([sys.executable, "simulate.py", path, "--curve", "lru", "--target", "40%", "--pods", "2",
                           "--route", "entity", "--report", str(report)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "each fleet runs at its own answer for the first target." in proc.stdout
    assert re.search(r"^LRU [0-9,.k]+ x2 entity ", proc.stdout, re.M)
    page = report.read_text()
    assert "No pods were asked for" not in page and "each fleet runs at its own answer" in page


def test_a_pipe_cannot_be_read_twice_for_it():
    with open(REPO / "sample_traces" / "feature_store_paced.pcap", "rb") as capture:
        proc = subprocess.run([sys.executable, "simulate.py", "-", "--port", "16380", "--curve", "lru", "--pods", "2"],
                              cwd=REPO, stdin=capture, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "give the capacity (--lru 10000) or save the trace to a file first")
    assert "Traceback" not in proc.stderr


def test_the_report_sizes_at_the_knee_when_the_target_is_out_of_reach(trace):  # noqa: F811
    """The report's per-type and per-feature hit rates and its allow-list need a size: with the target out of
    reach it takes the curve's knee, not none."""
    from cachescope.report.context import _chosen_size

    path, _ = trace
    result = cachescope.simulate_trace(path, curve="lru", target="99%")
    (answer,) = result.sizing.to_dict("records")
    assert _chosen_size(result) == {"policy": "lru", "capacity": answer["knee_capacity"],
                                    "why": "LRU's knee, as 99% is out of reach"}
