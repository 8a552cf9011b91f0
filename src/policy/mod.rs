//! Cache policies behind one small interface, and the registry that names them.
//!
//! A policy sees a stream of `access(key, size)` calls and answers hit or miss; `remove` is how writes and
//! deletes invalidate, and `contains` whether a write leaves a cached entry stale. Everything else (lists,
//! sketches, ghost entries) is private to the policy's own file. Counting lookups and hits is the simulator's
//! job, not the policy's.

#[macro_use]
mod registry;
mod key_table;
mod queues;
mod ring;
pub mod sketch;

use std::sync::Arc;

pub use registry::{Param, Registered, Spec};

pub trait Policy: Send {
    /// Looks `key` up, admitting it on a miss if the policy chooses to; true on a hit.
    fn access(&mut self, key: u64, size: u32) -> bool;
    /// Drops `key` if resident; true if it was.
    fn remove(&mut self, key: u64) -> bool;
    /// Whether `key` is resident, leaving the policy as it was (no hit recorded).
    fn contains(&self, key: u64) -> bool;
    /// Starts loading what `access(key)` will touch, a few lookups ahead of it (the loops call it): a hint
    /// for policies whose tables outgrow the processor's caches; by default nothing.
    #[inline]
    fn prefetch(&mut self, _key: u64) {}
    /// Number of resident entries.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// The registry: one line a policy. The order is the one flags and summaries list them in; the infinite
// cache, the bound every summary shows, is last.
registry! {$
    lru::Lru,
    lfu::Lfu,
    fifo::Fifo,
    clock::Clock,
    sieve::Sieve,
    arc::ArcCache,
    two_q::TwoQ,
    s3fifo::S3Fifo,
    belady::Belady,
    wtinylfu::WTinyLfu,
    infinite::Infinite,
}

/// A policy's named parameters, `(name, value)`; the ones not given take their defaults from the policy's spec.
pub type Params = [(String, f64)];

impl AnyPolicy {
    /// Builds a policy with its default parameters by registry name (see `with_params`).
    pub fn new(name: &str, capacity: u64, future: Option<&Arc<[u64]>>) -> Result<AnyPolicy, String> {
        AnyPolicy::build(name, capacity, &[], future)
    }

    /// Builds a policy by registry name. `capacity` is in the units of the sizes passed to `access` (entries
    /// when every size is 1, bytes otherwise); the infinite cache ignores it. `params` names parameters of the
    /// policy and nothing else. `future` is for policies whose spec `needs_future`.
    pub fn with_params(name: &str, capacity: u64, params: &Params, future: Option<&Arc<[u64]>>)
                       -> Result<AnyPolicy, String> {
        AnyPolicy::build(name, capacity, params, future)
    }
}

/// Per-call dispatch, for callers outside the hot loops (tests, tools); loops use `with_policy!`.
impl Policy for AnyPolicy {
    fn access(&mut self, key: u64, size: u32) -> bool {
        with_policy!(self, p => p.access(key, size))
    }
    fn remove(&mut self, key: u64) -> bool {
        with_policy!(self, p => p.remove(key))
    }
    fn contains(&self, key: u64) -> bool {
        with_policy!(self, p => p.contains(key))
    }
    fn len(&self) -> usize {
        with_policy!(self, p => p.len())
    }
}

/// Starts loading the cache line holding `x` for a use a little later. A hint only: no effect on results, and
/// nothing on targets without a prefetch instruction.
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, and `x` is a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Largest capacity a policy accepts (256 TiB as bytes). Entry counts are limited further, in Python, to
/// what u32 node indices can address.
pub const MAX_CAPACITY: u64 = 1 << 48;

pub fn checked_capacity(capacity: u64) -> Result<u64, String> {
    if capacity == 0 {
        return Err("capacity must be at least 1".into());
    }
    if capacity > MAX_CAPACITY {
        return Err(format!("capacity {capacity} is larger than the maximum of {MAX_CAPACITY}"));
    }
    Ok(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect()
    }

    #[test]
    fn parameters_are_taken_by_name_and_checked() {
        let build = |name, params: &[(&str, f64)]| AnyPolicy::with_params(name, 100, &named(params), None);
        assert!(build("s3fifo", &[("ghost_ratio", 0.9), ("small_ratio", 0.1), ("move_to_main_threshold", 2.0)]).is_ok());
        assert!(build("2q", &[("kin", 0.25), ("kout", 0.5)]).is_ok());
        let err = |name, params: &[(&str, f64)]| build(name, params).err().unwrap();
        assert!(build("s3fifo", &[("small_ratio", 0.2)]).is_ok(), "missing parameters take their defaults");
        assert!(err("2q", &[("kin", 0.25), ("kout", 0.5), ("k", 1.0)]).contains("no parameter \"k\""));
        assert!(err("2q", &[("kin", 0.25), ("kin", 0.25), ("kout", 0.5)]).contains("twice"));
        assert!(err("lru", &[("kin", 0.25)]).contains("it has none"));
        assert!(build("2q", &[("kin", 0.3)]).is_ok(), "the other parameter takes its default");
        assert!(err("s3fifo", &[("small_ratio", 0.1), ("ghost_ratio", 0.9), ("move_to_main_threshold", 1.5)])
            .contains("whole number"));
        assert!(AnyPolicy::new("s3fifo", 10, None).is_err());
        assert!(AnyPolicy::new("belady", 10, None).is_err());
        assert!(AnyPolicy::new("arc", 0, None).is_err());
        assert!(AnyPolicy::new("infinite", 0, None).is_ok());
    }

    #[test]
    fn an_emptied_policy_starts_over_with_its_parameters() {
        let keys: Vec<u64> = (0..5_000u64).map(|i| crate::hash::mix64(i) % 300).collect();
        let small = named(&[("small_ratio", 0.3), ("ghost_ratio", 0.5), ("move_to_main_threshold", 1.0)]);
        for (name, params) in [("arc", vec![]), ("2q", named(&[("kin", 0.4), ("kout", 1.0)])), ("s3fifo", small)] {
            let hits = |p: &mut AnyPolicy| -> Vec<bool> {
                with_policy!(p, p => keys.iter().map(|&k| p.access(k, 1)).collect())
            };
            let mut fresh = AnyPolicy::with_params(name, 40, &params, None).unwrap();
            let mut used = AnyPolicy::with_params(name, 40, &params, None).unwrap();
            hits(&mut used);
            let mut emptied = used.emptied();
            assert!(with_policy!(&emptied, p => p.is_empty()), "{name}");
            assert_eq!(hits(&mut emptied), hits(&mut fresh), "{name}");
        }
    }

    #[test]
    fn contains_tells_the_resident_keys_of_every_policy() {
        // Ghosts (ARC, 2Q, S3-FIFO) and keys refused admission are not resident: `contains` agrees with what
        // `remove` finds, key by key, and leaves hits as they would have been.
        let keys: Vec<u64> = (0..20_000u64).map(|i| crate::hash::mix64(i) % 500).collect();
        let future: Arc<[u64]> = belady::next_access(&keys).into();
        for spec in SPECS {
            let build = || AnyPolicy::new(spec.name, 60, spec.needs_future.then_some(&future)).unwrap();
            let (mut probed, mut plain) = (build(), build());
            for (i, &k) in keys.iter().enumerate() {
                let was = probed.contains(k);
                let hit = probed.access(k, 1);
                assert_eq!(hit, plain.access(k, 1), "{}: probing changed lookup {i}", spec.name);
                assert_eq!(was, hit, "{}: lookup {i}", spec.name); // a hit is exactly a resident key
            }
            let resident: Vec<u64> = (0..500).filter(|&k| probed.contains(k)).collect();
            assert_eq!(resident.len(), probed.len(), "{}", spec.name);
            for k in 0..500 {
                assert_eq!(probed.remove(k), resident.contains(&k), "{}: key {k}", spec.name);
                assert!(!probed.contains(k), "{}", spec.name);
            }
        }
    }
}
