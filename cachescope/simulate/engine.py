"""Runs the requested policies over a trace in one streaming pass."""

from __future__ import annotations

import sys

from cachescope import _native
from cachescope.errors import TraceFormatError, UsageError
from cachescope.simulate.capacity import parse_capacities
from cachescope.simulate.registry import INFINITE, POLICIES
from cachescope.simulate.result import SimulationResult
from cachescope.trace.readers import TraceSource, open_trace

DEFAULT_WINDOW = 10_000


def simulate_trace(
    trace,
    *,
    format: str | None = None,
    granularity: str = "field",
    window: int = DEFAULT_WINDOW,
    progress: bool = False,
    **capacities,
) -> SimulationResult:
    """Simulates each registered policy named in `capacities` (e.g. `lru="1e4,1e5"` or `lru=[10_000]`) over
    `trace` (a path or an open TraceSource), next to the infinite cache that bounds them all.

    `window` is the number of lookups per timeline point; `progress` draws a bar on stderr for long traces.
    """
    source = trace if isinstance(trace, TraceSource) else open_trace(trace, format, granularity)
    runs = _requested_runs(capacities)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise UsageError(f"window {window!r} must be a whole number of lookups, at least 1")
    sim = _native.Simulation(runs + [(INFINITE.name, 0)], window)
    first_ts = None
    with _progress_bar(source, progress) as bar:
        for keys, ts in source.batches():
            if first_ts is None and ts is not None and len(ts):
                first_ts = int(ts[0])
            try:
                sim.feed(keys, ts)
            except ValueError as e:
                raise TraceFormatError(f"{source.path}: {e}") from None
            bar.update(source.bytes_read - bar.n)
    return SimulationResult.from_simulation(source, sim, window, first_ts)


def _requested_runs(capacities: dict) -> list[tuple[str, int]]:
    unknown = sorted(set(capacities) - set(POLICIES))
    if unknown:
        raise UsageError(f"unknown policy {unknown[0]!r}; registered: {', '.join(POLICIES)}")
    runs = [(name, cap) for name, value in capacities.items() if value is not None for cap in parse_capacities(value)]
    if not runs:
        raise UsageError(f"no policy to simulate: give at least one of {', '.join(s.flag for s in POLICIES.values())}")
    return runs


def _progress_bar(source: TraceSource, enabled: bool):
    from tqdm import tqdm

    # delay: only a read that takes more than a moment shows a bar at all.
    return tqdm(
        total=source.size_bytes,
        unit="B",
        unit_scale=True,
        desc=f"simulating {source.path}",
        file=sys.stderr,
        disable=not enabled,
        delay=1.0,
        leave=False,
    )
