//! Hit-rate curves: the hit rate at many capacities from one pass over the events, beside the runs.
//! `stack` computes exact LRU stack depths; `lru` turns them into hits per capacity, per timeline window and
//! per command. `shards` estimates the LRU curve from a spatial sample of the keys (`sample`), and `minisim`
//! any policy's, by miniature simulations of scaled-down caches over the same kind of sample.

mod fenwick;
mod marks;
pub mod lru;
pub mod minisim;
pub mod sample;
pub mod shards;
pub mod stack;
mod walk;
#[cfg(test)]
mod tests;

pub use lru::{CurveCounts, LruCurve};
pub use minisim::MiniSim;
pub use shards::Shards;

use crate::sim::events::Events;
use crate::sim::options::Options;
use crate::sim::Membership;

/// A curve a simulation computes beside its runs.
pub enum Curve {
    Exact(LruCurve),
    Shards(Shards),
    Mini(MiniSim),
}

impl Curve {
    pub fn process(&mut self, ev: &Events, members: &Membership, opts: &Options, first_ts: Option<i64>) {
        match self {
            Curve::Exact(c) => c.process(ev, members, opts, first_ts),
            Curve::Shards(c) => c.process(ev, members, opts, first_ts),
            Curve::Mini(c) => c.process(ev, members, opts, first_ts),
        }
    }
}
