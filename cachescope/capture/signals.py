"""Ctrl-C, SIGTERM and SIGHUP end a capture cleanly (files closed, counters printed) instead of killing the
process mid-way: while a `StopSignals` block is active they only set `requested`, which the capture loop
checks between waits of a fraction of a second."""

from __future__ import annotations

import signal
import threading


class StopSignals:
    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.requested = False
        self._old = {}

    def __enter__(self):
        # Python lets only the main thread install handlers; elsewhere (a test's thread) Ctrl-C stays as it is.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame):
        self.requested = True
