"""A plain Python model of what the simulator counts, written for clarity, not speed: the oracle for the
Rust core's feature-store semantics (writes, TTL, restarts, refreshes, allow-lists, byte capacities)."""

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class Event:
    op: str          # read / write / delete
    entity: str
    field: str | None
    ts: int
    req: int
    value_size: int = 0
    key_bytes: int = 0


@dataclass
class Counters:
    lookups: int = 0
    hits: int = 0
    bytes_looked_up: int = 0
    bytes_hit: int = 0
    commands: int = 0
    commands_served: int = 0
    evictions: int = 0
    invalidations: int = 0
    refresh_evictions: int = 0
    refresh_refetches: int = 0
    expirations: int = 0
    stale_reads: int = 0
    uncacheable: int = 0
    restarts: int = 0


class SizedLru:
    def __init__(self, capacity):
        self.capacity, self.used, self.items = capacity, 0, OrderedDict()

    def access(self, key, size):
        if key in self.items:
            self.items.move_to_end(key)
            return True
        if size > self.capacity:
            return False
        while self.used + size > self.capacity:
            _, s = self.items.popitem(last=False)
            self.used -= s
        self.items[key] = size
        self.used += size
        return False

    def remove(self, key):
        if key in self.items:
            self.used -= self.items.pop(key)
            return True
        return False


@dataclass
class Setup:
    capacity: int
    overhead: int | None = None          # None: entries
    writes: str = "ignore"
    ttl: int | None = None
    allow: set | None = None            # fields (or keys of fieldless lookups) that may be cached
    refreshes: list = field(default_factory=list)   # (time, field)
    restart_every: int | None = None
    restarts_at: list = field(default_factory=list)


def simulate(events, s: Setup, granularity="field"):
    def cache_key(e):
        return (e.entity, e.field) if e.field is not None and granularity == "field" else (e.entity,)

    c = Counters()
    lru = SizedLru(s.capacity)
    dirty, expiry_queue, latest = set(), [], {}
    members = {}  # entity -> cache keys seen (field-level)
    by_field = {}
    for e in events:  # the core indexes the whole trace before simulating: model that
        k = cache_key(e)
        if len(k) == 2:
            members.setdefault(e.entity, set()).add(k)
        if e.field is not None:
            by_field.setdefault(e.field, set()).add(k)
    first = events[0].ts
    restarts = sorted(set(s.restarts_at) | ({first + i * s.restart_every for i in range(1, 10_000)
                                              if first + i * s.restart_every <= events[-1].ts}
                                             if s.restart_every else set()))
    restarts = [r for r in restarts if r > first]
    refreshes = sorted(s.refreshes)
    open_req, all_hit = None, True
    # Keys a refresh dropped, not looked up since (their field), and per field [dropped, re-fetched]: a key's
    # next lookup is a re-fetch the refresh caused, unless a restart, expiry or invalidation came first.
    dropped, cost = {}, {}

    def time_events(t):
        nonlocal lru, dirty, expiry_queue, latest
        while True:
            due = []
            if restarts and restarts[0] <= t:
                due.append((restarts[0], 0))
            if refreshes and refreshes[0][0] <= t:
                due.append((refreshes[0][0], 1))
            if expiry_queue and expiry_queue[0][0] <= t:
                due.append((expiry_queue[0][0], 2))
            if not due:
                return
            _, kind = min(due)
            if kind == 0:
                restarts.pop(0)
                lru, dirty, expiry_queue, latest = SizedLru(s.capacity), set(), [], {}
                c.restarts += 1
                dropped.clear()
            elif kind == 1:
                _, f = refreshes.pop(0)
                cost.setdefault(f, [0, 0])
                for k in by_field.get(f, ()):
                    if lru.remove(k):
                        c.refresh_evictions += 1
                        dropped[k] = f
                        cost[f][0] += 1
            else:
                when, k = expiry_queue.pop(0)
                if latest.get(k) == when:
                    del latest[k]
                    c.expirations += lru.remove(k)
                    dropped.pop(k, None)

    for e in events:
        time_events(e.ts)
        k = cache_key(e)
        if e.op != "read":
            targets = [k] + (sorted(members.get(e.entity, ())) if e.field is None else [])
            if s.writes == "ignore":
                dirty.update(targets)
            elif not (s.writes == "update" and e.op == "write"):
                c.invalidations += sum(lru.remove(t) for t in targets)
                for t in targets:
                    dropped.pop(t, None)
            continue
        if open_req != e.req:
            if open_req is not None:
                c.commands += 1
                c.commands_served += all_hit
            open_req, all_hit = e.req, True
        c.lookups += 1
        c.bytes_looked_up += e.value_size
        if s.allow is not None and e.field not in s.allow:
            c.uncacheable += 1
            hit = False
        else:
            size = 1 if s.overhead is None else e.value_size + e.key_bytes + s.overhead
            before = len(lru.items)
            hit = lru.access(k, size)
            if not hit:
                c.evictions += max(0, before + 1 - len(lru.items))
                if s.ttl is not None:
                    expiry_queue.append((e.ts + s.ttl, k))
                    latest[k] = e.ts + s.ttl
        if hit:
            c.hits += 1
            c.bytes_hit += e.value_size
            c.stale_reads += k in dirty
        else:
            all_hit = False
            dirty.discard(k)
            if k in dropped:
                c.refresh_refetches += 1
                cost[dropped.pop(k)][1] += 1
    if open_req is not None:
        c.commands += 1
        c.commands_served += all_hit
    c.refresh_by_field = {f: tuple(v) for f, v in cost.items()}  # not a counter: apart from asdict
    return c
