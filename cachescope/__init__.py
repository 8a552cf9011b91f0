"""cachescope: from captured Redis traffic to the hit rate of the in-process cache you would put in front of it.

    >>> import cachescope
    >>> result = cachescope.simulate_trace("sample_traces/feature_store.monitor", lru=["1e4", "1e5"])
    >>> result.summary          # one row per policy and capacity (pandas)
    >>> result.timeline         # hit rate per window of lookups, on the trace's clock
    >>> result.plot("hit_rate.png")
"""

from cachescope.errors import CachescopeError, TraceFormatError, UsageError
from cachescope.parse.capture_source import parse_capture
from cachescope.simulate.engine import simulate_trace
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.result import SimulationResult
from cachescope.trace.readers import TraceInfo, open_trace

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
