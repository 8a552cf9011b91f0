//! Miniature simulations: any policy's curve from scaled-down caches over a spatial sample of the keys
//! (Waldspurger, Saemundsson, Ahmad and Park, "Cache Modeling and Optimization using Miniature
//! Simulations", USENIX ATC 2017). A cache of capacity C over the full stream behaves like a cache of
//! capacity C x R over the lookups of a sample of R of the keys, so its hit rate is estimated by running the
//! real policy, unchanged, at C x R over the sample; its misses, scaled by 1 / R, estimate the full cache's
//! (the Python side turns them into a hit rate, as SHARDS_adj does). Several disjoint samples
//! (`sample::Slices`) give the spread of the estimate. Works for every policy that needs no future, with every option the runs model.
//!
//! A fleet's miniature simulation runs, in each sample, a scaled-down cache per pod: every read is routed as
//! the fleet's runs route it (sampled or not, so that round-robin counts requests as the fleet does), the
//! sampled ones go to their pod's caches, and writes reach every pod. A spatial sample of the keys is a
//! sample of each pod's keys, so each pod's misses scale by 1 / R as a single cache's do.

use super::sample::Slices;
use crate::fleet::{Route, Router};
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::{Columns, Counters, Membership, Run};

pub struct MiniSim {
    pub policy: String,
    pub capacities: Vec<u64>,
    pub unit: Unit,
    params: Vec<(String, f64)>,
    slices: Slices,
    /// sample -> pod -> a scaled-down run per capacity (one pod for a single cache; the client route's grow).
    samples: Vec<Vec<Vec<Run>>>,
    /// The fleet's routing, None for a single cache.
    router: Option<Router>,
    pods: u32,
}

impl MiniSim {
    /// `samples` disjoint samples of `rate` of the keys each.
    pub fn new(policy: &str, capacities: &[u64], unit: Unit, params: &[(String, f64)], rate: f64, samples: usize)
               -> Result<MiniSim, String> {
        if capacities.is_empty() {
            return Err("a miniature simulation needs at least one capacity".into());
        }
        let slices = Slices::new(rate, samples)?;
        let mut mini = MiniSim { policy: policy.to_string(), capacities: capacities.to_vec(), unit,
                                 params: params.to_vec(), slices, samples: Vec::new(), router: None, pods: 1 };
        mini.samples = (0..samples).map(|_| mini.pod_runs().map(|runs| vec![runs])).collect::<Result<Vec<_>, _>>()?;
        Ok(mini)
    }

    /// The miniature simulation of a fleet of `pods` caches routed by `route`, capacities per pod.
    #[allow(clippy::too_many_arguments)]
    pub fn fleet(policy: &str, capacities: &[u64], unit: Unit, params: &[(String, f64)], rate: f64, samples: usize,
                 pods: u32, route: Route) -> Result<MiniSim, String> {
        if pods == 0 && route != Route::Client {
            return Err("a fleet needs at least one pod".into());
        }
        let mut mini = MiniSim::new(policy, capacities, unit, params, rate, samples)?;
        mini.router = Some(Router::new(route, pods));
        mini.pods = pods;
        for s in 0..mini.samples.len() {
            mini.samples[s] = (0..pods).map(|_| mini.pod_runs()).collect::<Result<Vec<_>, _>>()?;
        }
        Ok(mini)
    }

    /// Pods and route of a fleet's simulation; None for a single cache.
    pub fn fleet_shape(&self) -> Option<(u32, &'static str)> {
        let pods = self.samples.iter().map(Vec::len).max().unwrap_or(1) as u32;
        self.router.as_ref().map(|r| (self.pods.max(pods), r.route.name()))
    }

    /// One pod's scaled-down runs, one per capacity.
    fn pod_runs(&self) -> Result<Vec<Run>, String> {
        let rate = self.slices.rate();
        self.capacities.iter().map(|&c| Run::new(&self.policy, scaled(c, rate), self.unit, &self.params, None)).collect()
    }

    pub fn rate(&self) -> f64 {
        self.slices.rate()
    }

    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        // sample -> pod -> the events its caches take.
        let mut kept: Vec<Vec<Columns>> = self.samples.iter().map(|s| s.iter().map(|_| Columns::default()).collect())
            .collect();
        for i in 0..ev.len() {
            let read = ev.op(i) == 0;
            let pod = match (&mut self.router, read) {
                (Some(r), true) => r.pod(ev, i) as usize,
                _ => 0,
            };
            match self.slices.find(ev.keys[i]) {
                Some((s, _)) if read => {
                    if pod >= kept[s].len() {
                        kept.iter_mut().for_each(|k| k.resize_with(pod + 1, Columns::default));
                    }
                    kept[s][pod].push(ev, i)
                }
                Some((s, _)) => kept[s].iter_mut().for_each(|c| c.push(ev, i)),
                None if !read && ev.field(i) == 0 => kept.iter_mut().flatten().for_each(|c| c.push(ev, i)),
                None => {}
            }
        }
        let pods = kept.iter().map(Vec::len).max().unwrap_or(1);
        for s in 0..self.samples.len() {
            while self.samples[s].len() < pods {
                // A client seen for the first time: its pod starts empty (writes before it reached no pod).
                let runs = self.pod_runs().expect("built before with the same arguments");
                self.samples[s].push(runs);
            }
        }
        for (columns, sample) in kept.iter().zip(&mut self.samples) {
            for (pod_columns, runs) in columns.iter().zip(sample.iter_mut()) {
                let events = pod_columns.events(ev);
                for run in runs.iter_mut() {
                    run.process(&events, members, opts, first_ts);
                }
            }
        }
    }

    /// Per sample and capacity, the counters of its runs (a fleet's summed over its pods).
    pub fn counters(&self) -> Vec<Vec<Counters>> {
        self.samples
            .iter()
            .map(|pods| {
                (0..self.capacities.len())
                    .map(|c| pods.iter().map(|runs| runs[c].counters()).fold(Counters::default(), add))
                    .collect()
            })
            .collect()
    }

    pub fn scaled_capacities(&self) -> Vec<u64> {
        self.capacities.iter().map(|&c| scaled(c, self.slices.rate())).collect()
    }
}

/// The counts a fleet's estimate needs, summed over pods.
fn add(mut a: Counters, b: Counters) -> Counters {
    a.lookups += b.lookups;
    a.hits += b.hits;
    a.bytes_looked_up += b.bytes_looked_up;
    a.bytes_hit += b.bytes_hit;
    a
}

fn scaled(capacity: u64, rate: f64) -> u64 {
    ((capacity as f64 * rate).round() as u64).max(1)
}
