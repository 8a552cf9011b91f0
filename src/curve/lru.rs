//! The exact LRU curve over a stream of events: every lookup's stack depth, counted in the bucket of the
//! smallest capacity it fits, so that the hits at capacity `c[i]` are the sum of buckets `0..=i`. The same
//! for bytes hit, for commands served whole (a command is served at C when its deepest lookup fits C), for
//! round trips saved (likewise, over every lookup of a batch: `RoundTrips`), and per timeline window (the
//! capacity x time heatmap). Memory: the stack (a few words per unique key) plus one bucket per capacity and
//! window.
//!
//! A fleet's curve is the same with a stack per pod. Routing never depends on what a cache holds, so each
//! pod's LRU is a stack algorithm over its own share of the lookups: a lookup's depth in its pod's stack says
//! at which capacities per pod it hits, and a command or round trip reaching several pods is served at every
//! capacity its deepest lookup, in whichever pod, fits. Writes reach every pod, as they do a fleet's runs.

use super::stack::Stack;
use super::walk::{walk, Observer};
use crate::fleet::{Route, Router};
use crate::sim::events::{Events, UNKNOWN_SIZE};
use crate::sim::options::{Options, Unit, WriteMode};
use crate::sim::{Membership, RoundTrips};

/// What one pass counted, in buckets: index `i` holds what first fits `capacities[i]`; the last bucket holds
/// what fits none (misses at every capacity, first references included).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurveCounts {
    pub lookups: u64,
    pub hits: Vec<u64>,
    pub bytes_looked_up: u64,
    pub bytes_hit: Vec<u64>,
    pub commands: u64,
    pub commands_served: Vec<u64>,
    pub round_trips: u64,
    pub round_trips_saved: Vec<u64>,
    /// hits per window, at every `window_stride`-th capacity: `window_capacities().len() + 1` buckets each,
    /// windows one after another.
    pub window_hits: Vec<u64>,
}

pub struct LruCurve {
    pub capacities: Vec<u64>,
    pub unit: Unit,
    /// The timeline keeps every `window_stride`-th capacity (the first included): a fine curve needs many
    /// capacities, a heatmap only enough to draw, and its memory is capacities x windows.
    pub window_stride: usize,
    /// One stack per pod (one for a single cache; the client route's grow with the clients seen).
    stacks: Vec<Stack>,
    /// The fleet's routing, None for a single cache.
    router: Option<Router>,
    pods: u32,
    counts: CurveCounts,
    open_window: Vec<u64>,
    open_window_lookups: u64,
    /// The command being counted, and the bucket of its deepest lookup so far.
    open_req: Option<u64>,
    open_req_bucket: usize,
    trips: RoundTrips,
    last_restart: Option<i64>,
}

impl LruCurve {
    /// `capacities` in entries or bytes (as `unit` says), at least one, each at least 1; the timeline keeps
    /// at most `window_columns` of them.
    pub fn new(capacities: &[u64], unit: Unit, window_columns: usize) -> Result<LruCurve, String> {
        let mut capacities = capacities.to_vec();
        capacities.sort_unstable();
        capacities.dedup();
        if capacities.first().is_none_or(|&c| c == 0) {
            return Err("a curve needs capacities of at least 1".into());
        }
        let buckets = capacities.len() + 1;
        let window_stride = capacities.len().div_ceil(window_columns.max(1));
        let window_buckets = (capacities.len() - 1) / window_stride + 2;
        Ok(LruCurve {
            window_stride,
            stacks: vec![Stack::new(matches!(unit, Unit::Bytes { .. }))],
            router: None,
            pods: 1,
            counts: CurveCounts {
                hits: vec![0; buckets],
                bytes_hit: vec![0; buckets],
                commands_served: vec![0; buckets],
                round_trips_saved: vec![0; buckets],
                ..CurveCounts::default()
            },
            open_window: vec![0; window_buckets],
            open_window_lookups: 0,
            open_req: None,
            open_req_bucket: 0,
            trips: RoundTrips::default(),
            last_restart: None,
            capacities,
            unit,
        })
    }

    /// The curve of a fleet of `pods` caches routed by `route`, capacities per pod (see the module comment).
    pub fn fleet(capacities: &[u64], unit: Unit, window_columns: usize, pods: u32, route: Route)
                 -> Result<LruCurve, String> {
        if pods == 0 && route != Route::Client {
            return Err("a fleet needs at least one pod".into());
        }
        let mut curve = LruCurve::new(capacities, unit, window_columns)?;
        curve.router = Some(Router::new(route, pods));
        curve.pods = pods;
        Ok(curve)
    }

    /// Pods and route of a fleet's curve; None for a single cache.
    pub fn fleet_shape(&self) -> Option<(u32, &'static str)> {
        self.router.as_ref().map(|r| (self.pods.max(self.stacks.len() as u32), r.route.name()))
    }

    /// What a stack of `unit` cannot model, if the options ask for it: TTLs and refresh schedules act on each
    /// capacity's own admission times, and in bytes a slot freed by an invalidation is refilled differently
    /// at each capacity, so no single stack describes them. Exact and sampled (SHARDS) LRU curves share it.
    pub fn unsupported(opts: &Options, unit: Unit) -> Option<&'static str> {
        if opts.ttl_ns.is_some() {
            Some("a TTL")
        } else if !opts.refreshes.is_empty() {
            Some("a refresh schedule")
        } else if matches!(unit, Unit::Bytes { .. }) && opts.writes != WriteMode::Ignore {
            Some("invalidation in bytes (a freed slot is refilled differently at each capacity): use entries")
        } else {
            None
        }
    }

    /// Counts the events, in trace order.
    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        let mut last_restart = self.last_restart;
        walk(self, &mut last_restart, ev, members, opts, first_ts);
        self.last_restart = last_restart;
    }

    fn close_command(&mut self) {
        if self.open_req.take().is_some() {
            self.counts.commands += 1;
            self.counts.commands_served[self.open_req_bucket] += 1;
        }
    }

    fn close_window(&mut self) {
        self.counts.window_hits.extend_from_slice(&self.open_window);
        self.open_window.iter_mut().for_each(|b| *b = 0);
        self.open_window_lookups = 0;
    }

    /// The counts so far, the open command closed and a final partial window included.
    pub fn counts(&self) -> CurveCounts {
        let mut counts = self.counts.clone();
        if self.open_req.is_some() {
            counts.commands += 1;
            counts.commands_served[self.open_req_bucket] += 1;
        }
        if self.open_window_lookups > 0 {
            counts.window_hits.extend_from_slice(&self.open_window);
        }
        if self.trips.is_used() {
            let trips = self.trips.counts();
            counts.round_trips = trips.round_trips;
            for (bucket, n) in trips.served_by_bucket.iter().enumerate() {
                counts.round_trips_saved[bucket] += n;
            }
        } else {
            // Without batches every command is a round trip of its own.
            counts.round_trips = counts.commands;
            counts.round_trips_saved.clone_from(&counts.commands_served);
        }
        counts
    }

    /// The capacities the timeline keeps.
    pub fn window_capacities(&self) -> Vec<u64> {
        self.capacities.iter().step_by(self.window_stride).copied().collect()
    }

}

impl Observer for LruCurve {
    fn restart(&mut self) {
        self.stacks.iter_mut().for_each(Stack::clear);
    }

    fn read(&mut self, ev: &Events, i: usize, opts: &Options) {
        if let Some(req) = ev.req(i) {
            if self.open_req != Some(req) {
                self.close_command();
                self.open_req = Some(req);
                self.open_req_bucket = 0;
            }
        }
        let value = ev.value_size(i);
        let known_value = if value == UNKNOWN_SIZE { 0 } else { value };
        let cacheable = opts.allow.as_ref().is_none_or(|allow| allow.contains(&ev.field(i)));
        let miss = self.capacities.len();
        // Every read is routed, cached or not, as a fleet's dispatch routes it (round-robin counts requests).
        let pod = self.router.as_mut().map_or(0, |r| r.pod(ev, i) as usize);
        if pod >= self.stacks.len() {
            let bytes = matches!(self.unit, Unit::Bytes { .. });
            self.stacks.resize_with(pod + 1, || Stack::new(bytes));
        }
        let bucket = if cacheable {
            match self.stacks[pod].access(ev.keys[i], weight(self.unit, ev, i)) {
                Some(depth) => self.capacities.partition_point(|&c| c < depth),
                None => miss,
            }
        } else {
            miss
        };
        let c = &mut self.counts;
        c.lookups += 1;
        c.hits[bucket] += 1;
        if value != UNKNOWN_SIZE {
            c.bytes_looked_up += u64::from(value);
            c.bytes_hit[bucket] += u64::from(known_value);
        }
        if ev.req(i).is_none() {
            c.commands += 1;
            c.commands_served[bucket] += 1;
        } else {
            self.open_req_bucket = self.open_req_bucket.max(bucket);
        }
        if let Some((conn, batch)) = ev.batch(i) {
            self.trips.note(conn, batch, Some(bucket as u32));
        }
        let column = if bucket == miss { self.open_window.len() - 1 } else { bucket.div_ceil(self.window_stride) };
        self.open_window[column] += 1;
        self.open_window_lookups += 1;
        if self.open_window_lookups == opts.window {
            self.close_window();
        }
    }

    fn invalidate(&mut self, key: u64) {
        for s in &mut self.stacks {
            s.remove(key);
        }
    }

    fn change(&mut self, ev: &Events, i: usize) {
        if let Some((conn, batch)) = ev.batch(i) {
            self.trips.note(conn, batch, None);
        }
    }
}

/// What an entry weighs in `unit`: 1, or value + key + field + overhead bytes (as byte-capacity runs weigh it).
pub fn weight(unit: Unit, ev: &Events, i: usize) -> u32 {
    match unit {
        Unit::Entries => 1,
        Unit::Bytes { entry_overhead } => {
            let value = ev.value_size(i);
            let known = if value == UNKNOWN_SIZE { 0 } else { value };
            known.saturating_add(ev.key_bytes(i)).saturating_add(entry_overhead)
        }
    }
}

/// Running sums of buckets: `out[i]` = what fits `capacities[i]` (the miss bucket is dropped).
pub fn cumulative(buckets: &[u64]) -> Vec<u64> {
    buckets[..buckets.len() - 1]
        .iter()
        .scan(0u64, |sum, &b| {
            *sum += b;
            Some(*sum)
        })
        .collect()
}
