"""The report's section on the traffic's anatomy: popularity, one-hit wonders, reuse, lookups per command, and
per entity type and per feature, with the allow-list answer."""

from __future__ import annotations

import numpy as np

from cachescope.report import figures
from cachescope.report.context import Context
from cachescope.report.markup import duration, esc, facts, is_missing, missing, pct, section, table
from cachescope.simulate.labels import approx_count

TOP_FEATURES = 25
ALLOW_SHARE = 0.95
"""The allow-list answer: the fewest features that take this share of the cache's hits at the chosen size."""


def anatomy_section(ctx: Context) -> str:
    a = ctx.anatomy
    if a is None:
        return section("anatomy", "The traffic's anatomy", missing(f"Not drawn: {ctx.anatomy_missing}."))
    pairs = [("Zipf exponent", "too few repeated keys to fit" if a.zipf_s is None else
              f"s = {a.zipf_s:.2f} (fitted on ranks 1 to {a.zipf_ranks[1]:,}; s near 1 or above: a small cache "
              "holds most of the traffic)"),
             ("one-hit wonders", f"{a.one_hit_keys:.1%} of the keys are looked up once ({a.one_hit_lookups:.1%} of "
                                 "the lookups): no cache can hit them"),
             ("lookups per read command", f"mean {np.mean(a.per_command):.1f}, median {np.median(a.per_command):.0f},"
                                          f" max {int(np.max(a.per_command)):,}" if len(a.per_command) else "none")]
    if len(a.reuse_lookups):
        if a.reuse_seconds is not None:
            pairs.append(("reuse time (median, 90th)", f"{duration(float(np.median(a.reuse_seconds)))}, "
                                                       f"{duration(float(np.quantile(a.reuse_seconds, 0.9)))}"))
        else:
            pairs.append(("reuse distance (median, 90th)", f"{approx_count(np.median(a.reuse_lookups))} and "
                          f"{approx_count(np.quantile(a.reuse_lookups, 0.9))} lookups (no clock: no reuse times)"))
    if a.mean_value_size is not None:
        pairs.append(("mean value size", f"{a.mean_value_size:,.0f} bytes"))
    body = facts(pairs)
    if a.truncated:
        body += missing(f"This section describes the first {a.lookups:,} lookups of the trace only (the anatomy "
                        "keeps a few numbers per lookup in memory).")
    body += '<div class="grid">' + figures.popularity(a) + figures.reuse(a) + figures.per_command(a) + "</div>"
    if a.reuse_seconds is None:
        body += missing("This trace has no clock: reuse is measured in lookups, not seconds.")
    body += _by_type(ctx) + _by_feature(ctx)
    return section("anatomy", "The traffic's anatomy", body)


def _at_size(ctx: Context) -> str:
    a = ctx.anatomy
    if a.lru_capacity is None:
        return ""
    how = "exact" if a.lru_rate >= 1 else f"estimated on a sample of {a.lru_rate:.0%} of the keys (SHARDS)"
    text = (f"Hit rate: LRU at {a.lru_capacity:,} entries ({esc(ctx.chosen['why'])}), {how}; "
            f"{pct(a.lru_hit_rate)} over all lookups.")
    q = ctx.result.request
    if ctx.run is not None and (q.get("refresh_schedule") or q.get("ttl") or q.get("restart_every")
                                or q.get("restart_at") or q.get("allow_list") or q.get("writes", "ignore") != "ignore"):
        text += (" These are LRU's stack distances, which model no refresh, TTL, restart, allow-list or "
                 "invalidation; the per-feature hit rates below are the simulated cache's, with them.")
    return text


def _by_type(ctx: Context) -> str:
    a = ctx.anatomy
    df = a.by_type
    cols = ["entity type (key prefix)", "lookups", "share", "entities", "cache keys"]
    has_hits = "hit_rate" in df
    if has_hits:
        cols.append("LRU hit rate")
    rows = []
    for row in df.head(20).to_dict("records"):
        cells = [row["type"], f"{row['lookups']:,}", pct(row["share"]), f"{row['entities']:,}", f"{row['keys']:,}"]
        if has_hits:
            cells.append(pct(row["hit_rate"]))
        rows.append(cells)
    out = "<h3>Per entity type</h3>" + table(cols, rows)
    out += f"<p>{_at_size(ctx)}</p>" if has_hits else missing(
        "No hit rate per type: no cache size was chosen (a reachable --target, a curve's knee or an --lru size "
        "in entries gives one).")
    return out


def _hours(ctx: Context) -> float | None:
    """Hours of trace, when it has a clock (refresh costs are given per hour of it)."""
    span = ctx.result.duration_s()
    return span / 3600 if span else None


def refresh_cell(dropped, refetched, hours: float | None) -> str:
    """A feature's refresh cost, `dropped / re-fetched`: the entries its refreshes dropped and the lookups that
    missed because of them (re-fetches from Redis), per hour of trace when it has a clock."""
    if is_missing(dropped):
        return "not refreshed"
    if hours:
        return f"{_per_hour(dropped / hours)} / {_per_hour(refetched / hours)} per h"
    return f"{int(dropped):,} / {int(refetched):,}"


def _per_hour(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


def _feature_hits_at(ctx: Context) -> str:
    """Where the per-feature hit rates come from."""
    run = ctx.run
    if run is None:
        why = f" (the chosen cache could not be simulated again: {ctx.run_missing})" if ctx.run_missing else ""
        return f"Hit rate per feature: as per type, LRU's{why}."
    return (f"Hit rate per feature: {run.label} at {run.capacity:,} entries ({esc(ctx.chosen['why'])}), simulated "
            f"once more over the whole trace with the same options; {pct(run.hits / max(run.lookups, 1))} over "
            f"all {run.lookups:,} lookups. The share of hits and the allow-list are this cache's.")


def _refresh_note(ctx: Context, hours: float | None) -> str:
    """The refresh costs in total, or how to get them."""
    if not ctx.result.request.get("refresh_schedule"):
        return missing("No refresh cost: no --refresh-schedule was given. A feature store's batch upload replaces "
                       "every value of a feature at once; give the uploads as --refresh-schedule s.csv "
                       "(feature,time rows) and this table gains a refresh cost column: per feature, the "
                       "entries its refreshes drop from the cache and the lookups that then go to Redis again, "
                       "per hour of trace.")
    run = ctx.run
    if run is None:
        return missing("No refresh cost: " + (ctx.run_missing or "no cache size was chosen") + ".")
    rate = f" ({_per_hour(run.refresh_refetches / hours)} per hour)" if hours else ""
    per = ", per hour of trace" if hours else ""
    return (f"<p>Refresh cost: entries the feature's refreshes dropped / lookups that then missed because of "
            f"them{per}. In all, the scheduled refreshes dropped {run.refresh_evictions:,} entries of this cache "
            f"and {run.refresh_refetches:,} lookups{rate} then missed because of them: re-fetches from Redis "
            "that the refreshes caused (a key counts once, at its next lookup; not when a restart, an expiry "
            "or an invalidation would have removed it first).</p>")


def _by_feature(ctx: Context) -> str:
    a = ctx.anatomy
    out = "<h3>Per feature</h3>"
    df = a.by_feature
    if df is None:
        return out + missing("The trace's lookups have no fields (GET or keys traces): there are no features.")
    if ctx.names is not None:
        ids = [f for f in df["feature"]]
        named = sum(1 for f in ids if f in ctx.names.values())
        out += f"<p>The dictionary named {named:,} of the {len(ids):,} field ids the trace looks up.</p>"
    else:
        out += "<p>Features are shown by their field id (the decimal xxHash32 of the name); " \
               "--feature-names names.txt names them.</p>"
    has_hits, has_bytes = "hit_rate" in df, "byte_share" in df
    has_refresh = "refresh_dropped" in df
    policy = ctx.run.label if ctx.run is not None else "LRU"
    cols = ["feature", "lookups", "share"] + (["bytes share"] if has_bytes else []) + ["entities"] \
        + ([f"{policy} hit rate", "share of hits"] if has_hits else []) + (["refresh cost"] if has_refresh else [])
    hours = _hours(ctx)
    rows = []
    for row in df.head(TOP_FEATURES).to_dict("records"):
        cells = [row["feature"], f"{row['lookups']:,}", pct(row["share"])]
        if has_bytes:
            cells.append(pct(row["byte_share"]))
        cells.append(f"{row['entities']:,}")
        if has_hits:
            cells += [pct(row["hit_rate"]), pct(row["hits_share"])]
        if has_refresh:
            cells.append(refresh_cell(row["refresh_dropped"], row["refresh_refetched"], hours))
        rows.append(cells)
    out += table(cols, rows, text_columns=(0,))
    if len(df) > TOP_FEATURES:
        out += f"<p>The {TOP_FEATURES} most looked-up of {len(df):,} features.</p>"
    if has_hits:
        out += f"<p>{_feature_hits_at(ctx)}</p>"
    out += _refresh_note(ctx, hours)
    if not has_bytes:
        out += missing("No bytes per feature: this trace has no value sizes (a capture or its Parquet trace has).")
    if not has_hits:
        return out + missing("No allow-list answer: it needs a cache size (a reachable --target, a curve's knee, or --lru N).")
    allowed = a.allow_list(ALLOW_SHARE)
    keep = len(allowed)
    rest = df[~df["feature"].isin(allowed)]
    listed = ", ".join(allowed[:12])
    more = f" and {keep - 12:,} more" if keep > 12 else ""
    out += (f"<p><b>Allow-list:</b> {keep:,} of {len(df):,} features take {ALLOW_SHARE:.0%} of the hits at this "
            f"size ({esc(listed)}{esc(more)}). The other {len(rest):,} take {rest['share'].sum():.1%} of the "
            f"lookups and {rest['hits_share'].sum():.1%} of the hits: their entries fill the cache and are rarely "
            "read again. Simulate the allow-list with --allow-list FILE to see what it gains.</p>")
    out += ("<details><summary>The allow-list, one feature a line (save it as a file for --allow-list)</summary>"
            f"<pre>{esc(chr(10).join(allowed))}</pre></details>")
    return out
