"""The hit-rate-over-time picture: one line per policy and capacity, the infinite cache as the bound, and for
a fleet a band from its lowest to its highest pod hit rate."""

from __future__ import annotations

import os

from cachescope.simulate.registry import INFINITE
from cachescope.simulate.labels import human_count, label


def check_plot_path(path: str) -> None:
    """Refuses a file name whose extension matplotlib cannot write (no extension: PNG)."""
    from matplotlib.backend_bases import FigureCanvasBase

    from cachescope.errors import UsageError

    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    supported = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in supported:
        raise UsageError(f"{path}: cannot draw a .{ext} file; --plot writes {', '.join(sorted(supported))}")


def plot_timeline(result, path: str | None = None, title: str | None = None, ax=None):
    """Draws the timeline on `ax` (a new figure if None); saves it to `path` if given; returns the Figure."""
    # A bare Figure rather than pyplot: no global backend is chosen or needed, so this works headless and
    # leaves a notebook's own matplotlib set-up alone (a notebook passes its own `ax` to see the plot inline).
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    tl = result.timeline
    x_col, x_label, x_scale = _x_axis(result)
    if ax is None:
        ax = Figure(figsize=(10, 5.5), dpi=120).subplots()
    fig = ax.figure
    units = dict(enumerate(result.summary["capacity_unit"]))
    fleets = dict(enumerate(zip(result.summary["pods"], result.summary["route"]))) if "pods" in result.summary else {}
    for index, run in tl.groupby("run", sort=True):
        policy, capacity = run["policy"].iloc[0], run["capacity"].iloc[0]
        final = run["cumulative_hit_rate"].iloc[-1] * 100
        is_bound = policy == INFINITE.name
        band = "pod_hit_rate_min" in run and run["pod_hit_rate_min"].notna().any()
        line, = ax.plot(
            run[x_col] / x_scale,
            run["hit_rate"] * 100,
            label=f"{'infinite (bound)' if is_bound else _name(policy, capacity, units[index], fleets.get(index))}: "
                  f"{final:.1f}% overall" + ("; shaded: lowest to highest pod" if band else ""),
            color="0.45" if is_bound else None,
            linestyle="--" if is_bound else "-",
            linewidth=1.2 if is_bound else 1.6,
        )
        if band:
            # A fleet's pods: the band from its lowest to its highest pod hit rate in each window.
            ax.fill_between(run[x_col] / x_scale, run["pod_hit_rate_min"] * 100, run["pod_hit_rate_max"] * 100,
                            color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_ylim(0, 100)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"))
    ax.set_xlabel(x_label)
    ax.set_ylabel(f"hit rate over the last {human_count(result.window)} lookups (%)")
    trace_name = os.path.basename(result.trace.path)
    ax.set_title(title or f"Cache hit rate over time: {trace_name} ({result.trace.lookups:,} lookups)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    for restart in _restart_offsets(result, x_scale):
        ax.axvline(restart, color="0.6", linewidth=0.8, linestyle=":")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def _name(policy, capacity, unit, fleet) -> str:
    name = label(policy, capacity, unit)
    return name if fleet is None else f"{name} x{fleet[0]} pods, {fleet[1]}"


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
