"""The sizing answers in words: one line per cache or fleet and target, as the summary and the report give
them, with how each was found and what is uncertain about it, then the cheapest choice per target."""

from __future__ import annotations

from cachescope.simulate.labels import human_bytes
from cachescope.simulate.registry import POLICIES


def cache_name(row: dict) -> str:
    """`LRU`, `LRU x8 entity`; a client fleet counts its pods (one per client host)."""
    name = POLICIES[row["policy"]].label
    return name if row.get("route") is None else f"{name} x{int(row['pods'])} {row['route']}"


def per_second(x) -> str:
    """A rate to a precision worth reading: 135, 4.2, 0.051."""
    if not _known(x):
        return ""
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def _known(x) -> bool:
    """A value the row has: not missing, not NaN (a frame's gap)."""
    return x is not None and x == x


def _fmt(row: dict, n) -> str:
    return human_bytes(n) if row["capacity_unit"] == "bytes" else f"{int(n):,} entries"


def answer_line(row: dict, overhead: int | None = None) -> str:
    """`LRU x8 entity for 80%: 5,012 entries per pod -> 80.03% (confirmed by full runs); ...`"""
    name = cache_name(row)
    if not row.get("reached"):
        if row.get("capacity") is None:
            return f"{name} for {row['target']:.0%}: out of reach"
        return (f"{name} for {row['target']:.0%}: out of reach; {row['hit_rate']:.2%} at {_fmt(row, row['capacity'])} "
                f"per pod, where every key fits (the infinite cache reaches {row['bound_hit_rate']:.2%})")
    method = row["method"]
    how = {"exact": "exact: one entry less does not reach it", "confirmed": "confirmed by full runs, to 1%"}.get(
        method, f"estimated by the {method} curve, not confirmed: the input was read once")
    seeds = row.get("seeds")
    if _known(seeds) and seeds > 1:
        how = (f"the lowest of {int(seeds)} admission draws, {row['hit_rate_low']:.2%} to {row['hit_rate_high']:.2%}; "
               + how)
    elif method not in ("exact", "confirmed") and row.get("hit_rate_low") is not None:
        how += f"; band {row['hit_rate_low']:.2%} to {row['hit_rate_high']:.2%}"
    estimated, low = row.get("estimate_capacity"), row.get("estimate_hit_rate_low")
    if method in ("exact", "confirmed") and _known(estimated) and _known(low):
        # A sampled curve's own answer and band, beside what the full runs found.
        how += (f"; the {row['estimate_method']} curve said {_fmt(row, estimated)}, band {low:.2%} to "
                f"{row['estimate_hit_rate_high']:.2%}")
    parts = [f"{name} for {row['target']:.0%}: {_fmt(row, row['capacity'])} per pod -> {row['hit_rate']:.2%} ({how})"]
    memory = row.get("memory_bytes")
    if row["capacity_unit"] == "entries" and _known(memory):
        what = "peak: values + keys + fields" + (f" + {overhead} B an entry" if overhead is not None else "")
        fleet = "" if row.get("route") is None else f", {human_bytes(row['fleet_memory_bytes'])} for the fleet"
        parts.append(f"memory {human_bytes(memory)} per pod ({what}){fleet}")
    budget = row.get("capacity_bytes")
    if _known(budget) and row["capacity_unit"] == "entries":
        parts.append(f"as a byte budget (Caffeine's maximumWeight) {human_bytes(budget)} per pod")
    if _known(row.get("lookups_saved_per_s")):
        saves = f"saves {per_second(row['lookups_saved_per_s'])} lookups/s"
        trips = row.get("round_trips_saved_per_s")
        if _known(trips):
            saves += f" and {per_second(trips)} round trips/s"
        parts.append(saves)
    warmup = row.get("warmup_s")
    if _known(warmup):
        parts.append(f"warms up in {warmup / 60:.1f} min" if warmup >= 120 else f"warms up in {warmup:.0f} s")
    knee = row.get("knee_capacity")
    if _known(knee):
        parts.append(f"knee at {_fmt(row, knee)}")
    return "; ".join(parts)


def best_line(row: dict) -> str:
    """`cheapest for 80%: LRU x8 entity, 8 pods of 5,012 entries (43.1 MiB in all)`."""
    if not row.get("reached"):
        return (f"nothing asked for reaches {row['target']:.0%}: the highest is {cache_name(row)}, "
                f"{row['hit_rate']:.2%}")
    memory = row.get("fleet_memory_bytes")
    total = f" ({human_bytes(memory)} in all)" if _known(memory) else ""
    if row.get("route") is None:
        return f"cheapest for {row['target']:.0%}: {cache_name(row)}, one cache of {_fmt(row, row['capacity'])}{total}"
    return (f"cheapest for {row['target']:.0%}: {cache_name(row)}, {int(row['pods'])} pods of "
            f"{_fmt(row, row['capacity'])}{total}")


def fleet_table(rows: list[dict]) -> list[str]:
    """The answers for one target side by side, one cache or fleet a line: size per pod, hit rate, how it was
    found, memory per pod, byte budget per pod and the fleet's memory (out of reach: how far it goes)."""
    target = rows[0]["target"]
    lines = [f"{'for ' + format(target, '.0%'):<22}  {'per pod':>15}  {'hit rate':>8}  {'how':<18}  "
             f"{'memory/pod':>10}  {'budget/pod':>10}  {'fleet memory':>12}"]
    for row in rows:
        name = cache_name(row)
        if not row.get("reached"):
            where = "" if row.get("capacity") is None else f" at {_fmt(row, row['capacity'])} per pod"
            lines.append(f"{name:<22}  out of reach: {row['hit_rate']:.2%}{where}, where every key fits")
            continue
        seeds = row.get("seeds")
        how = row["method"] + (f", {int(seeds)} draws" if _known(seeds) and seeds > 1 else "")
        cells = [_bytes_cell(row.get(k)) for k in ("memory_bytes", "capacity_bytes", "fleet_memory_bytes")]
        lines.append(f"{name:<22}  {_fmt(row, row['capacity']):>15}  {row['hit_rate']:>8.2%}  {how:<18}  "
                     f"{cells[0]:>10}  {cells[1]:>10}  {cells[2]:>12}")
    return lines


def _bytes_cell(n) -> str:
    return human_bytes(n) if _known(n) else ""
