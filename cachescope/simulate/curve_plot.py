"""The sizing picture: hit rate against capacity (log scale) with the infinite bound, the targets, the answer
and the knee; beside it, the hit rate over time at every capacity (a heatmap)."""

from __future__ import annotations

import os

import numpy as np

from cachescope.simulate.answer_text import cache_name
from cachescope.simulate.labels import approx_count, human_bytes, human_count
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.sizing import CURVE_KEYS, records, route_of

REPLICATED = ("random", "round-robin", "client")
"""Routes whose pods each see a share of the requests, every key anywhere: drawn dashed."""


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
    """Each policy in its colour: the single cache thick, sharded fleets solid and replicated ones dashed (the
    capacity per pod on the x axis), sampled curves dashed with their band; round trips saved as a thin
    dash-dot line under the single cache's; the runs as crosses, the bound, each target as a line, each answer
    as a dot labelled with its cache and size at the right of the axis, beside its own target (labels pushed
    apart, a leader line back to the dot), each knee as a triangle."""
    from matplotlib.ticker import FuncFormatter

    from cachescope.simulate.style import BOUND, legend_below, run_color

    unit = "entries"
    policy_colors: dict = {}
    trips = result.trace.commands != result.trace.lookups and _has_batches(result)
    lowest = []  # where each curve leaves zero
    for (policy, pods, route, unit, method), curve in result.curves.groupby(CURVE_KEYS, sort=False, dropna=False):
        route = route_of({"route": route})
        color = policy_colors.setdefault(policy, run_color(len(policy_colors)))
        sampled = method != "exact"
        name = cache_name({"policy": policy, "pods": pods, "route": route})
        label = f"{name} ({method}" + (f", {curve['sample_rate'].iloc[0]:.2%} of the keys)" if sampled else ")")
        style = "--" if sampled or route in REPLICATED else "-"
        ax.plot(curve["capacity"], curve["hit_rate"] * 100, linewidth=2.2 if route is None else 1.3, label=label,
                color=color, linestyle=style, alpha=1 if route is None else 0.85)
        above = curve[curve["hit_rate"] > 0.005]
        if len(above):
            lowest.append(float(above["capacity"].min()))
        if sampled:
            ax.fill_between(curve["capacity"], curve["hit_rate_low"] * 100, curve["hit_rate_high"] * 100,
                            color=color, alpha=0.18, linewidth=0)
        if not sampled and route is None and trips:
            ax.plot(curve["capacity"], curve["round_trips_saved_rate"] * 100, linewidth=1, linestyle="-.",
                    color=color, alpha=0.7, label=f"{name}: round trips saved")
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
    sizing = [r for r in records(result.sizing) if r["capacity_unit"] == unit]
    for target in sorted({r["target"] for r in sizing}):
        ax.axhline(target * 100, color="tab:red", linewidth=0.7, alpha=0.5)
        ax.annotate(f"target {target:.0%}", (0, target * 100), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(4, 2), fontsize=8, color="tab:red")
    _label_answers(ax, [r for r in sizing if r.get("reached") and r.get("capacity") is not None], policy_colors, fmt)
    knees = {(r["policy"], r["pods"], r["route"]): r["knee_capacity"] for r in sizing
             if r.get("knee_capacity") is not None and r["knee_capacity"] == r["knee_capacity"] and r["route"] is None}
    for (policy, _, _), knee in knees.items():
        curve = result.curves[(result.curves["policy"] == policy) & result.curves["route"].isna()]
        at = curve.iloc[(curve["capacity"] - knee).abs().argmin()]
        ax.scatter([knee], [at["hit_rate"] * 100], marker="v", s=50, color=policy_colors.get(policy), zorder=4,
                   label=f"knee of {POLICIES[policy].label}: {fmt(knee)}")
    ax.set_xscale("log")
    if lowest:  # nothing is decided where every curve is still at zero
        ax.set_xlim(left=max(min(lowest) / 1.5, 0.8))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v) if v >= 1 else ""))
    ax.set_ylim(0, 100)
    ax.set_xlabel(f"cache capacity per pod ({unit})")
    ax.set_ylabel("hit rate (%)")
    ax.set_title("Hit rate at every capacity")
    ax.grid(True, which="both", alpha=0.25)
    legend_below(ax)


def _label_answers(ax, answers: list[dict], colors: dict, fmt) -> None:
    """A dot at each answer and, at the right of the axis, its cache and size at its own target's height,
    labels pushed apart so that none covers another, with a leader line to the dot."""
    from cachescope.simulate.style import spread

    answers = sorted(answers, key=lambda r: (r["target"], r["capacity"]))
    wanted = [r["target"] * 100 for r in answers]
    # A line of 8-point text in hit-rate points (the axis spans 0-100 over about 70% of the figure's height).
    line = 100 * 8 * 1.5 / (ax.figure.get_figheight() * 72 * 0.7)
    heights = spread(wanted, line)
    if heights:  # centred on the targets rather than all pushed above them
        shift = (sum(heights) - sum(wanted)) / len(heights)
        heights = [h - shift for h in heights]
    for row, height in zip(answers, heights):
        color = colors.get(row["policy"], "tab:red")
        point = (row["capacity"], row["hit_rate"] * 100)
        ax.scatter([point[0]], [point[1]], color=color, zorder=4, s=30, edgecolors="white", linewidths=0.6)
        ax.annotate(f"{cache_name(row)}: {fmt(row['capacity'])} for {row['target']:.0%}", point,
                    xytext=(1.01, height), textcoords=("axes fraction", "data"), fontsize=8, color=color,
                    va="center", annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": color, "linewidth": 0.6, "alpha": 0.6})


def _has_batches(result) -> bool:
    inf = result.infinite
    return inf.get("round_trips", inf.get("commands")) != inf.get("commands")


def _draw_heatmap(result, ax, fig):
    heat = result.curve_timeline
    if heat.empty:
        ax.set_axis_off()
        return
    first = heat[(heat["policy"] == heat["policy"].iloc[0]) & heat["route"].isna()] if "route" in heat else \
        heat[heat["policy"] == heat["policy"].iloc[0]]
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
