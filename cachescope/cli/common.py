"""What every cachescope command shares: one-line errors with exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from cachescope.errors import CachescopeError

EXIT_USAGE = 2


class _Version(argparse.Action):
    """`--version`: the version and the checkout's commit, looked up only when asked for (git is a process)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from cachescope.version import version_line

        print(version_line(parser.prog))
        parser.exit(0)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (and exit status 2), like every other error; every
    command answers `--version`, and a mistyped flag gets the closest one suggested."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=_Version, help="print the version (and the git commit, from a "
                                                              "checkout) and exit")

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{self._suggestion(message)} (see --help)\n")

    def _suggestion(self, message: str) -> str:
        """`; did you mean --target?` for an unrecognized `--traget`."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        import difflib

        flags = [s for s in self._option_string_actions if s.startswith("--")]
        for token in message[len("unrecognized arguments: "):].split():
            if token.startswith("--"):
                close = difflib.get_close_matches(token.split("=", 1)[0], flags, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""


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
