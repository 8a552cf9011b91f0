//! Miniature simulations: any policy's curve from scaled-down caches over a spatial sample of the keys
//! (Waldspurger, Saemundsson, Ahmad and Park, "Cache Modeling and Optimization using Miniature
//! Simulations", USENIX ATC 2017). A cache of capacity C over the full stream behaves like a cache of
//! capacity C x R over the lookups of a sample of R of the keys, so its hit rate is estimated by running the
//! real policy, unchanged, at C x R over the sample; its misses, scaled by 1 / R, estimate the full cache's
//! (the Python side turns them into a hit rate, as SHARDS_adj does). Several disjoint samples
//! (`sample::Slices`) give the spread of the estimate. Works for every policy that needs no future, with every option the runs model.

use super::sample::Slices;
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::{Columns, Counters, Membership, Run};

pub struct MiniSim {
    pub policy: String,
    pub capacities: Vec<u64>,
    pub unit: Unit,
    slices: Slices,
    /// Per sample, a scaled-down run per capacity.
    samples: Vec<Vec<Run>>,
}

impl MiniSim {
    /// `samples` disjoint samples of `rate` of the keys each.
    pub fn new(policy: &str, capacities: &[u64], unit: Unit, params: &[(String, f64)], rate: f64, samples: usize)
               -> Result<MiniSim, String> {
        if capacities.is_empty() {
            return Err("a miniature simulation needs at least one capacity".into());
        }
        let slices = Slices::new(rate, samples)?;
        let runs = || {
            capacities
                .iter()
                .map(|&c| Run::new(policy, scaled(c, slices.rate()), unit, params, None))
                .collect::<Result<Vec<_>, _>>()
        };
        let samples = (0..samples).map(|_| runs()).collect::<Result<Vec<_>, _>>()?;
        Ok(MiniSim { policy: policy.to_string(), capacities: capacities.to_vec(), unit, slices, samples })
    }

    pub fn rate(&self) -> f64 {
        self.slices.rate()
    }

    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        let mut kept: Vec<Columns> = (0..self.samples.len()).map(|_| Columns::default()).collect();
        for i in 0..ev.len() {
            match self.slices.find(ev.keys[i]) {
                Some((s, _)) => kept[s].push(ev, i),
                // Whole-key writes and deletes reach every sample: the fields they reach may be sampled.
                None if ev.op(i) != 0 && ev.field(i) == 0 => kept.iter_mut().for_each(|c| c.push(ev, i)),
                None => {}
            }
        }
        for (columns, runs) in kept.iter().zip(&mut self.samples) {
            let sample = columns.events(ev);
            for run in runs.iter_mut() {
                run.process(&sample, members, opts, first_ts);
            }
        }
    }

    /// Counters of each sample's scaled-down run at each capacity: `[sample][capacity]`.
    pub fn counters(&self) -> Vec<Vec<Counters>> {
        self.samples.iter().map(|runs| runs.iter().map(Run::counters).collect()).collect()
    }

    /// The capacity the runs really have (C x R, at least 1).
    pub fn scaled_capacities(&self) -> Vec<u64> {
        self.capacities.iter().map(|&c| scaled(c, self.slices.rate())).collect()
    }
}

fn scaled(capacity: u64, rate: f64) -> u64 {
    ((capacity as f64 * rate).round() as u64).max(1)
}
