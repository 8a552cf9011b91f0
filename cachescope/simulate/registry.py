"""The policy registry: the one list that names each policy, its command-line flag and its parameters.
The CLI's flags, the Python API's keyword arguments and the docs' tables are all generated from it, and the
Rust core builds each policy by the same name, with the parameters (defaults filled in) passed along."""

from __future__ import annotations

from dataclasses import dataclass
from keyword import iskeyword
from typing import NamedTuple

from cachescope import _native


class Param(NamedTuple):
    name: str
    """A Python identifier: the key in `simulate_trace(params=...)`; the flag spells it with dashes."""
    default: float
    help: str


@dataclass(frozen=True)
class PolicySpec:
    name: str
    """Registry name: the Rust core's name, the flag (`--NAME`) and the JSON `policy` value."""
    label: str
    """How summaries and plots write it."""
    description: str
    params: tuple[Param, ...] = ()
    keyword: str = ""
    """The Python keyword (`simulate_trace(two_q=...)`); the name itself unless that is not an identifier."""

    def __post_init__(self):
        if not self.keyword:
            object.__setattr__(self, "keyword", self.name)
        if not self.keyword.isidentifier() or iskeyword(self.keyword):
            raise ValueError(f"policy {self.name!r} needs a keyword that is a Python identifier")

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    def param_flag(self, param: Param) -> str:
        return f"--{self.name}-{param.name.replace('_', '-')}"


POLICIES = {
    spec.name: spec
    for spec in (
        PolicySpec("lru", "LRU", "least recently used: evict the entry not used for the longest time"),
        PolicySpec("lfu", "LFU", "least frequently used: evict the entry with the fewest hits since it was admitted "
                   "(ties: the one that reached that count first)"),
        PolicySpec("fifo", "FIFO", "first in, first out: evict the entry admitted longest ago; hits change nothing"),
        PolicySpec("clock", "CLOCK", "FIFO with a reference bit: a hit entry gets a second chance at the newest end"),
        PolicySpec("sieve", "SIEVE", "FIFO with a visited bit and a moving hand: hit entries stay in place, the hand "
                   "evicts the first unvisited one (NSDI 2024)"),
        PolicySpec("arc", "ARC", "adaptive replacement cache (FAST 2003): an LRU list for keys seen once and one for "
                   "keys seen again, their split tuned by ghost lists of recently evicted keys"),
        PolicySpec("2q", "2Q", "2Q (VLDB 1994): first references pass through a FIFO (A1in) whose evicted keys are "
                   "remembered (A1out); keys that come back from there enter the main LRU (Am)",
                   params=(Param("kin", 0.25, "share of the capacity for A1in"),
                           Param("kout", 0.5, "size of A1out as a share of the capacity (ghosts hold keys only)")),
                   keyword="two_q"),
        PolicySpec("s3fifo", "S3-FIFO", "S3-FIFO (SOSP 2023): a small FIFO for new keys, a main FIFO with "
                   "reinsertion for keys hit there or back from the ghost FIFO of evicted keys",
                   params=(Param("small_ratio", 0.1, "share of the capacity for the small queue"),
                           Param("ghost_ratio", 0.9, "size of the ghost queue as a share of the capacity (keys only)"),
                           Param("move_to_main_threshold", 2, "hits in the small queue that earn a key main"))),
        PolicySpec("belady", "Belady", "Belady's MIN, the optimal offline policy: evict the entry needed "
                   "farthest in the future (an upper bound; reads the trace twice)"),
        PolicySpec("wtinylfu", "W-TinyLFU", "Caffeine's policy: an LRU window, then a segmented LRU behind a "
                   "TinyLFU frequency filter, with a hill-climbed window size"),
    )
}

BY_KEYWORD = {spec.keyword: spec for spec in POLICIES.values()}
"""The same specs by Python keyword (`two_q`), as `simulate_trace` takes them."""

# The bound every summary shows: a cache that never evicts. Not a flag: it needs no capacity.
INFINITE = PolicySpec("infinite", "infinite", "never evicts: only first references miss")

_missing = [name for name in (*POLICIES, INFINITE.name) if name not in _native.POLICY_NAMES]
assert not _missing, f"policies registered in Python but not built into the Rust core: {_missing}"
assert len(BY_KEYWORD) == len(POLICIES), "two policies share a Python keyword"
