"""The sizing picture: hit rate against capacity (log scale) with the infinite bound, the targets, the answer
and the knee; beside it, the hit rate over time at every capacity (a heatmap)."""

from __future__ import annotations

import os

import numpy as np

from cachescope.simulate.registry import POLICIES
from cachescope.simulate.labels import approx_count, human_bytes, human_count


def plot_curves(result, path: str | None = None, title: str | None = None):
    """Draws the curves and the capacity x time heatmap of the first curve; saves to `path` if given; returns
    the Figure."""
    from cachescope.simulate.style import figure, save

    fig, (curve_ax, heat_ax) = figure(1, 2, (13, 5.5), gridspec_kw={"width_ratios": [1.1, 1]})
    _draw_curves(result, curve_ax)
    _draw_heatmap(result, heat_ax, fig)
    name = os.path.basename(result.trace.path)
    fig.suptitle(title or f"How big a cache: {name} ({result.trace.lookups:,} lookups, "
                 f"{result.unique_keys:,} unique keys)")
    if path is not None:
        save(fig, path)
    return fig


def _fmt_capacity(unit):
    return (lambda v: human_bytes(v)) if unit == "bytes" else (lambda v: approx_count(round(v)))


def _draw_curves(result, ax):
    """Each curve in its colour (sampled ones dashed, with their band), the runs as dots, the bound; each target
    as a line, each answer as a dot on its curve with its size, each knee as a triangle."""
    from matplotlib.ticker import FuncFormatter

    from cachescope.simulate.style import BOUND, legend_below, run_color

    unit = "entries"
    colors = {}
    groups = result.curves.groupby(["policy", "capacity_unit", "method"], sort=False)
    for i, ((policy, unit, method), curve) in enumerate(groups):
        sampled = method != "exact"
        label = f"{POLICIES[policy].label} ({method}" + (f", {curve['sample_rate'].iloc[0]:.2%} of the keys)" if sampled else ")")
        line, = ax.plot(curve["capacity"], curve["hit_rate"] * 100, linewidth=2, label=label, color=run_color(i),
                        linestyle="--" if sampled else "-")
        colors[(policy, method)] = line.get_color()
        if sampled:
            ax.fill_between(curve["capacity"], curve["hit_rate_low"] * 100, curve["hit_rate_high"] * 100,
                            color=line.get_color(), alpha=0.18, linewidth=0)
        if not sampled and result.trace.commands != result.trace.lookups:
            ax.plot(curve["capacity"], curve["command_hit_rate"] * 100, linewidth=1, linestyle="-.",
                    color=line.get_color(), alpha=0.7, label=f"{POLICIES[policy].label}: round trips saved")
    runs = result.summary
    if len(runs) and "pods" in runs:  # a fleet's capacity is per pod: its hit rate is no point of the curve
        runs = runs[runs["pods"].isna() | (runs["pods"] == 1)]
    if len(runs):
        for policy, group in runs[runs["capacity_unit"] == unit].groupby("policy"):
            ax.scatter(group["capacity"], group["hit_rate"] * 100, zorder=3, s=24, color="black", marker="x",
                       label=f"{POLICIES[policy].label} runs")
    ax.axhline(result.infinite["hit_rate"] * 100, color=BOUND, linestyle="--", linewidth=1.2,
               label=f"infinite (bound): {result.infinite['hit_rate']:.1%}")
    fmt = _fmt_capacity(unit)
    sizing = result.sizing.to_dict("records")
    for target in sorted({r["target"] for r in sizing}):
        ax.axhline(target * 100, color="tab:red", linewidth=0.7, alpha=0.5)
        ax.annotate(f"target {target:.0%}", (0, target * 100), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(4, 2), fontsize=8, color="tab:red")
    for index, row in enumerate(sizing):
        color = colors.get((row["policy"], row["method"]), "tab:red")
        if row["reachable"]:
            ax.scatter([row["capacity"]], [row["hit_rate"] * 100], color=color, zorder=4, s=30)
            ax.annotate(fmt(row["capacity"]), (row["capacity"], row["hit_rate"] * 100), textcoords="offset points",
                        xytext=(5, -11 - 9 * (index % 3)), fontsize=8, color=color)
    # A curve too short to have a knee has none (NaN in the frame, which is truthy: test for a number).
    knees = {(r["policy"], r["method"]): r["knee_capacity"] for r in sizing
             if r.get("knee_capacity") is not None and r["knee_capacity"] == r["knee_capacity"]}
    for (policy, method), knee in knees.items():
        curve = result.curves[(result.curves["policy"] == policy) & (result.curves["method"] == method)]
        at = curve.iloc[(curve["capacity"] - knee).abs().argmin()]
        ax.scatter([knee], [at["hit_rate"] * 100], marker="v", s=50, color=colors.get((policy, method)), zorder=4,
                   label=f"knee of {POLICIES[policy].label}: {fmt(knee)}")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v) if v >= 1 else ""))
    ax.set_ylim(0, 100)
    ax.set_xlabel(f"cache capacity per pod ({unit})")
    ax.set_ylabel("hit rate (%)")
    ax.set_title("Hit rate at every capacity")
    ax.grid(True, which="both", alpha=0.25)
    legend_below(ax)


def _draw_heatmap(result, ax, fig):
    heat = result.curve_timeline
    if heat.empty:
        ax.set_axis_off()
        return
    first = heat[heat["policy"] == heat["policy"].iloc[0]]
    unit = first["capacity_unit"].iloc[0]
    grid = first.pivot(index="capacity", columns="window", values="hit_rate").sort_index()
    if "seconds" in first and first["seconds"].notna().all():
        xs = first.drop_duplicates("window").sort_values("window")["seconds"].to_numpy()
        span = xs.max() if len(xs) else 0
        scale, xlabel = (3600.0, "hours") if span >= 7200 else (60.0, "minutes") if span >= 120 else (1.0, "seconds")
        xs = xs / scale
        xlabel = f"time since the first lookup ({xlabel})"
    else:
        xs = first.drop_duplicates("window").sort_values("window")["end_lookup"].to_numpy().astype(float)
        xlabel = "lookups"
    caps = grid.index.to_numpy(dtype=float)
    mesh = ax.pcolormesh(_edges(xs, linear=True), _edges(caps, linear=False), grid.to_numpy() * 100,
                         cmap="viridis", vmin=0, vmax=100, shading="flat")
    ax.set_yscale("log")
    fmt = _fmt_capacity(unit)
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v) if v >= 1 else ""))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"capacity ({unit})")
    ax.set_title(f"Hit rate over time at every capacity (windows of {human_count(result.window)} lookups)")
    fig.colorbar(mesh, ax=ax, label="hit rate (%)")


def _edges(centers: np.ndarray, linear: bool) -> np.ndarray:
    """Cell edges around each value: window ends stand for the window before them; capacities are centres on
    a log axis."""
    if len(centers) == 1:
        return np.array([centers[0] * 0.5, centers[0] * 1.5]) if not linear else np.array([0.0, centers[0]])
    if linear:
        return np.concatenate([[0.0], centers])
    logs = np.log(centers)
    mids = (logs[1:] + logs[:-1]) / 2
    return np.exp(np.concatenate([[logs[0] - (mids[0] - logs[0])], mids, [logs[-1] + (logs[-1] - mids[-1])]]))
