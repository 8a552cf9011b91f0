"""What batch refreshes cost per feature, as a result reports it. The core counts per field hash (the entries
each refresh of the field dropped, and the lookups that then missed because of it: re-fetches from Redis);
the schedule says which feature each hash is, as it named it."""

from __future__ import annotations


def refresh_by_feature(runs: list[dict], features: dict) -> list[dict]:
    """One dict per scheduled feature (`feature` as the schedule names it, `field` its id as the trace spells
    it, `refresh_evictions`, `refresh_refetches`), summed over `runs` (the core's dicts of one cache, or of a
    fleet's pods); `features`: {field hash: (feature, field id)}, options.refresh_features."""
    totals = {h: [0, 0] for h in features}
    for run in runs:
        for h, dropped, refetched in run.get("refresh_by_field", ()):
            if h in totals:  # the core refreshes only the fields the schedule names
                totals[h][0] += dropped
                totals[h][1] += refetched
    return [{"feature": feature, "field": field, "refresh_evictions": totals[h][0],
             "refresh_refetches": totals[h][1]} for h, (feature, field) in features.items()]
