"""The infinite bound estimated in constant memory, when only sampled curves are asked for.

The exact bound is an infinite cache: a set of every unique key, which grows with the trace (90 MB at 5 M keys)
while a SHARDS sample of fixed size does not. When the infinite cache can lose no entry (writes ignored; no
TTL, restart, refresh schedule or allow list), its misses are exactly the unique keys read, and a HyperLogLog
sketch of 64 KiB counts those to 0.41% (one standard error; `src/simulation/distinct.rs`). Its hits, and the
timeline's, follow from the lookups, which are counted exactly.

Where every command is one lookup and its own round trip (`keys` and `oracleGeneral` traces), commands served
and round trips saved are the hits. Elsewhere an HMGET is served only if none of its fields is a first
reference, which a count of unique keys cannot tell: there, commands and round trips served are estimated from
a sample of entities (`src/simulation/served.rs`): every command of a sampled entity is known to be served or
not, and the unserved ones of the sample, divided by its rate, estimate the trace's, with a band of three
standard errors. A command or round trip over several entities (an MGET, a pipeline over several hashes)
cannot be told from that sample: the band covers it served or not, and the estimate gives it the share served
of the others.
"""

from __future__ import annotations

import math

import numpy as np

BAND_SIGMAS = 3
"""The bound's band: three standard errors of the sketch either side of its estimate."""

ONE_LOOKUP_FORMATS = ("keys", "oracleGeneral")
"""Formats whose every lookup is a command and a round trip of its own."""

METHOD = "hyperloglog"
SERVED_METHOD = "entity sample"

SERVED_SAMPLE_KEYS = 1 << 16
"""Keys the sample of entities holds at most: 1,600 entities of 40 fields, whose commands give the unserved ones
to about 6% where each entity's first command is its only unserved one. At 2^18 keys the sample's tables took
20 MiB at their peak (tens of thousands of entities of a few fields each), a fifth of what a fixed-size SHARDS
curve may hold beyond the interpreter; the band over the 10^7-lookup dataset of bench/scale barely widened
(889,481-994,406 commands served against 904,643-993,368): it is mostly the commands that read several
entities, counted apart."""


def bound_is_estimated(call: dict, plan, sources) -> bool:
    """Whether the infinite bound of this call is estimated: only where it is the unique keys read, and either
    only sampled curves are asked for (no single cache, fleet or exact curve, whose comparisons need the exact
    bound) or this is a confirming pass (which reads its runs' rows, never its bound)."""
    c = call
    keeps_every_key = (c["writes"] == "ignore" and c["ttl"] is None and c["restart_every"] is None
                       and not plan.restarts and not plan.schedule and plan.allow is None and plan.rolling is None)
    if not keeps_every_key or c["_subset"] is not None:
        return False
    if c["_asks"] is not None:
        # A pass's result may stand as the call's (fleets_at_answer.py): its commands served must then be the
        # hits, so passes over traces of HMGETs keep the exact bound.
        return one_lookup_each(sources)
    sampled_only = bool(plan.curve_policies) and (plan.sample_rate is not None or c["sample_keys"] is not None)
    return sampled_only and not plan.runs and not plan.fleets and c["scheduler"] is None and not c["workers"]


def one_lookup_each(sources) -> bool:
    """Whether every lookup of these inputs is a command and a round trip of its own."""
    return all(getattr(s, "format", None) in ONE_LOOKUP_FORMATS for s in sources)


def estimated_bound(lookups: int, distinct, window: int, served: dict | None = None) -> tuple[dict, np.ndarray]:
    """The infinite cache's row, as a run's (`_native.Simulation.results`), from the sketch's count
    (`distinct`: the core's `distinct_reads`), with `estimated`, `method`, `relative_error` and the band of
    its misses and hit rate; and its hits per timeline window. With `served` (the core's `served_counts`),
    commands and round trips served are estimated from its sample of entities, with their band; without it
    every lookup is a command and a round trip (ONE_LOOKUP_FORMATS)."""
    unique, rel_error, at_window_ends = distinct
    misses = min(int(round(unique)), lookups)
    hits = lookups - misses
    spread = BAND_SIGMAS * rel_error * unique
    low, high = max(int(np.floor(unique - spread)), 0), min(int(np.ceil(unique + spread)), lookups)
    bound = {
        "policy": "infinite", "capacity": 1, "resident": misses, "lookups": lookups, "hits": hits,
        "bytes_looked_up": 0, "bytes_hit": 0,
        "commands": lookups, "commands_served": hits, "round_trips": lookups, "round_trips_saved": hits,
        "evictions": 0, "invalidations": 0, "refresh_evictions": 0, "refresh_refetches": 0, "expirations": 0,
        "stale_reads": 0, "uncacheable": 0, "restarts": 0, "restart_times": [], "refresh_by_field": [],
    }
    band = {
        "estimated": True, "method": METHOD, "relative_error": rel_error, "band_sigmas": BAND_SIGMAS,
        "misses_low": low, "misses_high": high,
        "hit_rate_low": (lookups - high) / lookups if lookups else 0.0,
        "hit_rate_high": (lookups - low) / lookups if lookups else 0.0,
    }
    if served is not None:
        commands = _served(served["commands"])
        trips = _served(served["round_trips"]) if served["round_trips"] is not None else commands
        bound.update(commands=commands["groups"], commands_served=commands["served"],
                     round_trips=trips["groups"], round_trips_saved=trips["served"])
        band.update(served_method=SERVED_METHOD, served_sample_rate=commands["rate"],
                    commands_served_low=commands["low"], commands_served_high=commands["high"],
                    commands_over_several_entities=commands["several"],
                    round_trips_saved_low=trips["low"], round_trips_saved_high=trips["high"])
    return {**bound, "band": band}, _window_hits(lookups, misses, at_window_ends, window)


def _served(counts: dict) -> dict:
    """Groups (commands or round trips) served, estimated from the sample of entities: the single-entity
    groups less the sample's unserved ones over its rate, a band of BAND_SIGMAS standard errors (a Poisson
    sample of entities: variance (1 - rate) / rate^2 times the sum of each sampled entity's unserved squared),
    and the groups over several entities, which the band covers served or not."""
    groups, several, rate = counts["groups"], counts["several"], counts["rate"]
    single = groups - several
    unserved = counts["sampled_unserved"] / rate if rate > 0 else 0.0
    sd = math.sqrt((1 - rate) / rate ** 2 * counts["sampled_unserved_squares"]) if rate > 0 else 0.0
    served_single = min(max(single - unserved, 0.0), single)
    share = served_single / single if single else 0.0
    return {
        "groups": groups, "several": several, "rate": rate,
        "served": int(round(served_single + several * share)),
        "low": int(math.floor(max(single - unserved - BAND_SIGMAS * sd, 0.0))),
        "high": int(math.ceil(min(single - unserved + BAND_SIGMAS * sd, single))) + several,
    }


def _window_hits(lookups: int, misses: int, at_window_ends, window: int) -> np.ndarray:
    """Hits per window from the estimate at each window's end: a window's misses are the rise of the unique
    keys over it, kept between 0 and its lookups (the estimate wobbles within its error), and summing to the
    final estimate, so that the timeline ends where the summary does."""
    if not lookups:
        return np.zeros(0, dtype=np.uint64)
    ends = np.minimum(np.arange(1, len(at_window_ends) + 1, dtype=np.int64) * window, lookups)
    seen = np.round(np.asarray(at_window_ends, dtype=float)).astype(np.int64)
    if lookups % window or not len(ends):
        ends, seen = np.append(ends, lookups), np.append(seen, misses)
    seen[-1] = misses
    seen = np.minimum(np.minimum(np.maximum.accumulate(np.clip(seen, 0, misses)), ends), misses)
    # Hits so far (ends - seen) never fall: taken from the end, where they are the summary's.
    hits_so_far = np.minimum.accumulate((ends - seen)[::-1])[::-1]
    return np.diff(hits_so_far, prepend=0).astype(np.uint64)


def summary_note(infinite: dict) -> str | None:
    """The summary's line on an estimated bound, with its band; None for the exact one."""
    if not infinite.get("estimated"):
        return None
    note = (f"infinite (bound) is estimated: the unique keys counted by a {METHOD} sketch of 64 KiB instead of a "
            f"set of every key (memory follows the sample); its misses within +/-"
            f"{infinite['band_sigmas'] * infinite['relative_error']:.1%} ({infinite['band_sigmas']} standard "
            f"errors): hit rate {infinite['hit_rate_low']:.2%} to {infinite['hit_rate_high']:.2%}.")
    if infinite.get("served_method"):
        note += (f" Its commands served are estimated from a sample of {infinite['served_sample_rate']:.2%} of "
                 f"the entities: {infinite['commands_served_low']:,} to {infinite['commands_served_high']:,}"
                 + (f" ({infinite['commands_over_several_entities']:,} commands over several entities counted "
                    "either way)" if infinite["commands_over_several_entities"] else "") + ".")
    return note + " Give --lru N or drop --sample for the exact bound."
