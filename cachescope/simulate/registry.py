"""The policy registry, as Python sees it: each policy's name, command-line flag, keyword and parameters.
They are declared once, in the policy's own Rust file (`src/policy/`), and read from the core here; the CLI's
flags, the Python API's keyword arguments and the docs' tables are all generated from these specs."""

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


def _spec(native: dict) -> PolicySpec:
    return PolicySpec(native["name"], native["label"], native["description"],
                      tuple(Param(*p) for p in native["params"]), native["keyword"])


_NATIVE = _native.policy_specs()

POLICIES = {spec["name"]: _spec(spec) for spec in _NATIVE if spec["sized"]}
"""Every policy a user runs at a capacity of their choice, in the order of the core's registry."""

BY_KEYWORD = {spec.keyword: spec for spec in POLICIES.values()}
"""The same specs by Python keyword (`two_q`), as `simulate_trace` takes them."""

# The bound every summary shows: a cache that never evicts. Not a flag: it needs no capacity.
INFINITE = next(_spec(spec) for spec in _NATIVE if not spec["sized"])

assert len(BY_KEYWORD) == len(POLICIES), "two policies share a Python keyword"


def smallest_capacity(name: str, params: dict | None = None) -> int:
    """The smallest entry capacity the core builds `name` at with `params` (2Q and S3-FIFO need room for
    their first queue): found by asking the core, which alone knows each policy's rule."""
    def builds(capacity: int) -> bool:
        try:
            _native.Simulation([(name, capacity, None, dict(params or {})), (INFINITE.name, 1, None)], 1)
        except ValueError:
            return False
        return True

    high = 1
    while not builds(high):
        if high > 2**20:
            return high  # no policy needs that much: let the run say what is wrong
        high *= 2
    low = high // 2  # does not build (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if builds(mid) else (mid, high)
    return high
