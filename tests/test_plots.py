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


MONITOR = str(REPO / "sample_traces" / "feature_store.monitor")


def _drawn_axes(fig):
    return [ax for ax in fig.axes if ax.axison and ax.lines]


def test_many_runs_get_a_panel_each_and_few_share_one_with_labels(tmp_path):
    many = cachescope.simulate_trace(MONITOR, lru="1e3,3e3,1e4,3e4,1e5", wtinylfu="1e3,1e4", window=20_000)
    fig = many.plot(str(tmp_path / "many.png"))
    panels = _drawn_axes(fig)
    assert len(panels) == 7  # small multiples: one per run, each with the bound
    assert all(len([ln for ln in ax.lines if ln.get_linestyle() == "--"]) == 1 for ax in panels)
    assert len({ax.get_title() for ax in panels}) == 7
    few = cachescope.simulate_trace(MONITOR, lru="1e3,1e4", window=20_000)
    fig = few.plot(str(tmp_path / "few.svg"))
    (ax,) = _drawn_axes(fig)
    labels = [t.get_text() for t in ax.texts]
    assert any(t.startswith("LRU 1k") for t in labels) and any(t.startswith("LRU 10k") for t in labels)
    # labelled at the lines' ends; the legend, under the axes, names only the bound and the marks
    assert not [t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith("LRU")]
    svg = (tmp_path / "few.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "LRU 10k" in svg  # text kept as text


def test_warm_up_and_deploys_are_marked(tmp_path):
    result = cachescope.simulate_trace(MONITOR, lru="1e4", restart_every="10m", window=5_000)
    fig = result.plot(str(tmp_path / "t.png"))
    (ax,) = _drawn_axes(fig)
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert len(diamonds) == 1
    warm = result.summary["warmup_s"].iloc[0] / 60
    assert abs(diamonds[0].get_xdata()[0] - warm) < 2  # at the run's warm-up, on the minutes axis
    dotted = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
    assert len(dotted) == len(result.restart_times) >= 2


def test_a_last_window_cut_short_by_the_end_of_the_trace_is_not_drawn(tmp_path):
    # 238,062 lookups in windows of 20,000: the last holds 18,062 (drawn); in windows of 100,000, 38,062 (not)
    for window, drawn in ((20_000, 12), (100_000, 2)):
        result = cachescope.simulate_trace(MONITOR, lru="1e4", window=window)
        (ax,) = _drawn_axes(result.plot(str(tmp_path / "t.png")))
        run = [ln for ln in ax.lines if ln.get_linestyle() == "-"][0]
        assert len(run.get_xdata()) == drawn
        # the label still gives the whole trace's hit rate
        assert any(t.get_text() == f"LRU 10k: {result.summary['hit_rate'].iloc[0]:.1%}" for t in ax.texts)


def test_direct_labels_that_would_overlap_are_pushed_apart():
    """Lines ending at the same height (a fleet and its single pod) get labels a readable gap apart."""
    from matplotlib.figure import Figure

    from cachescope.simulate.style import label_ends

    ax = Figure().subplots()
    label_ends(ax, [(1.0, 60.4, "a", "k"), (1.0, 60.4, "b", "k"), (1.0, 59.7, "c", "k"), (1.0, 20.0, "d", "k")], gap=3.5)
    ys = sorted(t.xy[1] for t in ax.texts)
    assert all(b - a >= 3.5 - 1e-9 for a, b in zip(ys, ys[1:])), ys
    assert ys[0] == 20.0  # a label with room stays at its line's end
