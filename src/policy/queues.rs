//! A few recency or FIFO queues threaded through one slab of nodes: the structure ARC, 2Q and S3-FIFO share.
//!
//! Each of those policies keeps every key it knows, resident or ghost, in exactly one of `N` queues (ARC's
//! T1, T2, B1, B2; 2Q's A1in, A1out, Am; S3-FIFO's small, main, ghost), so one hash index from key to node
//! and one slab serve them all: a lookup is one probe whatever queue the key is in, and a node moving between
//! queues is a relink, not a remove and re-insert. Queues are doubly linked by u32 index (24 bytes a node,
//! no per-node allocation); each keeps its length and the sum of its sizes, since the policies budget queues
//! in size units (entries or bytes) as libCacheSim does. Freed nodes are recycled before the slab grows.
//!
//! The index stores only node numbers (4 bytes a slot, the key is read from the node, which a hit touches
//! anyway): a quarter of a key-to-node map's footprint, which matters as ghosts double the keys kept.
//! A miss finds the key absent and reserves its node in the same probe; the node stays detached, on no
//! queue, while the policy makes room, and is then linked where the policy admits it.
//!
//! Orientation follows libCacheSim: new nodes go to the head, victims leave from the tail.

use hashbrown::hash_table::{Entry, HashTable};

use crate::hash::mix64;

pub(super) const NIL: u32 = u32::MAX;
/// The queue of a node that is indexed but on no queue (reserved for a key being admitted).
pub(super) const DETACHED: u8 = u8::MAX;

/// What `find_or_reserve` found.
pub(super) enum Lookup {
    /// The key's node, on some queue.
    Found(u32),
    /// The key was absent; this fresh node, indexed and detached, is reserved for it.
    Reserved(u32),
    /// The key was absent and no node was asked for.
    Absent,
}

#[derive(Clone, Copy)]
pub(super) struct Node {
    pub key: u64,
    pub size: u32,
    /// Towards the head (newer).
    prev: u32,
    /// Towards the tail (older).
    next: u32,
    /// Which queue the node is on, or `DETACHED`.
    pub queue: u8,
    /// Policy state that rides along in what would be padding (S3-FIFO's access counter).
    pub freq: u16,
}

pub(super) struct Queues<const N: usize> {
    /// Node numbers, hashed by their node's key.
    index: HashTable<u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: [u32; N],
    tail: [u32; N],
    /// Sum of the sizes on each queue.
    pub used: [u64; N],
    /// Nodes on each queue.
    pub len: [usize; N],
}

impl<const N: usize> Queues<N> {
    pub fn new() -> Self {
        Queues {
            index: HashTable::new(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: [NIL; N],
            tail: [NIL; N],
            used: [0; N],
            len: [0; N],
        }
    }

    #[inline]
    pub fn node(&self, n: u32) -> &Node {
        &self.nodes[n as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, n: u32) -> &mut Node {
        &mut self.nodes[n as usize]
    }

    /// The oldest node of queue `q`, NIL when the queue is empty.
    #[inline]
    pub fn tail(&self, q: u8) -> u32 {
        self.tail[q as usize]
    }

    /// The node of `key`, if indexed.
    #[inline]
    pub fn find(&self, key: u64) -> Option<u32> {
        self.index.find(mix64(key), |&n| self.nodes[n as usize].key == key).copied()
    }

    /// The node of `key` if indexed; else, if `reserve`, a fresh detached node for it (`size`, `freq` 0),
    /// indexed in the same probe.
    #[inline]
    pub fn find_or_reserve(&mut self, key: u64, size: u32, reserve: bool) -> Lookup {
        let Queues { index, nodes, free, .. } = self;
        let entry = index.entry(mix64(key), |&n| nodes[n as usize].key == key, |&n| mix64(nodes[n as usize].key));
        match entry {
            Entry::Occupied(e) => Lookup::Found(*e.get()),
            Entry::Vacant(_) if !reserve => Lookup::Absent,
            Entry::Vacant(v) => {
                let node = Node { key, size, prev: NIL, next: NIL, queue: DETACHED, freq: 0 };
                let n = match free.pop() {
                    Some(n) => {
                        nodes[n as usize] = node;
                        n
                    }
                    None => {
                        nodes.push(node);
                        (nodes.len() - 1) as u32
                    }
                };
                v.insert(n);
                Lookup::Reserved(n)
            }
        }
    }

    /// Indexes `key` and puts a fresh node for it at the head of queue `q`. The key must not be indexed.
    #[cfg(test)]
    pub fn insert(&mut self, key: u64, size: u32, q: u8) -> u32 {
        match self.find_or_reserve(key, size, true) {
            Lookup::Reserved(n) => {
                self.link(n, q);
                n
            }
            _ => unreachable!("insert of an indexed key"),
        }
    }

    /// Takes node `n` off its queue; it stays indexed.
    #[inline]
    pub fn detach(&mut self, n: u32) {
        self.unlink(n);
        self.nodes[n as usize].queue = DETACHED;
    }

    /// Puts the detached node `n` at the head of queue `q`.
    #[inline]
    pub fn link(&mut self, n: u32, q: u8) {
        self.link_head(n, q);
    }

    /// Takes node `n` off its queue (if on one), drops it from the index and recycles it.
    #[inline]
    pub fn delete(&mut self, n: u32) {
        if self.nodes[n as usize].queue != DETACHED {
            self.unlink(n);
        }
        let key = self.nodes[n as usize].key;
        if let Ok(e) = self.index.find_entry(mix64(key), |&m| m == n) {
            e.remove();
        }
        self.free.push(n);
    }

    /// Moves node `n` to the head of queue `q` (its own queue or another).
    #[inline]
    pub fn move_to_head(&mut self, n: u32, q: u8) {
        if self.head[q as usize] == n {
            return;
        }
        self.unlink(n);
        self.link_head(n, q);
    }

    #[inline]
    fn link_head(&mut self, n: u32, q: u8) {
        let qi = q as usize;
        let old = self.head[qi];
        let node = &mut self.nodes[n as usize];
        node.prev = NIL;
        node.next = old;
        node.queue = q;
        let size = node.size;
        if old == NIL {
            self.tail[qi] = n;
        } else {
            self.nodes[old as usize].prev = n;
        }
        self.head[qi] = n;
        self.used[qi] += u64::from(size);
        self.len[qi] += 1;
    }

    #[inline]
    fn unlink(&mut self, n: u32) {
        let Node { prev, next, queue, size, .. } = self.nodes[n as usize];
        let qi = queue as usize;
        if prev == NIL {
            self.head[qi] = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.tail[qi] = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        self.used[qi] -= u64::from(size);
        self.len[qi] -= 1;
    }

    /// Keys of queue `q` from head (newest) to tail (oldest), for tests and inspection.
    pub fn keys(&self, q: u8) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len[q as usize]);
        let mut n = self.head[q as usize];
        while n != NIL {
            out.push(self.nodes[n as usize].key);
            n = self.nodes[n as usize].next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_move_between_queues_and_are_recycled() {
        let mut q = Queues::<2>::new();
        let a = q.insert(1, 3, 0);
        q.insert(2, 4, 0);
        q.insert(3, 5, 1);
        assert_eq!((q.keys(0), q.keys(1)), (vec![2, 1], vec![3]));
        assert_eq!((q.used, q.len), ([7, 5], [2, 1]));
        q.move_to_head(a, 1);
        assert_eq!((q.keys(0), q.keys(1)), (vec![2], vec![1, 3]));
        assert_eq!((q.used, q.len), ([4, 8], [1, 2]));
        assert_eq!(q.node(q.tail(1)).key, 3);
        q.delete(a);
        assert_eq!(q.find(1), None);
        assert_eq!(q.insert(9, 1, 0), a); // the freed node is reused
        assert_eq!(q.find(9), Some(a));
        assert_eq!(q.keys(0), vec![9, 2]);
        let t = q.tail(0);
        q.move_to_head(t, 0);
        assert_eq!(q.keys(0), vec![2, 9]);
        assert!(matches!(q.find_or_reserve(2, 1, true), Lookup::Found(_)));
        assert!(matches!(q.find_or_reserve(5, 1, false), Lookup::Absent));
        let Lookup::Reserved(r) = q.find_or_reserve(5, 7, true) else { panic!("5 is new") };
        assert_eq!((q.find(5), q.len, q.used), (Some(r), [2, 1], [5, 5])); // indexed, on no queue
        q.link(r, 1);
        assert_eq!(q.keys(1), vec![5, 3]);
        q.detach(r);
        assert_eq!((q.keys(1), q.find(5)), (vec![3], Some(r)));
        q.delete(r);
        assert_eq!(q.find(5), None);
    }
}
