//! A fleet of pods, each with its own cache (one `Run`), fed by a router.
//!
//! Reads go to the pod the route picks; writes and deletes reach every pod, as a service's invalidation
//! message or a shared TTL does (a pod that never cached the key does nothing with it). The fleet's timeline
//! counts windows of the fleet's lookups, in trace order, from each lookup's pod and whether it hit: the hits
//! of a window are the sum of what every pod hit in it.
//!
//! Commands served and round trips saved are the fleet's, not sums over pods: a sharded route sends the
//! lookups of one MGET, or of one batch, to several pods, and the request is served only if all of them hit.

use super::route::{Route, Router};
use super::share::{self, Share, EVERY_POD};
use super::spread::Spread;
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::{Counters, Membership, RoundTrips, Run};
use crate::trace::reader::OP_READ;

pub struct Fleet {
    pub policy: String,
    pub capacity: u64,
    pub unit: Unit,
    params: Vec<(String, f64)>,
    router: Router,
    pods: Vec<Run>,
    /// Each pod's options: the fleet's, with its own phase of a rolling restart.
    pod_opts: Vec<Options>,
    /// The fleet's options, for pods added later (the client route).
    template: Options,
    window: u64,
    window_hits: Vec<u64>,
    open_hits: u64,
    open_lookups: u64,
    spread: Spread,
    /// Each pod's share of the chunk being handed out.
    shares: Vec<Share>,
    /// The pods' clock runs this many times faster than the trace's (1: the trace's own).
    time_factor: u32,
    served: Served,
    /// The events of a pod's share that hit, and the chunk's events that hit, as flags by event.
    hit_indices: Vec<u32>,
    hit_flags: Vec<bool>,
    /// The pod of each event of the chunk being shared out (`EVERY_POD` for writes and deletes).
    pod_of: Vec<u32>,
}

/// Events shared out at a time, per pod: enough that a pod's share keeps its cache warm while the pod takes it.
/// A chunk holds that many per pod, up to `MAX_CHUNK`, so that the copies of the shares and the notes on each
/// event (about 25 bytes an event) stay small.
const CHUNK_PER_POD: usize = 1 << 14;
const MAX_CHUNK: usize = 1 << 20;

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
            router: Router::new(route, pods),
            pods: runs,
            pod_opts,
            template: opts.clone(),
            window: opts.window,
            window_hits: Vec::new(),
            open_hits: 0,
            open_lookups: 0,
            spread: Spread::default(),
            shares: (0..pods).map(|_| Share::default()).collect(),
            time_factor: 1,
            served: Served::default(),
            hit_indices: Vec::new(),
            hit_flags: Vec::new(),
            pod_of: Vec::new(),
        })
    }

    /// Whether it needs the events' clients column (the client route).
    pub fn needs_clients(&self) -> bool {
        self.router.route == Route::Client
    }

    /// Whether it needs the events' shards column (the key-pattern route).
    pub fn needs_shards(&self) -> bool {
        self.router.route == Route::KeyPattern
    }

    /// Whether its pods restart one after another (which needs the trace's clock).
    pub fn rolls(&self) -> bool {
        self.pod_opts.iter().any(|o| o.restart_every_ns.is_some())
    }

    pub fn route(&self) -> Route {
        self.router.route
    }

    pub fn pods(&self) -> &[Run] {
        &self.pods
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

    pub fn process(&mut self, ev: &Events, members: &Membership, first_ts: Option<i64>) {
        if let (Some(ts), Some(first), true) = (ev.ts_ns, first_ts, self.time_factor > 1) {
            let factor = i64::from(self.time_factor);
            let compressed: Vec<i64> = ts.iter().map(|&t| first + (t - first) / factor).collect();
            return self.process_clocked(&Events { ts_ns: Some(&compressed), ..*ev }, members, first_ts);
        }
        self.process_clocked(ev, members, first_ts)
    }

    fn process_clocked(&mut self, ev: &Events, members: &Membership, first_ts: Option<i64>) {
        let mut start = 0;
        while start < ev.len() {
            let end = ev.len().min(start + self.chunk());
            self.share_out(ev, start, end, members, first_ts);
            self.count_windows_and_served(ev, start, end);
            start = end;
        }
    }

    fn chunk(&self) -> usize {
        (self.pods.len().max(1) * CHUNK_PER_POD).min(MAX_CHUNK)
    }

    /// A pod for a client host seen for the first time (the client route).
    fn grow_to(&mut self, pods: usize) {
        while self.pods.len() < pods {
            let mut run = Run::new(&self.policy, self.capacity, self.unit, &self.params, None)
                .expect("the fleet's first pods were built with the same arguments");
            run.log_hits();
            self.pods.push(run);
            // The client route has no rolling restart (refused in `new`): a new pod's options are the fleet's.
            self.pod_opts.push(self.template.clone());
            self.shares.push(Share::default());
        }
    }

    /// Hands events `start..end` to their pods, pod after pod, and notes each read's pod and whether it hit.
    ///
    /// A pod's cache is touched only by its own share, so the pods can take their shares one after another in
    /// long runs: a pod's table stays in the processor's caches for its whole share, where cutting the stream
    /// at every timeline window would visit 64 pods' tables for a few hundred lookups each. The windows are
    /// counted afterwards, in trace order, from the pods and hits noted here.
    fn share_out(&mut self, ev: &Events, start: usize, end: usize, members: &Membership, first_ts: Option<i64>) {
        if self.router.route == Route::Client {
            // Events without clients are refused before they reach a fleet routing by client (`Simulation::feed`).
            let clients = ev.clients.expect("routing by client needs the clients column");
            self.grow_to(clients[start..end].iter().max().map_or(0, |&c| c as usize + 1));
        }
        self.pod_of.clear();
        for i in start..end {
            let pod = if ev.op(i) == OP_READ { self.router.pod(ev, i) } else { EVERY_POD };
            self.pod_of.push(pod);
        }
        share::share_out(ev, start, &self.pod_of, &mut self.shares);
        self.hit_flags.clear();
        self.hit_flags.resize(end - start, false);
        for ((run, share), opts) in self.pods.iter_mut().zip(&self.shares).zip(&self.pod_opts) {
            if !share.is_empty() {
                run.process(&share.events(ev), members, opts, first_ts);
                run.take_hits(&mut self.hit_indices);
                for &k in &self.hit_indices {
                    self.hit_flags[share.at[k as usize] as usize] = true;
                }
                self.hit_indices.clear();
            }
        }
    }

    /// Follows events `start..end` in trace order, their pods and hits noted by `share_out`: the timeline's
    /// windows and their spread, and the commands and round trips served.
    fn count_windows_and_served(&mut self, ev: &Events, start: usize, end: usize) {
        let s = &mut self.served;
        for i in start..end {
            let pod = self.pod_of[i - start];
            // As a run notes them: bucket 0 for a hit, 1 for a miss; None for a write or delete.
            let lookup = (pod != EVERY_POD).then(|| u32::from(!self.hit_flags[i - start]));
            if let Some((conn, batch)) = ev.batch(i) {
                s.round_trips.note(conn, batch, lookup);
            }
            let Some(missed) = lookup else { continue };
            match ev.req(i) {
                Some(req) => s.commands.note(0, req, lookup),
                None => {
                    s.lone.0 += 1;
                    s.lone.1 += u64::from(missed == 0);
                }
            }
            let hit = u64::from(missed == 0);
            self.spread.lookups(pod as usize, 1);
            self.spread.hits(pod as usize, hit);
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

    /// Each pod's counters.
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
