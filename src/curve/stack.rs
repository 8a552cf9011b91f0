//! The exact LRU hit rate at every capacity in one pass: Mattson's stack algorithm (Mattson, Gecsei, Slutz
//! and Traiger, "Evaluation techniques for storage hierarchies", IBM Systems Journal 1970).
//!
//! LRU is a stack algorithm: the cache of capacity C always holds the C most recently used keys, so a lookup
//! hits at capacity C exactly when its key's *stack depth* (1 + the distinct keys used since its last use) is
//! at most C. One pass computes each lookup's depth and counts it in the bucket of the smallest capacity it
//! fits; the hits at capacity C are the sum of the buckets up to C.
//!
//! Depths come from a Fenwick tree over "last use" positions: each key marks the position of its last use,
//! and the keys used since are the marks after it. Positions are renumbered (compacted) when they run out, so
//! memory is a few words per unique key, not per lookup. With byte capacities the tree sums each key's weight
//! (value + key + field + overhead, as the byte-capacity runs weigh entries): a byte LRU holds the longest
//! prefix of the recency stack that fits, so a lookup hits at C bytes when the weights above it plus its own
//! fit in C. Two differences from byte LRU runs, where a byte LRU is not a stack algorithm: an object larger
//! than the cache is not admitted by the run (it leaves the cache untouched), while the stack still puts it
//! on top, pushing the others down at that capacity; and a key whose size changes keeps, in a run, its
//! admitted size where it hits but takes the new size where it is admitted again, while the stack keeps the
//! admitted size at every capacity. Traces whose keys keep their sizes and fit the smallest capacity are
//! exact (tests/test_curve.py measures the rest).
//!
//! Invalidation leaves a *hole* where the key was: every cache that held the key now has a free slot there,
//! and a cache of capacity C still holds exactly the keys among the C top places (holes included). A new key
//! pushed on top fills the shallowest hole instead of pushing the keys below it down, as every cache large
//! enough to have that free slot fills it instead of evicting. A key moving up from below a hole takes the
//! shallowest hole's place and leaves the hole where it was: the caches it missed in filled a free slot, and
//! the ones it hit in keep theirs.
//! Holes are exact in entries; in bytes a free slot is filled partly, differently at each capacity, so byte
//! curves do not take invalidations (the Python side refuses them). A restart empties the stack. TTLs and refresh schedules depend on when each capacity admitted a key and are not
//! stack operations; the Python side refuses them for curves.

use std::collections::BTreeSet;

use super::marks::Marks;
use crate::hash::KeyMap;

const MIN_SLOTS: usize = 1024;

pub struct Stack {
    bytes: bool,
    /// key -> the position of its last use.
    last: KeyMap<u32>,
    /// The key used at each position (written once, in order: a position is a key's last use while its mark
    /// is set and it is not a hole).
    keys_at: Vec<u64>,
    /// The weight of each position (bytes only: an entry counts 1).
    weights: Vec<u32>,
    /// Marks: 1 at every live or hole position (entries), or its weight (bytes).
    marks: Marks,
    /// Positions of the holes; the largest is the shallowest.
    holes: BTreeSet<u32>,
    next: usize,
}

impl Stack {
    /// `bytes`: depths in bytes (weights) rather than in entries.
    pub fn new(bytes: bool) -> Stack {
        Stack {
            bytes,
            last: KeyMap::default(),
            keys_at: Vec::new(),
            weights: Vec::new(),
            marks: Marks::new(bytes, 0, &[]),
            holes: BTreeSet::new(),
            next: 0,
        }
    }

    /// Whether depths are in bytes (weights) rather than entries.
    pub fn counts_bytes(&self) -> bool {
        self.bytes
    }

    /// The lookup's depth before it (in entries, or bytes), or None for a key not in the stack; then moves the
    /// key to the top with `weight` (a key already there keeps the weight it was admitted with, as a cache
    /// entry keeps its size on a hit).
    pub fn access(&mut self, key: u64, weight: u32) -> Option<u64> {
        self.access_parts(key, weight).map(|(above, own)| above + own)
    }

    /// `access`, with the depth in its two parts: what lies above the key, and the key's own weight.
    pub fn access_parts(&mut self, key: u64, weight: u32) -> Option<(u64, u64)> {
        if self.next == self.keys_at.len() {
            self.compact();
        }
        let new_pos = self.next;
        // One hash lookup: the key's entry is pointed at its new place as its old one is read. The old place
        // is not touched unless it matters (a weight, a hole): it is a random access, the new one is not.
        let old = self.last.get_mut(&key).map(|p| std::mem::replace(p, new_pos as u32));
        let (depth, weight) = match old {
            Some(pos) => {
                let pos = pos as usize;
                let w = self.weight_at(pos);
                let depth = (self.marks.after(pos), w);
                if self.holes.last().is_some_and(|&h| h as usize > pos) {
                    self.fill_shallowest_hole();
                    self.holes.insert(pos as u32);
                } else {
                    self.marks.sub(pos, w);
                }
                (Some(depth), w as u32)
            }
            None => {
                self.fill_shallowest_hole();
                self.last.insert(key, new_pos as u32);
                (None, weight)
            }
        };
        self.next += 1;
        self.keys_at[new_pos] = key;
        if self.bytes {
            self.weights[new_pos] = weight;
        }
        self.marks.add(new_pos, self.mark(weight));
        depth
    }

    /// Takes `key` out of the stack (an invalidation), leaving a hole in its place; true if it was there.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.last.remove(&key) {
            Some(pos) => {
                self.holes.insert(pos);
                true
            }
            None => false,
        }
    }

    /// Takes `key` out of the stack as if it had never been used (it leaves a sample): no hole.
    pub fn forget(&mut self, key: u64) {
        if let Some(pos) = self.last.remove(&key) {
            let pos = pos as usize;
            self.marks.sub(pos, self.weight_at(pos));
        }
    }

    fn fill_shallowest_hole(&mut self) {
        if let Some(hole) = self.holes.pop_last() {
            let hole = hole as usize;
            self.marks.sub(hole, self.weight_at(hole));
        }
    }

    /// Every key out, as after a restart.
    pub fn clear(&mut self) {
        *self = Stack::new(self.bytes);
    }

    /// Keys in the stack.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// The mark of position `pos`.
    #[inline]
    fn weight_at(&self, pos: usize) -> u64 {
        if self.bytes {
            u64::from(self.weights[pos])
        } else {
            1
        }
    }

    #[inline]
    fn mark(&self, weight: u32) -> u64 {
        if self.bytes {
            u64::from(weight)
        } else {
            1
        }
    }

    /// Renumbers the marked positions (last uses and holes) 0.. in stack order, in a table twice their number,
    /// and rebuilds the marks: each lookup is renumbered at most once per doubling, so the cost is O(1)
    /// amortized per lookup.
    fn compact(&mut self) {
        let kept: Vec<usize> = self.marks.positions().collect();
        let size = (kept.len() * 2).max(MIN_SLOTS);
        let (mut keys_at, mut weights, mut marks) = (vec![0; size], Vec::new(), Vec::with_capacity(kept.len()));
        if self.bytes {
            weights = vec![0; size];
        }
        let old_holes = std::mem::take(&mut self.holes);
        for (new, &old) in kept.iter().enumerate() {
            if !old_holes.is_empty() && old_holes.contains(&(old as u32)) {
                self.holes.insert(new as u32);
            } else {
                let key = self.keys_at[old];
                keys_at[new] = key;
                *self.last.get_mut(&key).expect("a marked position that is no hole is a key's last use") = new as u32;
            }
            if self.bytes {
                weights[new] = self.weights[old];
            }
            marks.push(self.weight_at(old));
        }
        self.marks = Marks::new(self.bytes, size, &marks);
        self.next = kept.len();
        self.keys_at = keys_at;
        self.weights = weights;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Lru, Policy};

    /// Hits at each capacity from the stack equal an LRU run at that capacity, entries and bytes, with
    /// removals, across compactions.
    #[test]
    fn depths_give_the_hits_of_lru_runs() {
        for bytes in [false, true] {
            let capacities: Vec<u64> = if bytes { vec![40, 100, 333, 1000, 5000] } else { vec![1, 2, 7, 50, 300, 2000] };
            let mut lrus: Vec<Lru> = capacities.iter().map(|&c| Lru::new(c)).collect();
            let mut stack = Stack::new(bytes);
            let mut hits = vec![0u64; capacities.len()];
            let mut stack_hits = vec![0u64; capacities.len()];
            for i in 0..60_000u64 {
                let r = crate::hash::mix64(i);
                let key = (r % 97).pow(2) % 1500;
                // Weights fit the smallest byte capacity: the case where a byte LRU is a stack algorithm.
                let weight = if bytes { 1 + (crate::hash::mix64(key) % 40) as u32 } else { 1 };
                if !bytes && r % 50 == 0 {
                    let removed: Vec<bool> = lrus.iter_mut().map(|l| l.remove(key)).collect();
                    let in_stack = stack.remove(key);
                    assert!(removed.iter().all(|&r| !r || in_stack));
                    continue;
                }
                for (c, lru) in lrus.iter_mut().enumerate() {
                    hits[c] += lru.access(key, weight) as u64;
                }
                if let Some(depth) = stack.access(key, weight) {
                    for (c, &cap) in capacities.iter().enumerate() {
                        stack_hits[c] += (depth <= cap) as u64;
                    }
                }
            }
            assert_eq!(stack_hits, hits, "bytes: {bytes}");
            assert!(hits[0] < hits[hits.len() - 1]);
        }
    }
}
