"""The traffic's anatomy: what the lookups look like before any cache sees them. Popularity (and the Zipf
exponent that fits it), one-hit wonders, reuse times, lookups per command, and the same per entity type (the
key's prefix) and per feature (the hash field), each with LRU's hit rate at the chosen size.

Memory follows the lookups read (a few numbers each), so at most MAX_LOOKUPS are read; a longer trace's
anatomy is that of its first MAX_LOOKUPS lookups, and says so."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from cachescope.report.lru_sample import lru_hits_sampled

MAX_LOOKUPS = 5_000_000
PREFIX = re.compile(r"^([A-Za-z]+[_:.\-])")


@dataclass
class Anatomy:
    lookups: int
    unique_keys: int
    truncated: bool
    commands_by_type: dict
    clients: list
    has_clock: bool
    has_sizes: bool
    counts: np.ndarray  # lookups per cache key, most popular first
    zipf_s: float | None
    zipf_ranks: tuple  # (first, last) rank of the fit
    zipf_intercept: float  # log(count) at rank 1 on the fitted line
    one_hit_keys: float  # share of keys looked up once
    one_hit_lookups: float  # share of lookups that are a key's only one
    reuse_lookups: np.ndarray  # lookups between a key's consecutive uses
    reuse_seconds: np.ndarray | None
    per_command: np.ndarray  # lookups per read command
    mean_value_size: float | None
    by_type: object = None  # pandas frame
    by_feature: object = None
    lru_capacity: int | None = None
    lru_rate: float = 1.0
    lru_hit_rate: float | None = None
    notes: list = field(default_factory=list)

    def allow_list(self, share: float = 0.95) -> list:
        """The features worth caching at the size the hit rates are for: the fewest that take `share` of the
        cache's hits, most hits first (empty without a size or without features)."""
        if self.by_feature is None or "hits_share" not in self.by_feature:
            return []
        ranked = self.by_feature.sort_values("hits_share", ascending=False)
        keep = min(int(np.searchsorted(ranked["hits_share"].cumsum().to_numpy(), share - 1e-12) + 1), len(ranked))
        return ranked["feature"].head(keep).tolist()


def anatomy_of(result, capacity: int | None = None, names: dict | None = None):
    """(Anatomy, "") of the trace a simulation read, or (None, why not) when it cannot be read again."""
    from itertools import chain

    from cachescope.report.rows import trace_columns

    inputs = result.request.get("inputs") or []
    if not inputs:
        return None, "the result does not say which trace it came from (a TraceSource given to simulate_trace)"
    if not all(rereadable for *_, rereadable in inputs):
        return None, "the trace was read from a pipe, which can be read only once; save it to a file for this section"
    import pyarrow as pa

    from cachescope.errors import CachescopeError

    batches = chain.from_iterable(trace_columns(p, f, ports) for p, f, ports, _ in inputs)
    try:
        return anatomy(batches, result.granularity, capacity, names), ""
    except (OSError, pa.ArrowException, CachescopeError) as e:  # moved or changed since the simulation read it
        return None, f"reading the trace again failed: {e}"


def anatomy(batches, granularity: str = "field", capacity: int | None = None, names: dict | None = None) -> Anatomy:
    """`batches`: rows.trace_columns(...); `capacity`: the cache size (entries) at which to give LRU's hit rate
    per entity type and per feature; `names`: {field id text: feature name}."""
    import pandas as pd

    keep = {c: [] for c in ("key", "field", "req", "ts_ns", "value_size")}
    commands: dict = {}
    clients: set = set()
    read = 0
    truncated = False
    last_req = None
    rows_seen = 0
    for cols in batches:
        ok = np.ones(len(cols["key"]), dtype=bool)
        if "error" in cols:
            ok &= np.array([e is None for e in cols["error"]], dtype=bool)
        # Without command indices each row is a command of its own; without names, commands are not counted by type.
        if "req" not in cols:
            cols = {**cols, "req": np.arange(rows_seen, rows_seen + len(ok))}
        rows_seen += len(ok)
        reqs = np.asarray(cols["req"])
        starts = np.ones(len(reqs), dtype=bool)
        starts[1:] = reqs[1:] != reqs[:-1]
        if len(reqs) and last_req is not None:
            starts[0] = reqs[0] != last_req
        if len(reqs):
            last_req = reqs[-1]
        for cmd in cols["cmd"][starts & ok] if "cmd" in cols else ():
            commands[cmd] = commands.get(cmd, 0) + 1
        if "client" in cols:
            clients.update(c.rsplit(":", 1)[0] for c in set(cols["client"].tolist()) if c)
        reads = ok & (cols["op"] == 0)
        room = MAX_LOOKUPS - read
        if room <= 0:
            truncated = truncated or bool(reads.any())
            continue
        idx = np.flatnonzero(reads)
        if len(idx) > room:
            idx, truncated = idx[:room], True
        read += len(idx)
        for name in keep:
            if name in cols:
                keep[name].append(np.asarray(cols[name])[idx])
    cat = {k: np.concatenate(v) for k, v in keep.items() if v}
    n = read
    keys = pd.Series(cat.get("key", np.zeros(0, dtype=object)), dtype=object)
    fields = pd.Series(cat["field"], dtype=object) if "field" in cat else pd.Series([None] * n, dtype=object)
    key_codes, key_uniques = pd.factorize(keys)
    field_codes, field_uniques = pd.factorize(fields.fillna(""))
    if granularity == "field":
        ids, _ = pd.factorize(key_codes.astype(np.int64) * max(len(field_uniques), 1) + field_codes)
    else:
        ids = key_codes
    ids = np.asarray(ids, dtype=np.int64)
    counts_by_id = np.bincount(ids) if n else np.zeros(0, dtype=np.int64)
    counts = np.sort(counts_by_id)[::-1]
    s, intercept, ranks = zipf_exponent(counts)
    ts = cat.get("ts_ns")
    has_clock = ts is not None and n > 0 and int(ts.max()) > int(ts.min())
    order = np.argsort(ids, kind="stable")
    again = ids[order][1:] == ids[order][:-1]
    reuse_lookups = (order[1:] - order[:-1])[again]
    reuse_seconds = ((ts[order][1:] - ts[order][:-1])[again] / 1e9) if has_clock else None
    _, per_command = np.unique(cat["req"], return_counts=True) if n else (None, np.zeros(0, dtype=np.int64))
    sizes = cat.get("value_size")
    has_sizes = sizes is not None and np.any(~pd.isna(sizes)) and pd.Series(sizes).notna().mean() > 0.5
    out = Anatomy(
        lookups=n, unique_keys=len(counts), truncated=truncated,
        commands_by_type=dict(sorted(commands.items(), key=lambda kv: -kv[1])), clients=sorted(clients),
        has_clock=has_clock, has_sizes=bool(has_sizes), counts=counts, zipf_s=s, zipf_ranks=ranks, zipf_intercept=intercept,
        one_hit_keys=float(np.mean(counts == 1)) if len(counts) else 0.0,
        one_hit_lookups=float(counts[counts == 1].sum() / n) if n else 0.0,
        reuse_lookups=reuse_lookups, reuse_seconds=reuse_seconds, per_command=per_command,
        mean_value_size=float(pd.Series(sizes).mean()) if has_sizes else None,
    )
    hits = None
    if capacity is not None and n:
        hits, out.lru_rate = lru_hits_sampled(ids, capacity)
        out.lru_capacity = capacity
        out.lru_hit_rate = float(hits[hits >= 0].mean()) if (hits >= 0).any() else None
    prefix = pd.Series(key_uniques).str.extract(PREFIX, expand=False).fillna("(no prefix)").to_numpy()[key_codes] \
        if n else np.zeros(0, dtype=object)
    frame = pd.DataFrame({"type": prefix, "field": fields.fillna("").to_numpy(), "key_code": key_codes, "id": ids})
    if has_sizes:
        frame["bytes"] = pd.Series(sizes).fillna(0).astype(np.int64).to_numpy()
    if hits is not None:
        frame["sampled"] = hits >= 0
        frame["hit"] = hits > 0
    out.by_type = _groups(frame, "type", n)
    if fields.notna().any():
        # Grouped by the field id as the trace spells it ("" for lookups without one), then named.
        by_feature = _groups(frame, "field", n)
        by_feature.insert(0, "feature", [feature_label(f or None, names) for f in by_feature["field"]])
        out.by_feature = by_feature
    return out


def feature_label(field_id, names: dict | None) -> str:
    """A field's feature name when the dictionary has it, else its id as the trace has it."""
    if field_id is None:
        return "(no field)"
    return (names or {}).get(field_id, field_id)


def _groups(frame, column: str, total: int):
    """Per group: lookups and their share, distinct entities and cache keys, bytes, LRU's hit rate."""
    g = frame.groupby(column, sort=False)
    out = g.agg(lookups=("id", "size"), entities=("key_code", "nunique"), keys=("id", "nunique"))
    out["share"] = out["lookups"] / max(total, 1)
    if "bytes" in frame:
        out["bytes"] = g["bytes"].sum()
        out["byte_share"] = out["bytes"] / max(int(frame["bytes"].sum()), 1)
    if "hit" in frame:
        sampled = g["sampled"].sum()
        out["hit_rate"] = (g["hit"].sum() / sampled.clip(lower=1)).where(sampled > 0)
        out["hits_share"] = g["hit"].sum() / max(int(frame["hit"].sum()), 1)
    return out.sort_values("lookups", ascending=False).reset_index()


def zipf_exponent(counts: np.ndarray):
    """The exponent s of count ~ rank^-s, least squares on log-log over log-spaced ranks (so the long tail of
    rare keys does not outweigh the head) from rank 1 to the last key looked up at least twice. None when
    fewer than 10 keys repeat."""
    repeat = int(np.count_nonzero(counts >= 2))
    if repeat < 10:
        return None, 0.0, (1, repeat)
    ranks = np.unique(np.geomspace(1, repeat, 60).astype(np.int64))
    slope, intercept = np.polyfit(np.log(ranks), np.log(counts[ranks - 1]), 1)
    return float(-slope), float(intercept), (1, repeat)
