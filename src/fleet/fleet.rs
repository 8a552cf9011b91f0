//! A fleet of pods, each with its own cache (one `Run`), fed its pods' shares by a routing (`dispatch.rs`).
//!
//! Reads go to the pod the route picks; writes and deletes reach every pod, as a service's invalidation
//! message or a shared TTL does (a pod that never cached the key does nothing with it). The fleet's timeline
//! counts windows of the fleet's lookups, in trace order, from each lookup's pod and whether it hit: the hits
//! of a window are the sum of what every pod hit in it.
//!
//! Commands served and round trips saved are the fleet's, not sums over pods: a sharded route sends the
//! lookups of one MGET, or of one batch, to several pods, and the request is served only if all of them hit.
//!
//! A fleet can run only some of its pods (`only_pods`: one task of a sweep split by pods, for the sharded and
//! client routes whose pods are independent): it routes every lookup as the whole fleet does, but keeps caches
//! only for its pods, and writes reach only them. What it says of its pods (their counters, their hits in each
//! window) is what the whole fleet says of them; what needs every pod (commands served, round trips saved,
//! the spread) it hands out as parts that the other tasks' complete (`ServedParts`, `pod_windows`).

use super::dispatch::Dispatch;
use super::route::Route;
use super::share::{EVERY_POD, NO_POD};
use super::spread::Spread;
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::{Counters, Membership, RoundTripCounts, RoundTrips, Run};

pub struct Fleet {
    pub policy: String,
    pub capacity: u64,
    pub unit: Unit,
    params: Vec<(String, f64)>,
    route: Route,
    /// The pods it runs: all of them, or with `only_pods` those `p % of == part`, in order (`pod_ids`).
    pods: Vec<Run>,
    pod_ids: Vec<u32>,
    /// (part, of) with `only_pods`.
    only: Option<(u32, u32)>,
    /// The fleet's pods, run here or not (the client route's grow with the clients seen).
    total_pods: u32,
    /// Each pod's options: the fleet's, with its own phase of a rolling restart.
    pod_opts: Vec<Options>,
    /// The fleet's options, for pods added later (the client route).
    template: Options,
    window: u64,
    window_hits: Vec<u64>,
    open_hits: u64,
    open_lookups: u64,
    spread: Spread,
    /// The pods' clock runs this many times faster than the trace's (1: the trace's own).
    time_factor: u32,
    served: Served,
    /// The events of a pod's share that hit, and what became of each event of the chunk (`MISSED`, `HIT`,
    /// `ELSEWHERE`).
    hit_indices: Vec<u32>,
    outcome: Vec<u8>,
    /// The entry overhead of `track_resident_bytes`, for pods added later.
    tracks_resident_bytes: Option<u32>,
}

/// An event's outcome: a lookup that missed (or no lookup), a lookup that hit, a lookup routed to a pod this
/// fleet does not run (`only_pods`): its outcome is another task's.
const MISSED: u8 = 0;
const HIT: u8 = 1;
const ELSEWHERE: u8 = 2;

/// The fleet's commands served and round trips saved (see the module comment).
#[derive(Default)]
struct Served {
    round_trips: RoundTrips,
    commands: RoundTrips,
    /// Lookups of a trace that numbers no commands, each a command and a round trip of its own, and those hit.
    lone: (u64, u64),
}

/// The fleet's own counts of requests: commands and round trips, and those served whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetServed {
    pub commands: u64,
    pub commands_served: u64,
    pub round_trips: u64,
    pub round_trips_saved: u64,
}

/// What a fleet that runs only some pods knows of the fleet's commands served and round trips saved: the
/// requests that would be served (`*_candidates`: they have lookups and write nothing), and one bit per
/// request (numbered as they begin, the same in every part) set when one of its lookups missed on this part's
/// pods. The parts' bits ORed together are the requests missed anywhere; `lone_hits` (lookups that are each
/// a request of their own) add up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServedParts {
    pub commands: u64,
    pub command_candidates: u64,
    pub command_misses: Vec<u64>,
    pub lone_hits: u64,
    /// Whether the trace knows batches (else every command is a round trip of its own).
    pub batched: bool,
    pub round_trips: u64,
    pub round_trip_candidates: u64,
    pub round_trip_misses: Vec<u64>,
}

impl Fleet {
    /// `pods` caches of `capacity` each. `rolling`, (every, over): a rolling deployment every `every` ns, pod
    /// p restarting `p / pods` of `over` after pod 0, as Kubernetes replaces pods one after another. Only the
    /// fleet's pods roll: the simulation's other runs, and its infinite bound, do not restart for it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(policy: &str, capacity: u64, unit: Unit, params: &[(String, f64)], pods: u32, route: Route,
               opts: &Options, rolling: Option<(i64, i64)>) -> Result<Fleet, String> {
        if pods == 0 && route != Route::Client {
            return Err("a fleet needs at least one pod".into());
        }
        if route == Route::Client && rolling.is_some() {
            return Err("a rolling restart needs the number of pods up front; the client route has one pod per \
                        client host, known only at the end of the trace".into());
        }
        if let Some((every, over)) = rolling {
            if opts.restart_every_ns.is_some() {
                return Err("a fleet restarts either every pod at once or one after another, not both".into());
            }
            if every <= 0 || over < 0 || over >= every {
                return Err("a rolling restart must take less time than the interval between restarts".into());
            }
        }
        let mut runs = (0..pods).map(|_| Run::new(policy, capacity, unit, params, None)).collect::<Result<Vec<_>, _>>()?;
        runs.iter_mut().for_each(Run::log_hits);
        let pod_opts = (0..pods)
            .map(|p| {
                let mut o = opts.clone();
                if let Some((every, over)) = rolling {
                    o.restart_every_ns = Some(every);
                    o.restart_phase_ns = (i128::from(over) * i128::from(p) / i128::from(pods)) as i64;
                }
                o
            })
            .collect();
        Ok(Fleet {
            policy: policy.to_string(),
            capacity,
            unit,
            params: params.to_vec(),
            route,
            pods: runs,
            pod_ids: (0..pods).collect(),
            only: None,
            total_pods: pods,
            pod_opts,
            template: opts.clone(),
            window: opts.window,
            window_hits: Vec::new(),
            open_hits: 0,
            open_lookups: 0,
            spread: Spread::default(),
            time_factor: 1,
            served: Served::default(),
            hit_indices: Vec::new(),
            outcome: Vec::new(),
            tracks_resident_bytes: None,
        })
    }

    /// Runs only the pods `p % of == part` of the fleet (see the module comment). Before the first batch.
    pub fn only_pods(&mut self, part: u32, of: u32) -> Result<(), String> {
        if part >= of {
            return Err(format!("part {part} of {of}: the parts of a fleet are numbered from 0 to {of} - 1"));
        }
        let keep: Vec<bool> = self.pod_ids.iter().map(|&p| p % of == part).collect();
        let mut kept = keep.iter();
        self.pods.retain(|_| *kept.next().unwrap());
        let mut kept = keep.iter();
        self.pod_opts.retain(|_| *kept.next().unwrap());
        self.pod_ids.retain(|&p| p % of == part);
        self.only = Some((part, of));
        self.spread = Spread::recording();
        self.served = Served {
            round_trips: RoundTrips::logging_misses(),
            commands: RoundTrips::logging_misses(),
            lone: (0, 0),
        };
        Ok(())
    }

    /// Whether it needs the events' clients column (the client route).
    pub fn needs_clients(&self) -> bool {
        self.route == Route::Client
    }

    /// Whether it needs the events' shards column (the key-pattern route).
    pub fn needs_shards(&self) -> bool {
        self.route == Route::KeyPattern
    }

    /// Whether its pods restart one after another (which needs the trace's clock).
    pub fn rolls(&self) -> bool {
        self.pod_opts.iter().any(|o| o.restart_every_ns.is_some())
    }

    pub fn route(&self) -> Route {
        self.route
    }

    /// The pods run here (all, unless `only_pods`), and their numbers in the fleet.
    pub fn pods(&self) -> &[Run] {
        &self.pods
    }

    pub fn pod_ids(&self) -> &[u32] {
        &self.pod_ids
    }

    /// The fleet's pods, run here or not.
    pub fn pod_count(&self) -> u32 {
        self.total_pods
    }

    /// (part, of) when it runs only some pods.
    pub fn part(&self) -> Option<(u32, u32)> {
        self.only
    }

    /// The fleet's pods see the trace's clock running `factor` times faster (from its first lookup on): the
    /// sharded what-if from one pod's capture, where each shard takes the lookups of its entities from
    /// `factor` pods, so what one pod sent in `factor` seconds a shard sees in one.
    pub fn compress_time(&mut self, factor: u32) {
        self.time_factor = factor.max(1);
    }

    pub fn time_factor(&self) -> u32 {
        self.time_factor
    }

    /// A pod for a client host seen for the first time (the client route).
    fn grow_to(&mut self, pods: u32) {
        while self.total_pods < pods {
            let pod = self.total_pods;
            self.total_pods += 1;
            if Dispatch::local(self.only, pod).is_none() {
                continue;
            }
            let mut run = Run::new(&self.policy, self.capacity, self.unit, &self.params, None)
                .expect("the fleet's first pods were built with the same arguments");
            run.log_hits();
            if let Some(overhead) = self.tracks_resident_bytes {
                run.track_resident_bytes(overhead);
            }
            self.pods.push(run);
            // The client route has no rolling restart (refused in `new`): a new pod's options are the fleet's.
            self.pod_opts.push(self.template.clone());
            self.pod_ids.push(pod);
        }
    }

    /// The chunk of events from `start` on that `d` routed: each pod takes its share in one run, then the
    /// fleet follows the events in trace order for its timeline and the requests it served.
    pub(super) fn take(&mut self, ev: &Events, start: usize, d: &Dispatch, members: &Membership,
                       first_ts: Option<i64>) {
        self.grow_to(d.pods());
        self.outcome.clear();
        self.outcome.extend(d.pod_of.iter().map(|&pod| if pod == NO_POD { ELSEWHERE } else { MISSED }));
        for ((run, share), opts) in self.pods.iter_mut().zip(&d.shares).zip(&self.pod_opts) {
            if !share.is_empty() {
                run.process(&share.events(ev), members, opts, first_ts);
                run.take_hits(&mut self.hit_indices);
                for &k in &self.hit_indices {
                    self.outcome[share.at[k as usize] as usize] = HIT;
                }
                self.hit_indices.clear();
            }
        }
        self.count_windows_and_served(ev, start, &d.pod_of);
    }

    /// Follows the chunk's events in trace order, their pods and outcomes noted by `take`: the timeline's
    /// windows and their spread, and the commands and round trips served.
    fn count_windows_and_served(&mut self, ev: &Events, start: usize, pod_of: &[u32]) {
        let s = &mut self.served;
        for (i, &pod) in (start..).zip(pod_of) {
            let outcome = self.outcome[i - start];
            // As a run notes them: bucket 0 for a hit, 1 for a miss; None for a write or delete. A lookup of a
            // pod not run here missed nowhere here: the other parts' logs say if it missed.
            let lookup = (pod != EVERY_POD).then_some(u32::from(outcome == MISSED));
            if let Some((conn, batch)) = ev.batch(i) {
                s.round_trips.note(conn, batch, lookup);
            }
            if lookup.is_none() {
                continue;
            }
            let hit = u64::from(outcome == HIT);
            match ev.req(i) {
                Some(req) => s.commands.note(0, req, lookup),
                None => {
                    s.lone.0 += 1;
                    s.lone.1 += hit;
                }
            }
            if pod != NO_POD {
                self.spread.lookups(pod as usize, 1);
                self.spread.hits(pod as usize, hit);
            }
            self.open_hits += hit;
            self.open_lookups += 1;
            if self.open_lookups == self.window {
                self.window_hits.push(self.open_hits);
                self.open_hits = 0;
                self.open_lookups = 0;
                self.spread.close_window();
            }
        }
    }

    /// The lowest, median and highest pod hit rate in each window of `window_hits`.
    pub fn window_spread(&self) -> Vec<[f32; 3]> {
        self.spread.windows()
    }

    /// The fleet's commands served and round trips saved.
    pub fn served(&self) -> FleetServed {
        let (commands, lone) = (self.served.commands.counts(), self.served.lone);
        let (commands, commands_served) = (commands.round_trips + lone.0, commands.served_up_to(0) + lone.1);
        // Without batches every command is a round trip of its own.
        let (round_trips, round_trips_saved) = if self.served.round_trips.is_used() {
            let trips = self.served.round_trips.counts();
            (trips.round_trips, trips.served_up_to(0))
        } else {
            (commands, commands_served)
        };
        FleetServed { commands, commands_served, round_trips, round_trips_saved }
    }

    /// With `only_pods`: the parts of the fleet's commands served and round trips saved (see `ServedParts`).
    pub fn served_parts(&self) -> Option<ServedParts> {
        let candidates = |c: &RoundTripCounts| c.served_by_bucket.iter().sum::<u64>();
        let (commands, trips) = (self.served.commands.counts(), self.served.round_trips.counts());
        Some(ServedParts {
            commands: commands.round_trips + self.served.lone.0,
            command_candidates: candidates(&commands),
            command_misses: self.served.commands.miss_log()?,
            lone_hits: self.served.lone.1,
            batched: self.served.round_trips.is_used(),
            round_trips: trips.round_trips,
            round_trip_candidates: candidates(&trips),
            round_trip_misses: self.served.round_trips.miss_log()?,
        })
    }

    /// With `only_pods`: each window's (hits, lookups) of each pod run here, the open window last (see
    /// `Spread::pod_windows`).
    pub fn pod_windows(&self) -> Option<Vec<Vec<(u64, u64)>>> {
        self.spread.pod_windows(self.pods.len())
    }

    /// Each pod's counters.
    /// Every pod, those the client route adds later included, follows the bytes its cache holds
    /// (`Run::track_resident_bytes`).
    pub fn track_resident_bytes(&mut self, entry_overhead: u32) {
        self.tracks_resident_bytes = Some(entry_overhead);
        self.pods.iter_mut().for_each(|r| r.track_resident_bytes(entry_overhead));
    }

    pub fn counters(&self) -> Vec<Counters> {
        self.pods.iter().map(Run::counters).collect()
    }

    /// The fleet's hits per window of `window` fleet lookups, the open window's included if it has lookups.
    pub fn window_hits(&self) -> Vec<u64> {
        let mut h = self.window_hits.clone();
        if self.open_lookups > 0 {
            h.push(self.open_hits);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;
    use crate::sim::options::WriteMode;
    use crate::trace::reader::{OP_READ, OP_WRITE};

    /// A trace of MGET-like commands in pipelined batches over a few connections, with some writes.
    struct Trace {
        keys: Vec<u64>,
        ops: Vec<u8>,
        reqs: Vec<u64>,
        conns: Vec<u64>,
        batches: Vec<u64>,
        clients: Vec<u32>,
    }

    fn trace(n: u64) -> Trace {
        let mut t = Trace { keys: vec![], ops: vec![], reqs: vec![], conns: vec![], batches: vec![], clients: vec![] };
        for i in 0..n {
            let r = mix64(i);
            t.keys.push(mix64(r % 97 + (r >> 60) * (r % 3)));
            t.ops.push(if r.is_multiple_of(13) { OP_WRITE } else { OP_READ });
            t.reqs.push(i / 3);
            t.conns.push(i / 3 % 4);
            t.batches.push(i / 12);
            t.clients.push((i / 3 % 5) as u32);
        }
        t
    }

    fn run(route: Route, only: Option<(u32, u32)>, t: &Trace) -> Fleet {
        let mut opts = Options::with_window(50);
        opts.writes = WriteMode::Invalidate;
        let mut f = Fleet::new("lru", 9, Unit::Entries, &[], 5, route, &opts, None).unwrap();
        if let Some((part, of)) = only {
            f.only_pods(part, of).unwrap();
        }
        let members = Membership::default();
        let mut d = Dispatch::of(&f);
        for chunk in (0..t.keys.len()).collect::<Vec<_>>().chunks(37) {
            let r = chunk[0]..chunk[chunk.len() - 1] + 1;
            let ev = Events {
                keys: &t.keys[r.clone()],
                ops: Some(&t.ops[r.clone()]),
                reqs: Some(&t.reqs[r.clone()]),
                conns: Some(&t.conns[r.clone()]),
                batches: Some(&t.batches[r.clone()]),
                clients: Some(&t.clients[r.clone()]),
                ..Events::default()
            };
            crate::fleet::feed(&mut d, &mut [&mut f], &ev, &members, None, crate::threads::UNLIMITED);
        }
        f
    }

    fn or_count(logs: &[Vec<u64>]) -> u64 {
        let words = logs.iter().map(Vec::len).max().unwrap_or(0);
        (0..words).map(|w| logs.iter().fold(0u64, |a, l| a | l.get(w).copied().unwrap_or(0)).count_ones() as u64).sum()
    }

    #[test]
    fn the_parts_of_a_fleet_together_are_the_whole_fleet() {
        let t = trace(3_000);
        for route in [Route::Entity, Route::Client] {
            let whole = run(route, None, &t);
            let parts: Vec<Fleet> = (0..2).map(|p| run(route, Some((p, 2)), &t)).collect();
            assert_eq!(parts[0].pod_count(), whole.pod_count());
            assert_eq!(parts[0].pod_ids(), &[0, 2, 4]);
            // Each pod's counters, and the hits of each window summed over the parts.
            let mut counters = vec![None; whole.pods().len()];
            for p in &parts {
                for (&id, c) in p.pod_ids().iter().zip(p.counters()) {
                    counters[id as usize] = Some(c);
                }
            }
            assert_eq!(counters.into_iter().map(Option::unwrap).collect::<Vec<_>>(), whole.counters());
            let sum: Vec<u64> = (0..whole.window_hits().len()).map(|w| parts.iter().map(|p| p.window_hits()[w]).sum()).collect();
            assert_eq!(sum, whole.window_hits());
            // The spread from every pod's counters of each window.
            let rows: Vec<Vec<(u64, u64)>> = (0..whole.window_spread().len())
                .map(|w| {
                    let mut pods = vec![(0, 0); whole.pods().len()];
                    for p in &parts {
                        let windows = p.pod_windows().unwrap();
                        p.pod_ids().iter().zip(&windows[w]).for_each(|(&id, &c)| pods[id as usize] = c);
                    }
                    pods
                })
                .collect();
            let spread: Vec<[f32; 3]> = rows.iter().map(|r| Spread::summary(r)).collect();
            assert_eq!(format!("{spread:?}"), format!("{:?}", whole.window_spread()));
            // Commands served and round trips saved: the requests missed anywhere are the parts' misses ORed.
            let s: Vec<ServedParts> = parts.iter().map(|p| p.served_parts().unwrap()).collect();
            let w = whole.served();
            let commands_served = s[0].command_candidates - or_count(&[s[0].command_misses.clone(), s[1].command_misses.clone()])
                + s.iter().map(|p| p.lone_hits).sum::<u64>();
            let saved = s[0].round_trip_candidates - or_count(&[s[0].round_trip_misses.clone(), s[1].round_trip_misses.clone()]);
            assert_eq!((s[0].commands, commands_served, s[0].round_trips, saved),
                       (w.commands, w.commands_served, w.round_trips, w.round_trips_saved));
            assert!(w.round_trips_saved > 0 && w.round_trips_saved < w.round_trips, "{w:?}");
            assert!(w.commands_served > w.round_trips_saved, "{w:?}");
            assert!(whole.served_parts().is_none());
        }
    }
}
