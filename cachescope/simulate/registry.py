"""The policy registry: the one list that names each policy, its command-line flag and its parameters.
The CLI's flags, the Python API's keyword arguments and the docs' tables are all generated from it, and the
Rust core builds each policy by the same name."""

from __future__ import annotations

from dataclasses import dataclass

from cachescope import _native


@dataclass(frozen=True)
class PolicySpec:
    name: str
    """Registry name: the Rust core's name, the Python keyword and the JSON `policy` value."""
    label: str
    """How summaries and plots write it."""
    description: str

    @property
    def flag(self) -> str:
        return f"--{self.name}"


POLICIES = {
    spec.name: spec
    for spec in (
        PolicySpec("lru", "LRU", "least recently used: evict the entry not used for the longest time"),
        PolicySpec("wtinylfu", "W-TinyLFU", "Caffeine's policy: an LRU window, then a segmented LRU behind a "
                   "TinyLFU frequency filter, with a hill-climbed window size"),
    )
}

# The bound every summary shows: a cache that never evicts. Not a flag: it needs no capacity.
INFINITE = PolicySpec("infinite", "infinite", "never evicts: only first references miss")

_missing = [name for name in (*POLICIES, INFINITE.name) if name not in _native.POLICY_NAMES]
assert not _missing, f"policies registered in Python but not built into the Rust core: {_missing}"
