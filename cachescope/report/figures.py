"""The report's figures, drawn with matplotlib in one style and embedded as inline SVG (text stays text:
sharp in print, searchable, no file beside the page)."""

from __future__ import annotations

import io
import re

import numpy as np

from cachescope.simulate.labels import approx_count, label
from cachescope.simulate.style import BOUND, PALETTE, RC, figure, label_ends, run_color, spread

SMALL = (4.2, 3.0)
"""Inches of the figures drawn three abreast: their text comes out about the size of the page's."""


def svg(fig) -> str:
    """The figure as an <svg> element (no XML prologue, no fixed size: it scales with the page)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):  # text as text, in the page's font
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    return text.replace("<svg", '<svg role="img" class="figure"', 1)


def popularity(a) -> str:
    fig, ax = figure(1, 1, SMALL)
    # A few hundred log-spaced ranks draw the same line as every key's (and keep the page small).
    ranks = np.unique(np.geomspace(1, max(len(a.counts), 1), 400).astype(np.int64)) if len(a.counts) else np.zeros(0)
    ax.loglog(ranks, a.counts[ranks - 1] if len(ranks) else [], color=PALETTE[0], linewidth=1.6,
              label="lookups of the key at each rank")
    if a.zipf_s is not None:
        fit = ranks[ranks <= a.zipf_ranks[1]]
        ax.loglog(fit, np.exp(a.zipf_intercept) * fit.astype(float) ** -a.zipf_s, color=PALETTE[1],
                  linestyle="--", linewidth=1.2, label=f"Zipf fit, s = {a.zipf_s:.2f}")
    ax.set_xlabel("key rank (most looked up first)")
    ax.set_ylabel("lookups")
    ax.set_title("Popularity")
    ax.legend(loc="upper right")
    return svg(fig)


def reuse(a) -> str:
    fig, ax = figure(1, 1, SMALL)
    values, unit = (a.reuse_seconds, "seconds") if a.reuse_seconds is not None else (a.reuse_lookups, "lookups")
    if len(values):
        # The share of all repeat lookups back within x; those back at once (x = 0, the same pipeline) sit
        # below the log axis's left end, and the quantiles marked count them, as the section's numbers do.
        shares = np.linspace(0, 1, 401)
        xs = np.quantile(values, shares)
        shown = xs > 0
        ax.semilogx(xs[shown], shares[shown] * 100, color=PALETTE[0], linewidth=1.6)
        for q, name in ((0.5, "median"), (0.9, "90th")):
            v = float(np.quantile(values, q))
            if v <= 0:
                continue
            ax.axvline(v, color=BOUND, linestyle=":", linewidth=1)
            ax.annotate(f"{name}: {_amount(v, unit)}", (v, 100 * q), textcoords="offset points", xytext=(4, -10))
    ax.set_ylim(0, 100)
    ax.set_xlabel(f"time since the key's previous lookup ({unit})")
    ax.set_ylabel("share of repeat lookups (%)")
    ax.set_title("Reuse times")
    return svg(fig)


def per_command(a) -> str:
    fig, ax = figure(1, 1, SMALL)
    counts = a.per_command
    if len(counts):
        top = int(np.quantile(counts, 0.995)) + 1
        ax.hist(np.minimum(counts, top), bins=np.arange(0.5, top + 1.5, max(1, top // 40)), color=PALETTE[0])
        ax.axvline(float(np.mean(counts)), color=PALETTE[1], linestyle="--", linewidth=1.2,
                   label=f"mean {np.mean(counts):.1f}")
        ax.legend(loc="upper right")
    ax.set_xlabel("lookups in one read command (an HMGET's fields)")
    ax.set_ylabel("commands")
    ax.set_title("Lookups per command")
    return svg(fig)


def timeline(result) -> str:
    """The hit rate over time as --plot draws it (small multiples with many runs, warm-up and deploys marked),
    without its title: the section has one."""
    from cachescope.simulate.plot import plot_timeline

    return svg(plot_timeline(result, title=""))


def answer_timeline(result, rows: list[dict]) -> str:
    """Without single runs, the hit rate over time of each sizing answer's own full run (at the capacity it
    answers, a fleet's over all its pods), the bound dashed, warm-up marked."""
    from cachescope.simulate.answer_text import cache_name
    from cachescope.simulate.registry import INFINITE
    from cachescope.simulate.style import legend_below

    fig, ax = figure(1, 1, (10, 4.2))
    from cachescope.simulate.plot import without_short_tail

    runs, tl = without_short_tail(result.answer_timeline, result.window), without_short_tail(result.timeline, result.window)
    clock = result.has_clock and "seconds" in runs
    x, scale, unit = ("seconds", 60.0, "minutes") if clock else ("end_lookup", 1.0, "lookups")
    if clock and float(runs["seconds"].max()) < 120:
        scale, unit = 1.0, "seconds"
    bound = tl[tl["policy"] == INFINITE.name]
    ax.plot(bound[x] / scale, bound["hit_rate"] * 100, color=BOUND, linestyle="--", linewidth=1,
            label="infinite (bound)")
    ends = []
    for i, row in enumerate(rows):
        same = runs["route"].isna() if row["route"] is None else (runs["route"] == row["route"]) & (runs["pods"] == row["pods"])
        at = runs[(runs["policy"] == row["policy"]) & same & (runs["target"] == row["target"])].sort_values("window")
        xs, ys = at[x].to_numpy(dtype=float) / scale, at["hit_rate"].to_numpy(dtype=float) * 100
        name = f"{cache_name(row)} {approx_count(row['capacity'])} (for {row['target']:.0%})"
        ax.plot(xs, ys, color=run_color(i), linewidth=1.5, linestyle="-" if row["route"] is None else "--")
        if len(xs):
            ends.append((xs[-1], ys[-1], name, run_color(i)))
        warm = row.get("warmup_s")
        if clock and warm is not None and warm == warm and len(xs) and row["route"] is None:
            k = min(int(np.searchsorted(xs, warm / scale)), len(xs) - 1)
            ax.plot([xs[k]], [ys[k]], marker="D", markersize=5, color=run_color(i), markeredgecolor="white",
                    linestyle="none", label="end of warm-up" if i == 0 else None)
    label_ends(ax, ends)
    ax.set_ylim(0, 100)
    ax.set_xlim(0, float(bound[x].max()) / scale * 1.25 if len(bound) else None)
    ax.set_xlabel(f"time since the first lookup ({unit})" if clock else "lookups")
    ax.set_ylabel(f"hit rate over the last {result.window:,} lookups (%)")
    legend_below(ax, ncols=3)
    return svg(fig)


def curves(result) -> str:
    from cachescope.simulate.curve_plot import _draw_curves

    fig, ax = figure(1, 1, (8.5, 4.6))
    _draw_curves(result, ax)
    return svg(fig)


def fleets(rows: list[dict]) -> str:
    """Hit rate against pods, one line per policy, capacity and route, each labelled at its end. One pod is
    the single cache whatever the route, so every route's line starts from it."""
    fig, ax = figure(1, 1, (7.5, 3.8))
    lines: dict = {}
    single = {}
    for r in rows:
        if r["pods"] == 1:
            single[(r["policy"], r["capacity"], r["capacity_unit"])] = r
    for r in rows:
        if r["pods"] > 1 or r["route"] == "client":
            lines.setdefault((r["policy"], r["capacity"], r["capacity_unit"], r["route"]), []).append(r)
    ends = []
    for i, ((policy, cap, unit, route), group) in enumerate(sorted(lines.items(), key=lambda kv: str(kv[0]))):
        one = single.get((policy, cap, unit))
        group = sorted(group + ([one] if one is not None else []), key=lambda r: r["pods"])
        xs, ys = [g["pods"] for g in group], [g["hit_rate"] * 100 for g in group]
        ax.plot(xs, ys, marker="o", color=run_color(i), linewidth=1.5,
                linestyle="-" if route in ("entity", "key-pattern") else "--")
        ends.append((xs[-1], ys[-1], f"{label(policy, cap, unit)}, {route}", run_color(i)))
    for (x, y, text, color), placed in zip(ends, spread([e[1] for e in ends], 5.0)):
        ax.annotate(text, (x, y), xytext=(x * 1.12, placed), textcoords="data", fontsize=8, color=color, va="center",
                    ha="left", annotation_clip=False)
    pods = sorted({r["pods"] for r in rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(pods, [str(p) for p in pods])
    ax.set_xlim(min(pods) / 1.3, max(pods) * 4)
    ax.set_xlabel("pods (each with the capacity given)")
    ax.set_ylabel("fleet hit rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Replicated (dashed) and sharded (solid) fleets")
    return svg(fig)


def _amount(v: float, unit: str) -> str:
    if unit == "seconds":
        return f"{v / 60:.1f} min" if v >= 120 else f"{v:.1f} s"
    return approx_count(v) + " lookups"
