"""What every cachescope command shares: one-line errors with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from cachescope.errors import CachescopeError

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (and exit status 2), like every other error."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it unwinds as Ctrl-C does: half-written outputs removed."""


def _terminate(signum, frame):
    raise Terminated()


def run(prog: str, main, argv=None) -> int:
    """Runs `main(argv)`, turning the user's and the input's errors into one line and exit status 2."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return _run(prog, main, argv)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(prog: str, main, argv) -> int:
    try:
        return main(argv) or 0
    except Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except CachescopeError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"{prog}: error: {where}{e.strerror or e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE
