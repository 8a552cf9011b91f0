"""The progress line of a live input: lookups so far and each cache's hit rate so far, on stderr. A pipe
has no size for a bar to fill, and the hit rates are what someone watching live traffic wants to see."""

from __future__ import annotations

import sys
import time

from cachescope.simulate.labels import label

INTERVAL_S = 2.0


class LiveProgress:
    """`update()` after each batch; a line at most every INTERVAL_S seconds (redrawn in place on a terminal,
    one line each time otherwise, so a log keeps the history). Nothing when not `enabled`."""

    def __init__(self, source, sim, enabled: bool, out=sys.stderr):
        self._source, self._sim, self._enabled, self._out = source, sim, enabled, out
        self._start = self._last = time.monotonic()
        self._tty = enabled and out.isatty()
        self._drawn = False

    def update(self) -> None:
        if not self._enabled or time.monotonic() - self._last < INTERVAL_S:
            return
        self._last = time.monotonic()
        line = self.line()
        if self._tty:
            self._out.write("\r\x1b[K" + line)
            self._drawn = True
        else:
            self._out.write(line + "\n")
        self._out.flush()

    def line(self) -> str:
        """`live 12 s: 34,567 lookups; LRU 100k 41.2%, LRU 1M 55.0%, infinite 61.3%`."""
        elapsed = time.monotonic() - self._start
        rates = []
        for r in self._sim.results():
            rate = r["hits"] / r["lookups"] if r["lookups"] else 0.0
            name = "infinite" if r["policy"] == "infinite" else label(r["policy"], r["capacity"])
            rates.append(f"{name} {rate:.1%}")
        return f"live {elapsed:,.0f} s: {self._sim.lookups:,} lookups; " + ", ".join(rates)

    def close(self) -> None:
        if self._drawn:
            self._out.write("\r\x1b[K")
            self._out.flush()
