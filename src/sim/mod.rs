//! The layer every simulation is made of: one policy at one capacity over a stream of events (`run`), the
//! events as borrowed columns (`events`), what the simulation models beyond policy and size (`options`), and
//! the cache keys each Redis key holds (`membership`). `crate::simulation` drives runs, curves and fleets over
//! the same stream; curves (`crate::curve`) and fleets (`crate::fleet`) are built on this layer.

mod columns;
pub mod events;
mod membership;
pub mod options;
mod refresh_cost;
mod resident_bytes;
mod round_trips;
mod run;

pub use columns::Columns;
pub use events::Events;
pub use options::{Options, Unit, WriteMode};
pub use round_trips::{RoundTripCounts, RoundTrips};
pub use refresh_cost::FieldRefreshCost;
pub use run::{Counters, FieldHits, Run};
pub(crate) use membership::Membership;
pub(crate) use run::next_restart;
