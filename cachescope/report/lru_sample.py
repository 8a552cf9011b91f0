"""Which lookups an LRU of a given size would hit, for the anatomy's per-type and per-feature hit rates.

The core counts hits per cache, not per feature; here each lookup's LRU stack distance (distinct other keys
since its key's last use) decides: it hits at capacity C exactly when that distance is below C (Mattson et al.,
1970). The distances are computed over a sample of the keys (SHARDS, Waldspurger et al. 2015: a sample of R of
the keys sees distances scaled by R), so that at most SAMPLE_LOOKUPS lookups go through this Python loop; a
short trace is taken whole (R = 1, exact)."""

from __future__ import annotations

import numpy as np

SAMPLE_LOOKUPS = 250_000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def lru_hits_sampled(ids: np.ndarray, capacity: int):
    """(hits, rate): per lookup 1 (a hit at `capacity`), 0 (a miss) or -1 (its key is not in the sample)."""
    n = len(ids)
    rate = min(1.0, SAMPLE_LOOKUPS / n) if n else 1.0
    if rate < 1.0:
        with np.errstate(over="ignore"):
            mixed = (ids.astype(np.uint64) + np.uint64(1)) * _GOLDEN
        chosen = mixed < np.uint64(int(rate * 2.0**64))
    else:
        chosen = np.ones(n, dtype=bool)
    out = np.full(n, -1, dtype=np.int8)
    distances = stack_distances(ids[chosen])
    out[chosen] = ((distances >= 0) & (distances < capacity * rate)).astype(np.int8)
    return out, rate


def stack_distances(ids: np.ndarray) -> np.ndarray:
    """Per access, the number of distinct other keys used since its key's last use (-1 for a first use): a
    Fenwick tree over positions marks each key's latest use."""
    n = len(ids)
    tree = [0] * (n + 1)
    last: dict = {}
    out = np.full(n, -1, dtype=np.int64)

    def add(i, v):
        i += 1
        while i <= n:
            tree[i] += v
            i += i & -i

    def prefix(i):  # marks at positions 0..i
        i += 1
        s = 0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s

    for i, k in enumerate(ids.tolist()):
        p = last.get(k)
        if p is not None:
            out[i] = prefix(i - 1) - prefix(p)
            add(p, -1)
        add(i, 1)
        last[k] = i
    return out
