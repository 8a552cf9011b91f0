"""What a simulation returns: a summary per policy and capacity, the timeline, and their JSON, CSV and plot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cachescope.simulate.registry import INFINITE, POLICIES
from cachescope.trace.readers import TraceInfo


def _rate(hits, lookups):
    return hits / lookups if lookups else 0.0


class SimulationResult:
    """`summary`: one row per policy and capacity. `infinite`: the never-evicting bound.
    `timeline`: one row per policy, capacity and window of `window` lookups."""

    def __init__(self, trace: TraceInfo, unique_keys: int, summary: pd.DataFrame, infinite: dict,
                 timeline: pd.DataFrame, window: int, has_clock: bool, granularity: str):
        self.trace = trace
        self.unique_keys = unique_keys
        self.summary = summary
        self.infinite = infinite
        self.timeline = timeline
        self.window = window
        self.has_clock = has_clock
        self.granularity = granularity

    @classmethod
    def from_simulation(cls, source, sim, window: int, first_ts: int | None) -> "SimulationResult":
        lookups = sim.lookups
        rows = [
            {
                "policy": r["policy"],
                "capacity": r["capacity"],
                "capacity_unit": "entries",
                "lookups": lookups,
                "hits": r["hits"],
                "misses": lookups - r["hits"],
                "hit_rate": _rate(r["hits"], lookups),
                "resident": r["resident"],
            }
            for r in sim.results()
        ]
        bound = rows.pop()  # the infinite cache is always the last run
        infinite = {k: bound[k] for k in ("lookups", "hits", "misses", "hit_rate")}
        ends, ts, hits = sim.timeline()
        timeline = _timeline_frame(rows + [bound], ends, ts, hits, first_ts)
        return cls(source.info, bound["resident"], pd.DataFrame(rows), infinite, timeline, window,
                   ts is not None, source.granularity)

    def to_json(self) -> dict:
        """The document `simulate.py --json` prints (contract in DESIGN.md)."""
        trace = {
            "path": self.trace.path,
            "format": self.trace.format,
            "commands": self.trace.commands,
            "lookups": self.trace.lookups,
            "unique_keys": self.unique_keys,
            "writes": self.trace.writes,
            "deletes": self.trace.deletes,
            "other_commands": self.trace.other_commands,
            "granularity": self.granularity,
        }
        results = [{k: _plain(v) for k, v in row.items()} for row in self.summary.to_dict("records")]
        infinite = {k: _plain(v) for k, v in self.infinite.items()}
        return {"trace": trace, "results": results, "infinite": infinite, "window": self.window}

    def plot(self, path: str | None = None, title: str | None = None, ax=None):
        """Hit rate over time, one line per policy and capacity, on `ax` or a new figure; saved to `path` if
        given. Returns the Figure."""
        from cachescope.simulate.plot import plot_timeline

        return plot_timeline(self, path, title, ax)

    def __repr__(self) -> str:
        return f"<SimulationResult {self.trace.path}: {len(self.summary)} runs, {self.trace.lookups:,} lookups>"


def _timeline_frame(runs: list[dict], ends, ts, hits, first_ts) -> pd.DataFrame:
    window_lookups = np.diff(ends, prepend=np.uint64(0)).astype(np.int64)
    frames = []
    for run, run_hits in zip(runs, hits):
        run_hits = run_hits.astype(np.int64)
        cumulative = np.cumsum(run_hits)
        frame = pd.DataFrame(
            {
                "policy": run["policy"],
                "capacity": run["capacity"] if run["policy"] != INFINITE.name else pd.NA,
                "window": np.arange(len(ends)),
                "end_lookup": ends.astype(np.int64),
                "lookups": window_lookups,
                "hits": run_hits,
                "hit_rate": run_hits / np.maximum(window_lookups, 1),
                "cumulative_hit_rate": cumulative / np.maximum(ends.astype(np.int64), 1),
            }
        )
        if ts is not None:
            frame.insert(4, "ts_ns", ts)
            frame.insert(5, "seconds", (ts - first_ts) / 1e9)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["capacity"] = out["capacity"].astype("Int64")
    return out


def _plain(v):
    """numpy scalars to the Python numbers json.dumps accepts."""
    return v.item() if isinstance(v, np.generic) else v


def label(policy: str, capacity) -> str:
    spec = POLICIES.get(policy, INFINITE)
    return spec.label if capacity is None or pd.isna(capacity) else f"{spec.label} {human_count(capacity)}"


def human_count(n) -> str:
    n = int(n)
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div and (n * 100) % div == 0:  # 100k, 1.5M; not 12.244k
            return f"{n / div:g}{suffix}"
    return f"{n:,}"
