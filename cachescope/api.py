"""The Python API as `import cachescope` gives it: the simulation and its results, with what the report gives
a result (`result.report(path)`, `result.anatomy()`). The report reads results, and the result module never
imports it; this module, above both, puts them together."""

from cachescope.report import give_results_their_report
from cachescope.simulate.engine import simulate_trace
from cachescope.simulate.result import SimulationResult

give_results_their_report()

__all__ = ["SimulationResult", "simulate_trace"]
