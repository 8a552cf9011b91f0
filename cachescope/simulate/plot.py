"""The hit-rate-over-time picture: one line per policy and capacity against the infinite cache's bound.

Read at a glance with many runs: up to MAX_TOGETHER runs share one panel, each line labelled at its end (no
legend to cover the data); more get a panel each (small multiples on shared axes, the bound in every panel).
The end of each cache's warm-up is a diamond on its line, restarts and deploys are dotted lines; a fleet has a
band from its lowest to its highest pod hit rate. The style is
the one every plot shares (style.py); the file's extension picks PNG, SVG or PDF."""

from __future__ import annotations

import os

import numpy as np

from cachescope.simulate.labels import human_count, label
from cachescope.simulate.registry import INFINITE
from cachescope.simulate.style import BOUND, legend_below, mark_restarts, mark_warmup, run_color

MAX_TOGETHER = 4


def check_plot_path(path: str) -> None:
    """Refuses a file name whose extension matplotlib cannot write (no extension: PNG)."""
    from matplotlib.backend_bases import FigureCanvasBase

    from cachescope.errors import UsageError

    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    supported = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in supported:
        raise UsageError(f"{path}: cannot draw a .{ext} file; --plot writes {', '.join(sorted(supported))}")


def plot_timeline(result, path: str | None = None, title: str | None = None, ax=None):
    """Draws the timeline on `ax` (one panel), or on a new figure (small multiples when there are many runs);
    saves it to `path` if given; returns the Figure."""
    # A bare Figure rather than pyplot: no global backend is chosen or needed, so this works headless and
    # leaves a notebook's own matplotlib set-up alone (a notebook passes its own `ax` to see the plot inline).
    from cachescope.simulate.style import figure, label_ends, save

    # Each cache's overall hit rate, from the whole timeline (the drawing may leave out a short last window).
    finals = result.timeline.groupby("run")["cumulative_hit_rate"].last().to_dict()
    tl = without_short_tail(result.timeline, result.window)
    runs = [r for _, r in tl.groupby("run", sort=True) if r["policy"].iloc[0] != INFINITE.name]
    bound = tl[tl["policy"] == INFINITE.name]
    x, x_label, scale = _x_axis(result)
    panels = ax is None and len(runs) > MAX_TOGETHER
    if panels and "pods" in result.summary and result.summary["pods"].notna().any():
        fig = _fleet_panels(result, runs, bound, finals, x, x_label, scale, title)
        if path is not None:
            save(fig, path)
        return fig
    if ax is not None:
        fig, axes = ax.figure, np.array([ax])
    else:
        cols = 3 if panels else 1
        rows = -(-len(runs) // cols) if panels else 1
        fig, axes = figure(rows, cols, (11, 2.3 * rows + 1.2) if panels else (10, 5.2), sharex=True, sharey=True)
        axes = np.atleast_1d(axes).ravel()
    ends = []  # direct labels, placed apart once every line is drawn
    for i, run in enumerate(runs):
        index = int(run["run"].iloc[0])
        on = axes[i] if panels else axes[0]
        name = f"{_run_name(result, index)}: {finals[index]:.1%}"
        xs, ys = run[x].to_numpy(dtype=float) / scale, run["hit_rate"].to_numpy(dtype=float) * 100
        on.plot(xs, ys, color=run_color(i), linewidth=1.5, label=None if panels or ax is None else name)
        if "pod_hit_rate_min" in run and run["pod_hit_rate_min"].notna().any():
            # A fleet: the band from its lowest to its highest pod hit rate in each window.
            on.fill_between(xs, run["pod_hit_rate_min"].to_numpy(dtype=float) * 100,
                            run["pod_hit_rate_max"].to_numpy(dtype=float) * 100, color=run_color(i), alpha=0.15,
                            linewidth=0, label="lowest to highest pod" if i == 0 and not panels else None)
        if panels:
            on.set_title(name, fontsize=9)
        elif ax is None and len(xs):
            ends.append((xs[-1], ys[-1], name, run_color(i)))
        if panels or i == 0:
            final = finals[int(bound["run"].iloc[0])] if len(bound) else 0
            on.plot(bound[x] / scale, bound["hit_rate"] * 100, color=BOUND, linestyle="--", linewidth=1,
                    label=f"infinite (bound): {final:.1%}" if i == 0 else None)
        warm = _warmup(result, index)
        if warm is not None and len(xs):
            at = min(int(np.searchsorted(xs, warm / scale)), len(xs) - 1)
            on.plot([xs[at]], [ys[at]], marker="D", markersize=5, color=run_color(i), markeredgecolor="white",
                    linestyle="none", label="end of warm-up" if i == 0 else None)
    label_ends(axes[0], ends)
    warmups = [w for w in (_warmup(result, int(r["run"].iloc[0])) for r in runs) if w is not None]
    if warmups and not panels:
        mark_warmup(axes[0], max(warmups) / scale, label=True)
    for i, on in enumerate(axes[: max(len(runs), 1)]):
        mark_restarts(on, _restart_offsets(result, scale), label=i == 0)
        on.set_ylim(0, 100)
        on.set_xlim(left=0)
    for on in axes[len(runs):]:
        on.set_axis_off()
    if ax is None and not panels and len(tl):
        axes[0].set_xlim(0, float(tl[x].max()) / scale * 1.2)  # room for the labels at the lines' ends
    heading = title if title is not None else (f"Cache hit rate over time: {os.path.basename(result.trace.path)} "
                        f"({result.trace.lookups:,} lookups)")
    y_label = f"hit rate over the last {human_count(result.window)} lookups (%)"
    if ax is not None:
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.set_title(heading)
        ax.legend(loc="lower right", fontsize=8)
    elif not panels:
        axes[0].set_xlabel(x_label)
        axes[0].set_ylabel(y_label)
        if heading:
            axes[0].set_title(heading)
        legend_below(axes[0], ncols=4)
    else:
        # The legend in the first empty panel, else under the first panel of the last row.
        handles, labels = axes[0].get_legend_handles_labels()
        spare = axes[len(runs)] if len(axes) > len(runs) else None
        if spare is not None and handles:
            spare.legend(handles, labels, loc="center", fontsize=9)
        elif handles:
            legend_below(axes[len(axes) - 3], handles, labels, ncols=len(handles))
        fig.supxlabel(x_label, fontsize=9)
        fig.supylabel(y_label, fontsize=9)
        if heading:
            fig.suptitle(heading, fontsize=11)
    if path is not None:
        save(fig, path)
    return fig


SHARDED = ("entity", "key-pattern")


def _fleet_panels(result, runs, bound, finals, x, x_label, scale, title):
    """Fleets as small multiples by cache (policy and capacity per pod): in each panel every fleet of that cache
    overlaid, one colour per pods and route across all panels, sharded solid and replicated dashed, each with
    its overall hit rate; the bound in every panel, one legend."""
    from cachescope.simulate.style import figure

    def shape(index):
        row = result.summary.iloc[index]
        return (0, "") if _nan(row.get("pods")) else (int(row["pods"]), str(row["route"]))

    def cache(index):
        row = result.summary.iloc[index]
        return label(row["policy"], row["capacity"], row["capacity_unit"])

    by_cache: dict = {}
    for run in runs:
        by_cache.setdefault(cache(int(run["run"].iloc[0])), []).append(run)
    shapes = sorted({shape(int(r["run"].iloc[0])) for r in runs})
    colors = {s: run_color(i) for i, s in enumerate(shapes)}
    cols = min(3, len(by_cache))
    rows = -(-len(by_cache) // cols)
    fig, axes = figure(rows, cols, (11, 2.6 * rows + 1.4), sharex=True, sharey=True)
    axes = np.atleast_1d(axes).ravel()
    for on, (name, group) in zip(axes, by_cache.items()):
        on.plot(bound[x] / scale, bound["hit_rate"] * 100, color=BOUND, linestyle="--", linewidth=1)
        for run in group:
            index = int(run["run"].iloc[0])
            pods, route = shape(index)
            on.plot(run[x].to_numpy(dtype=float) / scale, run["hit_rate"].to_numpy(dtype=float) * 100,
                    color=colors[(pods, route)], linewidth=1.4, linestyle="-" if route in SHARDED else "--",
                    label=f"x{pods} {route}: {finals[index]:.1%}" if pods else f"one cache: {finals[index]:.1%}")
        on.set_title(f"{name} per pod", fontsize=9)
        on.legend(loc="lower right", fontsize=7)
        on.set_ylim(0, 100)
        on.set_xlim(left=0)
        mark_restarts(on, _restart_offsets(result, scale), label=False)
    for on in axes[len(by_cache):]:
        on.set_axis_off()
    fig.supxlabel(x_label, fontsize=9)
    fig.supylabel(f"hit rate over the last {human_count(result.window)} lookups (%)", fontsize=9)
    heading = title if title is not None else (f"Fleets' hit rate over time: {os.path.basename(result.trace.path)} "
                                               "(sharded solid, replicated dashed; the bound grey)")
    if heading:
        fig.suptitle(heading, fontsize=11)
    return fig


def without_short_tail(timeline, window: int):
    """The timeline less its last window when that holds under half a window's lookups: the trace ended
    inside it, and a rate over a handful of lookups would draw a spike that is no change of the traffic."""
    if timeline.empty or "lookups" not in timeline:
        return timeline
    last = timeline["window"].max()
    short = (timeline["window"] == last) & (timeline["lookups"] < window / 2) & (last > 0)
    return timeline[~short]


def _run_name(result, index: int) -> str:
    row = result.summary.iloc[index]
    name = label(row["policy"], row["capacity"], row["capacity_unit"])
    if "pods" in result.summary and not _nan(row["pods"]):
        name += f" x{int(row['pods'])} pods, {row['route']}"
    return name


def _warmup(result, index: int):
    """Seconds the run at `index` of the summary took to warm up, or None."""
    if not result.has_clock or "warmup_s" not in result.summary or index >= len(result.summary):
        return None
    w = result.summary["warmup_s"].iloc[index]
    return None if _nan(w) else float(w)


def _nan(x) -> bool:
    try:
        return bool(np.isnan(float(x)))
    except (TypeError, ValueError):
        return x is None


def _restart_offsets(result, x_scale):
    """Where the caches restarted, or a rolling deployment began, on the time axis (a dotted line each)."""
    if not result.has_clock or "restarts" not in result.summary or not len(result.summary):
        return []
    times = set(result.restart_times)
    if "deploy_times" in result.summary:
        times |= {t for ts in result.summary["deploy_times"] if isinstance(ts, list) for t in ts}
    return [(t - result.first_ts) / 1e9 / x_scale for t in sorted(times)]


def _x_axis(result):
    """Minutes on the trace's clock when it has one, else lookups (in millions for long traces)."""
    if result.has_clock:
        span = result.timeline["seconds"].max()
        if span >= 2 * 3600:
            return "seconds", "time since the first lookup (hours)", 3600.0
        if span >= 120:
            return "seconds", "time since the first lookup (minutes)", 60.0
        return "seconds", "time since the first lookup (seconds)", 1.0
    if result.trace.lookups >= 2_000_000:
        return "end_lookup", "lookups (millions)", 1e6
    return "end_lookup", "lookups", 1.0
