"""cachescope: from captured Redis traffic to the hit rate of the in-process cache you would put in front of it.

    >>> import cachescope
    >>> result = cachescope.simulate_trace("sample_traces/feature_store.monitor", lru=["1e4", "1e5"])
    >>> result.summary          # one row per policy and capacity (pandas)
    >>> result.timeline         # hit rate per window of lookups, on the trace's clock
    >>> result.plot("hit_rate.png")
"""

import importlib

from cachescope.errors import CachescopeError, TraceFormatError, UsageError

# The rest of the API is imported on first use (PEP 562): `python parse.py` needs neither pandas nor the
# simulator, and importing them up front would more than double its start-up (0.2 s -> 0.5 s).
_LAZY = {
    "parse_capture": "cachescope.parse.capture_source",
    # With the report's `.report()` and `.anatomy()` on results (api.py puts the two layers together).
    "simulate_trace": "cachescope.api",
    "POLICIES": "cachescope.simulate.registry",
    "SimulationResult": "cachescope.api",
    "TraceInfo": "cachescope.trace.readers",
    "open_trace": "cachescope.trace.readers",
}

__all__ = [
    "CachescopeError",
    "POLICIES",
    "SimulationResult",
    "TraceFormatError",
    "TraceInfo",
    "UsageError",
    "open_trace",
    "parse_capture",
    "simulate_trace",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'cachescope' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
