"""Code a test hands to `python -c` to run one of the repository's scripts as `python script ...` would, then
report something of the process that ran it: its peak memory, the modules it imported."""


def run_then(report: str, argv: str = "sys.argv[1:]") -> str:
    """`python -c` code that runs the script `argv` names first (`argv`: an expression for the script's
    argv) as `__main__`, then `report`, with `code` the script's exit status."""
    return f"""
import json, runpy, sys
sys.argv = {argv}
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
{report}
"""


# The whole command's peak resident memory (VmHWM) as the last line of stderr, `peak_kib N`: not getrusage's
# maxrss, which a child keeps from its parent (pytest) across exec.
PEAK = run_then("""
hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print("peak_kib", hwm, file=sys.stderr)
sys.exit(code)
""")
