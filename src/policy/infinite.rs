//! The infinite cache: admits everything and never evicts. Its hit rate is the upper bound of every policy at
//! every capacity (only first references miss), and its size is the number of unique keys.

use super::Policy;
use crate::hash::KeySet;

#[derive(Default)]
pub struct Infinite {
    seen: KeySet,
}

impl Policy for Infinite {
    #[inline]
    fn access(&mut self, key: u64, _size: u32) -> bool {
        !self.seen.insert(key)
    }
    fn remove(&mut self, key: u64) -> bool {
        self.seen.remove(&key)
    }
    fn len(&self) -> usize {
        self.seen.len()
    }
}
