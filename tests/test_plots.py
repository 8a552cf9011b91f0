"""Plots people read: every curve drawn whether or not it has a knee, many runs as small multiples, PNG and
SVG alike."""

import math

import cachescope
from conftest import REPO

CAPTURE = str(REPO / "sample_traces" / "feature_store.pcap")


def test_curve_plot_with_a_curve_that_has_no_knee(tmp_path):
    # S3-FIFO's sampled curve over this short capture still gains at its largest capacity: no knee (NaN in the
    # sizing frame), which the plot once took for a capacity and failed on.
    result = cachescope.simulate_trace(CAPTURE, ports=[16379], curve="lru,s3fifo", target="50%")
    knees = result.sizing["knee_capacity"].tolist()
    assert any(isinstance(k, float) and math.isnan(k) for k in knees)
    result.plot(str(tmp_path / "curve.png"))
    assert (tmp_path / "curve.png").stat().st_size > 10_000
