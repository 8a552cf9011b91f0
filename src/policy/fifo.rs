//! First in, first out: on a miss with a full cache, evict the entry admitted longest ago; hits change
//! nothing. The baseline that CLOCK and SIEVE improve on (Belady, Nelson and Shedler, "An anomaly in
//! space-time characteristics of certain programs running in a paging machine", CACM 1969, is where FIFO's
//! non-monotonic miss curve was first shown).
//!
//! Same semantics as libCacheSim's `FIFO.c` (checked hit for hit in the tests): a hit is a hash lookup and
//! nothing more; a miss evicts from the old end until the object fits and appends it at the new end.
//! Capacity is in units of `size` (entries when every size is 1, bytes otherwise); an object larger than the
//! whole cache is not admitted, and a hit keeps the size the entry was admitted with.

use std::sync::Arc;

use super::ring::Ring;
use super::{Policy, Registered, Spec};

pub struct Fifo {
    ring: Ring,
}

impl Fifo {
    pub fn new(capacity: u64) -> Fifo {
        Fifo { ring: Ring::new(capacity) }
    }

    /// Keys from the next victim to the newest entry (for tests and inspection).
    pub fn keys_oldest_first(&self) -> Vec<u64> {
        self.ring.keys_oldest_first()
    }
}

impl Registered for Fifo {
    const SPEC: Spec = Spec::plain("fifo", "FIFO", "first in, first out: evict the entry admitted longest ago; hits change nothing");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Fifo, String> {
        Ok(Fifo::new(capacity))
    }

    fn emptied(&self) -> Fifo {
        Fifo::new(self.ring.capacity)
    }
}

impl Policy for Fifo {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        if self.ring.index.contains_key(&key) {
            return true;
        }
        if !self.ring.fits(size) {
            return false;
        }
        while self.ring.needs_room(size) {
            let victim = self.ring.oldest();
            self.ring.remove_node(victim);
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
    fn hits_do_not_save_the_oldest_entry() {
        let mut c = Fifo::new(2);
        assert!(!c.access(1, 1));
        assert!(!c.access(2, 1));
        assert!(c.access(1, 1)); // a hit, but 1 stays the oldest
        assert!(!c.access(3, 1)); // evicts 1, not 2 as LRU would
        assert_eq!(c.keys_oldest_first(), vec![2, 3]);
        assert!(!c.access(1, 1)); // evicts 2
        assert!(c.access(3, 1));
        assert_eq!(c.keys_oldest_first(), vec![3, 1]);
    }

    #[test]
    fn sizes_evict_from_the_old_end_until_the_object_fits() {
        let mut c = Fifo::new(10);
        c.access(1, 3);
        c.access(2, 3);
        c.access(3, 3);
        assert!(!c.access(4, 11)); // larger than the cache: not admitted, nothing evicted
        assert_eq!(c.keys_oldest_first(), vec![1, 2, 3]);
        assert!(!c.access(5, 5)); // 9 used: evicts 1 and 2 (3 + 5 fits in 10)
        assert_eq!(c.keys_oldest_first(), vec![3, 5]);
        assert!(c.access(3, 1)); // a hit keeps the admitted size
        assert!(!c.access(6, 2)); // 8 used + 2 fits exactly: nothing evicted
        assert_eq!(c.keys_oldest_first(), vec![3, 5, 6]);
        assert!(!c.access(7, 10)); // the whole cache
        assert_eq!(c.keys_oldest_first(), vec![7]);
    }

    #[test]
    fn remove_takes_any_entry_out_of_the_queue() {
        let mut c = Fifo::new(3);
        for k in 1..=3 {
            c.access(k, 1);
        }
        assert!(c.remove(2));
        assert!(!c.remove(2));
        assert_eq!(c.keys_oldest_first(), vec![1, 3]);
        c.access(4, 1); // fills the freed slot
        assert_eq!(c.keys_oldest_first(), vec![1, 3, 4]);
        c.access(5, 1); // evicts 1
        assert_eq!(c.keys_oldest_first(), vec![3, 4, 5]);
        for k in [3, 4, 5] {
            assert!(c.remove(k));
        }
        assert_eq!(c.len(), 0);
        assert!(!c.access(9, 1));
        assert_eq!(c.keys_oldest_first(), vec![9]);
    }
}
