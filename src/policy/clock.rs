//! CLOCK (second chance): FIFO order, but each entry has a reference bit that a hit sets; the victim search
//! starts at the oldest entry and gives every entry whose bit is set a second chance (clears the bit and
//! moves the entry to the newest end) until it finds one whose bit is clear. Corbató, "A paging experiment
//! with the Multics system" (MIT Project MAC, 1968); here in the variant libCacheSim calls `Clock` with
//! its defaults: a 1-bit counter, new entries admitted with the bit clear (`init_freq=0`).
//!
//! Same semantics as libCacheSim's `Clock.c` (checked hit for hit in the tests), which implements it as
//! FIFO-reinsertion on a list; on our circular list "move the oldest to the newest end" is one pointer move
//! (`Ring::rotate`), so the hand never relinks a node. Capacity is in units of `size`; an object larger than
//! the whole cache is not admitted, and a hit keeps the size the entry was admitted with.

use std::sync::Arc;

use super::ring::Ring;
use super::{Policy, Registered, Spec};

pub struct Clock {
    ring: Ring,
}

impl Clock {
    pub fn new(capacity: u64) -> Clock {
        Clock { ring: Ring::new(capacity) }
    }

    /// Keys from the oldest entry (where the hand starts) to the newest (for tests and inspection).
    pub fn keys_oldest_first(&self) -> Vec<u64> {
        self.ring.keys_oldest_first()
    }

    /// Evicts the first entry, from the oldest on, whose bit is clear, clearing bits on the way.
    #[inline]
    fn evict(&mut self) {
        loop {
            let n = self.ring.oldest();
            let node = self.ring.node_mut(n);
            if !node.bit {
                self.ring.remove_node(n);
                return;
            }
            node.bit = false;
            self.ring.rotate();
        }
    }
}

impl Registered for Clock {
    const SPEC: Spec = Spec::plain("clock", "CLOCK", "FIFO with a reference bit: a hit entry gets a second chance at the newest end");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Clock, String> {
        Ok(Clock::new(capacity))
    }

    fn emptied(&self) -> Clock {
        Clock::new(self.ring.capacity)
    }
}

impl Policy for Clock {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        if let Some(&n) = self.ring.index.get(&key) {
            self.ring.node_mut(n).bit = true;
            return true;
        }
        if !self.ring.fits(size) {
            return false;
        }
        while self.ring.needs_room(size) {
            self.evict();
        }
        self.ring.push_newest(key, size);
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        self.ring.remove_key(key)
    }

    fn contains(&self, key: u64) -> bool {
        self.ring.contains(key)
    }

    fn len(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_referenced_entry_gets_a_second_chance() {
        let mut c = Clock::new(3);
        for k in 1..=3 {
            assert!(!c.access(k, 1));
        }
        assert!(c.access(1, 1)); // sets 1's bit
        assert!(!c.access(4, 1)); // 1 is spared and becomes the newest; 2 is evicted
        assert_eq!(c.keys_oldest_first(), vec![3, 1, 4]);
        assert!(!c.access(5, 1)); // 3's bit is clear: evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 4, 5]);
        assert!(!c.access(6, 1)); // 1's bit was cleared when it was spared: evicted now
        assert_eq!(c.keys_oldest_first(), vec![4, 5, 6]);
    }

    #[test]
    fn all_bits_set_degrades_to_fifo() {
        let mut c = Clock::new(3);
        for k in 1..=3 {
            c.access(k, 1);
        }
        for k in 1..=3 {
            assert!(c.access(k, 1));
        }
        // The hand clears 1, 2 and 3 in turn, comes back to 1 and evicts it.
        assert!(!c.access(4, 1));
        assert_eq!(c.keys_oldest_first(), vec![2, 3, 4]);
        assert!(c.access(2, 1));
        assert!(!c.access(5, 1)); // 2 spared again, 3 evicted
        assert_eq!(c.keys_oldest_first(), vec![4, 2, 5]);
    }

    #[test]
    fn sizes_and_remove() {
        let mut c = Clock::new(10);
        c.access(1, 4);
        c.access(2, 3);
        c.access(3, 3);
        assert!(!c.access(9, 11)); // larger than the cache: not admitted
        assert!(c.access(1, 1)); // bit set; the admitted size (4) stays
        assert!(!c.access(4, 5)); // 1 spared; 2 then 3 evicted to make room for 5
        assert_eq!(c.keys_oldest_first(), vec![1, 4]);
        assert!(c.remove(1));
        assert!(!c.remove(1));
        assert_eq!(c.keys_oldest_first(), vec![4]);
        assert!(!c.access(5, 5)); // 5 + 5 fits: nothing evicted
        assert_eq!(c.keys_oldest_first(), vec![4, 5]);
        assert!(c.remove(4));
        assert!(c.remove(5));
        assert_eq!(c.len(), 0);
        assert!(!c.access(6, 10));
        assert_eq!(c.keys_oldest_first(), vec![6]);
    }
}
