//! Cache policies behind one small interface, and the registry that names them.
//!
//! A policy sees a stream of `access(key, size)` calls and answers hit or miss; `remove` is how writes and
//! deletes invalidate. Everything else (lists, sketches, ghost entries) is private to the policy's own file.
//! Counting lookups and hits is the simulator's job, not the policy's.

pub mod infinite;
pub mod lru;
pub mod sketch;
pub mod wtinylfu;

pub use infinite::Infinite;
pub use lru::Lru;
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
    WTinyLfu(WTinyLfu),
    Infinite(Infinite),
}

/// The registry: each entry's name is what Python, the CLI and the JSON use.
pub const POLICY_NAMES: &[&str] = &["lru", "wtinylfu", "infinite"];

impl AnyPolicy {
    /// Builds a policy by registry name. `capacity` is in the units of the sizes passed to `access` (entries
    /// when every size is 1, bytes otherwise); `infinite` ignores it.
    pub fn new(name: &str, capacity: u64) -> Result<AnyPolicy, String> {
        match name {
            "lru" => Ok(AnyPolicy::Lru(Lru::new(checked_capacity(capacity)?))),
            "wtinylfu" => Ok(AnyPolicy::WTinyLfu(WTinyLfu::new(checked_capacity(capacity)?))),
            "infinite" => Ok(AnyPolicy::Infinite(Infinite::default())),
            other => Err(format!("unknown policy {other:?}; known: {}", POLICY_NAMES.join(", "))),
        }
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

/// Runs `f` with the concrete policy inside `p`, so callers write one generic loop for all policies.
#[macro_export]
macro_rules! with_policy {
    ($p:expr, $name:ident => $body:expr) => {
        match $p {
            $crate::policy::AnyPolicy::Lru($name) => $body,
            $crate::policy::AnyPolicy::WTinyLfu($name) => $body,
            $crate::policy::AnyPolicy::Infinite($name) => $body,
        }
    };
}
