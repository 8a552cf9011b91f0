//! Running several policies over one stream of trace events, batch by batch, with a hit-rate timeline: the
//! single-capacity runs, the curves and the fleets of one simulation, each fed the same events.
//!
//! The timeline cuts the lookups into consecutive windows of `window` lookups and records each run's hits
//! per window, plus the time of the window's last lookup when the trace has a clock. The hit rate "over the
//! last W lookups" and the cumulative hit rate both follow from these counts. Runs are independent, so a
//! batch is handed to one thread per run.

use std::sync::Arc;

use crate::curve::{Curve, LruCurve, MiniSim, Shards};
use crate::fleet::{self, Dispatch, Fleet, Route};
use crate::hash::KeySet;
use crate::sim::{Events, Membership, Options, Run, Unit, WriteMode};
use crate::threads::{self, Job};
use crate::trace::reader::OP_READ;

mod distinct;
mod sampled_scan;
mod served;
pub use distinct::DistinctReads;
pub use served::{ServedCounts, ServedSample};

/// One run to make: policy name, capacity, what the capacity counts, and the policy's parameters.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub policy: String,
    pub capacity: u64,
    pub unit: Unit,
    pub params: Vec<(String, f64)>,
}

impl RunSpec {
    pub fn entries(policy: &str, capacity: u64) -> RunSpec {
        RunSpec { policy: policy.to_string(), capacity, unit: Unit::Entries, params: Vec::new() }
    }
}

pub struct Simulation {
    runs: Vec<Run>,
    /// Curves (exact, SHARDS, miniature simulations), fed the same events as the runs.
    curves: Vec<Curve>,
    /// Fleets of pods, fed the same events, and the routings they share (`fleet::dispatch`): fleet `i` is
    /// routed by `dispatches[fleet_dispatch[i]]`.
    fleets: Vec<Fleet>,
    dispatches: Vec<Dispatch>,
    fleet_dispatch: Vec<usize>,
    opts: Options,
    members: Membership,
    /// Unique read keys, counted when a run's resident set no longer tells (restarts, TTL, invalidation).
    unique_reads: Option<KeySet>,
    /// The unique keys read, estimated by a sketch, when the caller stands it in for the infinite run
    /// (`estimate_unique_reads`).
    distinct: Option<DistinctReads>,
    served: Option<ServedSample>,
    lookups: u64,
    /// Time of the last lookup of each completed window.
    window_ts: Vec<i64>,
    has_clock: Option<bool>,
    first_ts: Option<i64>,
    /// Time of the last lookup so far (the end of a partial last window).
    last_ts: i64,
    /// Threads a batch may take (`crate::threads`): unlimited but for a task given fewer (a Dask worker's).
    threads: usize,
}

/// Below this many events a batch is not worth a thread per run.
const PARALLEL_MIN_BATCH: usize = 1 << 16;

impl Simulation {
    /// `future`: `policy::belady::next_access` of the lookups the runs will see, for policies that need it.
    pub fn new(runs: &[RunSpec], opts: Options, future: Option<Arc<[u64]>>) -> Result<Simulation, String> {
        if opts.window == 0 {
            return Err("the timeline window must be at least 1 lookup".into());
        }
        if opts.ttl_ns.is_some_and(|t| t <= 0) || opts.restart_every_ns.is_some_and(|t| t <= 0) {
            return Err("TTL and restart intervals must be positive".into());
        }
        let runs = runs
            .iter()
            .map(|r| Run::new(&r.policy, r.capacity, r.unit, &r.params, future.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut opts = opts;
        opts.refreshes.sort_unstable();
        opts.restarts_at.sort_unstable();
        let members = Membership::new(opts.refreshes.iter().map(|r| r.1));
        Ok(Simulation {
            runs,
            curves: Vec::new(),
            fleets: Vec::new(),
            dispatches: Vec::new(),
            fleet_dispatch: Vec::new(),
            opts,
            members,
            unique_reads: None,
            distinct: None,
            served: None,
            lookups: 0,
            window_ts: Vec::new(),
            has_clock: None,
            first_ts: None,
            last_ts: 0,
            threads: threads::UNLIMITED,
        })
    }

    /// Adds an exact LRU curve at `capacities` (in `unit`; at most `window_columns` of them in the timeline).
    pub fn add_lru_curve(&mut self, capacities: &[u64], unit: Unit, window_columns: usize) -> Result<(), String> {
        self.check_lru_curve(unit)?;
        self.curves.push(Curve::Exact(LruCurve::new(capacities, unit, window_columns)?));
        Ok(())
    }

    /// Adds the exact LRU curve of a fleet of `pods` caches routed by `route`, at `capacities` per pod.
    pub fn add_fleet_lru_curve(&mut self, capacities: &[u64], unit: Unit, window_columns: usize, pods: u32,
                               route: Route) -> Result<(), String> {
        self.check_lru_curve(unit)?;
        self.curves.push(Curve::Exact(LruCurve::fleet(capacities, unit, window_columns, pods, route)?));
        Ok(())
    }

    /// Adds a SHARDS estimate of the LRU curve: `samples` disjoint samples of `rate` of the keys each, with at
    /// most `max_keys` keys each if given.
    pub fn add_shards(&mut self, capacities: &[u64], unit: Unit, rate: f64, samples: usize, max_keys: Option<usize>)
                      -> Result<(), String> {
        self.check_lru_curve(unit)?;
        self.curves.push(Curve::Shards(Shards::new(capacities, unit, rate, samples, max_keys)?));
        Ok(())
    }

    /// Adds the SHARDS estimate of a fleet's LRU curve (`pods` caches routed by `route`), capacities per pod.
    #[allow(clippy::too_many_arguments)]
    pub fn add_fleet_shards(&mut self, capacities: &[u64], unit: Unit, rate: f64, samples: usize,
                            max_keys: Option<usize>, pods: u32, route: Route) -> Result<(), String> {
        self.check_lru_curve(unit)?;
        self.curves.push(Curve::Shards(Shards::fleet(capacities, unit, rate, samples, max_keys, pods, route)?));
        Ok(())
    }

    /// Adds miniature simulations of `policy` at `capacities` over `samples` disjoint samples of `rate` of the
    /// keys each.
    pub fn add_minisim(&mut self, policy: &str, capacities: &[u64], unit: Unit, params: &[(String, f64)],
                       rate: f64, samples: usize) -> Result<(), String> {
        self.check_curve_can_start()?;
        self.curves.push(Curve::Mini(MiniSim::new(policy, capacities, unit, params, rate, samples)?));
        Ok(())
    }

    /// Adds miniature simulations of a fleet of `pods` caches of `policy` routed by `route`, capacities per pod.
    #[allow(clippy::too_many_arguments)]
    pub fn add_fleet_minisim(&mut self, policy: &str, capacities: &[u64], unit: Unit, params: &[(String, f64)],
                             rate: f64, samples: usize, pods: u32, route: Route) -> Result<(), String> {
        self.check_curve_can_start()?;
        self.curves.push(Curve::Mini(MiniSim::fleet(policy, capacities, unit, params, rate, samples, pods, route)?));
        Ok(())
    }

    /// Adds a fleet of `pods` caches of `policy` at `capacity` each, routed by `route`.
    #[allow(clippy::too_many_arguments)]
    pub fn add_fleet(&mut self, policy: &str, capacity: u64, unit: Unit, params: &[(String, f64)], pods: u32,
                     route: Route, rolling: Option<(i64, i64)>) -> Result<(), String> {
        self.check_curve_can_start()?;
        self.fleets.push(Fleet::new(policy, capacity, unit, params, pods, route, &self.opts, rolling)?);
        Ok(())
    }

    pub fn fleets(&self) -> &[Fleet] {
        &self.fleets
    }

    /// The fleet added last, to finish setting it up.
    pub fn last_fleet(&mut self) -> &mut Fleet {
        self.fleets.last_mut().expect("a fleet was added")
    }

    /// Whether an LRU curve (exact or SHARDS) of `unit` can start: one the options allow, before any batch.
    fn check_lru_curve(&self, unit: Unit) -> Result<(), String> {
        if let Some(what) = LruCurve::unsupported(&self.opts, unit) {
            return Err(format!("an LRU curve cannot model {what}; run single capacities instead"));
        }
        self.check_curve_can_start()
    }

    fn check_curve_can_start(&self) -> Result<(), String> {
        if self.lookups > 0 {
            return Err("curves and fleets must be added before the first batch".into());
        }
        Ok(())
    }

    /// Counts the unique keys read in a sketch of constant memory (`DistinctReads`), with an estimate at the
    /// end of each window: what the caller reports instead of an infinite run's exact bound, which keeps
    /// every key. Before the first batch.
    pub fn estimate_unique_reads(&mut self) -> Result<(), String> {
        self.check_curve_can_start()?;
        self.distinct = Some(DistinctReads::new(self.opts.window));
        Ok(())
    }

    /// The bound's commands and round trips served, estimated from a sample of entities of at most `max_keys`
    /// keys (`served.rs`): where a command may read several keys (HMGET), the unique keys do not tell them.
    pub fn estimate_served_commands(&mut self, max_keys: usize) -> Result<(), String> {
        self.check_curve_can_start()?;
        self.served = Some(ServedSample::new(max_keys));
        Ok(())
    }

    pub fn served_counts(&self) -> Option<(ServedCounts, Option<ServedCounts>)> {
        self.served.as_ref().map(ServedSample::counts)
    }

    pub fn distinct_reads(&self) -> Option<&DistinctReads> {
        self.distinct.as_ref()
    }

    /// At most `threads` threads (the caller's among them) simulate each batch from now on; `threads::UNLIMITED`
    /// (the default) gives each run, curve and routing a thread of its own.
    pub fn limit_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// Every single run counts its lookups and hits per field from now on (`Run::hits_by_field`).
    pub fn count_by_field(&mut self) {
        self.runs.iter_mut().for_each(Run::count_by_field);
    }

    /// Every entry-capacity run and fleet pod follows the bytes its cache holds from now on
    /// (`Run::track_resident_bytes`): the memory the sizing answer gives.
    pub fn track_resident_bytes(&mut self, entry_overhead: u32) {
        self.runs.iter_mut().filter(|r| r.unit == Unit::Entries).for_each(|r| r.track_resident_bytes(entry_overhead));
        self.fleets.iter_mut().filter(|f| f.unit == Unit::Entries).for_each(|f| f.track_resident_bytes(entry_overhead));
    }

    pub fn curves(&self) -> &[Curve] {
        &self.curves
    }

    /// Plain entry-count runs of the named policies: the simplest use, and the benchmarks'.
    pub fn entries(policies: &[(String, u64)], window: u64) -> Result<Simulation, String> {
        let specs: Vec<RunSpec> = policies.iter().map(|(p, c)| RunSpec::entries(p, *c)).collect();
        Simulation::new(&specs, Options::with_window(window), None)
    }

    /// Feeds the next events in trace order.
    pub fn feed(&mut self, ev: &Events) -> Result<(), String> {
        ev.validate()?;
        if ev.is_empty() {
            return Ok(());
        }
        let clocked = ev.ts_ns.is_some();
        match self.has_clock {
            None => self.has_clock = Some(clocked),
            Some(had) if had != clocked => return Err("some batches have timestamps and some do not".into()),
            _ => {}
        }
        if ev.shards.is_none() && self.fleets.iter().any(Fleet::needs_shards) {
            return Err("routing by key pattern needs the shard id of every event (the reader computes it)".into());
        }
        if ev.clients.is_none() && self.fleets.iter().any(Fleet::needs_clients) {
            return Err("routing by client needs a trace that knows its clients (a capture, a MONITOR log, or a \
                        Parquet trace with a client column)".into());
        }
        if !clocked && (self.opts.needs_clock() || self.fleets.iter().any(Fleet::rolls)) {
            return Err("TTL, refresh schedules and restarts need a trace with timestamps".into());
        }
        if let Some(ts) = ev.ts_ns {
            self.first_ts.get_or_insert(ts[0]);
        }
        let plain = ev.is_plain() && self.opts.is_plain()
            && self.runs.iter().all(|r| r.unit == Unit::Entries && !r.counts_more_than_hits());
        // The membership is brought up to date with the batch beside the runs, on a thread of its own, when
        // no run can consult it during the batch; else before them.
        let mut observe_apart = false;
        // Which keys belong to which hash is read only by writes that invalidate, stale reads of runs and fleets,
        // and refreshes: sampled curves beside an estimated bound need none of it, which keeps their memory
        // following the sample (8 bytes and more per unique key otherwise).
        let members_read = self.opts.writes != WriteMode::Ignore || !self.opts.refreshes.is_empty()
            || !self.runs.is_empty() || !self.fleets.is_empty();
        if !plain && ev.ops.is_some() && members_read {
            observe_apart = !self.members.consulted_by(ev);
            if !observe_apart {
                self.members.observe_all(ev);
            }
        }
        self.note_window_times(ev);
        self.share_routings();
        // The infinite cache's resident keys are the unique keys read unless it can lose an entry: only then
        // are they counted apart (a set of every key: a fifth of the feed's time on a capture), beside the runs.
        let bound_keeps_all = self.opts.writes == WriteMode::Ignore && self.opts.is_plain();
        let unique_reads = match plain || bound_keeps_all {
            true => None,
            false => Some(self.unique_reads.get_or_insert_with(KeySet::default)),
        };
        let unconsulted = Membership::default();
        let (members, observing) = if observe_apart {
            (&unconsulted, Some(&mut self.members))
        } else {
            (&self.members, None)
        };
        let (opts, first_ts) = (&self.opts, self.first_ts);
        let process = |run: &mut Run| {
            if plain {
                run.process_plain(ev.keys, opts.window)
            } else {
                run.process(ev, members, opts, first_ts)
            }
        };
        let trace_curve = |curve: &mut Curve| curve.process(ev, members, opts, first_ts);
        let mut groups: Vec<Vec<&mut Fleet>> = self.dispatches.iter().map(|_| Vec::new()).collect();
        for (fleet, &d) in self.fleets.iter_mut().zip(&self.fleet_dispatch) {
            groups[d].push(fleet);
        }
        let distinct = self.distinct.as_mut();
        let served = self.served.as_mut();
        let jobs = self.runs.len() + self.curves.len() + self.dispatches.len() + usize::from(observe_apart)
            + usize::from(unique_reads.is_some()) + usize::from(distinct.is_some()) + usize::from(served.is_some());
        let limit = if ev.len() >= PARALLEL_MIN_BATCH { self.threads } else { 1 };
        // The fleets of a routing share what the batch's jobs leave them (`fleet::feed` puts them on threads);
        // all of it when the jobs run one after another.
        let fleet_limit = threads::share_of(self.threads, if limit == 1 { 1 } else { jobs });
        let feed_fleets = |d: &mut Dispatch, mut fleets: Vec<&mut Fleet>| {
            fleet::feed(d, &mut fleets, ev, members, first_ts, fleet_limit)
        };
        let count_unique = |unique: &mut KeySet| {
            for i in 0..ev.len() {
                if ev.op(i) == OP_READ {
                    unique.insert(ev.keys[i]);
                }
            }
        };
        // In this order when on one thread: the membership first, as the runs that do not consult it expect.
        let mut work: Vec<Job<'_>> = Vec::with_capacity(jobs);
        if let Some(m) = observing {
            work.push(Box::new(move || m.observe_all(ev)));
        }
        if let Some(unique) = unique_reads {
            work.push(Box::new(move || count_unique(unique)));
        }
        if let Some(d) = distinct {
            work.push(Box::new(move || d.feed(ev)));
        }
        if let Some(d) = served {
            work.push(Box::new(move || d.feed(ev)));
        }
        let (process, trace_curve, feed_fleets) = (&process, &trace_curve, &feed_fleets);
        for run in self.runs.iter_mut() {
            work.push(Box::new(move || process(run)));
        }
        for curve in self.curves.iter_mut() {
            work.push(Box::new(move || trace_curve(curve)));
        }
        for (d, fleets) in self.dispatches.iter_mut().zip(groups) {
            work.push(Box::new(move || feed_fleets(d, fleets)));
        }
        threads::run_jobs(limit, work);
        Ok(())
    }

    /// Whether this simulation reads only a sample of the keys (`feed_sampled_records` applies): SHARDS curves
    /// of single caches beside the estimated bound, nothing that reads every lookup (runs, fleets, the exact
    /// curve, miniature simulations, the sample of entities), no option that acts on time or fields. Then
    /// keys whose place (`Slices::value`) is at or above the returned bound are read by none of it but the
    /// sketch and the timeline.
    pub fn sampled_below(&self) -> Option<u64> {
        let only_samples = self.runs.is_empty() && self.fleets.is_empty() && self.served.is_none()
            && self.distinct.is_some() && self.opts.is_plain() && self.opts.writes == WriteMode::Ignore
            && !self.curves.is_empty();
        if !only_samples {
            return None;
        }
        self.curves.iter().try_fold(0, |below, c| match c {
            Curve::Shards(s) => s.sampled_below().map(|b| b.max(below)),
            _ => None,
        })
    }

    /// Feeds the lookups of `records` (whole oracleGeneral records, `OracleGeneralReader::next_records`) as
    /// `feed` would feed them as a lean batch's events, when `sampled_below` allows: the ids hashed on this
    /// simulation's threads, only the sampled lookups passed to the curves (`sampled_scan`). Returns the
    /// lookups and the records of size 0 left out.
    pub fn feed_sampled_records(&mut self, records: &[u8]) -> Result<(u64, u64), String> {
        let Some(sampled_below) = self.sampled_below() else {
            return Err("only sampled curves beside an estimated bound can be fed a sample of the records".into());
        };
        let distinct = self.distinct.as_mut().expect("sampled_below asks for the sketch");
        let plan = sampled_scan::ScanPlan {
            sampled_below,
            window: self.opts.window,
            lookups_before: self.lookups,
            registers: distinct.registers(),
            threads: self.threads,
        };
        let s = sampled_scan::scan(records, &plan);
        if s.lookups == 0 {
            return Ok((0, s.zero_size));
        }
        if self.has_clock == Some(false) {
            return Err("some batches have timestamps and some do not".into());
        }
        self.has_clock = Some(true);
        self.first_ts = self.first_ts.or(s.first_ts);
        distinct.feed_raises(&s.raises, s.lookups);
        self.window_ts.extend_from_slice(&s.window_ts);
        self.lookups += s.lookups;
        self.last_ts = s.last_ts;
        let ev = Events { keys: &s.keys, ts_ns: Some(&s.ts_ns), value_sizes: Some(&s.value_sizes), ..Events::default() };
        let (members, opts, first_ts) = (&self.members, &self.opts, self.first_ts);
        for curve in &mut self.curves {
            curve.process(&ev, members, opts, first_ts);
        }
        Ok((s.lookups, s.zero_size))
    }

    /// Gives each fleet added since the last batch a routing: one of those made for the fleets added with it
    /// that routes alike, else its own. A routing that has fed a batch takes no new fleet: it is past the
    /// stream's start.
    fn share_routings(&mut self) {
        let first_new = self.dispatches.len();
        for fleet in &self.fleets[self.fleet_dispatch.len()..] {
            let same = (first_new..self.dispatches.len()).find(|&d| self.dispatches[d].routes_like(fleet));
            self.fleet_dispatch.push(same.unwrap_or_else(|| {
                self.dispatches.push(Dispatch::of(fleet));
                self.dispatches.len() - 1
            }));
        }
    }

    /// Counts the batch's lookups and records the time of each window's last lookup.
    fn note_window_times(&mut self, ev: &Events) {
        let window = self.opts.window;
        match (ev.ops, ev.ts_ns) {
            (None, None) => self.lookups += ev.len() as u64,
            (None, Some(ts)) => {
                // Every event a read: the windows' last lookups found by stepping, not by a division a lookup.
                let n = ts.len() as u64;
                let mut end = window - self.lookups % window - 1;
                while end < n {
                    self.window_ts.push(ts[end as usize]);
                    end += window;
                }
                self.lookups += n;
                self.last_ts = ts[ts.len() - 1];
            }
            _ => {
                for i in 0..ev.len() {
                    if ev.op(i) == OP_READ {
                        self.lookups += 1;
                        if let Some(t) = ev.ts(i) {
                            self.last_ts = t;
                            if self.lookups % window == 0 {
                                self.window_ts.push(t);
                            }
                        }
                    }
                }
            }
        }
    }

    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Unique keys looked up, when the simulation had to count them (see `unique_reads`); otherwise the
    /// resident size of an `infinite` run is the count.
    pub fn unique_reads(&self) -> Option<usize> {
        self.unique_reads.as_ref().map(KeySet::len)
    }

    pub fn has_clock(&self) -> bool {
        self.has_clock == Some(true)
    }

    pub fn first_ts(&self) -> Option<i64> {
        self.first_ts
    }

    /// The timeline so far: the 1-based index of each window's last lookup, its time (if the trace has a
    /// clock), and each run's hits per window. A final partial window is included.
    pub fn timeline(&self) -> Timeline {
        let window = self.opts.window;
        let partial = self.lookups % window != 0;
        let mut ends: Vec<u64> = (1..=self.lookups / window).map(|w| w * window).collect();
        let mut ts = Vec::new();
        if self.has_clock() {
            ts = self.window_ts.clone();
        }
        if partial {
            ends.push(self.lookups);
            if self.has_clock() {
                ts.push(self.last_ts);
            }
        }
        Timeline { ends, ts, hits: self.runs.iter().map(Run::window_hits).collect() }
    }
}

pub struct Timeline {
    pub ends: Vec<u64>,
    pub ts: Vec<i64>,
    /// hits[run][window]
    pub hits: Vec<Vec<u64>>,
}

#[cfg(test)]
mod sampled_tests;
#[cfg(test)]
mod tests;
