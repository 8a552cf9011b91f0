"""The sizing answer a team configures: for each curve policy, as one cache and as each fleet asked for, and
each target, the smallest capacity per pod whose full run reaches the target (confirm.py), its memory per pod
and for the fleet, the byte budget that reaches the target in a weight-bounded cache, and how it was found;
then, per target, the cheapest fleet that reaches it.

Where the trace can be read only once (a pipe), nothing is confirmed: the answer is the curve's, and says so.
"""

from __future__ import annotations

from cachescope.simulate.bracket import Bracket, first_bracket, scaled_bracket
from cachescope.simulate.capacity import MAX_BYTES
from cachescope.simulate.confirm import DEFAULT_SEEDS, SEEDED, Question, confirm
from cachescope.simulate.registry import smallest_capacity
from cachescope.simulate.sizing import records

SHARDED = ("entity", "key-pattern")
"""Routes that give each entity one owner pod: a fleet of N such pods holds about what one cache N times as
large does, so its first guess is the single cache's answer over N. Replicated pods each need about the
single cache's size."""

BYTES_SPREAD = 2.5
"""How far the first guess of a byte budget (entries x the mean value, a typical key and the overhead) may be
off: key and field lengths are not known before the runs."""

MAX_ENTRIES_A_PASS = 1 << 25
"""Entries the caches of one pass may hold together (about 2-3 GiB at the policies' 60-100 bytes an entry):
the runs a round asks for beyond that are read in further passes, so that many targets, fleets and seeds
near a large answer cannot take the machine's memory."""

BYTES_AN_ENTRY_GUESS = 128
"""To count a byte budget's entries against that bound."""

KEY_BYTES_GUESS = 48
"""A typical key and field in bytes (an entity id and a feature id), for that first guess."""


def confirm_answers(result, shapes, targets, entry_overhead: int, rereadable: bool, run_pass,
                    seeds: int | None = None, value_sizes: bool = True, single_asked: bool = True,
                    by_runs=()) -> None:
    """Fills `result.sizing` (one row per policy, fleet and target) and `result.best`; `run_pass(asks)` runs
    a confirming pass (simulate_trace with `_asks`) and returns its result. `single_asked`: whether the single
    cache is one of the choices (no pods asked for, or 1 among them), as the fleets `shapes` are; `by_runs`:
    policies without a curve (one the options rule out), sized by full runs alone from every capacity up to
    the unique keys."""
    import pandas as pd

    estimates = result.sizing
    if estimates.empty and not by_runs:
        return
    if not rereadable:
        rows = [{**r, "reached": bool(r["reachable"])} for r in records(estimates)]
        result.sizing = pd.DataFrame(rows)
        result.best = best_rows(result.sizing, targets, single_asked or not shapes)
        return
    draws = tuple(range(DEFAULT_SEEDS if seeds is None else seeds))  # seeds checked by plan.py
    questions = _questions(estimates, result.curves, shapes, targets, result.unique_keys_high, draws, result.params)
    questions += [Question(policy, target, "entries", pods, route,
                           _whole_range(result.unique_keys_high, policy, result.params), draws if policy in SEEDED else (None,))
                  for policy in by_runs for pods, route in [(1, None), *shapes] for target in targets]
    if value_sizes:
        # Each answer's byte budget is sized in the same passes, from a first guess of the entries' weight.
        per_entry = _bytes_per_entry(result, entry_overhead)
        budgets = [(q, _byte_bracket(q, per_entry)) for q in questions if q.unit == "entries"]
        questions += [Question(q.policy, q.target, "bytes", q.pods, q.route, bracket, q.seeds)
                      for q, bracket in budgets if bracket is not None]

    def rows_of(asks):
        by_ask = {}
        for share in memory_shares(asks):
            pass_result = run_pass(share)
            # The summary lists the single runs first, then the fleets, each in the order asked.
            order = [a for a in share if a.route is None] + [a for a in share if a.route is not None]
            for index, (ask, row) in enumerate(zip(order, pass_result.summary_records())):
                row["_run"] = (pass_result, index)  # where its hit rate over time is, for the answer's timeline
                by_ask[ask] = row
        return [by_ask[a] for a in asks]

    passes = confirm(questions, rows_of)
    estimated = records(estimates)
    rows = [_row(q, estimated, result, passes) for q in questions]
    sizing = _merge_budgets([r for r in rows if r is not None])
    result.sizing = pd.DataFrame(sizing)
    result.best = best_rows(result.sizing, targets, single_asked or not shapes)
    result.confirming_passes = passes
    result.answer_timeline = answer_timeline([q for q in questions if q.unit == "entries"])


def memory_shares(asks: list) -> list[list]:
    """`asks` cut into runs of consecutive asks whose caches hold at most MAX_ENTRIES_A_PASS entries together
    (a fleet's, all its pods': a client fleet's pods are not known before the run, 64 are assumed)."""
    shares, share, held = [], [], 0
    for ask in asks:
        entries = ask.capacity if ask.unit == "entries" else ask.capacity // BYTES_AN_ENTRY_GUESS
        entries *= ask.pods if ask.pods > 0 else 64
        if share and held + entries > MAX_ENTRIES_A_PASS:
            shares.append(share)
            share, held = [], 0
        share.append(ask)
        held += entries
    return shares + ([share] if share else [])


def answer_timeline(questions: list[Question]):
    """The hit rate over time of each entry answer's own full run (its lowest draw), one row per answer and
    window: what the cache configured at the answer would have seen."""
    import pandas as pd

    frames = []
    for q in questions:
        answer = q.answer
        if answer is None or answer.get("_run") is None:
            continue
        pass_result, index = answer["_run"]
        timeline = pass_result.timeline
        mine = timeline[timeline["run"] == index].drop(columns=["run"])
        frames.append(mine.assign(pods=q.pods, route=q.route, target=q.target, reached=q.bracket.reachable))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _whole_range(unique_keys: int, policy: str, params: dict) -> Bracket:
    """Nothing known of where the answer is: anywhere from the smallest cache to one that holds every key."""
    top = max(int(unique_keys), 1)
    return Bracket(low=0, high=None, top=top, guess_high=top, low_known=True,
                   bottom=smallest_capacity(policy, params.get(policy)))


def _byte_bracket(q: Question, per_entry: float) -> Bracket | None:
    """Where the byte budget is thought to be before any run: around the entry answer's guess in bytes, or,
    where nothing is known of the entry answer (no curve), anywhere up to every key's weight; None where the
    curve says the target is out of reach."""
    b = q.bracket
    if b.low == 0 and b.high is None and b.low_known:
        return Bracket(low=0, high=None, top=MAX_BYTES, guess_high=int(b.top * per_entry * BYTES_SPREAD),
                       low_known=True)
    guess = b.high if b.high is not None else (b.guess_high if b.guess_high < b.top else None)
    return None if guess is None else scaled_bracket(int(guess * per_entry), MAX_BYTES, BYTES_SPREAD)


def _questions(estimates, curves, shapes, targets, unique_keys: int, draws: tuple, params: dict) -> list[Question]:
    """One question per curve policy, fleet shape and target, bracketed by its own curve where it has one,
    else by the single cache's answer scaled to a pod."""
    questions = []
    rows = records(estimates)
    for policy in dict.fromkeys(r["policy"] for r in rows):
        for pods, route in [(1, None), *shapes]:
            for target in targets:
                own = _estimate(rows, policy, pods, route, target)
                single = _estimate(rows, policy, 1, None, target)
                if single is None:
                    continue
                unit = single["capacity_unit"]
                top = max(int(unique_keys), 1) if unit == "entries" else MAX_BYTES
                seeds = draws if policy in SEEDED else (None,)
                if own is not None:
                    curve = _curve_of(curves, own)
                    sampled = "hit_rate_low" in curve and curve["hit_rate_low"].notna().all()
                    bracket = first_bracket(curve["capacity"], curve["hit_rate"], target, top,
                                            curve["hit_rate_low"] if sampled else None,
                                            curve["hit_rate_high"] if sampled else None)
                elif single.get("reachable"):
                    guess = single["capacity"] / (pods if route in SHARDED and pods > 0 else 1)
                    bracket = scaled_bracket(int(guess), top)
                else:
                    bracket = scaled_bracket(top, top)
                if unit == "entries":
                    bracket.bottom = smallest_capacity(policy, params.get(policy))
                questions.append(Question(policy, target, unit, pods, route, bracket, seeds))
    return questions


def _estimate(rows: list[dict], policy, pods, route, target) -> dict | None:
    """The curve's answer for this cache or fleet (a client fleet's curve counts its pods itself)."""
    for r in rows:
        same_fleet = r["route"] == route and (route == "client" or r["pods"] == pods)
        if r["policy"] == policy and same_fleet and r["target"] == target:
            return r
    return None


def _curve_of(curves, row: dict):
    """The points of the curve that gave `row`, by capacity."""
    same = (curves["policy"] == row["policy"]) & (curves["method"] == row["method"]) \
        & (curves["capacity_unit"] == row["capacity_unit"])
    same &= curves["route"].isna() if row["route"] is None else \
        (curves["route"] == row["route"]) & (curves["pods"] == row["pods"])
    return curves[same].sort_values("capacity")


def _bytes_per_entry(result, entry_overhead: int) -> float:
    """The first guess of an entry's weight: the mean value looked up, a typical key and field, the overhead."""
    lookups = result.infinite["lookups"] or 1
    looked = 0
    if not result.curves.empty and "bytes_looked_up" in result.curves:
        looked = int(result.curves["bytes_looked_up"].fillna(0).max())
    return looked / lookups + KEY_BYTES_GUESS + entry_overhead


def _row(q: Question, estimated: list[dict], result, passes: int) -> dict | None:
    """The sizing row of a closed question (see DESIGN.md's `sizing[]` contract)."""
    curve = _estimate(estimated, q.policy, q.pods, q.route, q.target)
    answer = q.answer
    row = {"policy": q.policy, "target": q.target, "pods": q.pods, "route": q.route, "capacity_unit": q.unit,
           "reached": q.bracket.reachable and answer is not None, "bound_hit_rate": result.infinite["hit_rate"]}
    row["reachable"] = row["reached"]  # the name sizing rows had before confirmation: kept for its readers
    if answer is None:
        if q.unit != "entries" or curve is None:
            return None
        # Out of reach by the curve alone (an exact one, or one whose band never reaches it): its bound.
        points = _curve_of(result.curves, curve)
        top = points.iloc[-1]
        return {**row, "capacity": int(top["capacity"]), "hit_rate": float(top["hit_rate"]),
                "method": curve["method"], "estimate_method": curve["method"], "knee_capacity": curve.get("knee_capacity")}
    seeded = q.seeds != (None,)
    exact = not seeded and q.bracket.high is not None and q.bracket.high - q.bracket.low <= 1
    capacity = q.bracket.high if q.bracket.reachable else max(q.tried)
    row.update(capacity=int(capacity), hit_rate=answer["hit_rate"],
               method="exact" if exact else "confirmed",
               hit_rate_low=answer["hit_rate_low"], hit_rate_high=answer["hit_rate_high"],
               passes=passes, seeds=answer["seeds"] if seeded else None)
    for key in ("command_hit_rate", "round_trips_saved_rate", "byte_hit_rate", "warmup_s"):
        if answer.get(key) is not None:
            row[key] = answer[key]
    if "warmup_s" in row:
        row["warmup_capacity"] = row["capacity"]  # the answer's own run, not a nearby capacity of the curve
    if q.unit == "entries" and answer.get("memory_bytes") is not None:
        row["memory_bytes"] = int(answer["memory_bytes"])
    elif q.unit == "bytes":
        row["memory_bytes"] = int(capacity)
    if curve is not None:
        row["estimate_capacity"] = curve.get("capacity")
        row["estimate_method"] = curve["method"]
        row["knee_capacity"] = curve.get("knee_capacity")
        for band in ("hit_rate_low", "hit_rate_high"):
            if curve.get(band) is not None:
                row[f"estimate_{band}"] = curve[band]

    duration = result.duration_s()
    if duration:
        row["lookups_saved_per_s"] = answer["hits"] / duration
        if answer.get("round_trips_saved") is not None:
            row["round_trips_saved_per_s"] = answer["round_trips_saved"] / duration
    return row


def _merge_budgets(rows: list[dict]) -> list[dict]:
    """Entry answers with the byte budget of the same question (`capacity_bytes`); a byte curve's own answers
    stay rows of their own."""
    entries = [r for r in rows if r["capacity_unit"] == "entries"]
    budgets = {(r["policy"], r["pods"], r["route"], r["target"]): r for r in rows if r["capacity_unit"] == "bytes"}
    out = []
    for r in entries:
        budget = budgets.pop((r["policy"], r["pods"], r["route"], r["target"]), None)
        if budget is not None and budget["reached"]:
            r["capacity_bytes"] = budget["capacity"]
            r["capacity_bytes_hit_rate"] = budget["hit_rate"]
        pods = r["pods"] or 0
        if r.get("memory_bytes") is not None:
            r["fleet_memory_bytes"] = r["memory_bytes"] * max(pods, 1)
        out.append(r)
    return out + list(budgets.values())


def best_rows(sizing, targets, with_single: bool = True) -> list[dict]:
    """Per target, the cheapest answer that reaches it: the least memory for the whole fleet (entries x pods
    where memory is unknown), or a row with `reached` false when none does (then the highest hit rate). The
    single cache competes only `with_single` (when it was asked for beside the fleets)."""
    rows = [] if sizing is None or len(sizing) == 0 else records(sizing)
    rows = [r for r in rows if with_single or r["route"] is not None]
    best = []
    for target in targets:
        mine = [r for r in rows if r["target"] == target and r["capacity_unit"] == "entries"]
        reached = [r for r in mine if r.get("reached")]
        if reached:
            best.append({**min(reached, key=_cost), "reached": True})
        elif mine:
            best.append({**max(mine, key=lambda r: r.get("hit_rate") or 0), "reached": False})
    return best


def _cost(row: dict) -> tuple:
    memory = row.get("fleet_memory_bytes")
    entries = (row.get("capacity") or 0) * max(row.get("pods") or 1, 1)
    return (memory if memory is not None and memory == memory else float("inf"), entries)
