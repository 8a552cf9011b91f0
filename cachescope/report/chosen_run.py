"""The cache the report chose (the sizing answer's policy and size), simulated once more over the same trace
with the same options, counting lookups and hits per feature and what refreshes cost it. The per-feature hit
rates, the allow-list answer and the refresh costs of the report are that cache's own (W-TinyLFU's when the
answer is W-TinyLFU's, with TTLs, refreshes and restarts), not LRU's stack distances over a sample.

The core counts per field hash; the report's features are field ids as the trace spells them, hashed here
once per feature (not per lookup)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cachescope import _native
from cachescope.errors import CachescopeError
from cachescope.simulate.registry import POLICIES

# One timeline window over the whole trace: the run needs no timeline.
_WINDOW = 2**40


@dataclass
class ChosenRun:
    policy: str
    capacity: int
    lookups: int
    hits: int
    by_field: dict  # {field hash: (lookups, hits)}
    refresh: dict  # {field hash: (entries dropped, re-fetches)}; empty without a refresh schedule
    refresh_evictions: int
    refresh_refetches: int

    @property
    def label(self) -> str:
        return POLICIES[self.policy].label


def chosen_run(result, chosen: dict | None):
    """(ChosenRun, "") of `chosen` ({"policy", "capacity"}) over the result's trace, or (None, why not)."""
    from cachescope.simulate.engine import simulate_trace

    args = getattr(result, "same_trace", None)
    if chosen is None:
        return None, "no size was chosen"
    if args is None:
        return None, "the result does not say how to read its trace again"
    if not all(rereadable for *_, rereadable in result.request.get("inputs", [])):
        return None, "the trace was read from a pipe, which can be read only once"
    spec = POLICIES[chosen["policy"]]
    params = {kw: v for kw, v in (args["params"] or {}).items() if kw == spec.keyword}
    try:
        out = simulate_trace(**{**args, "params": params}, window=_WINDOW, progress=False,
                             _subset=([0], [], False), _by_field=True, **{spec.keyword: [int(chosen["capacity"])]})
    except CachescopeError as e:
        return None, f"simulating it again failed: {e}"
    run = out["results"][0]
    return ChosenRun(
        policy=chosen["policy"], capacity=int(chosen["capacity"]), lookups=run["lookups"], hits=run["hits"],
        by_field={f: (n, h) for f, n, h in run["hits_by_field"]},
        refresh={f: (d, m) for f, d, m in run["refresh_by_field"]},
        refresh_evictions=run["refresh_evictions"], refresh_refetches=run["refresh_refetches"],
    ), ""


def field_hashes(fields) -> np.ndarray:
    """The core's hash of each field id text ("" for lookups without a field: 0, as the core has it)."""
    return np.array([_native.key_hash(f.encode()) if f else 0 for f in fields], dtype=np.uint64)


def apply_to_features(by_feature, run: ChosenRun, refreshes: bool) -> None:
    """Sets `hit_rate` and `hits_share` of the anatomy's per-feature frame from `run` (over the whole trace),
    and with `refreshes` `refresh_dropped` and `refresh_refetched` (None for a feature the schedule does not
    name)."""
    hashes = field_hashes(by_feature["field"]).tolist()
    looked = np.array([run.by_field.get(h, (0, 0))[0] for h in hashes], dtype=np.int64)
    hits = np.array([run.by_field.get(h, (0, 0))[1] for h in hashes], dtype=np.int64)
    by_feature["hit_rate"] = np.where(looked > 0, hits / np.maximum(looked, 1), np.nan)
    by_feature["hits_share"] = hits / max(run.hits, 1)
    if refreshes:
        by_feature["refresh_dropped"] = [run.refresh[h][0] if h in run.refresh else None for h in hashes]
        by_feature["refresh_refetched"] = [run.refresh[h][1] if h in run.refresh else None for h in hashes]
