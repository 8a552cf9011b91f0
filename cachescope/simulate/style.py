"""One look for every plot (the report's, --plot's): a palette that stays distinguishable when many runs are
drawn, the bound in grey, restarts and deploys as dotted lines, warm-up as a shaded span."""

from __future__ import annotations

# Okabe-Ito's colour-blind-safe palette, then darker tints: 8 lines before a colour repeats, and with many runs
# the timeline draws small multiples instead of one crowded panel.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
           "#004C7A", "#8F3F00", "#006B4E", "#8A5270"]
BOUND = "0.45"
RC = {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8, "axes.grid": True,
      "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False, "svg.fonttype": "none",
      "legend.frameon": False}


def run_color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def figure(rows: int, cols: int, size, **kw):
    """A bare Figure in the house style (no pyplot: headless, and a notebook's own set-up left alone)."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=size, dpi=120, layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=True, **kw)
    for ax in ([axes] if not hasattr(axes, "ravel") else axes.ravel()):
        _style(ax)
    return fig, axes


def _style(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=8)
    ax.title.set_fontsize(10)
    ax.xaxis.label.set_fontsize(9)
    ax.yaxis.label.set_fontsize(9)


def mark_restarts(ax, xs, label: bool = True) -> None:
    """A dotted line at each restart or deploy."""
    for i, x in enumerate(xs):
        ax.axvline(x, color="0.35", linewidth=0.9, linestyle=":",
                   label="restart / deploy" if i == 0 and label else None)


def mark_warmup(ax, until: float, label: bool = True) -> None:  # noqa: D401
    """The warm-up, from the start until the hit rate is within 5% of the steady rate, shaded."""
    ax.axvspan(0, until, color="#E69F00", alpha=0.13, linewidth=0, label="warm-up" if label else None)


def save(fig, path) -> None:
    """Saves in the house style (text kept as text in SVG); the extension picks PNG, SVG, PDF, ..."""
    import matplotlib

    import os

    # Through a file of our own: given a path, matplotlib's PNG writer drops the error of a failed write (a
    # full disk) and the plot would be reported written.
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".") or "png"
    with matplotlib.rc_context(RC), open(path, "wb") as f:
        fig.savefig(f, format=ext)


def legend_below(ax, handles=None, labels=None, ncols: int = 3) -> None:
    """The legend under the axes, off the data (constrained layout makes room for it)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=ncols, fontsize=8)


def spread(ys: list[float], gap: float) -> list[float]:
    """Label heights near `ys`, at least `gap` apart (direct labels that would overlap are pushed apart)."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = list(ys)
    for a, b in zip(order, order[1:]):
        out[b] = max(out[b], out[a] + gap)
    return out


def label_ends(ax, ends: list, gap: float = 3.5) -> None:
    """Direct labels at the lines' ends, `ends` as (x, y, text, colour), pushed apart where they would overlap
    (y in the axis' units: percent)."""
    for (x, y, text, color), placed in zip(ends, spread([e[1] for e in ends], gap)):
        ax.annotate(text, (x, placed), xytext=(5, 0), textcoords="offset points", fontsize=8, color=color,
                    va="center", annotation_clip=False)
