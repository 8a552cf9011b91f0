"""What the report gives a result in Python: `result.report(path)` and `result.anatomy()`. The report reads
results and the result module never imports the report, so these are the report's own functions, set on
`SimulationResult` by `give_results_their_report` (cachescope/api.py, the API `import cachescope` gives)."""

from __future__ import annotations

from cachescope.errors import UsageError
from cachescope.report.anatomy import anatomy_of
from cachescope.report.features import read_feature_names
from cachescope.report.page import write_report


def anatomy(result, feature_names=None, capacity: int | None = None):
    """The traffic's anatomy (reads the trace again): `.counts` (lookups per key, most popular first),
    `.zipf_s`, `.one_hit_keys`, `.reuse_seconds` / `.reuse_lookups`, `.per_command`, and the frames
    `.by_type` (per key prefix) and `.by_feature` (per field, named by `feature_names`: a file of names or a
    list), with LRU's hit rate at `capacity` entries when given. The report's anatomy section, as data."""
    names = None if feature_names is None else read_feature_names(feature_names)
    found, why = anatomy_of(result, capacity, names)
    if found is None:
        raise UsageError(f"no anatomy: {why}")
    return found


def report(result, path: str, feature_names=None, title: str | None = None) -> str:
    """Writes the whole answer as one self-contained HTML page to `path` (the input and its losses, the
    traffic's anatomy, the cheapest cache or fleet first, the curves and the sizing answers with their
    assumptions, the hit rate over time, the fleets, and what the trace cannot tell); `feature_names`: a file of
    feature names (one a line) or a list of them, to name the trace's xxHash32 field ids. Returns the path."""
    return write_report(result, path, feature_names=feature_names, title=title)


def give_results_their_report() -> None:
    from cachescope.simulate.result import SimulationResult

    SimulationResult.anatomy = anatomy
    SimulationResult.report = report
