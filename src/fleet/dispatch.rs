//! The routing of the stream to a fleet's pods, shared by the fleets that route alike.
//!
//! A sweep runs the same pods and route at several capacities and policies: their lookups go to the same
//! pods, so the stream is routed, and each pod's share copied out (`share.rs`), once for all of them, and the
//! fleets then take their shares side by side. Fleets route alike when they have the same route, the same
//! pods (or the same part of them, `Fleet::only_pods`) and the same clock.
//!
//! The stream goes out in chunks of `CHUNK_PER_POD` events a pod: a pod takes its whole share of a chunk in
//! one run, so its cache stays in the processor's caches while it does.

use super::fleet::Fleet;
use super::route::{Route, Router};
use super::share::{self, Share, EVERY_POD, NO_POD};
use crate::sim::events::Events;
use crate::sim::Membership;
use crate::threads::{run_jobs, Job};
use crate::trace::reader::OP_READ;

/// Events a chunk holds per pod, up to `MAX_CHUNK` in all, so that the shares' copies and the notes on each
/// event (about 25 bytes an event) stay small.
const CHUNK_PER_POD: usize = 1 << 15;
const MAX_CHUNK: usize = 1 << 21;
/// Fleets share a chunk out on threads of their own from this many events on.
const PARALLEL_MIN_CHUNK: usize = 1 << 14;

pub struct Dispatch {
    router: Router,
    /// (part, of): only the pods `p % of == part` take shares.
    only: Option<(u32, u32)>,
    /// The fleet's pods so far (the client route's grow with the clients seen).
    pods: u32,
    time_factor: u32,
    /// The pod run here of each event of the chunk (`EVERY_POD`: a write or delete; `NO_POD`: a lookup of a
    /// pod another task runs), and each such pod's share.
    pub pod_of: Vec<u32>,
    pub shares: Vec<Share>,
}

impl Dispatch {
    /// The routing of `fleet`, before its first batch.
    pub fn of(fleet: &Fleet) -> Dispatch {
        let pods = fleet.pod_count();
        Dispatch {
            router: Router::new(fleet.route(), pods),
            only: fleet.part(),
            pods,
            time_factor: fleet.time_factor(),
            pod_of: Vec::new(),
            shares: (0..fleet.pods().len()).map(|_| Share::default()).collect(),
        }
    }

    /// Whether `fleet` routes as the fleet this dispatch was made for.
    pub fn routes_like(&self, fleet: &Fleet) -> bool {
        self.router.route == fleet.route() && self.pods == fleet.pod_count() && self.only == fleet.part()
            && self.time_factor == fleet.time_factor()
    }

    /// The fleet's pods so far.
    pub fn pods(&self) -> u32 {
        self.pods
    }

    fn chunk(&self) -> usize {
        (self.pods.max(1) as usize * CHUNK_PER_POD).min(MAX_CHUNK)
    }

    /// The index among the pods run here of the fleet's pod `pod`, if it runs here.
    #[inline]
    pub fn local(only: Option<(u32, u32)>, pod: u32) -> Option<usize> {
        match only {
            None => Some(pod as usize),
            Some((part, of)) => (pod % of == part).then_some((pod / of) as usize),
        }
    }

    /// Routes events `start..end` and copies out the shares of the pods run here.
    fn route(&mut self, ev: &Events, start: usize, end: usize) {
        if self.router.route == Route::Client {
            // Events without clients are refused before they reach a fleet routing by client (`Simulation::feed`).
            let clients = ev.clients.expect("routing by client needs the clients column");
            let seen = clients[start..end].iter().max().map_or(0, |&c| c + 1);
            for pod in self.pods..seen.max(self.pods) {
                if Self::local(self.only, pod).is_some() {
                    self.shares.push(Share::default());
                }
            }
            self.pods = self.pods.max(seen);
        }
        self.pod_of.clear();
        for i in start..end {
            let pod = if ev.op(i) != OP_READ {
                EVERY_POD
            } else {
                Self::local(self.only, self.router.pod(ev, i)).map_or(NO_POD, |local| local as u32)
            };
            self.pod_of.push(pod);
        }
        share::share_out(ev, start, &self.pod_of, &mut self.shares);
    }
}

/// Feeds `ev` to `fleets`, which route as `d` does: chunk by chunk, routed once, each fleet's pods taking
/// their shares (the fleets on threads of their own when there are several, at most `threads`: see
/// `crate::threads`).
pub fn feed(d: &mut Dispatch, fleets: &mut [&mut Fleet], ev: &Events, members: &Membership, first_ts: Option<i64>,
            threads: usize) {
    if let (Some(ts), Some(first), true) = (ev.ts_ns, first_ts, d.time_factor > 1) {
        // The sharded what-if's clock (`Fleet::compress_time`).
        let factor = i64::from(d.time_factor);
        let compressed: Vec<i64> = ts.iter().map(|&t| first + (t - first) / factor).collect();
        return feed_clocked(d, fleets, &Events { ts_ns: Some(&compressed), ..*ev }, members, first_ts, threads);
    }
    feed_clocked(d, fleets, ev, members, first_ts, threads)
}

fn feed_clocked(d: &mut Dispatch, fleets: &mut [&mut Fleet], ev: &Events, members: &Membership,
                first_ts: Option<i64>, threads: usize) {
    let mut start = 0;
    while start < ev.len() {
        let end = ev.len().min(start + d.chunk());
        d.route(ev, start, end);
        let d = &*d;
        let limit = if end - start >= PARALLEL_MIN_CHUNK { threads } else { 1 };
        let work = fleets.iter_mut()
            .map(|fleet| Box::new(move || fleet.take(ev, start, d, members, first_ts)) as Job<'_>)
            .collect();
        run_jobs(limit, work);
        start = end;
    }
}
