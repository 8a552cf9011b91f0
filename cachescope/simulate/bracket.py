"""Where the answer to "which capacity reaches the target" lies, and how full runs close in on it.

A curve says roughly where the answer is: the exact LRU curve between two of its capacities, a sampled curve
within its band. Full runs of the real policy then settle it: each pass runs the policy at a handful of
capacities spread over the bracket (all in one pass over the trace), and the bracket shrinks to the two grid
points around the first that reaches the target. A bracket whose ends are 1% apart (or one entry) is closed,
and its upper end is the answer. A bracket that turned out wrong (every point reached, or none did) moves
down or up instead, until the bound (every unique key) says the target is out of reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CLOSED = 1.01
"""A bracket is closed when its upper end is within 1% of its lower end: the answer is known to 1%."""

NARROW_GRID_POINTS = 16
"""At most this many capacities close a bracket in one pass: one up to 16% wide (a curve's 2% takes 3)."""

WIDE_GRID_POINTS = 16
"""A wider bracket's pass: up to a factor of 9 becomes at most 16%, which the next pass closes."""

WIDEN = 4
"""How far a bracket moves when its grid missed the answer."""


@dataclass
class Bracket:
    """The answer lies in `(low, high]`: `high` reaches the target (None: nothing known to reach it yet), and
    `low` does not, known from a full run or an exact curve when `low_known` (0 reaches nothing). `top`: the
    largest capacity worth trying (every unique key fits)."""

    low: int
    high: int | None
    top: int
    guess_high: int
    """Where to look up to while `high` is unknown."""
    low_known: bool = False
    bottom: int = 1
    """The smallest capacity the policy can be built at (2Q and S3-FIFO need room for their first queue)."""

    @property
    def closed(self) -> bool:
        if self.high is None:
            return self.low >= self.top
        return (self.low_known or self.low == 0) and (self.high - self.low <= 1 or self.high <= self.low * CLOSED)

    @property
    def narrow_enough(self) -> bool:
        """Whether the next pass closes the bracket (when the answer is where it is thought to be)."""
        return self.high is not None and self.high <= (self.low + 1) * CLOSED ** (NARROW_GRID_POINTS - 1)

    @property
    def reachable(self) -> bool:
        return self.high is not None

    def grid(self) -> list[int]:
        """The capacities of the next pass: log-spaced from just above `low` to `high` (or to the guess, up to
        `top`), whole numbers, each once."""
        upper = max(self.high if self.high is not None else min(self.guess_high, self.top), self.bottom)
        lower = max(self.low + 1, self.bottom)
        if upper <= lower:
            return [max(upper, 1)]
        # Enough points that neighbours are 1% apart, when that closes the bracket in this pass.
        needed = math.ceil(math.log(upper / lower) / math.log(CLOSED)) + 1
        points = min(needed, upper - lower + 1) if needed <= NARROW_GRID_POINTS else WIDE_GRID_POINTS
        values = np.unique(np.round(np.geomspace(lower, upper, points)).astype(np.int64))
        return [int(v) for v in values]

    def narrow(self, reached: dict[int, bool]) -> None:
        """Takes a pass's outcome (capacity -> reached the target): the bracket becomes the first capacity
        that reached and the largest tried below it (which did not); it moves up when none reached, and down
        when even the smallest did and nothing below it is known."""
        tried = sorted(reached)
        hits = [c for c in tried if reached[c]]
        if not hits:
            self.low, self.low_known = max(self.low, tried[-1]), True
            if self.high is not None and self.high <= self.low:
                self.high = None  # it reached with fewer draws, not with all of them: look further up
            self.guess_high = min(self.top, max(self.low * WIDEN, self.low + 1))
            return
        first = hits[0]
        self.high = first
        below = [c for c in tried if c < first]
        if below:
            self.low, self.low_known = below[-1], True
        elif first <= self.bottom:
            self.low, self.low_known = first - 1, True  # nothing smaller can be built: it is the answer
        elif not self.low_known:
            self.low = first // WIDEN  # not known to miss: the next pass looks there


def first_bracket(capacities, rates, target: float, top: int, low_rates=None, high_rates=None) -> Bracket:
    """The bracket a curve gives for `target`: between the last capacity that does not reach it and the first
    that does, or, on a sampled curve, between where its band's upper edge first reaches it and where its lower
    edge does. A curve that never reaches it leaves the answer above its last capacity, up to `top`."""
    caps = np.asarray(capacities, dtype=np.int64)
    rates = np.asarray(rates, dtype=float)
    optimistic = rates if high_rates is None else np.asarray(high_rates, dtype=float)
    pessimistic = rates if low_rates is None else np.asarray(low_rates, dtype=float)
    sure = np.nonzero(pessimistic >= target - 1e-12)[0]
    maybe = np.nonzero(optimistic >= target - 1e-12)[0]
    if len(maybe):
        low = int(caps[maybe[0] - 1]) if maybe[0] > 0 else 0
    else:
        low = int(caps[-1]) if len(caps) else 0
    exact = low_rates is None and high_rates is None
    if len(sure):
        return Bracket(low=low, high=int(caps[sure[0]]), top=top, guess_high=int(caps[sure[0]]), low_known=exact)
    guess = max(low * WIDEN, low + 1)
    return Bracket(low=min(low, top), high=None, top=top, guess_high=min(guess, top), low_known=exact)


def scaled_bracket(estimate: int, top: int, spread: float = 2.0) -> Bracket:
    """A bracket around an estimate from elsewhere (a single cache's answer scaled to a pod, an entry answer
    turned into bytes): `estimate / spread` to `estimate * spread`, the upper end still to be confirmed."""
    estimate = max(int(estimate), 1)
    return Bracket(low=max(int(estimate / spread), 1) - 1, high=None, top=top,
                   guess_high=min(max(int(math.ceil(estimate * spread)), 2), top))
