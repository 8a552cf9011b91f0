//! The queue shared by FIFO, CLOCK and SIEVE: entries in insertion order on a circular doubly linked list,
//! threaded through a slab of nodes by u32 index, plus the hash index from key to node and the used capacity.
//!
//! Circular because all three policies walk from the oldest entry towards the newest and, in CLOCK and
//! SIEVE, wrap around: with the newest entry's successor being the oldest, "move the oldest entry to the
//! newest end" (CLOCK's second chance) is a pointer move, not a relink, and a hand that runs past the
//! newest entry lands on the oldest (SIEVE) without a special case. Each node carries one bit of policy
//! state (CLOCK's reference bit, SIEVE's visited bit) in what would otherwise be padding: 24 bytes a node.
//! Nodes freed by eviction or removal are recycled before the slab grows, as in `Lru`.

use crate::hash::KeyMap;

pub(super) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
pub(super) struct Node {
    pub key: u64,
    pub size: u32,
    /// One step older; the oldest entry's `prev` is the newest.
    prev: u32,
    /// One step newer; the newest entry's `next` is the oldest.
    next: u32,
    pub bit: bool,
}

pub(super) struct Ring {
    pub capacity: u64,
    pub used: u64,
    pub index: KeyMap<u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// The newest entry, NIL when empty. The oldest is its `next`.
    newest: u32,
}

impl Ring {
    pub fn new(capacity: u64) -> Ring {
        Ring { capacity, used: 0, index: KeyMap::default(), nodes: Vec::new(), free: Vec::new(), newest: NIL }
    }

    #[inline]
    pub fn node(&self, n: u32) -> &Node {
        &self.nodes[n as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, n: u32) -> &mut Node {
        &mut self.nodes[n as usize]
    }

    /// The oldest entry, NIL when empty.
    #[inline]
    pub fn oldest(&self) -> u32 {
        if self.newest == NIL {
            NIL
        } else {
            self.nodes[self.newest as usize].next
        }
    }

    /// The entry one step newer than `n`, wrapping from the newest to the oldest.
    #[inline]
    pub fn newer(&self, n: u32) -> u32 {
        self.nodes[n as usize].next
    }

    /// Makes the oldest entry the newest (the ring turns by one); the order is otherwise unchanged.
    #[inline]
    pub fn rotate(&mut self) {
        self.newest = self.oldest();
    }

    /// True if `size` can ever be admitted: an object larger than the whole cache never is.
    #[inline]
    pub fn fits(&self, size: u32) -> bool {
        u64::from(size) <= self.capacity
    }

    /// True while `size` more units do not fit next to what is resident.
    #[inline]
    pub fn needs_room(&self, size: u32) -> bool {
        self.used + u64::from(size) > self.capacity
    }

    /// Appends a new entry as the newest, indexed under `key`, and returns its node.
    #[inline]
    pub fn push_newest(&mut self, key: u64, size: u32) -> u32 {
        let n = self.alloc(Node { key, size, prev: NIL, next: NIL, bit: false });
        if self.newest == NIL {
            let node = &mut self.nodes[n as usize];
            node.prev = n;
            node.next = n;
        } else {
            let newest = self.newest;
            let oldest = self.nodes[newest as usize].next;
            self.nodes[n as usize].prev = newest;
            self.nodes[n as usize].next = oldest;
            self.nodes[newest as usize].next = n;
            self.nodes[oldest as usize].prev = n;
        }
        self.newest = n;
        self.index.insert(key, n);
        self.used += u64::from(size);
        n
    }

    /// Takes `n` off the ring, out of the index and out of the used capacity, and recycles its node.
    #[inline]
    /// Takes `key` out if it is resident; true if it was.
    pub fn remove_key(&mut self, key: u64) -> bool {
        match self.index.get(&key) {
            Some(&n) => {
                self.remove_node(n);
                true
            }
            None => false,
        }
    }

    pub fn remove_node(&mut self, n: u32) {
        let Node { key, size, prev, next, .. } = self.nodes[n as usize];
        if next == n {
            self.newest = NIL;
        } else {
            self.nodes[prev as usize].next = next;
            self.nodes[next as usize].prev = prev;
            if self.newest == n {
                self.newest = prev;
            }
        }
        self.index.remove(&key);
        self.used -= u64::from(size);
        self.free.push(n);
    }

    #[inline]
    fn alloc(&mut self, node: Node) -> u32 {
        if let Some(n) = self.free.pop() {
            self.nodes[n as usize] = node;
            return n;
        }
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    pub fn contains(&self, key: u64) -> bool {
        self.index.contains_key(&key)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Keys from oldest to newest (for tests and inspection).
    pub fn keys_oldest_first(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        let first = self.oldest();
        let mut n = first;
        while n != NIL {
            out.push(self.nodes[n as usize].key);
            n = self.nodes[n as usize].next;
            if n == first {
                break;
            }
        }
        out
    }
}
