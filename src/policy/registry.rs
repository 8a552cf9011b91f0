//! What the registry knows of each policy, declared once in the policy's own file (`impl Registered`): its
//! name, how people write it, what it does, its parameters with their defaults, whether it needs the future.
//! The Python package builds its command-line flags, keywords and help from these specs (through
//! `_native.policy_specs`), so adding a policy is its file plus one line in `registry!` (in `mod.rs`).

use std::sync::Arc;

use super::Policy;

pub struct Spec {
    /// The registry name: the Rust and Python name, the flag (`--NAME`) and the JSON `policy` value.
    pub name: &'static str,
    /// How summaries and plots write it.
    pub label: &'static str,
    pub description: &'static str,
    /// The Python keyword (`simulate_trace(two_q=...)`) when the name is not an identifier; "" otherwise.
    pub keyword: &'static str,
    pub params: &'static [Param],
    /// Needs `next_access` of the lookups it will see (an offline policy).
    pub needs_future: bool,
    /// Run at a capacity the user chooses (a flag); false for the bound every summary shows.
    pub sized: bool,
}

pub struct Param {
    /// A Python identifier; the flag spells it with dashes (`--s3fifo-small-ratio`).
    pub name: &'static str,
    pub default: f64,
    pub help: &'static str,
}

impl Spec {
    /// A plain policy: no parameters, no future, a capacity.
    pub const fn plain(name: &'static str, label: &'static str, description: &'static str) -> Spec {
        Spec { name, label, description, keyword: "", params: &[], needs_future: false, sized: true }
    }

    /// The values of every parameter, in the spec's order: the given ones by name, the defaults for the rest.
    /// An unknown name or one given twice is an error.
    pub fn values(&self, given: &[(String, f64)]) -> Result<Vec<f64>, String> {
        if let Some((unknown, _)) = given.iter().find(|(n, _)| !self.params.iter().any(|p| p.name == n)) {
            let known = if self.params.is_empty() {
                "it has none".to_string()
            } else {
                format!("it has {}", self.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", "))
            };
            return Err(format!("{} has no parameter {unknown:?}; {known}", self.name));
        }
        self.params
            .iter()
            .map(|p| {
                let mut values = given.iter().filter(|(n, _)| n == p.name).map(|&(_, v)| v);
                match (values.next(), values.next()) {
                    (Some(_), Some(_)) => Err(format!("{}: parameter {} given twice", self.name, p.name)),
                    (v, _) => Ok(v.unwrap_or(p.default)),
                }
            })
            .collect()
    }
}

/// A policy the simulator can build by name. Implemented in each policy's file, next to the algorithm.
pub trait Registered: Policy + Sized {
    const SPEC: Spec;
    /// A new, empty cache. `capacity` is in the units of the sizes given to `access` (entries when every
    /// size is 1, bytes otherwise); `params` holds the values of `SPEC.params` in their order; `future` is
    /// given when `SPEC.needs_future`.
    fn build(capacity: u64, params: &[f64], future: Option<&Arc<[u64]>>) -> Result<Self, String>;
    /// The same policy, empty, as after a process restart (same capacity and parameters).
    fn emptied(&self) -> Self;
}

/// Declares the policies: each line `module::Type` loads the policy's file and adds it to `AnyPolicy`,
/// `SPECS`, construction by name and `with_policy!`. `$d` is a literal `$`, so that the generated macro can
/// have metavariables of its own.
macro_rules! registry {
    ($d:tt $($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module; pub use $module::$ty;)*

        /// Every policy the simulator can run. A closed enum rather than `Box<dyn Policy>` so that the
        /// per-lookup loop is monomorphized for each policy and dispatch happens once per batch. Variants are
        /// not boxed: there is one value per simulated run, and a box would cost an indirection per access.
        #[allow(clippy::large_enum_variant)]
        pub enum AnyPolicy {
            $($ty($ty),)*
        }

        /// The registry, in the order flags and summaries list the policies.
        pub const SPECS: &[&Spec] = &[$(&<$ty as Registered>::SPEC,)*];

        impl AnyPolicy {
            fn build(name: &str, capacity: u64, params: &[(String, f64)], future: Option<&Arc<[u64]>>)
                     -> Result<AnyPolicy, String> {
                $(
                    if name == <$ty as Registered>::SPEC.name {
                        let spec = &<$ty as Registered>::SPEC;
                        let values = spec.values(params)?;
                        let capacity = if spec.sized { checked_capacity(capacity)? } else { capacity };
                        if spec.needs_future && future.is_none() {
                            return Err(format!("{name} needs the future: next_access of its lookups"));
                        }
                        return <$ty as Registered>::build(capacity, &values, future).map(AnyPolicy::$ty);
                    }
                )*
                let known: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
                Err(format!("unknown policy {name:?}; known: {}", known.join(", ")))
            }

            /// The same policy, empty, as after a process restart. Belady keeps its place in the stream.
            pub fn emptied(&self) -> AnyPolicy {
                match self {
                    $(AnyPolicy::$ty(p) => AnyPolicy::$ty(Registered::emptied(p)),)*
                }
            }
        }

        /// Runs `$body` with the concrete policy inside an `AnyPolicy` bound to `$name`, so that callers
        /// write one generic loop for every policy and dispatch once.
        macro_rules! with_policy {
            ($d p:expr, $d name:ident => $d body:expr) => {
                match $d p {
                    $($crate::policy::AnyPolicy::$ty($d name) => $d body,)*
                }
            };
        }
        pub(crate) use with_policy;
    };
}
