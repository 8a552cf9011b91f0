//! Least recently used: on a miss with a full cache, evict the entry whose last access is oldest.
//!
//! The classic structure: a hash table from key to node, and a doubly linked recency list threaded through
//! a slab of nodes by u32 index (no per-node allocation, 16 bytes a node). The slab never grows past the
//! capacity: once full, the evicted tail node is reused for the newcomer. Memory: about 16 bytes a node plus
//! the table's 12 bytes a slot, i.e. ~30-40 bytes per resident entry.

use super::Policy;
use crate::hash::KeyMap;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    prev: u32,
    next: u32,
}

pub struct Lru {
    capacity: usize,
    index: KeyMap<u32>,
    nodes: Vec<Node>,
    /// Most recently used.
    head: u32,
    /// Least recently used: the next victim.
    tail: u32,
    /// Nodes freed by `remove`, reused before the slab grows.
    free: Vec<u32>,
}

impl Lru {
    pub fn new(capacity: usize) -> Lru {
        // Reserve lazily: a 10 M-entry LRU over a trace with 50 k unique keys should not cost 400 MB.
        Lru { capacity, index: KeyMap::default(), nodes: Vec::new(), head: NIL, tail: NIL, free: Vec::new() }
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

    /// A node for a new key: a freed one, a new one while below capacity, else the evicted tail.
    #[inline]
    fn take_node(&mut self, key: u64) -> u32 {
        if let Some(n) = self.free.pop() {
            self.nodes[n as usize].key = key;
            return n;
        }
        if self.nodes.len() < self.capacity {
            self.nodes.push(Node { key, prev: NIL, next: NIL });
            return (self.nodes.len() - 1) as u32;
        }
        let victim = self.tail;
        self.unlink(victim);
        let old_key = self.nodes[victim as usize].key;
        self.index.remove(&old_key);
        self.nodes[victim as usize].key = key;
        victim
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

impl Policy for Lru {
    #[inline]
    fn access(&mut self, key: u64, _size: u32) -> bool {
        if let Some(&n) = self.index.get(&key) {
            if n != self.head {
                self.unlink(n);
                self.push_front(n);
            }
            return true;
        }
        let n = self.take_node(key);
        self.push_front(n);
        self.index.insert(key, n);
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.index.remove(&key) {
            Some(n) => {
                self.unlink(n);
                self.free.push(n);
                true
            }
            None => false,
        }
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
    fn capacity_one() {
        let mut lru = Lru::new(1);
        assert!(!lru.access(7, 1));
        assert!(lru.access(7, 1));
        assert!(!lru.access(8, 1));
        assert!(!lru.access(7, 1));
        assert_eq!(lru.len(), 1);
    }
}
