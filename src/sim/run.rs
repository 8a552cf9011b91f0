//! One policy at one capacity over the event stream: the hot loops, and what freshness, restarts and
//! allow-lists do to the cache between lookups.

use std::collections::VecDeque;
use std::sync::Arc;

use super::events::{Events, UNKNOWN_SIZE};
use super::membership::Membership;
use super::refresh_cost::{FieldRefreshCost, RefreshCost};
use super::resident_bytes::ResidentBytes;
use super::round_trips::RoundTrips;
use super::options::{Options, Unit, WriteMode};
use crate::hash::{KeyMap, KeySet};
use crate::policy::{AnyPolicy, Params, Policy, WTinyLfu};
use crate::trace::reader::{OP_READ, OP_WRITE};
use crate::policy::with_policy;

/// Lookups ahead of the one handled whose key the policy is asked to start loading (`Policy::prefetch`): about
/// the memory's latency over a lookup's time, when the policy's table misses the processor's caches.
const PREFETCH_AHEAD: usize = 16;

/// What a run counts. Lookup and byte metrics are kept apart: bytes are only summed where sizes are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub lookups: u64,
    pub hits: u64,
    /// Value bytes of lookups whose size is known, and of those that hit.
    pub bytes_looked_up: u64,
    pub bytes_hit: u64,
    /// Commands with at least one lookup, and those whose every lookup hit.
    pub commands: u64,
    pub commands_served: u64,
    /// Round trips to Redis with at least one lookup (batches: the commands a connection sent before waiting
    /// for replies; the commands themselves when the trace has no batches), and those the cache would have
    /// saved (`round_trips`). Filled in by `Run::counters`.
    pub round_trips: u64,
    pub round_trips_saved: u64,
    /// Entries pushed out by the policy to admit others (candidates refused admission included).
    pub evictions: u64,
    /// Entries removed because the trace wrote or deleted them.
    pub invalidations: u64,
    /// Entries removed by a scheduled batch refresh of their feature.
    pub refresh_evictions: u64,
    /// Lookups that missed because a refresh had dropped their entry (re-fetches from Redis it caused).
    pub refresh_refetches: u64,
    /// Entries removed by the TTL.
    pub expirations: u64,
    /// Hits on entries written or deleted in Redis since they were cached (only without invalidation).
    pub stale_reads: u64,
    /// Lookups the allow-list kept out of the cache.
    pub uncacheable: u64,
    pub restarts: u64,
}

pub struct Run {
    pub name: String,
    pub capacity: u64,
    pub unit: Unit,
    policy: AnyPolicy,
    st: RunState,
}

#[derive(Default)]
struct RunState {
    counters: Counters,
    window_hits: Vec<u64>,
    open_window_hits: u64,
    open_window_lookups: u64,
    /// The command whose lookups are being counted, and whether all of them hit so far.
    open_req: Option<u64>,
    open_req_all_hit: bool,
    trips: RoundTrips,
    /// The indices of the events that hit, when the caller asked for them (`log_hits`).
    hit_log: Option<Vec<u32>>,
    dirty: KeySet,
    ttl: Ttl,
    last_restart: Option<i64>,
    next_refresh: usize,
    restart_times: Vec<i64>,
    /// What refreshes cost per feature; built at the first refresh.
    refresh: Option<Box<RefreshCost>>,
    /// Lookups and hits per field hash, when the caller asked for them (`count_by_field`).
    by_field: Option<KeyMap<FieldHits>>,
    /// The bytes an entry-capacity cache holds at its largest, when the caller asked (`track_resident_bytes`).
    resident_bytes: Option<Box<ResidentBytes>>,
}

/// A feature's lookups and hits in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldHits {
    pub lookups: u64,
    pub hits: u64,
}

/// Admissions in time order with their expiry; `latest` tells which admission of a key is current.
#[derive(Default)]
struct Ttl {
    queue: VecDeque<(i64, u64)>,
    latest: KeyMap<i64>,
}

impl Run {
    pub fn new(name: &str, capacity: u64, unit: Unit, params: &Params, future: Option<&Arc<[u64]>>)
               -> Result<Run, String> {
        let policy = match (AnyPolicy::with_params(name, capacity, params, future)?, unit) {
            // Caffeine bounds bytes with maximumWeight and a weigher, a different mode from maximumSize.
            (AnyPolicy::WTinyLfu(p), Unit::Bytes { .. }) => AnyPolicy::WTinyLfu(WTinyLfu::weighted(capacity).seeded(p.seed())),
            (policy, _) => policy,
        };
        Ok(Run { name: name.to_string(), capacity, unit, policy, st: RunState::default() })
    }

    pub fn hits(&self) -> u64 {
        self.st.counters.hits
    }

    pub fn lookups(&self) -> u64 {
        self.st.counters.lookups
    }

    /// The counters, with the command still open at the end of the input closed.
    pub fn counters(&self) -> Counters {
        let mut c = self.st.counters;
        if self.st.open_req.is_some() {
            c.commands += 1;
            c.commands_served += u64::from(self.st.open_req_all_hit);
        }
        if self.st.trips.is_used() {
            let trips = self.st.trips.counts();
            (c.round_trips, c.round_trips_saved) = (trips.round_trips, trips.served_up_to(0));
        } else {
            // Without batches every command is a round trip of its own.
            (c.round_trips, c.round_trips_saved) = (c.commands, c.commands_served);
        }
        c
    }

    /// Keep the index of every lookup that hits in the events given (a fleet tells from them which requests
    /// its pods served whole).
    pub fn log_hits(&mut self) {
        self.st.hit_log.get_or_insert_with(Vec::new);
    }

    /// The indices logged since the last call (see `log_hits`).
    pub fn take_hits(&mut self, into: &mut Vec<u32>) {
        if let Some(log) = &mut self.st.hit_log {
            into.append(log);
        }
    }

    /// Count lookups and hits per field (per feature) from now on: `hits_by_field`. Plain batches (no
    /// fields) are then taken through the general loop.
    pub fn count_by_field(&mut self) {
        self.st.by_field.get_or_insert_with(KeyMap::default);
    }

    /// Follow the bytes the cache holds (value + key + field + `entry_overhead` an entry) to give their peak
    /// (`resident_bytes_peak`): the memory a cache bounded in entries takes. A byte capacity bounds them itself.
    pub fn track_resident_bytes(&mut self, entry_overhead: u32) {
        self.st.resident_bytes = Some(Box::new(ResidentBytes::new(entry_overhead, self.capacity)));
    }

    /// The largest resident bytes seen (see `track_resident_bytes`); None unless asked for.
    pub fn resident_bytes_peak(&self) -> Option<u64> {
        let tracked = self.st.resident_bytes.as_ref()?;
        Some(with_policy!(&self.policy, p => tracked.peak(p)))
    }

    /// Whether the run must take the general loop for what it was asked to count.
    pub fn counts_more_than_hits(&self) -> bool {
        self.st.by_field.is_some() || self.st.resident_bytes.is_some()
    }

    pub fn counts_by_field(&self) -> bool {
        self.st.by_field.is_some()
    }

    /// (field hash, lookups and hits) per field, by field hash (0: lookups without a field); None unless
    /// `count_by_field` was called.
    pub fn hits_by_field(&self) -> Option<Vec<(u64, FieldHits)>> {
        let map = self.st.by_field.as_ref()?;
        let mut out: Vec<(u64, FieldHits)> = map.iter().map(|(&f, &h)| (f, h)).collect();
        out.sort_unstable_by_key(|e| e.0);
        Some(out)
    }

    /// (field hash, cost) of every field a refresh reached, by field hash: the entries its refreshes dropped
    /// and the lookups that missed because of them. Empty when no refresh was due.
    pub fn refresh_by_field(&self) -> Vec<(u64, FieldRefreshCost)> {
        self.st.refresh.as_ref().map_or_else(Vec::new, |r| r.by_field())
    }

    pub fn resident(&self) -> usize {
        with_policy!(&self.policy, p => p.len())
    }

    pub fn restart_times(&self) -> &[i64] {
        &self.st.restart_times
    }

    /// Hits per completed window, plus the open window's if it has lookups.
    pub fn window_hits(&self) -> Vec<u64> {
        let mut h = self.st.window_hits.clone();
        if self.st.open_window_lookups > 0 {
            h.push(self.st.open_window_hits);
        }
        h
    }

    /// Reads only, entries only, nothing time-driven: the loop the benchmarks measure.
    pub fn process_plain(&mut self, keys: &[u64], window: u64) {
        let hits_before = self.st.counters.hits;
        let st = &mut self.st;
        with_policy!(&mut self.policy, p => {
            let mut pos = 0;
            while pos < keys.len() {
                let room = (window - st.open_window_lookups) as usize;
                let end = keys.len().min(pos + room);
                let mut hits = 0u64;
                for &k in &keys[pos..end] {
                    hits += p.access(k, 1) as u64;
                }
                st.counters.hits += hits;
                st.open_window_hits += hits;
                st.open_window_lookups += (end - pos) as u64;
                pos = end;
                if st.open_window_lookups == window {
                    st.close_window();
                }
            }
        });
        // Every plain lookup is a command of its own, served when it hits.
        let (n, served) = (keys.len() as u64, self.st.counters.hits - hits_before);
        let c = &mut self.st.counters;
        c.lookups += n;
        c.commands += n;
        c.commands_served += served;
    }

    /// Any events, any options. `first_ts` is the trace's first time (for `restart_every`).
    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        self.process_at(ev, ev.len(), &|k| k, members, opts, first_ts);
    }

    /// The events `at(0), at(1), ..., at(n - 1)`.
    fn process_at(&mut self, ev: &Events, n: usize, at: &impl Fn(usize) -> usize, members: &Membership,
                  opts: &Options, first_ts: Option<i64>) {
        let mut k = 0;
        while k < n {
            if let Some(t) = ev.ts(at(k)) {
                self.time_events(t, members, opts, first_ts);
            }
            let deadline = self.next_deadline(opts, first_ts);
            let (unit, st) = (self.unit, &mut self.st);
            k = with_policy!(&mut self.policy, p => st.segment(p, ev, k, n, at, deadline, unit, members, opts));
        }
    }

    /// The earliest time at which something happens to the cache other than a lookup.
    fn next_deadline(&self, opts: &Options, first_ts: Option<i64>) -> i64 {
        let restart = next_restart(opts, first_ts, self.st.last_restart).unwrap_or(i64::MAX);
        let refresh = opts.refreshes.get(self.st.next_refresh).map_or(i64::MAX, |r| r.0);
        let expiry = self.st.ttl.queue.front().map_or(i64::MAX, |e| e.0);
        restart.min(refresh).min(expiry)
    }

    /// Applies restarts, refreshes and expirations due at or before `t`, in time order.
    fn time_events(&mut self, t: i64, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        loop {
            let restart = next_restart(opts, first_ts, self.st.last_restart).filter(|&r| r <= t);
            let refresh = opts.refreshes.get(self.st.next_refresh).filter(|r| r.0 <= t).copied();
            let expiry = self.st.ttl.queue.front().filter(|e| e.0 <= t).copied();
            let earliest = [restart, refresh.map(|r| r.0), expiry.map(|e| e.0)].into_iter().flatten().min();
            let Some(when) = earliest else { return };
            let st = &mut self.st;
            if restart == Some(when) {
                // Restarts due before the event at `t` find the cache already empty: they count as one, the
                // last (a gap of days under `restart_every` would otherwise empty the cache millions of times).
                let when = last_restart_by(opts, first_ts, t).max(when);
                if let Some(tracked) = &mut st.resident_bytes {
                    with_policy!(&self.policy, p => tracked.check(p));
                    tracked.emptied();
                }
                self.policy = self.policy.emptied();
                st.dirty.clear();
                st.ttl = Ttl::default();
                st.last_restart = Some(when);
                st.restart_times.push(when);
                st.counters.restarts += 1;
                if let Some(cost) = &mut st.refresh {
                    cost.restarted();
                }
            } else if let Some((_, field)) = refresh.filter(|r| r.0 == when) {
                st.next_refresh += 1;
                let cost = st.refresh.get_or_insert_with(Box::default);
                cost.refreshed(field);
                with_policy!(&mut self.policy, p => {
                    for &k in members.field_members(field) {
                        if p.remove(k) {
                            st.counters.refresh_evictions += 1;
                            cost.dropped(k, field);
                        }
                    }
                });
            } else if let Some((expires, key)) = expiry {
                st.ttl.queue.pop_front();
                if st.ttl.latest.get(&key) == Some(&expires) {
                    st.ttl.latest.remove(&key);
                    st.counters.expirations += with_policy!(&mut self.policy, p => p.remove(key)) as u64;
                    if let Some(cost) = &mut st.refresh {
                        cost.forget(key); // it would have expired by now anyway
                    }
                }
            }
        }
    }
}

/// The last restart due at or before `t` (explicit or periodic); i64::MIN when none is.
fn last_restart_by(opts: &Options, first_ts: Option<i64>, t: i64) -> i64 {
    let explicit = opts.restarts_at.iter().copied().filter(|&r| r <= t).max();
    // Periodic restarts fall at first + phase + k * every, k >= 1 (the phase is a pod's place in a rolling one).
    let phase = opts.restart_phase_ns;
    let periodic = opts.restart_every_ns.zip(first_ts).and_then(|(every, first)| {
        let k = t.saturating_sub(first).saturating_sub(phase).div_euclid(every);
        (k >= 1).then(|| first.saturating_add(phase).saturating_add(k.saturating_mul(every)))
    });
    explicit.into_iter().chain(periodic).max().unwrap_or(i64::MIN)
}

/// The first restart after `last` (or after the trace's start): an explicit time or the next interval.
pub(crate) fn next_restart(opts: &Options, first_ts: Option<i64>, last: Option<i64>) -> Option<i64> {
    let after = last.or(first_ts)?;
    let explicit = opts.restarts_at.iter().copied().find(|&r| r > after);
    let periodic = opts.restart_every_ns.zip(first_ts).map(|(every, first)| {
        let phase = opts.restart_phase_ns;
        let k = ((after - first - phase).div_euclid(every) + 1).max(1);
        // An interval of centuries must not wrap into the past.
        first.saturating_add(phase).saturating_add(k.saturating_mul(every))
    });
    explicit.into_iter().chain(periodic).min()
}

impl RunState {
    fn close_command(&mut self) {
        if self.open_req.take().is_some() {
            self.counters.commands += 1;
            self.counters.commands_served += u64::from(self.open_req_all_hit);
        }
    }

    fn close_window(&mut self) {
        self.window_hits.push(self.open_window_hits);
        self.open_window_hits = 0;
        self.open_window_lookups = 0;
    }

    /// Processes events `at(k)`, `at(k + 1)`, ... until one is due at or after `deadline`; returns where it
    /// stopped (a position in `0..n`).
    #[allow(clippy::too_many_arguments)]
    fn segment<P: Policy>(&mut self, p: &mut P, ev: &Events, mut k: usize, n: usize, at: &impl Fn(usize) -> usize,
                          deadline: i64, unit: Unit, members: &Membership, opts: &Options) -> usize {
        // Nothing falls due (no restart, refresh or TTL ahead): no event's time needs looking at.
        let timed = ev.ts_ns.is_some() && (deadline != i64::MAX || opts.ttl_ns.is_some());
        while k < n {
            if k + PREFETCH_AHEAD < n {
                p.prefetch(ev.keys[at(k + PREFETCH_AHEAD)]);
            }
            let i = at(k);
            if timed {
                // Admissions under a TTL can bring the next expiry forward.
                let expiry = self.ttl.queue.front().map_or(i64::MAX, |e| e.0);
                if ev.ts(i).is_some_and(|t| t >= deadline.min(expiry)) {
                    return k;
                }
            }
            match ev.op(i) {
                OP_READ => self.read(p, ev, i, unit, opts),
                op => self.write(p, ev, i, op == OP_WRITE, members, opts),
            }
            k += 1;
        }
        k
    }

    #[inline]
    fn read<P: Policy>(&mut self, p: &mut P, ev: &Events, i: usize, unit: Unit, opts: &Options) {
        let key = ev.keys[i];
        if let Some(req) = ev.req(i) {
            if self.open_req != Some(req) {
                self.close_command();
                self.open_req = Some(req);
                self.open_req_all_hit = true;
            }
        }
        let value = ev.value_size(i);
        let known_value = if value == UNKNOWN_SIZE { 0 } else { value };
        // An allow-list names features: a lookup without a field (GET) is never on it.
        let cacheable = opts.allow.as_ref().is_none_or(|allow| allow.contains(&ev.field(i)));
        let hit = if cacheable {
            let size = match unit {
                Unit::Entries => 1,
                Unit::Bytes { entry_overhead } => known_value.saturating_add(ev.key_bytes(i)).saturating_add(entry_overhead),
            };
            let before = p.len();
            let hit = p.access(key, size);
            // Hit or miss is a coin toss to the processor: the counters it moves are added, not branched on.
            let missed = u64::from(!hit);
            self.counters.evictions += missed * (before as u64 + 1).saturating_sub(p.len() as u64);
            if let Some(tracked) = &mut self.resident_bytes {
                if !hit {
                    let weight = known_value.saturating_add(ev.key_bytes(i)).saturating_add(tracked.entry_overhead);
                    tracked.missed(key, weight);
                }
                tracked.looked_up(p);
            }
            if let (Some(ttl), Some(t), false) = (opts.ttl_ns, ev.ts(i), hit) {
                self.ttl.queue.push_back((t.saturating_add(ttl), key)); // never wrapped into the past
                self.ttl.latest.insert(key, t.saturating_add(ttl));
            }
            hit
        } else {
            self.counters.uncacheable += 1;
            false
        };
        let h = u64::from(hit);
        self.counters.lookups += 1;
        self.counters.bytes_looked_up += u64::from(known_value);
        self.counters.hits += h;
        self.counters.bytes_hit += h * u64::from(known_value);
        self.open_window_hits += h;
        self.open_req_all_hit &= hit;
        if let Some(by_field) = &mut self.by_field {
            let tally = by_field.entry(ev.field(i)).or_default();
            tally.lookups += 1;
            tally.hits += h;
        }
        if let (Some(log), true) = (&mut self.hit_log, hit) {
            log.push(i as u32);
        }
        if !self.dirty.is_empty() {
            if hit {
                self.counters.stale_reads += u64::from(self.dirty.contains(&key));
            } else {
                self.dirty.remove(&key); // fetched fresh from Redis
            }
        }
        if let (Some(cost), false) = (&mut self.refresh, hit) {
            self.counters.refresh_refetches += u64::from(cost.missed(key));
        }
        if ev.req(i).is_none() {
            // Without command indices every lookup is a command of its own.
            self.counters.commands += 1;
            self.counters.commands_served += u64::from(hit);
        }
        if let Some((conn, batch)) = ev.batch(i) {
            self.trips.note(conn, batch, Some(u32::from(!hit)));
        }
        self.open_window_lookups += 1;
        if self.open_window_lookups == opts.window {
            self.close_window();
        }
    }

    /// A write or delete: the key itself and, for a whole-key operation (no field), every field cached under it.
    fn write<P: Policy>(&mut self, p: &mut P, ev: &Events, i: usize, is_write: bool, members: &Membership,
                        opts: &Options) {
        let key = ev.keys[i];
        if let Some((conn, batch)) = ev.batch(i) {
            self.trips.note(conn, batch, None);
        }
        let whole_key = ev.field(i) == 0;
        let targets = std::iter::once(key).chain(if whole_key { members.entity_members(ev.entity(i)) } else { &[] }.iter().copied());
        match opts.writes {
            // Only a cached entry can be read stale; any other is fetched fresh at its next lookup (a miss).
            WriteMode::Ignore => self.dirty.extend(targets.filter(|&k| p.contains(k))),
            WriteMode::Update if is_write => {}
            _ => {
                for k in targets {
                    self.counters.invalidations += p.remove(k) as u64;
                    if let Some(cost) = &mut self.refresh {
                        cost.forget(k); // invalidated anyway
                    }
                }
            }
        }
    }
}
