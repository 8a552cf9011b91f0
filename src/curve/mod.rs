//! Hit-rate curves: the hit rate at many capacities from one pass over the events, beside the runs.
//! `stack` computes exact LRU stack depths; `lru` turns them into hits per capacity, per timeline window and
//! per command.

mod fenwick;
pub mod lru;
pub mod stack;

pub use lru::{CurveCounts, LruCurve};
