"""The `cachescope` console script: `cachescope capture|parse|simulate ...`, `--help`, `--version`."""

from __future__ import annotations

import importlib
import os
import sys

# numpy's OpenBLAS starts a thread per core that spins waiting for linear algebra no command ever asks of it:
# measured at 4-7% of the CPU of reading a text trace, taken from the reader's own threads. One, unless the
# user chose otherwise (set before any command module imports numpy: they all import this package first).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# pyarrow's own allocator (mimalloc) maps fresh memory for the batches a Parquet trace is read into or written
# from, where the C allocator reuses what the last batch freed (the core's `keep_freed_memory` sees to that):
# 45 MiB less at the peak of `simulate.py` on a Parquet trace, 19 MiB of `parse.py` to Parquet, in the same
# time. Read by pyarrow when first imported; a user's own choice stands.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from cachescope.cli.common import EXIT_USAGE, run

# name: (module under cachescope.cli, one line of what it does); each module has main(argv, prog=...).
COMMANDS = {
    "capture": ("capture", "record a host's Redis traffic to a pcap (tcpdump) or a MONITOR log"),
    "parse": ("parse", "turn a capture or MONITOR log into a trace (Parquet, commands text, MONITOR)"),
    "simulate": ("simulate", "hit rates of cache policies over a trace or capture: curves, sizing, fleets, report"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: cachescope COMMAND [options]   (cachescope COMMAND --help for its options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    lines += ["", "  --version   print the version (and the git commit, from a checkout) and exit", "  --help      print this and exit"]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(usage(), file=sys.stderr)
        return EXIT_USAGE
    if argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] in ("-V", "--version"):
        from cachescope.version import version_line

        print(version_line("cachescope"))
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"cachescope: error: unknown command {command!r}; choose from {', '.join(COMMANDS)} "
              "(cachescope --help)", file=sys.stderr)
        return EXIT_USAGE
    module = importlib.import_module(f"cachescope.cli.{COMMANDS[command][0]}")
    prog = f"cachescope {command}"
    return run(prog, lambda a: module.main(a, prog=prog), rest)
