"""Fleets asked for with curves and no capacity of their own run at the size the curves answer: the first
target's size where it is reachable, else the curve's knee; the single pod equals a plain run at that size."""

import subprocess
import sys

import cachescope
from conftest import REPO
from test_fleet import trace  # noqa: F401  (the fixture)


def test_fleets_run_at_the_size_the_curve_gives_for_the_target(trace):  # noqa: F811
    path, _ = trace
    result = cachescope.simulate_trace(path, curve="lru", target="40%", pods="1,3", route="entity")
    (answer,) = result.sizing.to_dict("records")
    assert answer["reachable"]
    assert result.fleet_sizes == [{"policy": "lru", "capacity": answer["capacity"],
                                   "why": "the size LRU needs for 40%"}]
    rows = result.summary.to_dict("records")
    assert sorted((r["pods"], r["capacity"]) for r in rows) == [(1, answer["capacity"]), (3, answer["capacity"])]
    single = cachescope.simulate_trace(path, lru=[answer["capacity"]]).summary.to_dict("records")[0]
    one_pod = next(r for r in rows if r["pods"] == 1)
    assert one_pod["hits"] == single["hits"]
    # The curve is the curve pass's, whole: the fleets did not cut it short.
    assert len(result.curves) > 10 and result.to_json()["fleet_sizes"] == result.fleet_sizes


def test_a_target_out_of_reach_gives_the_knee(trace):  # noqa: F811
    path, _ = trace
    result = cachescope.simulate_trace(path, curve="lru", target="99%", pods=2, route="entity,random")
    (answer,) = result.sizing.to_dict("records")
    assert not answer["reachable"] and answer["knee_capacity"] is not None
    assert [s["capacity"] for s in result.fleet_sizes] == [answer["knee_capacity"]]
    assert "99% is out of reach" in result.fleet_sizes[0]["why"]
    assert {(r["route"], r["capacity"]) for r in result.summary.to_dict("records")} == \
        {("entity", answer["knee_capacity"]), ("random", answer["knee_capacity"])}


def test_the_summary_and_the_report_say_where_the_size_came_from(trace, tmp):  # noqa: F811
    path, _ = trace
    report = tmp / "r.html"
    proc = subprocess.run([sys.executable, "simulate.py", path, "--curve", "lru", "--target", "40%", "--pods", "2",
                           "--route", "entity", "--report", str(report)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "per pod: the size LRU needs for 40% (no capacity was given" in proc.stdout
    page = report.read_text()
    assert "No pods were asked for" not in page and "the pods run at the curve's answer" in page


def test_a_pipe_cannot_be_read_twice_for_it():
    with open(REPO / "sample_traces" / "feature_store_paced.pcap", "rb") as capture:
        proc = subprocess.run([sys.executable, "simulate.py", "-", "--port", "16380", "--curve", "lru", "--pods", "2"],
                              cwd=REPO, stdin=capture, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "give the capacity (--lru 10000) or save the trace to a file first")
    assert "Traceback" not in proc.stderr
