"""Ending a live input cleanly: `tcpdump -w - | simulate.py - ...` runs until Ctrl-C, SIGTERM, the end of the
pipe or `--duration`, and then gives the full answer over what it saw.

The readers run in the Rust core with the GIL released, so a Python signal handler would only run once they
return, which a quiet pipe may never make them do. Instead the C-level handler's wakeup byte
(`signal.set_wakeup_fd`) is read by a watcher thread, which raises the input's `StopFlag`: the Rust side then
takes every byte already read and reports the end of the input, and the simulation finishes as at the end of
a file. A second Ctrl-C (or SIGTERM) aborts as usual."""

from __future__ import annotations

import os
import select
import signal
import threading

from cachescope import _native

_SIGNALS = {signal.SIGINT: "interrupted (SIGINT)", signal.SIGTERM: "terminated (SIGTERM)"}


class LiveStop:
    """A context: `flag` (a `_native.StopFlag`) is raised by SIGINT, SIGTERM or after `duration_s` seconds;
    `reason` says which, None while the input runs (or when it ended on its own)."""

    def __init__(self, duration_s: float | None = None, flag=None, active: bool = True):
        """`flag`: the StopFlag the input's reader was given (a new one by default). `active=False`: a file,
        which ends by itself: the context does nothing."""
        self.flag = _native.StopFlag() if flag is None else flag
        self.active = active
        self.reason: str | None = None
        self._duration_s = duration_s
        self._signals = 0
        self._saved = None
        self._timer = None

    def __enter__(self):
        if not self.active:
            return self
        if self._duration_s is not None:
            self._timer = threading.Timer(self._duration_s, self._stop, args=(f"--duration {self._duration_s:g}s reached",))
            self._timer.daemon = True
            self._timer.start()
        if threading.current_thread() is not threading.main_thread():
            return self  # signals are the main thread's; a library caller in another thread has the duration
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._pipe = (r, w)
        handlers = {s: signal.signal(s, self._handler) for s in _SIGNALS}
        wakeup = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self._saved = (handlers, wakeup)
        threading.Thread(target=self._watch, args=(r,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self._timer is not None:
            self._timer.cancel()
        if self._saved is not None:
            handlers, wakeup = self._saved
            signal.set_wakeup_fd(wakeup)
            for s, h in handlers.items():
                signal.signal(s, h)
            r, w = self._pipe
            os.write(w, b"\0")  # ends the watcher
            os.close(w)
        return False

    def _stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.flag.stop()

    def _watch(self, r: int) -> None:
        try:
            while True:
                select.select([r], [], [])
                for signum in os.read(r, 64):
                    if signum == 0:
                        return
                    if signum in _SIGNALS:
                        self._stop(_SIGNALS[signum])
        finally:
            os.close(r)

    def _handler(self, signum, frame):
        """Runs in the main thread once the readers return: the first signal only ends the input (the watcher
        did that already); a second one aborts, as it would without a live input."""
        self._signals += 1
        if self._signals >= 2:
            if signum == signal.SIGTERM:
                from cachescope.cli.common import Terminated

                raise Terminated()
            raise KeyboardInterrupt
