//! What a simulation is asked to model beyond "which policy, how big": units, freshness, restarts.

use crate::hash::KeySet;

/// What a run's capacity counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Every entry weighs 1.
    Entries,
    /// An entry weighs its value's bytes plus its key's and field's bytes plus `entry_overhead` (the
    /// cache's own bookkeeping per entry).
    Bytes { entry_overhead: u32 },
}

/// What a cache does when the trace writes or deletes a key it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Nothing: cached values go stale, and reads of them are counted as stale reads.
    Ignore,
    /// Writes and deletes remove the cached entries (what a service does on an invalidation message).
    Invalidate,
    /// Writes refresh the cached value in place (write-through); deletes remove.
    Update,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Lookups per timeline window.
    pub window: u64,
    pub writes: WriteMode,
    /// Entries expire this long after they were admitted (Caffeine's expireAfterWrite).
    pub ttl_ns: Option<i64>,
    /// When set, only lookups whose field hash is listed are cacheable (lookups without a field are not).
    pub allow: Option<KeySet>,
    /// (time, field hash), sorted by time: at that time every cached value of the field is evicted.
    pub refreshes: Vec<(i64, u64)>,
    /// Times at which every cache restarts empty, sorted.
    pub restarts_at: Vec<i64>,
    /// Restart every this long, counted from the first lookup's time.
    pub restart_every_ns: Option<i64>,
    /// The periodic restarts come this long after each multiple of `restart_every_ns` (a pod's place in a
    /// rolling restart; 0 for a single cache).
    pub restart_phase_ns: i64,
}

impl Options {
    pub fn with_window(window: u64) -> Options {
        Options {
            window,
            writes: WriteMode::Ignore,
            ttl_ns: None,
            allow: None,
            refreshes: Vec::new(),
            restarts_at: Vec::new(),
            restart_every_ns: None,
            restart_phase_ns: 0,
        }
    }

    /// Whether anything needs the trace's clock.
    pub fn needs_clock(&self) -> bool {
        self.ttl_ns.is_some() || !self.refreshes.is_empty() || !self.restarts_at.is_empty() || self.restart_every_ns.is_some()
    }

    /// Whether the plain loop (reads only, entries, nothing time-driven) is all that is needed.
    pub fn is_plain(&self) -> bool {
        !self.needs_clock() && self.allow.is_none()
    }
}
