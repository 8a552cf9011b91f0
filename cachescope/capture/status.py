"""Status lines on stderr while a capture runs: one line redrawn every second on a terminal, one line a minute
otherwise (a log file should not fill with progress)."""

from __future__ import annotations

import sys
import time


class Status:
    def __init__(self, prog: str, stream=None):
        self.prog = prog
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = 1.0 if self.tty else 60.0
        self._next = time.monotonic() + self.every
        self._drawn = False

    def say(self, message: str) -> None:
        """A line that stays."""
        self._clear()
        print(f"{self.prog}: {message}", file=self.stream, flush=True)

    def tick(self, describe) -> None:
        """Redraws the progress line when it is due; `describe()` is only called then."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.every
        if self.tty:
            self.stream.write(f"\r\x1b[K{self.prog}: {describe()}")
            self.stream.flush()
            self._drawn = True
        else:
            self.say(describe())

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False
