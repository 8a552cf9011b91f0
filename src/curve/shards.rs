//! SHARDS: the LRU curve from a spatial sample of the keys (Waldspurger, Park, Garthwaite and Ahmad,
//! "Efficient MRC Construction with SHARDS", FAST 2015). The stack of the sampled keys gives each sampled
//! lookup a depth; at rate R the keys above it in the full stream are about 1 / R times those above it in
//! the sample, so the lookup counts, with weight 1 / R, as a hit at every capacity from that depth up.
//!
//! Fixed rate keeps R throughout. Fixed size bounds memory instead: when a sample holds more than `max_keys`
//! keys, the key with the largest hash value leaves it, its threshold drops to that value, and the counts so
//! far are rescaled to the new rate (the paper's section 3.3). The lookups a sample stands for differ from
//! those the trace really made by sampling noise, and the paper's adjustment (SHARDS_adj) puts the difference
//! in the first bucket: the estimate is then 1 - sampled misses / R / lookups, which does not swing with the
//! few hottest keys (nearly all hits) being in the sample or not.
//!
//! Several samples run side by side on disjoint ranges of the key hash (`sample::Slices`): their spread is the
//! curve's error band, and a lookup is hashed once for all of them.
//!
//! A fleet's SHARDS curve keeps a stack per pod in each sample, routed as the fleet's runs are (every read is
//! routed, sampled or not, so that round-robin counts requests as the fleet does): a pod's LRU is a stack
//! algorithm over its share, and a spatial sample of the keys is a sample of each pod's keys.

use std::collections::BTreeSet;

use super::lru::weight;
use super::sample::{Slices, MODULUS};
use super::stack::Stack;
use super::walk::{walk, Observer};
use crate::fleet::{Route, Router};
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::Membership;

/// The samples of one SHARDS curve.
pub struct Shards {
    pub capacities: Vec<u64>,
    pub unit: Unit,
    slices: Slices,
    pub samples: Vec<Sample>,
    last_restart: Option<i64>,
    /// The fleet's routing, None for a single cache; and its pods (the client route's grow with the clients).
    router: Option<Router>,
    pods: u32,
}

/// One sample: the keys whose place in its range is below `threshold`.
pub struct Sample {
    threshold: u64,
    max_keys: Option<usize>,
    /// One stack per pod (one for a single cache).
    stacks: Vec<Stack>,
    /// (place, key) of the sampled keys, for fixed size: the largest leaves first.
    sampled: BTreeSet<(u64, u64)>,
    /// Hits per capacity bucket (the last bucket: misses at every capacity), in sampled lookups at the
    /// current rate, and their total.
    buckets: Vec<f64>,
    total: f64,
}

impl Shards {
    /// `samples` disjoint samples of `rate` of the keys each; with `max_keys`, at most that many keys in each
    /// (the rate drops as needed).
    pub fn new(capacities: &[u64], unit: Unit, rate: f64, samples: usize, max_keys: Option<usize>)
               -> Result<Shards, String> {
        let mut capacities = capacities.to_vec();
        capacities.sort_unstable();
        capacities.dedup();
        if capacities.first().is_none_or(|&c| c == 0) {
            return Err("a curve needs capacities of at least 1".into());
        }
        if max_keys == Some(0) {
            return Err("a fixed-size sample needs at least 1 key".into());
        }
        let slices = Slices::new(rate, samples)?;
        let sample = || Sample {
            threshold: slices.width,
            max_keys,
            stacks: vec![Stack::new(matches!(unit, Unit::Bytes { .. }))],
            sampled: BTreeSet::new(),
            buckets: vec![0.0; capacities.len() + 1],
            total: 0.0,
        };
        let samples = (0..samples).map(|_| sample()).collect();
        Ok(Shards { capacities, unit, slices, samples, last_restart: None, router: None, pods: 1 })
    }

    /// The SHARDS curve of a fleet of `pods` caches routed by `route`, capacities per pod.
    pub fn fleet(capacities: &[u64], unit: Unit, rate: f64, samples: usize, max_keys: Option<usize>, pods: u32,
                 route: Route) -> Result<Shards, String> {
        if pods == 0 && route != Route::Client {
            return Err("a fleet needs at least one pod".into());
        }
        let mut shards = Shards::new(capacities, unit, rate, samples, max_keys)?;
        shards.router = Some(Router::new(route, pods));
        shards.pods = pods;
        Ok(shards)
    }

    /// Pods and route of a fleet's curve; None for a single cache.
    pub fn fleet_shape(&self) -> Option<(u32, &'static str)> {
        let stacks = self.samples.iter().map(|s| s.stacks.len()).max().unwrap_or(1) as u32;
        self.router.as_ref().map(|r| (self.pods.max(stacks), r.route.name()))
    }

    /// The keys this curve reads: those whose place (`Slices::value`) is below the returned bound; None for a
    /// fleet's, whose routing counts every read (round-robin).
    pub fn sampled_below(&self) -> Option<u64> {
        self.router.is_none().then_some(self.slices.width * self.slices.count as u64)
    }

    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        let mut last_restart = self.last_restart;
        walk(self, &mut last_restart, ev, members, opts, first_ts);
        self.last_restart = last_restart;
    }
}

impl Sample {
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / MODULUS as f64
    }

    /// Estimated hits of the full stream at each capacity, and the lookups the sample stands for (before the
    /// adjustment).
    pub fn estimate(&self) -> (Vec<f64>, f64) {
        let rate = self.rate();
        let n = self.buckets.len() - 1;
        let hits = self.buckets[..n].iter().scan(0.0, |sum, &b| {
            *sum += b;
            Some(*sum / rate)
        });
        (hits.collect(), self.total / rate)
    }

    /// The estimated hit rate at each capacity, given the lookups the trace really made.
    pub fn hit_rates(&self, lookups: u64) -> Vec<f64> {
        let (hits, total) = self.estimate();
        let n = lookups as f64;
        hits.iter()
            .map(|&h| if total == 0.0 || n == 0.0 { 0.0 } else { ((h + n - total) / n).clamp(0.0, 1.0) })
            .collect()
    }

    /// A lookup of a key at `place` in this sample's range, of weight `w`, in a cache (or not).
    fn read(&mut self, key: u64, place: u64, w: u32, cacheable: bool, capacities: &[u64], pod: usize) {
        if place >= self.threshold {
            return;
        }
        if pod >= self.stacks.len() {
            let bytes = self.stacks[0].counts_bytes();
            self.stacks.resize_with(pod + 1, || Stack::new(bytes));
        }
        let miss = capacities.len();
        if !cacheable {
            self.buckets[miss] += 1.0;
            self.total += 1.0;
            return;
        }
        let rate = self.rate();
        let bucket = match self.stacks[pod].access_parts(key, w) {
            Some((above, own)) => {
                // What lies above the key in the sample stands for 1 / rate as much in the full stream; the
                // key itself is one key.
                let full_depth = (above as f64 / rate).round() as u64 + own;
                capacities.partition_point(|&c| c < full_depth)
            }
            None => {
                if self.max_keys.is_some() {
                    self.sampled.insert((place, key));
                }
                miss
            }
        };
        self.buckets[bucket] += 1.0;
        self.total += 1.0;
        if let Some(max) = self.max_keys.filter(|&m| self.sampled.len() > m) {
            self.shrink(max);
        }
    }

    /// Lowers the threshold until the sample holds at most `max_keys` keys, and rescales the counts.
    fn shrink(&mut self, max_keys: usize) {
        let old = self.rate();
        while self.sampled.len() > max_keys {
            let (place, key) = self.sampled.pop_last().expect("more than max_keys >= 1 keys");
            self.stacks.iter_mut().for_each(|s| s.forget(key));
            self.threshold = place;
            // Every other key at the same place leaves too: the sample is "place below the threshold".
            while let Some(&(p, k)) = self.sampled.last().filter(|(p, _)| *p == place) {
                self.sampled.remove(&(p, k));
                self.stacks.iter_mut().for_each(|s| s.forget(k));
            }
        }
        let scale = self.rate() / old;
        self.buckets.iter_mut().for_each(|b| *b *= scale);
        self.total *= scale;
    }
}

impl Observer for Shards {
    fn restart(&mut self) {
        for s in &mut self.samples {
            s.stacks.iter_mut().for_each(Stack::clear);
            s.sampled.clear();
        }
    }

    fn read(&mut self, ev: &Events, i: usize, opts: &Options) {
        let key = ev.keys[i];
        let pod = self.router.as_mut().map_or(0, |r| r.pod(ev, i) as usize);
        if let Some((s, place)) = self.slices.find(key) {
            let cacheable = opts.allow.as_ref().is_none_or(|a| a.contains(&ev.field(i)));
            self.samples[s].read(key, place, weight(self.unit, ev, i), cacheable, &self.capacities, pod);
        }
    }

    fn invalidate(&mut self, key: u64) {
        if let Some((s, place)) = self.slices.find(key) {
            let sample = &mut self.samples[s];
            let mut removed = false;
            for stack in &mut sample.stacks {
                removed |= stack.remove(key);  // a replicated fleet may hold the key in several pods
            }
            if place < sample.threshold && removed && sample.max_keys.is_some() {
                sample.sampled.remove(&(place, key));
            }
        }
    }
}
