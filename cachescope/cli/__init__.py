"""The `cachescope` console script: `cachescope capture ...`, `cachescope simulate ...` (and later `parse`)."""

from __future__ import annotations

import os
import sys

# numpy's OpenBLAS starts a thread per core that spins waiting for linear algebra no command ever asks of it:
# measured at 4-7% of the CPU of reading a text trace, taken from the reader's own threads. One, unless the
# user chose otherwise (set before any command module imports numpy: they all import this package first).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from cachescope.cli.common import EXIT_USAGE, run

USAGE = ("usage: cachescope capture -o FILE [options] | cachescope simulate TRACE --lru N[,N...] [options]"
         "   (cachescope COMMAND --help for more)")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return EXIT_USAGE if not argv else 0
    command, rest = argv[0], argv[1:]
    if command == "simulate":
        from cachescope.cli import simulate

        return run("cachescope simulate", lambda a: simulate.main(a, prog="cachescope simulate"), rest)
    if command == "capture":
        from cachescope.cli import capture

        return run("cachescope capture", lambda a: capture.main(a, prog="cachescope capture"), rest)
    print(f"cachescope: error: unknown command {command!r} ({USAGE})", file=sys.stderr)
    return EXIT_USAGE
