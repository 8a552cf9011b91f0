//! Fleets: the pods a service really runs, each with its own in-process cache. A router sends each request
//! (or, for sharded routes, each lookup) to a pod; a fleet owns one run per pod. A single cache is a fleet of
//! one pod, and every registered policy runs in a fleet unchanged.

mod dispatch;
pub mod fleet;
pub mod pattern;
pub mod route;
mod share;
mod spread;

pub use dispatch::{feed, Dispatch};
pub use fleet::Fleet;
pub use route::{Route, Router};
