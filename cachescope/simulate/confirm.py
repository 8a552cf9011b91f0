"""Answers confirmed by full runs of the real policy: the capacity per pod that reaches each target, as a
deployment configured with it would see it.

A curve brackets each answer (`bracket.py`); then each pass runs the real policy, single cache or fleet, with
the run's write mode, TTL, refreshes, restarts and allow-list, at a handful of capacities in every open
bracket at once, over the whole trace, and narrows the brackets from what reached the target. The answer is
the smallest capacity whose full run reached it, known to 1% (or to the entry). Each run also follows the
bytes its cache holds, so the answer comes with its memory, and a byte budget (Caffeine's `maximumWeight`) is
sized the same way, from a first guess made of the entry answer.

A policy that draws at random (W-TinyLFU's admission, as Caffeine's) runs once per seed at every capacity: its
answer is the smallest capacity whose *lowest* draw reaches the target, so that what is configured reaches it
whichever draw a real cache makes, and the spread of the draws is the answer's band.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachescope.simulate.bracket import Bracket

MAX_PASSES = 6
"""Passes over the trace at most: a bracket from an exact curve closes in one, from a sampled band in two."""

SEEDED = ("wtinylfu",)
"""Policies whose hits depend on a random draw (the `seed` parameter): they run once per seed."""

DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class Ask:
    """One full run of a pass: a policy at a capacity (entries or bytes), as one cache (`pods` 1, `route`
    None) or as a fleet, with the admission seed of a seeded policy."""

    policy: str
    capacity: int
    unit: str
    pods: int = 1
    route: str | None = None
    seed: int | None = None


@dataclass
class Question:
    """The capacity of `policy` per pod (in `unit`) that reaches `target` in the fleet `pods` x `route`."""

    policy: str
    target: float
    unit: str
    pods: int
    route: str | None
    bracket: Bracket
    seeds: tuple = (None,)
    tried: dict = field(default_factory=dict)
    """capacity -> what its runs gave (`outcome`), over every pass."""

    def draws(self) -> tuple:
        """The seeds this pass runs: every draw once the bracket is narrow, the default one while it is wide
        (it only says where to look)."""
        return self.seeds if self.bracket.narrow_enough else self.seeds[:1]

    def asks(self) -> list[Ask]:
        return [Ask(self.policy, c, self.unit, self.pods, self.route, s) for c in self.bracket.grid()
                for s in self.draws()]

    @property
    def settled(self) -> bool:
        """Closed, with every draw run at the answer: a bracket may close while only the default draw ran, or
        before any run (an exact curve's neighbours one entry apart), and the answer is a run's."""
        if not self.bracket.closed:
            return False
        if not self.bracket.reachable:
            return True
        answer = self.answer
        return answer is not None and answer["seeds"] == len(self.seeds)

    @property
    def answer(self) -> dict | None:
        """The runs at the answer: the upper end of the bracket (or, out of reach, the largest tried)."""
        if self.bracket.high is not None:
            return self.tried.get(self.bracket.high)
        return self.tried.get(max(self.tried)) if self.tried else None


def confirm(questions: list[Question], run_pass, max_passes: int = MAX_PASSES) -> int:
    """Runs passes until every bracket is closed (or `max_passes`); returns how many it ran. `run_pass(asks)`
    runs the asks over the whole trace in one pass and returns one summary row per ask, in order."""
    passes = 0
    while passes < max_passes:
        open_ = [q for q in questions if not q.settled]
        if not open_:
            break
        asks = list(dict.fromkeys(a for q in open_ for a in q.asks()))
        rows = dict(zip(asks, run_pass(asks)))
        passes += 1
        for q in open_:
            reached = {}
            draws = q.draws()
            for c in q.bracket.grid():
                q.tried[c] = outcome([rows[Ask(q.policy, c, q.unit, q.pods, q.route, s)] for s in draws])
                reached[c] = q.tried[c]["hit_rate_low"] >= q.target - 1e-12
            q.bracket.narrow(reached)
    return passes


def outcome(rows: list[dict]) -> dict:
    """What the runs of one capacity gave (one row per seed): the lowest draw's numbers, the band of the
    draws, and the memory at its largest among them (each pod's peak resident bytes, the largest pod's)."""
    rates = [r["hit_rate"] for r in rows]
    low = min(range(len(rows)), key=lambda i: rates[i])
    row = rows[low]
    out = {
        "hit_rate": row["hit_rate"],
        "hit_rate_low": min(rates),
        "hit_rate_high": max(rates),
        "hits": row["hits"],
        "lookups": row["lookups"],
        "command_hit_rate": row.get("command_hit_rate"),
        "round_trips_saved": row.get("round_trips_saved"),
        "round_trips_saved_rate": row.get("round_trips_saved_rate"),
        "seeds": len(rows),
        "pods": row.get("pods", 1),
        "_run": row.get("_run"),
    }
    for key in ("byte_hit_rate", "warmup_s"):
        if key in row and row[key] == row[key]:
            out[key] = row[key]
    peaks = [pod_peak(r) for r in rows]
    if all(p is not None for p in peaks):
        out["memory_bytes"] = max(peaks)
    return out


def pod_peak(row: dict) -> int | None:
    """The largest peak resident bytes of any pod of the row's cache (the row itself for a single cache)."""
    if "per_pod" in row and isinstance(row["per_pod"], list):
        peaks = [p.get("resident_bytes_peak") for p in row["per_pod"]]
        return max(peaks) if peaks and all(p is not None for p in peaks) else None
    peak = row.get("resident_bytes_peak")
    return None if peak is None or peak != peak else int(peak)  # NaN: a byte run, bounded by its capacity
