"""`python bench/peak.py SCRIPT ARGS...` runs SCRIPT as `python SCRIPT ARGS...` would, then writes the peak
resident memory of this process (VmHWM: the kernel's high-water mark since the process was exec'd, in bytes)
to the file named by $PEAK_RSS_FILE. A whole command's peak memory, start-up included; unlike the parent's
`ru_maxrss` of its children, it does not start from the parent's own size (a forked child counts the pages it
shares with its parent until it execs)."""
import atexit
import os
import runpy
import sys


def _write_peak() -> None:
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(os.environ["PEAK_RSS_FILE"], "w") as out:
        out.write(str(kib * 1024))


if __name__ == "__main__":
    atexit.register(_write_peak)
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
