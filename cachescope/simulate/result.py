"""What a simulation returns: a summary per policy and capacity, the timeline, and their JSON, CSV and plot."""

from __future__ import annotations

import numpy as np

from cachescope.simulate.registry import INFINITE
from cachescope.trace.readers import TraceInfo

# pandas is imported inside the functions that build frames: `simulate.py --help` and the modules the
# commands import at start-up need none of it (it was most of `simulate.py --help`'s 0.35 s); so in curve.py,
# sizing.py.


def _rate(hits, lookups):
    return hits / lookups if lookups else 0.0


class SimulationResult:
    """`summary`: one row per policy and capacity. `infinite`: the never-evicting bound.
    `timeline`: one row per policy, capacity and window of `window` lookups.

    `.report(path)` and `.anatomy()` are the report's (cachescope/report/api.py), which reads results: this
    module never imports it. `cachescope.simulate_trace` (cachescope/api.py) gives results them."""

    def __init__(self, trace: TraceInfo, unique_keys: int, summary, infinite: dict, timeline, window: int,
                 has_clock: bool, granularity: str, first_ts: int | None = None, restart_times: list[int] = (),
                 params: dict | None = None):
        """`summary`: a DataFrame, or its rows as dicts; `timeline`: a DataFrame, or a function that builds
        it. Either is made a DataFrame when first asked for: printing the summary of a trace without a clock
        needs no pandas (and so no 0.3 s importing it)."""
        self.params = dict(params or {})
        """{policy: {parameter: value}} of each simulated policy that has parameters."""
        self.first_ts = first_ts
        self.restart_times = list(restart_times)
        self.trace = trace
        self.unique_keys = unique_keys
        self.unique_keys_high = unique_keys
        """At most this many unique keys: `unique_keys` itself, or the top of its band when the infinite bound is
        estimated (`infinite["estimated"]`, estimated_bound.py)."""
        self._summary = summary
        self.infinite = infinite
        self._timeline = timeline
        self.window = window
        self.has_clock = has_clock
        self.granularity = granularity
        self._curves = self._curve_timeline = self._sizing = None
        # Sampled curves alone, as columns (curve.sampled_columns): `--json` reads them as they are, and the
        # `curves` frame is built from them only when asked for, so that a sampled curve's run needs no pandas
        # (most of its start-up).
        self._sampled_curves: list[dict] | None = None
        self.key_pattern = None
        # The counters of a capture parsed on the fly (empty for a trace file): simulate.py reports them.
        self.capture_stats: dict = {}
        self.live_end: str | None = None
        """What ended a live input early (SIGINT, SIGTERM, --duration); None when it ended by itself."""
        # What reading each input found (a capture's losses, a text trace's lines and other commands), one dict
        # per input as parse.py reports it.
        self.input_reports: list = []
        self.unmatched_shards = 0
        """With the key-pattern route: events whose key the pattern did not match (each its own shard)."""
        self.request: dict = {}
        """What simulate_trace was asked (inputs, write mode, overhead, targets, pods, ...): the report's
        assumptions."""
        self.fleet_sizes: list = []
        """Fleets asked for with curves but no capacity: each curve policy's size per pod and why
        (fleets_at_answer.py)."""
        self.best: list = []
        """Per target, the cheapest cache or fleet that reaches it (a `sizing` row), or the highest hit rate
        with `reached` false (answers.py)."""
        self.answer_timeline = None
        """The hit rate over time of each sizing answer's own full run (answers.py); None without one."""
        self.confirming_passes = 0
        """Passes over the trace that confirmed the sizing answers by full runs."""
        self.same_trace: dict | None = None
        """simulate_trace's arguments that read the same trace with the same options (no caches): the report
        simulates the cache it chose once more with them."""

    @property
    def summary(self):
        """One row per policy and capacity (pandas)."""
        if isinstance(self._summary, list):
            import pandas as pd

            self._summary = pd.DataFrame(self._summary)
        return self._summary

    @summary.setter
    def summary(self, frame) -> None:
        self._summary = frame

    def summary_records(self) -> list[dict]:
        """The summary's rows, as `summary.to_dict("records")` gives them; without building the frame when
        every row has the same columns (no cell to fill with NaN)."""
        rows = self._summary
        if isinstance(rows, list) and all(r.keys() == rows[0].keys() for r in rows):
            return [dict(r) for r in rows]
        return self.summary.to_dict("records")

    @property
    def timeline(self):
        """One row per policy, capacity and window of `window` lookups (pandas)."""
        if callable(self._timeline):
            self._timeline = self._timeline()
        return self._timeline

    @timeline.setter
    def timeline(self, frame) -> None:
        self._timeline = frame

    @property
    def curves(self):
        """One row per curve and capacity (`policy`, `capacity_unit`, `method`, `sample_rate`, `capacity`,
        `hits`, `hit_rate`, `round_trips_saved`, `command_hit_rate`, ...)."""
        if self._curves is None and self._sampled_curves is not None:
            import pandas as pd

            frames = [pd.DataFrame(c) for c in self._sampled_curves if len(c["capacity"])]
            self._curves = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return self._frame("_curves")

    @curves.setter
    def curves(self, frame) -> None:
        self._curves, self._sampled_curves = frame, None

    @property
    def curve_timeline(self):
        """Hits per timeline window at the curve's timeline capacities: the capacity x time heatmap."""
        return self._frame("_curve_timeline")

    @curve_timeline.setter
    def curve_timeline(self, frame) -> None:
        self._curve_timeline = frame

    @property
    def sizing(self):
        """One row per curve and target hit rate: the smallest capacity that reaches it."""
        return self._frame("_sizing")

    @sizing.setter
    def sizing(self, frame) -> None:
        self._sizing = frame

    def has_curves(self) -> bool:
        if self._curves is None and self._sampled_curves is not None:
            return any(len(c["capacity"]) for c in self._sampled_curves)
        return self._curves is not None and len(self._curves) > 0

    def _frame(self, name: str):
        """The frame held in `name`, an empty one until it is set."""
        if getattr(self, name) is None:
            import pandas as pd

            setattr(self, name, pd.DataFrame())
        return getattr(self, name)

    @classmethod
    def from_simulation(cls, source, sim, window: int, first_ts: int | None, runs,
                        params: dict | None = None, fleet_units: list[str] = (),
                        refresh_features: dict | None = None) -> "SimulationResult":
        """Rows for the single runs (`runs`: (policy, Capacity)), then for the fleets (`fleet_units`: each
        fleet's capacity unit), then the infinite bound apart. With `refresh_features` (the refresh schedule's
        {field hash: (feature, field id)}), each row has `refresh_by_feature`."""
        from cachescope.simulate.fleet import fleet_columns, fleet_totals
        from cachescope.simulate.refresh_cost import refresh_by_feature

        native = sim.results()
        estimated = getattr(sim, "distinct_reads", None)  # a Dask sweep's combined tasks keep the exact bound
        if estimated is None:
            bound, bound_window_hits, band = native.pop(), None, {}  # the infinite cache is always the last run
        else:
            from cachescope.simulate.estimated_bound import estimated_bound

            bound, bound_window_hits = estimated_bound(sim.lookups, estimated, window,
                                                       getattr(sim, "served_counts", None))
            band = bound.pop("band")
        rows = [_summary_row(r, cap.unit) for r, (_, cap) in zip(native, runs)]
        fleets = sim.fleets()
        hosts = getattr(source, "hosts", [])
        rows += [{**_summary_row(fleet_totals(f), unit), **fleet_columns(f, unit, hosts)}
                 for f, unit in zip(fleets, fleet_units)]
        if refresh_features:
            for row, pods in zip(rows, [[r] for r in native] + [f["per_pod"] for f in fleets]):
                row["refresh_by_feature"] = refresh_by_feature(pods, refresh_features)
        infinite = {k: v for k, v in _summary_row(bound, "entries").items()
                    if k in ("lookups", "hits", "misses", "hit_rate", "commands", "commands_served",
                             "command_hit_rate", "round_trips", "round_trips_saved", "round_trips_saved_rate")}
        infinite.update(band)
        ends, ts, hits = sim.timeline()
        if bound_window_hits is not None:
            hits = np.vstack([hits, bound_window_hits.astype(hits.dtype)[None, :]])
        if fleets:
            hits = np.vstack([hits[:-1], *[np.asarray(f["window_hits"], dtype=hits.dtype) for f in fleets], hits[-1:]])
        runs_and_bound = rows + [dict(bound, policy=INFINITE.name)]
        factors = {i: f.get("time_factor", 1) for i, f in enumerate(fleets, start=len(native))}
        spreads = {i: f["window_spread"] for i, f in enumerate(fleets, start=len(native))}
        timeline = lambda: _what_ifs_on_their_clock(  # noqa: E731
            _timeline_frame(runs_and_bound, ends, ts, hits, first_ts, spreads), factors, first_ts)
        restarts = list(bound["restart_times"])  # the same for every run
        if ts is not None and rows:
            from cachescope.simulate.recovery import recovery_columns

            windows = _window_rates(ends, ts, hits[: len(rows)], first_ts, factors)
            for row, columns in zip(rows, recovery_columns(windows, rows, first_ts, restarts)):
                row.update(columns)
        summary = rows
        unique = sim.unique_reads if sim.unique_reads is not None else bound["resident"]
        # An estimated bound's unique keys are an estimate too: what needs a size that holds every key (the
        # curve's last useful capacity, the sizing's widest bracket) takes the top of its band.
        unique_high = band.get("misses_high", unique)
        result = cls(source.info, unique, summary, infinite, timeline, window, ts is not None,
                     source.granularity, first_ts, restarts, params)
        result.unique_keys_high = unique_high
        result.key_pattern = getattr(source, "key_pattern", None)
        result.unmatched_shards = getattr(source, "unmatched_shards", 0)
        return result

    def add_curves(self, native: list[dict], unit: str, targets: list[float], entry_overhead: int) -> None:
        """Fills `curves`, `curve_timeline` and `sizing` from the core's curve counts."""
        from cachescope.simulate.curve import curve_frames, sampled_columns, sampled_frames

        # No cache beats the infinite one: a sampled curve is cut at its hit rate (the top of its band when
        # it is estimated).
        bound = self.infinite.get("hit_rate_high", self.infinite["hit_rate"])
        sampled_args = ([c for c in native if c["method"] != "exact"], unit, self.unique_keys_high,
                        self.infinite["lookups"], bound)
        if not targets and all(c["method"] != "exact" for c in native):
            # Sampled curves alone, nothing to size: their frames wait until something asks (`curves`).
            self._curves, self._sampled_curves = None, sampled_columns(*sampled_args)
            return
        import pandas as pd
        from cachescope.simulate.sizing import add_warmup, sizing_frame

        exact, heat = curve_frames(native, unit, self.unique_keys)
        sampled = sampled_frames(*sampled_args)
        self.curves = pd.concat([f for f in (exact, sampled) if len(f)], ignore_index=True) \
            if len(exact) or len(sampled) else pd.DataFrame()
        if len(heat):
            bound = self.timeline[self.timeline["policy"] == INFINITE.name]
            meta = bound[[c for c in ("window", "end_lookup", "lookups", "ts_ns", "seconds") if c in bound]]
            heat = heat.merge(meta, on="window", how="left")
            heat["hit_rate"] = heat["hits"] / heat["lookups"].clip(lower=1)
        self.curve_timeline = heat
        if targets:
            lookups = self.infinite["lookups"]
            looked = int(self.curves["bytes_looked_up"].max()) if "bytes_looked_up" in self.curves else 0
            per_entry = (looked / lookups if lookups else 0.0) + entry_overhead if looked else None
            self.sizing = sizing_frame(self.curves, targets, self.infinite["hit_rate"], self.duration_s(), per_entry)
            if self.has_clock and self.first_ts is not None:
                self.sizing = add_warmup(self.sizing, self.curve_timeline, [self.first_ts, *self.restart_times])

    def duration_s(self) -> float | None:
        """Seconds from the first to the last lookup, when the trace has a clock."""
        if not self.has_clock or "ts_ns" not in self.timeline or self.first_ts is None or self.timeline.empty:
            return None
        span = (int(self.timeline["ts_ns"].max()) - self.first_ts) / 1e9
        return span if span > 0 else None

    @property
    def per_pod(self) -> pd.DataFrame:
        """One row per pod of every fleet: its fleet (policy, capacity, pods, route), then `pod` (and `client`
        under the client route), lookups, hits, hit_rate, resident. Empty without fleets."""
        import pandas as pd
        if "per_pod" not in self.summary:
            return pd.DataFrame()
        fleet = ["policy", "capacity", "capacity_unit", "pods", "route"]
        rows = [{**{k: row[k] for k in fleet}, **pod} for row in self.summary.to_dict("records")
                for pod in row["per_pod"]]
        return pd.DataFrame(rows)

    def to_json(self) -> dict:
        """The document `simulate.py --json` prints (contract in DESIGN.md)."""
        trace = {
            "path": self.trace.path,
            "format": self.trace.format,
            "commands": self.trace.commands,
            "lookups": self.trace.lookups,
            "unique_keys": self.unique_keys,
            **({"unique_keys_estimated": True, "unique_keys_low": self.infinite["misses_low"],
                "unique_keys_high": self.infinite["misses_high"]} if self.infinite.get("estimated") else {}),
            "writes": self.trace.writes,
            "deletes": self.trace.deletes,
            "other_commands": self.trace.other_commands,
            "granularity": self.granularity,
            "error_replies": dict(self.trace.error_replies),
            "error_lookups": self.trace.error_lookups,
            "lookups_by_server": dict(self.trace.lookups_by_server),
            "round_trips_known": self.trace.round_trips_known,
        }
        if getattr(self.trace, "zero_size_requests", 0):
            trace["zero_size_requests"] = self.trace.zero_size_requests
        if self.key_pattern is not None:
            trace["key_pattern"] = self.key_pattern
            trace["unmatched_shard_keys"] = self.unmatched_shards
        results = [{k: _plain(v) for k, v in row.items() if not _missing(v)} for row in self.summary_records()]
        infinite = {k: _plain(v) for k, v in self.infinite.items()}
        doc = {"trace": trace, "results": results, "infinite": infinite, "window": self.window, "params": self.params}
        if self._curves is None and self._sampled_curves is not None:
            if self.has_curves():
                doc["curves"] = _sampled_curve_docs(self._sampled_curves)
        elif self.has_curves():
            from cachescope.simulate.sizing import CURVE_KEYS

            head = (*CURVE_KEYS, "sample_rate", "salts")
            doc["curves"] = [
                {"policy": policy, "pods": int(pods), "route": None if _missing(route) else route,
                 "capacity_unit": unit, "method": method,
                 "sample_rate": float(group["sample_rate"].iloc[0]),
                 **({"salts": int(group["salts"].iloc[0])} if method != "exact" else {}),
                 "points": [{k: _plain(v) for k, v in row.items() if k not in head and not _missing(v)}
                            for row in group.to_dict("records")]}
                for (policy, pods, route, unit, method), group in self.curves.groupby(CURVE_KEYS, sort=False,
                                                                                      dropna=False)
            ]
        if self._sizing is not None and len(self._sizing):
            doc["sizing"] = [_sizing_json(row) for row in self.sizing.to_dict("records")]
        if self.best:
            doc["best"] = [_sizing_json(row) for row in self.best]
        if self.fleet_sizes:
            doc["fleet_sizes"] = self.fleet_sizes
        return doc

    def plot(self, path: str | None = None, title: str | None = None, ax=None):
        """Hit rate over time, one line per policy and capacity, on `ax` or a new figure; saved to `path` if
        given. With curves (and no `ax`), the curves against capacity and their heatmap over time instead.
        Returns the Figure."""
        if len(self.curves) and ax is None:
            from cachescope.simulate.curve_plot import plot_curves

            return plot_curves(self, path, title)
        from cachescope.simulate.plot import plot_timeline

        return plot_timeline(self, path, title, ax)

    def __repr__(self) -> str:
        return f"<SimulationResult {self.trace.path}: {len(self.summary)} runs, {self.trace.lookups:,} lookups>"


_COUNTERS = ("evictions", "invalidations", "refresh_evictions", "refresh_refetches", "expirations", "stale_reads",
             "uncacheable", "restarts")


def _summary_row(r: dict, unit: str) -> dict:
    """One run's numbers, each with its unit: a byte capacity also gets a byte hit rate, an entry capacity not."""
    row = {
        "policy": r["policy"],
        "capacity": r["capacity"],
        "capacity_unit": unit,
        "lookups": r["lookups"],
        "hits": r["hits"],
        "misses": r["lookups"] - r["hits"],
        "hit_rate": _rate(r["hits"], r["lookups"]),
    }
    if unit == "bytes":
        row["bytes_looked_up"] = r["bytes_looked_up"]
        row["bytes_hit"] = r["bytes_hit"]
        row["byte_hit_rate"] = _rate(r["bytes_hit"], r["bytes_looked_up"])
    # Per command (an HMGET and all its fields) and per round trip (a batch: the commands a connection sent
    # before waiting for replies): a pipeline of 13 HMGETs is 13 commands and one round trip.
    row["commands"] = r["commands"]
    row["commands_served"] = r["commands_served"]
    row["command_hit_rate"] = _rate(r["commands_served"], r["commands"])
    row["round_trips"] = r["round_trips"]
    row["round_trips_saved"] = r["round_trips_saved"]
    row["round_trips_saved_rate"] = _rate(r["round_trips_saved"], r["round_trips"])
    row["resident"] = r["resident"]
    if "resident_bytes_peak" in r:
        row["resident_bytes_peak"] = r["resident_bytes_peak"]
    row.update({k: r.get(k, 0) for k in _COUNTERS})  # a fleet of no pods has none
    return row


def _timeline_frame(runs: list[dict], ends, ts, hits, first_ts, spreads: dict) -> pd.DataFrame:
    """One row per run and window; a fleet's rows also have the lowest, median and highest hit rate among its
    pods in the window (`spreads`, by run index), NaN for other runs."""
    import pandas as pd
    window_lookups = _window_lookups(ends)
    frames = []
    for index, (run, run_hits) in enumerate(zip(runs, hits)):
        run_hits = run_hits.astype(np.int64)
        cumulative = np.cumsum(run_hits)
        frame = pd.DataFrame(
            {
                "run": index,  # the summary row (the infinite cache: one past the last)
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
        spread = spreads.get(index)
        if spread is not None and len(spread) == len(frame):
            for k, name in enumerate(("pod_hit_rate_min", "pod_hit_rate_median", "pod_hit_rate_max")):
                frame[name] = spread[:, k].astype(float)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["capacity"] = out["capacity"].astype("Int64")
    return out


_NULLABLE = ("route", "capacity")
"""Sizing keys the contract keeps as null rather than leaving out (a single cache's route; an answer out of
reach)."""


_WHOLE = ("pods", "capacity", "memory_bytes", "fleet_memory_bytes", "capacity_bytes", "estimate_capacity",
          "knee_capacity", "passes", "seeds", "warmup_capacity")
"""Sizing keys that are whole numbers (a frame with gaps holds them as floats)."""


def _sizing_json(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if _missing(v):
            if k in _NULLABLE:
                out[k] = None
            continue
        out[k] = int(v) if k in _WHOLE else _plain(v)
    return out


def _sampled_curve_docs(columns: list[dict]) -> list[dict]:
    """`to_json`'s curves from sampled curves' columns (curve.sampled_columns), as it makes them from the frame
    (grouped by CURVE_KEYS in order of appearance, a point per row), without building it."""
    from cachescope.simulate.sizing import CURVE_KEYS

    head = (*CURVE_KEYS, "sample_rate", "salts")
    docs: dict[tuple, dict] = {}
    for c in (c for c in columns if len(c["capacity"])):
        policy, pods, route, unit, method = (c[k] for k in CURVE_KEYS)
        doc = docs.setdefault((policy, pods, route, unit, method), {
            "policy": policy, "pods": int(pods), "route": None if _missing(route) else route,
            "capacity_unit": unit, "method": method, "sample_rate": float(c["sample_rate"]),
            **({"salts": int(c["salts"])} if method != "exact" else {}), "points": []})
        point_keys = [k for k in c if k not in head]
        for i in range(len(c["capacity"])):
            row = {k: c[k][i] if isinstance(c[k], (np.ndarray, list)) else c[k] for k in point_keys}
            doc["points"].append({k: _plain(v) for k, v in row.items() if not _missing(v)})
    return list(docs.values())


def _plain(v):
    """numpy scalars to the Python numbers json.dumps accepts."""
    return v.item() if isinstance(v, np.generic) else v


def _missing(v) -> bool:
    """A cell a row does not have (a byte hit rate of an entry capacity): left out of JSON, not null. A frame
    fills such a cell with NaN (or None); rows kept as dicts simply lack it. No pandas: `--json` of a trace
    without curves imports none."""
    return v is None or (isinstance(v, (float, np.floating)) and v != v)


def _window_lookups(ends) -> np.ndarray:
    """Lookups in each timeline window, from the index of each window's last lookup."""
    return np.diff(ends, prepend=np.uint64(0)).astype(np.int64)


def _window_rates(ends, ts, hits, first_ts, factors: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    """(time of each window's end, hit rate in it) of each run, as the timeline frame has them (a what-if's
    on its own clock, `_what_ifs_on_their_clock`), without building the frame."""
    lookups = np.maximum(_window_lookups(ends), 1)
    ts = np.asarray(ts, dtype=np.int64)
    windows = []
    for index, run_hits in enumerate(hits):
        factor = factors.get(index, 1)
        times = _on_own_clock(ts, first_ts, factor) if factor > 1 else ts
        windows.append((times, run_hits.astype(np.int64) / lookups))
    return windows


def _on_own_clock(ts, first_ts: int, factor: int):
    """Times on the clock of a sharded what-if, which runs `factor` times faster than the trace's."""
    return first_ts + (ts - first_ts) // factor


def _what_ifs_on_their_clock(timeline, factors: dict, first_ts):
    """A sharded what-if's pods run on a clock `factor` times faster than the trace's: its timeline too."""
    if first_ts is None or "ts_ns" not in timeline:
        return timeline
    for index, factor in factors.items():
        if factor > 1:
            mine = timeline["run"] == index
            timeline.loc[mine, "ts_ns"] = _on_own_clock(timeline.loc[mine, "ts_ns"], first_ts, factor)
            timeline.loc[mine, "seconds"] = timeline.loc[mine, "seconds"] / factor
    return timeline
