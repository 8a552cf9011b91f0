//! Cache policies behind one small interface, and the registry that names them.
//!
//! A policy sees a stream of `access(key, size)` calls and answers hit or miss; `remove` is how writes and
//! deletes invalidate. Everything else (lists, sketches, ghost entries) is private to the policy's own file.
//! Counting lookups and hits is the simulator's job, not the policy's.

pub mod arc;
pub mod belady;
pub mod clock;
pub mod fifo;
pub mod infinite;
pub mod lfu;
pub mod lru;
mod queues;
mod ring;
pub mod s3fifo;
pub mod sieve;
pub mod two_q;
pub mod sketch;
pub mod wtinylfu;

use std::sync::Arc;

pub use arc::ArcCache;
pub use belady::Belady;
pub use clock::Clock;
pub use fifo::Fifo;
pub use infinite::Infinite;
pub use lfu::Lfu;
pub use lru::Lru;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;
pub use two_q::TwoQ;
pub use wtinylfu::WTinyLfu;

pub trait Policy: Send {
    /// Looks `key` up, admitting it on a miss if the policy chooses to; true on a hit.
    fn access(&mut self, key: u64, size: u32) -> bool;
    /// Drops `key` if resident; true if it was.
    fn remove(&mut self, key: u64) -> bool;
    /// Number of resident entries.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every policy the simulator can run. A closed enum rather than `Box<dyn Policy>` so that the per-lookup
/// loop is monomorphized for each policy and dispatch happens once per batch. Variants are not boxed: there is
/// one value per simulated run, and a box would cost an indirection on every access.
#[allow(clippy::large_enum_variant)]
pub enum AnyPolicy {
    Lru(Lru),
    Lfu(Lfu),
    Fifo(Fifo),
    Clock(Clock),
    Sieve(Sieve),
    Arc(ArcCache),
    TwoQ(TwoQ),
    S3Fifo(S3Fifo),
    WTinyLfu(WTinyLfu),
    Infinite(Infinite),
    Belady(Belady),
}

/// The registry: each entry's name is what Python, the CLI and the JSON use.
pub const POLICY_NAMES: &[&str] =
    &["lru", "lfu", "fifo", "clock", "sieve", "arc", "2q", "s3fifo", "wtinylfu", "infinite", "belady"];

/// Policies that need the future: `next_access` of the lookups they will see, given to `AnyPolicy::new`.
pub const NEEDS_FUTURE: &[&str] = &["belady"];

/// A policy's named parameters, `(name, value)`. Their defaults are declared once, in the Python registry,
/// which passes every parameter of the policy it runs: here a missing one is an error, not a default.
pub type Params = [(String, f64)];

impl AnyPolicy {
    /// Builds a policy that takes no parameters by registry name (see `with_params`).
    pub fn new(name: &str, capacity: u64, future: Option<&Arc<[u64]>>) -> Result<AnyPolicy, String> {
        AnyPolicy::with_params(name, capacity, &[], future)
    }

    /// Builds a policy by registry name. `capacity` is in the units of the sizes passed to `access` (entries
    /// when every size is 1, bytes otherwise); `infinite` ignores it. `params` names each of the policy's
    /// parameters and nothing else. `future` is for `NEEDS_FUTURE` policies.
    pub fn with_params(name: &str, capacity: u64, params: &Params, future: Option<&Arc<[u64]>>)
                       -> Result<AnyPolicy, String> {
        let none = |policy: AnyPolicy| take_params(name, params, []).map(|[]| policy);
        match name {
            "lru" => none(AnyPolicy::Lru(Lru::new(checked_capacity(capacity)?))),
            "lfu" => none(AnyPolicy::Lfu(Lfu::new(checked_capacity(capacity)?))),
            "fifo" => none(AnyPolicy::Fifo(Fifo::new(checked_capacity(capacity)?))),
            "clock" => none(AnyPolicy::Clock(Clock::new(checked_capacity(capacity)?))),
            "sieve" => none(AnyPolicy::Sieve(Sieve::new(checked_capacity(capacity)?))),
            "wtinylfu" => none(AnyPolicy::WTinyLfu(WTinyLfu::new(checked_capacity(capacity)?))),
            "arc" => none(AnyPolicy::Arc(ArcCache::new(checked_capacity(capacity)?))),
            "2q" => TwoQ::from_params(checked_capacity(capacity)?, params).map(AnyPolicy::TwoQ),
            "s3fifo" => S3Fifo::from_params(checked_capacity(capacity)?, params).map(AnyPolicy::S3Fifo),
            "infinite" => none(AnyPolicy::Infinite(Infinite::default())),
            "belady" => {
                let future = future.ok_or("belady needs the future: next_access of its lookups")?;
                none(AnyPolicy::Belady(Belady::new(checked_capacity(capacity)?, future.clone(), 0)))
            }
            other => Err(format!("unknown policy {other:?}; known: {}", POLICY_NAMES.join(", "))),
        }
    }
}

impl AnyPolicy {
    /// The same policy, empty, as after a process restart. Belady keeps its place in the stream.
    pub fn emptied(&self, name: &str, capacity: u64) -> AnyPolicy {
        match self {
            AnyPolicy::Belady(b) => AnyPolicy::Belady(b.emptied()),
            AnyPolicy::Arc(a) => AnyPolicy::Arc(a.emptied()),
            AnyPolicy::TwoQ(q) => AnyPolicy::TwoQ(q.emptied()),
            AnyPolicy::S3Fifo(s) => AnyPolicy::S3Fifo(s.emptied()),
            AnyPolicy::WTinyLfu(w) => AnyPolicy::WTinyLfu(w.emptied()),
            _ => AnyPolicy::new(name, capacity, None).expect("the policy was built with these before"),
        }
    }
}

/// The values of `names`, in that order, from `params`, which must hold each exactly once and nothing else.
pub fn take_params<const K: usize>(policy: &str, params: &Params, names: [&str; K]) -> Result<[f64; K], String> {
    if let Some((unknown, _)) = params.iter().find(|(n, _)| !names.contains(&n.as_str())) {
        let known = if K == 0 { "it has none".to_string() } else { format!("it has {}", names.join(", ")) };
        return Err(format!("{policy} has no parameter {unknown:?}; {known}"));
    }
    let mut values = [0.0; K];
    for (value, name) in values.iter_mut().zip(names) {
        let mut given = params.iter().filter(|(n, _)| n == name);
        *value = match (given.next(), given.next()) {
            (Some(&(_, v)), None) => v,
            (None, _) => return Err(format!("{policy} needs the parameter {name}")),
            (Some(_), Some(_)) => return Err(format!("{policy}: parameter {name} given twice")),
        };
    }
    Ok(values)
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

/// Runs `f` with the concrete policy inside `p`, so callers write one generic loop for all policies.
#[macro_export]
macro_rules! with_policy {
    ($p:expr, $name:ident => $body:expr) => {
        match $p {
            $crate::policy::AnyPolicy::Lru($name) => $body,
            $crate::policy::AnyPolicy::Lfu($name) => $body,
            $crate::policy::AnyPolicy::Fifo($name) => $body,
            $crate::policy::AnyPolicy::Clock($name) => $body,
            $crate::policy::AnyPolicy::Sieve($name) => $body,
            $crate::policy::AnyPolicy::Arc($name) => $body,
            $crate::policy::AnyPolicy::TwoQ($name) => $body,
            $crate::policy::AnyPolicy::S3Fifo($name) => $body,
            $crate::policy::AnyPolicy::WTinyLfu($name) => $body,
            $crate::policy::AnyPolicy::Infinite($name) => $body,
            $crate::policy::AnyPolicy::Belady($name) => $body,
        }
    };
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
        assert!(err("s3fifo", &[("small_ratio", 0.1)]).contains("needs the parameter ghost_ratio"));
        assert!(err("2q", &[("kin", 0.25), ("kout", 0.5), ("k", 1.0)]).contains("no parameter \"k\""));
        assert!(err("2q", &[("kin", 0.25), ("kin", 0.25), ("kout", 0.5)]).contains("twice"));
        assert!(err("lru", &[("kin", 0.25)]).contains("it has none"));
        assert!(err("s3fifo", &[("small_ratio", 0.1), ("ghost_ratio", 0.9), ("move_to_main_threshold", 1.5)])
            .contains("whole number"));
        assert!(AnyPolicy::new("s3fifo", 100, None).is_err());
        assert!(AnyPolicy::new("arc", 0, None).is_err());
        assert!(AnyPolicy::new("infinite", 0, None).is_ok());
    }

    #[test]
    fn an_emptied_policy_starts_over_with_its_parameters() {
        let keys: Vec<u64> = (0..5_000u64).map(|i| crate::hash::mix64(i) % 300).collect();
        let small = named(&[("small_ratio", 0.3), ("ghost_ratio", 0.5), ("move_to_main_threshold", 1.0)]);
        for (name, params) in [("arc", vec![]), ("2q", named(&[("kin", 0.4), ("kout", 1.0)])), ("s3fifo", small)] {
            let hits = |p: &mut AnyPolicy| -> Vec<bool> {
                crate::with_policy!(p, p => keys.iter().map(|&k| p.access(k, 1)).collect())
            };
            let mut fresh = AnyPolicy::with_params(name, 40, &params, None).unwrap();
            let mut used = AnyPolicy::with_params(name, 40, &params, None).unwrap();
            hits(&mut used);
            let mut emptied = used.emptied(name, 40);
            assert!(crate::with_policy!(&emptied, p => p.is_empty()), "{name}");
            assert_eq!(hits(&mut emptied), hits(&mut fresh), "{name}");
        }
    }
}
