//! The infinite cache: admits everything and never evicts. Its hit rate is the upper bound of every policy at
//! every capacity (only first references miss), and its size is the number of unique keys.

use std::sync::Arc;

use super::{Policy, Registered, Spec};
use super::key_table::KeySet;

#[derive(Default)]
pub struct Infinite {
    seen: KeySet,
}

impl Registered for Infinite {
    const SPEC: Spec = Spec { sized: false, ..Spec::plain("infinite", "infinite", "never evicts: only first references miss") };

    fn build(_capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Infinite, String> {
        Ok(Infinite::default())
    }

    fn emptied(&self) -> Infinite {
        Infinite::default()
    }
}

impl Policy for Infinite {
    #[inline]
    fn access(&mut self, key: u64, _size: u32) -> bool {
        !self.seen.insert(key, ())
    }
    #[inline]
    fn prefetch(&mut self, key: u64) {
        self.seen.prefetch(key);
    }
    fn remove(&mut self, key: u64) -> bool {
        self.seen.remove(key).is_some()
    }
    fn contains(&self, key: u64) -> bool {
        self.seen.contains(key)
    }

    fn len(&self) -> usize {
        self.seen.len()
    }
}
