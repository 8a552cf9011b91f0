"""The report's sections, each a function of one Context returning HTML. A section whose data the trace lacks
(no clock, no curve asked for, no pods) says what is missing and how to get it, instead of vanishing."""

from __future__ import annotations

from cachescope.report import figures
from cachescope.report.anatomy_section import anatomy_section  # noqa: F401  (page.py takes every section here)
from cachescope.report.context import Context
from cachescope.report.markup import duration, esc, facts, is_missing, missing, pct, section, table
from cachescope.simulate.labels import approx_count, human_bytes, label
from cachescope.simulate.answer_text import answer_line, best_line, cache_name
from cachescope.simulate.registry import POLICIES
from cachescope.simulate.sizing import records


# --- the answer ------------------------------------------------------------------------------------------

def sizing_sentence(row: dict, overhead: int | None = None) -> str:
    return _sentence(answer_line(row, overhead))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def answer(ctx: Context) -> str:
    """The decision first: the cheapest cache or fleet that reaches each target (or the best that does not),
    then every answer it was chosen from; without a target, the best cache or fleet simulated."""
    r = ctx.result
    overhead = r.request.get("entry_overhead")
    lines = [_sentence(best_line(row)) for row in r.best]
    lines += [sizing_sentence(row, overhead) for row in records(r.sizing)] if len(r.sizing) else []
    fleets = [row for row in r.summary_records() if "pods" in row]
    if fleets and not r.best:
        best = max(fleets, key=lambda row: (row["hit_rate"], -row["pods"]))
        lines.append(f"Highest fleet simulated (no target was given, so no cost was weighed): "
                     f"{label(best['policy'], best['capacity'], best['capacity_unit'])} in each of {best['pods']} "
                     f"pods, routed by {best['route']}: {best['hit_rate']:.1%} "
                     f"(pods {best['pod_hit_rate_min']:.1%} to {best['pod_hit_rate_max']:.1%}).")
    if not lines:
        runs = r.summary_records()
        if runs:
            best = max(runs, key=lambda row: row["hit_rate"])
            lines.append(f"Best cache simulated: {label(best['policy'], best['capacity'], best['capacity_unit'])} "
                         f"at {best['hit_rate']:.1%}. Give --curve lru --target 70% for the size that reaches a "
                         "target.")
    lines.append(f"No cache of any size can beat the infinite bound on this trace: {r.infinite['hit_rate']:.1%}.")
    return '<div class="answer" id="answer">' + "".join(f"<p>{esc(t)}</p>" for t in lines) + "</div>"


# --- the input -------------------------------------------------------------------------------------------

def input_section(ctx: Context) -> str:
    r, t, a = ctx.result, ctx.result.trace, ctx.anatomy
    span = r.duration_s()
    pairs = [("trace", f"{t.path} ({t.format})"),
             ("duration", duration(span) if span else "unknown: this trace has no clock"),
             ("commands", f"{t.commands:,}"),
             ("lookups", f"{t.lookups:,}" + (f" ({t.lookups / span:,.1f}/s)" if span else "")),
             ("unique keys", f"{r.unique_keys:,} " + ("(key, field) pairs" if r.granularity == "field" else "keys")),
             ("writes, deletes", f"{t.writes:,}, {t.deletes:,}"),
             ("other commands", f"{t.other_commands:,}")]
    if a is not None:
        pairs.append(("client hosts", f"{len(a.clients):,}" if a.clients else "unknown: the trace names no clients"))
    if t.error_replies:
        pairs.append(("answered with an error", ", ".join(f"{c} {n:,}" for c, n in t.error_replies.items())
                      + f" ({t.error_lookups:,} lookups left out)"))
    body = facts(pairs)
    if a is not None and a.commands_by_type:
        total = sum(a.commands_by_type.values())
        body += "<h3>Commands by type</h3>" + table(
            ["command", "commands", "share"], [(c, f"{n:,}", pct(n / total)) for c, n in a.commands_by_type.items()])
    elif a is not None:
        body += "<h3>Commands by type</h3>" + missing("The trace does not name its commands (it has no cmd column).")
    body += "<h3>Capture counters and losses</h3>"
    if _inputs(r):
        from cachescope.parse.report import input_line, input_report

        lines = [line.strip() for stats in _inputs(r) for line in [input_line(stats), *input_report(stats)]]
        body += "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"
    if not _is_capture(r):  # a text trace's reader counts lines, not packets
        body += missing(f"This is a {t.format} trace, not a capture: it carries no packet counters, so losses "
                        "(gaps, retransmissions, kernel drops) cannot be told from it. parse.py's --stats-json "
                        "of the capture it came from has them.")
    return section("input", "The input", body)


def _inputs(r) -> list[dict]:
    """What reading each input found, as parse.py reports it (a merge's inputs each their own)."""
    return r.input_reports or ([r.capture_stats] if r.capture_stats else [])


def _is_capture(r) -> bool:
    """Whether the result's inputs were captures, whose counters tell their losses (a text trace's tell lines)."""
    return bool(_inputs(r)) and all("packets" in stats for stats in _inputs(r))


# --- curves and the sizing answer ------------------------------------------------------------------------

def sizing_section(ctx: Context) -> str:
    r = ctx.result
    if not r.has_curves():
        return section("sizing", "Curves and the size to pick", missing(
            "No curve was asked for: give --curve lru (exact) or --curve lru,wtinylfu and --target 70% for the "
            "hit rate at every capacity, the knee and the size that reaches the target."))
    body = figures.curves(r)
    if len(r.sizing):
        body += "<ul>" + "".join(f"<li>{esc(sizing_sentence(row, r.request.get('entry_overhead')))}</li>"
                                 for row in records(r.sizing)) \
            + "</ul>"
    else:
        body += missing("No target was given (--target 70%): the curve is drawn, no size is picked.")
    body += "<h3>Assumptions behind the answer</h3><ul>" + "".join(
        f"<li>{esc(x)}</li>" for x in assumptions(ctx)) + "</ul>"
    return section("sizing", "Curves and the size to pick", body)


def assumptions(ctx: Context) -> list[str]:
    r, q = ctx.result, ctx.result.request
    out = [f"Cache key: {'(entity, feature), a feature-store client caching fields' if r.granularity == 'field' else 'the whole entity key'} "
           "(--granularity).",
           f"Memory: an entry weighs its value, key and field bytes plus {q.get('entry_overhead', 168)} bytes of "
           "overhead (--entry-overhead; 168 is a JVM Caffeine cache)."
           + ("" if ctx.anatomy is None or ctx.anatomy.mean_value_size is not None else
              " This trace has no value sizes, so entry counts are not turned into bytes."),
           {"ignore": "Writes: ignored, so a cached value can go stale (stale reads are counted); "
                      "--writes invalidate models invalidation.",
            "invalidate": "Writes and deletes invalidate the cached entries.",
            "update": "Writes refresh the cached values in place."}.get(q.get("writes", "ignore"), ""),
           ("Allow-list: only the listed features are cached." if q.get("allow_list") else
            "Allow-list: none, every feature is cacheable."),
           "Capacity is per pod; the hit rate counts the cold start (the trace begins with empty caches).",
           "Curves: LRU exact (Mattson's stack algorithm); other policies from miniature simulations on a sample "
           "of the keys, with an error band over the samples."]
    if q.get("ttl"):
        out.append(f"Entries expire {q['ttl']} after admission (--ttl).")
    if q.get("restart_every") or q.get("restart_at"):
        out.append("Caches restart empty at the deploys marked on the timeline.")
    return out


# --- hit rate over time ----------------------------------------------------------------------------------

def timeline_section(ctx: Context) -> str:
    r = ctx.result
    if not len(r.summary):
        answers = [row for row in records(r.sizing) if row.get("reached") and row["capacity_unit"] == "entries"] \
            if len(r.sizing) else []
        if not answers or r.answer_timeline is None or r.answer_timeline.empty:
            return section("timeline", "Hit rate over time", missing(
                "Only curves were asked for, and no confirmed answer to draw (the input was read once): give "
                "--lru N (the chosen size) to draw its hit rate over time."))
        body = figures.answer_timeline(r, answers)
        body += ("<p>The hit rate over time of each answer's own full run, at the capacity the answer gives (a "
                 "fleet's over all its pods). --lru N simulates a size as a cache of its own, with warm-up, "
                 "deploys and recovery in a table.</p>")
        if not r.has_clock:
            body = missing("This trace has no clock: the hit rate is drawn against lookups.") + body
        return section("timeline", "Hit rate over time", body)
    body = ""
    if not r.has_clock:
        body += missing("This trace has no clock (a commands or keys text): the hit rate is drawn against "
                        "lookups, and warm-up and recovery times cannot be told.")
    body += figures.timeline(r)
    rows = r.summary_records()
    if r.has_clock:
        cols = ["cache", "hit rate", "steady", "warm-up", "deploys", "recovery"]
        cells = []
        for row in rows:
            name = label(row["policy"], row["capacity"], row["capacity_unit"])
            if "pods" in row:
                name += f" x{row['pods']} {row['route']}"
            deploys = len(row.get("deploy_times") or []) or len(r.restart_times)
            cells.append([name, pct(row["hit_rate"]), pct(row.get("steady_hit_rate")),
                          duration(row.get("warmup_s")) or "not reached", f"{deploys:,}",
                          duration(row.get("recovery_s")) if deploys else "no deploy simulated"])
        body += table(cols, cells)
        body += ("<p>Warm-up (ends at the diamond on each line; the longest shaded when the caches share a "
                 "panel) and recovery: time until the hit rate over a window is within 5% of the "
                 "steady rate (the median over the second half of each stretch between restarts). Deploys and "
                 "restarts are dotted lines; --restart-every 6h or --rolling-restart-every 6h simulates them.</p>")
    return section("timeline", "Hit rate over time", body)


# --- fleets ----------------------------------------------------------------------------------------------

def fleet_section(ctx: Context) -> str:
    r = ctx.result
    rows = [row for row in r.summary_records() if "pods" in row]
    if not rows:
        return section("fleets", "Fleets: pods and routes", missing(
            "No pods were asked for: --pods 1,8 --route random,entity compares replicated and sharded fleets "
            "(capacity per pod)."))
    # Round trips are a column of their own only where the trace knows batches: elsewhere each command is a
    # round trip, and the column would repeat the commands served.
    batches = any(row.get("round_trips", row.get("commands")) != row.get("commands") for row in rows)
    cols = ["cache per pod", "pods", "route", "hit rate", "commands served"] \
        + (["round trips saved"] if batches else []) + ["pods min / median / max", "imbalance", "fleet memory"]
    cells = []
    for row in sorted(rows, key=lambda x: (x["policy"], x["capacity"], x["route"], x["pods"])):
        memory = human_bytes(row["fleet_capacity_bytes"]) if row["capacity_unit"] == "bytes" \
            else f"{approx_count(row['fleet_capacity_entries'])} entries"
        cells.append([label(row["policy"], row["capacity"], row["capacity_unit"]), f"{row['pods']:,}",
                      row["route"] + (" (estimate)" if isinstance(row.get("estimate"), str) else ""),
                      pct(row["hit_rate"]), pct(row.get("command_hit_rate"))]
                     + ([pct(row.get("round_trips_saved_rate"))] if batches else [])
                     + [f"{pct(row['pod_hit_rate_min'])} / {pct(row['pod_hit_rate_median'])} / "
                        f"{pct(row['pod_hit_rate_max'])}", f"{row['load_imbalance']:.2f}", memory])
    body = "".join(f"<p>{esc(cache_name(s))} at {int(s['capacity']):,} entries per pod: {esc(s['why'])} (no "
                   "capacity was given: each fleet runs at its own answer).</p>" for s in getattr(r, "fleet_sizes", []))
    body += table(cols, cells)
    if len({row["pods"] for row in rows}) > 1 or len(rows) > 1:
        body += figures.fleets(rows)
    body += ("<p>Commands served: commands (an HMGET and all its fields) answered entirely from the pods' caches. "
             + ("Round trips saved: batches (the commands a connection sent before waiting for replies) whose "
                "every lookup hit, on whichever pods it reached, and that wrote nothing. " if batches else "") +
             "Replicated pods (random, round-robin) each cache what their share of the traffic brings, so the "
             "hot keys are cached in every pod; sharded pods (entity) own their entities, so the fleet's "
             "capacity adds up. Imbalance: the busiest pod's lookups over the mean.</p>")
    return section("fleets", "Fleets: pods and routes", body)


# --- what the trace cannot tell --------------------------------------------------------------------------

def limits_section(ctx: Context) -> str:
    r, a, q = ctx.result, ctx.anatomy, ctx.result.request
    items = []
    span = r.duration_s()
    warmups = [x for x in (list(r.summary["warmup_s"]) if "warmup_s" in r.summary else []) if not is_missing(x)]
    if len(r.sizing) and "warmup_s" in r.sizing:
        warmups += [x for x in r.sizing["warmup_s"] if not is_missing(x)]
    if span is None:
        items.append("Time: the trace has no clock, so nothing here is per second, and warm-up, recovery, TTLs and "
                     "deploys cannot be simulated. A MONITOR log, a capture or its Parquet trace has one.")
    else:
        longest = max(warmups, default=None)
        if longest is None:
            items.append(f"Length: {duration(span)} of traffic; no cache here reached a steady rate, so the "
                         "trace may be too short to see one.")
        elif longest > span / 2:
            items.append(f"Length: {duration(span)} of traffic, and the slowest cache took {duration(longest)} "
                         "to warm up: more than half the trace is warm-up, so its hit rates understate a warm "
                         "cache. Capture longer.")
        else:
            items.append(f"Length: {duration(span)} of traffic against a warm-up of at most {duration(longest)}: "
                         "long enough to see the caches warm; daily cycles and rare keys of a longer day are not "
                         "in it.")
    losses = sum(stats.get("gaps", 0) for stats in _inputs(r)) if _is_capture(r) else None
    if losses is None:
        items.append("Losses: not a capture, so packet losses before this trace was made cannot be told.")
    elif losses:
        items.append(f"Losses: {losses:,} gaps in the capture's streams; commands in them are missing, and "
                     "the hit rates are those of the traffic that was seen.")
    else:
        items.append("Losses: none seen in the capture (no gaps).")
    if a is not None and a.truncated:
        items.append(f"Sampling: the anatomy covers the first {a.lookups:,} lookups only.")
    sampled = r.curves[r.curves["method"] != "exact"] if r.has_curves() else None
    if sampled is not None and len(sampled):
        rate = float(sampled["sample_rate"].iloc[0])
        items.append(f"Sampling: the {', '.join(sorted({POLICIES[p].label for p in sampled['policy']}))} curves "
                     f"are estimated from samples of {rate:.2%} of the keys each, with the error band drawn.")
    if a is not None and a.lru_rate < 1:
        which = "per-type hit rates are" if ctx.run is not None else "per-type and per-feature hit rates are"
        items.append(f"Sampling: the {which} LRU's on a sample of {a.lru_rate:.0%} of the keys.")
    if r.trace.format in ("monitor", "commands", "keys"):
        items.append("Replies: a text trace has none, so nil lookups (keys Redis does not have) count as "
                     "cacheable, and value sizes are unknown.")
    if not q.get("pods"):
        items.append("Pods: the trace was simulated as one cache. A capture from one service pod holds that pod's "
                     "traffic only; one from the Redis host holds the whole fleet's (--pods splits it).")
    items.append("Policies: the simulated caches are models (LRU, Caffeine's W-TinyLFU, ...); real libraries "
                 "differ in detail, and a real W-TinyLFU varies a little from run to run.")
    if a is not None and a.by_feature is not None and not q.get("refresh_schedule"):
        items.append("Refreshes: no --refresh-schedule was given, so batch uploads that replace every value of a "
                     "feature are not simulated (their cost per feature is not known).")
    return section("limits", "What this trace cannot tell",
                   "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>")
