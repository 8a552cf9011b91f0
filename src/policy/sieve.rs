//! SIEVE: FIFO order with a visited bit that a hit sets, and a hand that remembers where the last victim
//! search stopped. To evict, the hand moves from where it is towards newer entries, clearing visited bits,
//! and evicts the first entry whose bit is clear; past the newest entry it wraps to the oldest. Unlike
//! CLOCK, a spared entry stays where it is, so new entries and survivors are kept apart ("lazy promotion,
//! quick demotion"). Zhang, Yang, Yue, Vigfusson and Rashmi, "SIEVE is Simpler than LRU: an Efficient
//! Turn-Key Eviction Algorithm for Web Caches", NSDI 2024.
//!
//! Same semantics as libCacheSim's `Sieve.c` (checked hit for hit in the tests). There the hand is a
//! pointer that is NULL ("start at the oldest") after the newest entry was evicted; on our circular list
//! the successor of the newest entry is the oldest, so the hand is simply the victim's successor. Removing
//! the entry under the hand moves the hand on to the next newer entry, as libCacheSim's `Sieve_remove` does.
//! Capacity is in units of `size`; an object larger than the whole cache is not admitted, and a hit keeps the
//! size the entry was admitted with.
//!
//! Until its hand first wraps around, SIEVE evicts exactly what in-cache LFU (`lfu.rs`) evicts: every entry
//! behind the hand was hit before it was passed, every unvisited entry ahead of it has not been hit since it
//! was admitted, so the victim is the oldest entry never hit, which is the head of LFU's count-1 bucket. On
//! large caches the hand may not wrap within a trace, hence the equal hit counts of the two in the tests.

use std::sync::Arc;

use super::ring::{Ring, NIL};
use super::{Policy, Registered, Spec};

pub struct Sieve {
    ring: Ring,
    /// Where the next victim search starts; NIL means at the oldest entry.
    hand: u32,
}

impl Sieve {
    pub fn new(capacity: u64) -> Sieve {
        Sieve { ring: Ring::new(capacity), hand: NIL }
    }

    /// Keys from oldest to newest (for tests and inspection).
    pub fn keys_oldest_first(&self) -> Vec<u64> {
        self.ring.keys_oldest_first()
    }

    /// The key under the hand, if the hand is not at its start position (for tests).
    pub fn hand_key(&self) -> Option<u64> {
        (self.hand != NIL).then(|| self.ring.node(self.hand).key)
    }

    #[inline]
    fn evict(&mut self) {
        let mut n = if self.hand == NIL { self.ring.oldest() } else { self.hand };
        loop {
            let node = self.ring.node_mut(n);
            if !node.bit {
                break;
            }
            node.bit = false;
            n = self.ring.newer(n);
        }
        self.hand = self.successor(n);
        self.ring.remove_node(n);
    }

    /// Where the hand goes when `n` leaves: the next newer entry (the oldest, after the newest), or its
    /// start position if `n` is the last entry.
    #[inline]
    fn successor(&self, n: u32) -> u32 {
        let next = self.ring.newer(n);
        if next == n {
            NIL
        } else {
            next
        }
    }
}

impl Registered for Sieve {
    const SPEC: Spec = Spec::plain("sieve", "SIEVE", "FIFO with a visited bit and a moving hand: hit entries stay in place, the hand evicts the first unvisited one (NSDI 2024)");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Sieve, String> {
        Ok(Sieve::new(capacity))
    }

    fn emptied(&self) -> Sieve {
        Sieve::new(self.ring.capacity)
    }
}

impl Policy for Sieve {
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
        match self.ring.index.get(&key) {
            Some(&n) => {
                if self.hand == n {
                    self.hand = self.successor(n);
                }
                self.ring.remove_node(n);
                true
            }
            None => false,
        }
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
    fn visited_entries_stay_in_place() {
        // CLOCK would move 1 to the newest end on its second chance and evict it three misses later;
        // SIEVE leaves it behind the hand, which keeps evicting the newer, unvisited entries.
        let mut c = Sieve::new(3);
        for k in 1..=3 {
            assert!(!c.access(k, 1));
        }
        assert!(c.access(1, 1));
        assert!(!c.access(4, 1)); // hand: 1 (clears it), 2 evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 3, 4]);
        assert_eq!(c.hand_key(), Some(3));
        assert!(!c.access(5, 1)); // 3 evicted
        assert!(!c.access(6, 1)); // 4 evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 5, 6]);
        assert!(c.access(1, 1));
    }

    #[test]
    fn the_hand_wraps_from_the_newest_to_the_oldest() {
        let mut c = Sieve::new(2);
        c.access(1, 1);
        c.access(2, 1);
        assert!(c.access(1, 1));
        assert!(!c.access(3, 1)); // 1 cleared, 2 (the newest) evicted: the hand goes back to the oldest
        assert_eq!(c.keys_oldest_first(), vec![1, 3]);
        assert_eq!(c.hand_key(), Some(1));
        assert!(c.access(3, 1));
        assert!(!c.access(4, 1)); // 1 evicted
        assert_eq!(c.hand_key(), Some(3));
        assert!(!c.access(5, 1)); // 3 cleared, 4 evicted, hand wraps to 3
        assert_eq!(c.keys_oldest_first(), vec![3, 5]);
        assert_eq!(c.hand_key(), Some(3));
    }

    #[test]
    fn all_visited_clears_every_bit_and_evicts_where_it_started() {
        let mut c = Sieve::new(2);
        c.access(1, 1);
        c.access(2, 1);
        assert!(c.access(1, 1));
        assert!(c.access(2, 1));
        assert!(!c.access(3, 1)); // clears 1 and 2, wraps, evicts 1
        assert_eq!(c.keys_oldest_first(), vec![2, 3]);
        assert_eq!(c.hand_key(), Some(2));
    }

    #[test]
    fn removing_the_entry_under_the_hand_moves_the_hand_on() {
        let mut c = Sieve::new(3);
        for k in 1..=3 {
            c.access(k, 1);
        }
        c.access(1, 1);
        c.access(4, 1); // 2 evicted, hand on 3
        assert!(c.remove(3));
        assert!(!c.remove(3));
        assert_eq!(c.hand_key(), Some(4));
        assert!(!c.access(5, 1)); // fills the freed slot, evicts nothing
        assert_eq!(c.keys_oldest_first(), vec![1, 4, 5]);
        assert!(!c.access(6, 1)); // 4 evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 5, 6]);
        for k in [1, 5, 6] {
            assert!(c.remove(k));
        }
        assert_eq!((c.len(), c.hand_key()), (0, None));
        assert!(!c.access(7, 1));
        assert!(c.access(7, 1));
    }

    #[test]
    fn sizes_evict_until_the_object_fits() {
        let mut c = Sieve::new(10);
        c.access(1, 4);
        c.access(2, 3);
        c.access(3, 3);
        assert!(c.access(1, 1)); // visited; keeps its admitted size 4
        assert!(!c.access(4, 5)); // 1 cleared, 2 and 3 evicted, the hand wraps to 1
        assert_eq!(c.keys_oldest_first(), vec![1, 4]);
        assert_eq!(c.hand_key(), Some(1));
        assert!(!c.access(5, 11)); // larger than the cache: not admitted, nothing evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 4]);
        assert!(!c.access(6, 2)); // 9 + 2 > 10: evicts 1 (bit cleared before)
        assert_eq!(c.keys_oldest_first(), vec![4, 6]);
    }
}
