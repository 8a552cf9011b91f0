"""The report: a simulation's whole answer as one self-contained HTML page (figures inline as SVG, no script,
nothing fetched), the page an engineer forwards to whoever approves the cache.

`write_report(result, path)` (also `SimulationResult.report(path)` and `simulate.py --report FILE.html`)."""

from cachescope.report.api import anatomy, give_results_their_report, report
from cachescope.report.page import write_report

__all__ = ["anatomy", "give_results_their_report", "report", "write_report"]
