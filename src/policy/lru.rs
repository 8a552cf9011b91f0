//! Least recently used: on a miss with a full cache, evict the entry whose last access is oldest.
//!
//! The classic structure: a hash table from key to node, and a doubly linked recency list threaded through
//! a slab of nodes by u32 index (no per-node allocation, 24 bytes a node). Evicted nodes are recycled, so
//! the slab never holds more nodes than the cache ever held entries. Memory: about 24 bytes a node plus
//! the table's 16 bytes a slot, 3/8 to 3/4 of them full, i.e. ~45-67 bytes per resident entry.
//!
//! The table is our own (`KeyTable`), so that a large cache's slots can be loaded ahead of their lookups
//! (`prefetch`): at millions of entries each lookup otherwise waits for memory twice before the list is
//! touched, once for its key's slot and once for the victim's.
//!
//! Capacity is in units of `size`: with every size 1 it counts entries, with value sizes it counts bytes.
//! As in libCacheSim, an object larger than the whole cache is not admitted, and a hit does not change the
//! size an entry was admitted with.

use std::sync::Arc;

use super::{Policy, Registered, Spec};
use super::key_table::KeyTable;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    size: u32,
    prev: u32,
    next: u32,
}

pub struct Lru {
    capacity: u64,
    used: u64,
    index: KeyTable<u32>,
    nodes: Vec<Node>,
    /// Most recently used.
    head: u32,
    /// Least recently used: the next victim.
    tail: u32,
    /// Nodes freed by eviction or `remove`, reused before the slab grows.
    free: Vec<u32>,
    /// The keys handed to `prefetch` lately, and the node each was found at (NIL if none).
    ahead: [(u64, u32); AHEAD],
    /// Calls to `prefetch` so far.
    calls: usize,
}

/// Calls to `prefetch` remembered: a key's slot is loaded when it is handed over, its node once the slot has
/// had `NODE_AFTER` calls to arrive, its neighbours in the list once the node has had as many.
const AHEAD: usize = 16;
const NODE_AFTER: usize = 6;

impl Lru {
    pub fn new(capacity: u64) -> Lru {
        // Reserve lazily: a 10 M-entry LRU over a trace with 50 k unique keys should not cost 400 MB.
        Lru {
            capacity,
            used: 0,
            index: KeyTable::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            free: Vec::new(),
            ahead: [(0, NIL); AHEAD],
            calls: 0,
        }
    }

    #[inline]
    fn unlink(&mut self, n: u32) {
        let Node { prev, next, .. } = self.nodes[n as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }

    #[inline]
    fn push_front(&mut self, n: u32) {
        let old_head = self.head;
        {
            let node = &mut self.nodes[n as usize];
            node.prev = NIL;
            node.next = old_head;
        }
        if old_head == NIL {
            self.tail = n;
        } else {
            self.nodes[old_head as usize].prev = n;
        }
        self.head = n;
    }

    /// Evicts the least recently used entry.
    #[inline]
    fn evict(&mut self) {
        let victim = self.tail;
        self.unlink(victim);
        let Node { key, size, .. } = self.nodes[victim as usize];
        self.index.remove(key);
        self.used -= u64::from(size);
        self.free.push(victim);
    }

    /// A node for a new key: a recycled one, else a new one.
    #[inline]
    fn new_node(&mut self, key: u64, size: u32) -> u32 {
        let node = Node { key, size, prev: NIL, next: NIL };
        if let Some(n) = self.free.pop() {
            self.nodes[n as usize] = node;
            return n;
        }
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    /// Keys from most to least recently used (for tests and inspection).
    pub fn keys_by_recency(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        let mut n = self.head;
        while n != NIL {
            out.push(self.nodes[n as usize].key);
            n = self.nodes[n as usize].next;
        }
        out
    }
}

impl Registered for Lru {
    const SPEC: Spec = Spec::plain("lru", "LRU", "least recently used: evict the entry not used for the longest time");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<Lru, String> {
        Ok(Lru::new(capacity))
    }

    fn emptied(&self) -> Lru {
        Lru::new(self.capacity)
    }
}

impl Policy for Lru {
    #[inline]
    fn prefetch(&mut self, key: u64) {
        // A table within the processor's caches gains nothing from it, and pays the hashing.
        if !self.index.is_large() {
            return;
        }
        // A hit then waits on nothing: its slot, its node and the nodes `unlink` rewrites are loaded by the
        // time it comes, each stage a few calls after the one it reads. Hints only: a node moved or recycled
        // meanwhile costs a wasted load, never a wrong answer.
        let call = self.calls;
        self.calls = call.wrapping_add(1);
        self.index.prefetch(key);
        self.ahead[call % AHEAD] = (key, NIL);
        let middle = call.wrapping_sub(NODE_AFTER) % AHEAD;
        if let Some(n) = self.index.get(self.ahead[middle].0) {
            self.ahead[middle].1 = n;
            super::prefetch(&self.nodes[n as usize]);
        }
        let (_, n) = self.ahead[call.wrapping_sub(2 * NODE_AFTER) % AHEAD];
        if n != NIL {
            let Node { prev, next, .. } = self.nodes[n as usize];
            for m in [prev, next] {
                if m != NIL {
                    super::prefetch(&self.nodes[m as usize]);
                }
            }
        }
        // The next eviction removes the tail's key: its node was touched when it became the tail.
        if self.tail != NIL {
            self.index.prefetch(self.nodes[self.tail as usize].key);
        }
    }

    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        if let Some(n) = self.index.get(key) {
            if n != self.head {
                self.unlink(n);
                self.push_front(n);
            }
            return true;
        }
        if u64::from(size) > self.capacity {
            return false;
        }
        while self.used + u64::from(size) > self.capacity {
            self.evict();
        }
        let n = self.new_node(key, size);
        self.push_front(n);
        self.index.insert(key, n);
        self.used += u64::from(size);
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.index.remove(key) {
            Some(n) => {
                self.unlink(n);
                self.used -= u64::from(self.nodes[n as usize].size);
                self.free.push(n);
                true
            }
            None => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.index.contains(key)
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut lru = Lru::new(2);
        assert!(!lru.access(1, 1));
        assert!(!lru.access(2, 1));
        assert!(lru.access(1, 1)); // 2 is now the LRU entry
        assert!(!lru.access(3, 1)); // evicts 2
        assert_eq!(lru.keys_by_recency(), vec![3, 1]);
        assert!(!lru.access(2, 1));
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn remove_frees_a_slot() {
        let mut lru = Lru::new(2);
        lru.access(1, 1);
        lru.access(2, 1);
        assert!(lru.remove(1));
        assert!(!lru.remove(1));
        lru.access(3, 1); // fills the freed slot, evicts nothing
        assert_eq!(lru.keys_by_recency(), vec![3, 2]);
    }

    #[test]
    fn sizes_count_against_the_capacity() {
        let mut lru = Lru::new(10);
        lru.access(1, 4);
        lru.access(2, 4);
        assert!(!lru.access(3, 11)); // larger than the cache: not admitted, nothing evicted
        assert_eq!(lru.keys_by_recency(), vec![2, 1]);
        lru.access(4, 6); // evicts 1 only: 4 + 6 fits
        assert_eq!(lru.keys_by_recency(), vec![4, 2]);
        assert!(lru.remove(2));
        lru.access(5, 4);
        assert_eq!(lru.keys_by_recency(), vec![5, 4]);
    }

    #[test]
    fn prefetching_ahead_changes_no_answer_of_a_large_cache() {
        // Large enough that `prefetch` does its work (a table past 4 MiB), keys skewed so that hits, misses
        // and evictions all happen; the same stream with and without the hints, as the run loop gives them.
        let mut x = 42u64;
        let keys: Vec<u64> = (0..2_000_000)
            .map(|_| {
                x = crate::hash::mix64(x);
                // Half the lookups over 20,000 keys (hits), half over a million (misses and evictions).
                if x & 1 == 0 { x % 20_000 } else { x % 1_000_000 }
            })
            .collect();
        let (mut hinted, mut plain) = (Lru::new(300_000), Lru::new(300_000));
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + 16) {
                hinted.prefetch(ahead);
            }
            assert_eq!(hinted.access(k, 1), plain.access(k, 1), "lookup {i}");
        }
        assert!(hinted.index.is_large());
        assert_eq!(hinted.keys_by_recency(), plain.keys_by_recency());
    }

    #[test]
    fn capacity_one() {
        let mut lru = Lru::new(1);
        assert!(!lru.access(7, 1));
        assert!(lru.access(7, 1));
        assert!(!lru.access(8, 1));
        assert!(!lru.access(7, 1));
        assert_eq!(lru.len(), 1);
    }
}
