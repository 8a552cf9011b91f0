//! Least frequently used: on a miss with a full cache, evict the resident entry with the fewest hits since
//! it was admitted; among those, the one that reached that count earliest. Counts are in-cache only: a new
//! entry starts at 1 and an evicted entry's count is forgotten (no history, no aging).
//!
//! O(1) per access with frequency buckets (Shah, Mitra and Matani, "An O(1) algorithm for implementing the
//! LFU cache eviction scheme", 2010): a list of buckets in increasing count, each holding its entries in
//! the order they reached that count. A hit moves an entry from its bucket to the tail of the next count's
//! bucket (creating it next to the old one if missing, dropping the old one if it empties); the victim is
//! the head of the first bucket. Entries and buckets are slab nodes addressed by u32 (24 bytes each).
//!
//! Same semantics as libCacheSim's `LFU.c` (checked hit for hit in the tests), whose buckets are FIFO lists
//! per frequency in a hash map with a lazily updated minimum; its tie-break is the one above. Capacity is in
//! units of `size`; an object larger than the whole cache is not admitted, and a hit keeps the size the entry
//! was admitted with.

use std::sync::Arc;

use super::{Policy, Registered, Spec};
use crate::hash::KeyMap;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    size: u32,
    bucket: u32,
    /// Neighbours in the bucket: `prev` reached the count earlier.
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy)]
struct Bucket {
    count: u64,
    /// Reached `count` earliest: the next victim if this is the first bucket.
    first: u32,
    last: u32,
    /// Neighbouring buckets: `prev` has a lower count.
    prev: u32,
    next: u32,
}

pub struct Lfu {
    capacity: u64,
    used: u64,
    index: KeyMap<u32>,
    entries: Vec<Entry>,
    free_entries: Vec<u32>,
    buckets: Vec<Bucket>,
    free_buckets: Vec<u32>,
    /// The lowest-count bucket, NIL when empty.
    lowest: u32,
}

impl Lfu {
    pub fn new(capacity: u64) -> Lfu {
        Lfu {
            capacity,
            used: 0,
            index: KeyMap::default(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            buckets: Vec::new(),
            free_buckets: Vec::new(),
            lowest: NIL,
        }
    }

    /// (key, count) from the next victim to the most frequently used entry (for tests and inspection).
    pub fn keys_by_eviction_order(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len());
        let mut b = self.lowest;
        while b != NIL {
            let bucket = self.buckets[b as usize];
            let mut e = bucket.first;
            while e != NIL {
                out.push((self.entries[e as usize].key, bucket.count));
                e = self.entries[e as usize].next;
            }
            b = bucket.next;
        }
        out
    }

    /// Counts one more hit for entry `e`.
    #[inline]
    fn promote(&mut self, e: u32) {
        let b = self.entries[e as usize].bucket;
        let Bucket { count, first, last, next, .. } = self.buckets[b as usize];
        let target_exists = next != NIL && self.buckets[next as usize].count == count + 1;
        if first == last && !target_exists {
            // Alone in its bucket and no bucket for count + 1: the bucket itself moves up a count.
            self.buckets[b as usize].count = count + 1;
            return;
        }
        let target = if target_exists { next } else { self.new_bucket_after(b, count + 1) };
        self.detach(e);
        self.append(target, e);
    }

    /// Evicts the head of the lowest-count bucket.
    #[inline]
    fn evict(&mut self) {
        let victim = self.buckets[self.lowest as usize].first;
        self.drop_entry(victim);
    }

    /// Takes entry `e` out of its bucket, the index and the used capacity, and recycles its node.
    #[inline]
    fn drop_entry(&mut self, e: u32) {
        let Entry { key, size, .. } = self.entries[e as usize];
        self.detach(e);
        self.index.remove(&key);
        self.used -= u64::from(size);
        self.free_entries.push(e);
    }

    /// Unlinks entry `e` from its bucket, dropping the bucket if it empties.
    #[inline]
    fn detach(&mut self, e: u32) {
        let Entry { bucket: b, prev, next, .. } = self.entries[e as usize];
        if prev == NIL {
            self.buckets[b as usize].first = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.buckets[b as usize].last = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        if self.buckets[b as usize].first == NIL {
            self.drop_bucket(b);
        }
    }

    /// Links entry `e` at the tail of bucket `b`.
    #[inline]
    fn append(&mut self, b: u32, e: u32) {
        let last = self.buckets[b as usize].last;
        {
            let entry = &mut self.entries[e as usize];
            entry.bucket = b;
            entry.prev = last;
            entry.next = NIL;
        }
        if last == NIL {
            self.buckets[b as usize].first = e;
        } else {
            self.entries[last as usize].next = e;
        }
        self.buckets[b as usize].last = e;
    }

    /// A new empty bucket for `count`, linked right after `after` (or first, if `after` is NIL).
    #[inline]
    fn new_bucket_after(&mut self, after: u32, count: u64) -> u32 {
        let next = if after == NIL { self.lowest } else { self.buckets[after as usize].next };
        let bucket = Bucket { count, first: NIL, last: NIL, prev: after, next };
        let b = match self.free_buckets.pop() {
            Some(b) => {
                self.buckets[b as usize] = bucket;
                b
            }
            None => {
                self.buckets.push(bucket);
                (self.buckets.len() - 1) as u32
            }
        };
        if after == NIL {
            self.lowest = b;
        } else {
            self.buckets[after as usize].next = b;
        }
        if next != NIL {
            self.buckets[next as usize].prev = b;
        }
        b
    }

    #[inline]
    fn drop_bucket(&mut self, b: u32) {
        let Bucket { prev, next, .. } = self.buckets[b as usize];
        if prev == NIL {
            self.lowest = next;
        } else {
            self.buckets[prev as usize].next = next;
        }
        if next != NIL {
            self.buckets[next as usize].prev = prev;
        }
        self.free_buckets.push(b);
    }

    #[inline]
    fn new_entry(&mut self, key: u64, size: u32) -> u32 {
        let entry = Entry { key, size, bucket: NIL, prev: NIL, next: NIL };
        if let Some(e) = self.free_entries.pop() {
            self.entries[e as usize] = entry;
            return e;
        }
        self.entries.push(entry);
        (self.entries.len() - 1) as u32
    }
}

impl Registered for Lfu {
    const SPEC: Spec = Spec::plain("lfu", "LFU", "least frequently used: evict the entry with the fewest hits since it was admitted (ties: the one that reached that count first)");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Lfu, String> {
        Ok(Lfu::new(capacity))
    }

    fn emptied(&self) -> Lfu {
        Lfu::new(self.capacity)
    }
}

impl Policy for Lfu {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        if let Some(&e) = self.index.get(&key) {
            self.promote(e);
            return true;
        }
        if u64::from(size) > self.capacity {
            return false;
        }
        while self.used + u64::from(size) > self.capacity {
            self.evict();
        }
        let e = self.new_entry(key, size);
        let ones = if self.lowest != NIL && self.buckets[self.lowest as usize].count == 1 {
            self.lowest
        } else {
            self.new_bucket_after(NIL, 1)
        };
        self.append(ones, e);
        self.index.insert(key, e);
        self.used += u64::from(size);
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.index.get(&key) {
            Some(&e) => {
                self.drop_entry(e);
                true
            }
            None => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.index.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_frequent_and_breaks_ties_by_arrival_in_the_bucket() {
        let mut c = Lfu::new(3);
        for k in 1..=3 {
            assert!(!c.access(k, 1));
        }
        assert!(c.access(2, 1));
        assert!(c.access(1, 1)); // counts: 3:1, 2:2, 1:2 (2 reached 2 first)
        assert!(!c.access(4, 1)); // evicts 3, the only count-1 entry
        assert!(!c.access(5, 1)); // evicts 4: new entries start at 1, below 1 and 2
        assert!(c.access(5, 1)); // 5 reaches count 2 after 2 and 1
        assert_eq!(c.keys_by_eviction_order(), vec![(2, 2), (1, 2), (5, 2)]);
        assert!(!c.access(6, 1)); // evicts 2: first to reach the lowest count
        assert_eq!(c.keys_by_eviction_order(), vec![(6, 1), (1, 2), (5, 2)]);
        assert!(c.access(1, 1)); // a new bucket for count 3, after count 2's
        assert!(c.access(1, 1)); // alone at count 3: its bucket moves up in place
        assert!(c.access(5, 1)); // alone at count 2 with no bucket for 3: moves up in place too
        assert_eq!(c.keys_by_eviction_order(), vec![(6, 1), (5, 3), (1, 4)]);
        assert!(!c.access(3, 1)); // evicted entries come back at count 1: 3's old count is forgotten
        assert_eq!(c.keys_by_eviction_order(), vec![(3, 1), (5, 3), (1, 4)]);
    }

    #[test]
    fn sizes_evict_in_count_order_until_the_object_fits() {
        let mut c = Lfu::new(10);
        c.access(1, 4);
        c.access(2, 3);
        c.access(3, 3);
        assert!(c.access(1, 1)); // a hit keeps the admitted size 4
        assert!(c.access(2, 1));
        assert!(!c.access(4, 5)); // evicts 3 (count 1) then 1 (count 2, ahead of 2)
        assert_eq!(c.keys_by_eviction_order(), vec![(4, 1), (2, 2)]);
        assert!(!c.access(5, 11)); // larger than the cache: not admitted, nothing evicted
        assert_eq!(c.len(), 2);
        assert!(c.remove(2));
        assert!(!c.access(6, 2)); // 5 + 2 fits
        assert_eq!(c.keys_by_eviction_order(), vec![(4, 1), (6, 1)]);
    }

    #[test]
    fn remove_drops_emptied_buckets() {
        let mut c = Lfu::new(2);
        c.access(1, 1);
        c.access(2, 1);
        c.access(1, 1);
        assert!(c.remove(1));
        assert!(!c.remove(1));
        assert_eq!(c.keys_by_eviction_order(), vec![(2, 1)]);
        assert!(c.remove(2));
        assert_eq!(c.len(), 0);
        assert!(c.keys_by_eviction_order().is_empty());
        assert!(!c.access(3, 1));
        assert!(!c.access(4, 1));
        assert!(!c.access(5, 1)); // evicts 3
        assert_eq!(c.keys_by_eviction_order(), vec![(4, 1), (5, 1)]);
    }
}
