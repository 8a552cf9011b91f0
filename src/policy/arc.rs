//! ARC, the Adaptive Replacement Cache (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement
//! Cache", FAST 2003), with libCacheSim's semantics.
//!
//! Resident entries sit on two LRU lists: T1 holds keys seen once recently, T2 keys seen at least twice. Each
//! has a ghost list of keys recently evicted from it (B1, B2: keys only, no values). A hit anywhere in T1 or T2
//! moves the key to the head of T2. A miss that hits a ghost adapts the target size `p` of T1: a hit in B1
//! means T1 was too small (p grows by max(|B2|/|B1|, 1)), a hit in B2 that T2 was (p shrinks by
//! max(|B1|/|B2|, 1)); the key then enters T2. A key seen nowhere enters T1. To make room, REPLACE demotes
//! the LRU entry of T1 to B1 when T1 is larger than p (or equal to it on a B2 hit), else the LRU of T2 to
//! B2; on a miss seen nowhere the ghosts are trimmed first so that T1+B1 stays within the capacity and all
//! four lists within twice the capacity (the paper's case IV). The ghost lists are thus sized to the capacity.
//!
//! Following libCacheSim (`cache/eviction/ARC.c`) exactly, so that hit counts are equal:
//! - list sizes and `p` are in units of `size` (entries, or bytes), `p` is a float;
//! - case IV tests "B1 is not empty" where the paper tests |T1| < c (the same for unit sizes, and sound
//!   for variable sizes), and T1's LRU entry is dropped without a ghost when B1 is empty;
//! - REPLACE also takes from T1 when T2 is empty;
//! - an object larger than the whole cache is not admitted (a ghost it hit is still consumed);
//! - a hit does not change the size an entry was admitted with.
//!
//! One deliberate difference: `remove` (an invalidation or an expiry) drops a resident entry without leaving a
//! ghost, and leaves ghosts alone: they record accesses, which a write does not undo. libCacheSim's ARC_remove
//! would unlink a ghost from its list but leave it in its hash table, so that a later request for the key is
//! taken for a ghost hit against a list it is no longer on. Removal is never part of the runs compared with
//! libCacheSim.

use std::sync::Arc;

use super::queues::{Lookup, Queues, NIL};
use super::{Policy, Registered, Spec};

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

pub struct ArcCache {
    capacity: u64,
    q: Queues<4>,
    /// Target size of T1, in size units.
    p: f64,
    /// Whether the last key found (resident or ghost) was a ghost in B2, cleared when such a key is admitted.
    /// REPLACE reads it; libCacheSim keeps it between requests (it outlives a B2 hit on an object too large to
    /// admit), and so it is kept here.
    found_in_b2: bool,
}

/// C's `MAX` and `MIN` macros, which differ from `f64::max` and `f64::min` on NaN.
#[inline]
fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

#[inline]
fn c_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

impl ArcCache {
    pub fn new(capacity: u64) -> ArcCache {
        ArcCache { capacity, q: Queues::new(), p: 0.0, found_in_b2: false }
    }


    /// The target size of T1.
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    /// Keys of T1, T2, B1 and B2, each from most to least recent (for tests and inspection).
    pub fn lists(&self) -> [Vec<u64>; 4] {
        [self.q.keys(T1), self.q.keys(T2), self.q.keys(B1), self.q.keys(B2)]
    }

    /// A hit in a ghost list: adapt `p` (from the list sizes with the ghost still counted) and take the ghost
    /// off its list; its node will be the key's when it enters T2.
    #[inline]
    fn ghost_hit(&mut self, n: u32, list: u8) {
        let (b1, b2) = (self.q.used[B1 as usize] as f64, self.q.used[B2 as usize] as f64);
        self.found_in_b2 = list == B2;
        if list == B1 {
            self.p = c_min(self.p + c_max(b2 / b1, 1.0), self.capacity as f64);
        } else {
            self.p = c_max(self.p - c_max(b1 / b2, 1.0), 0.0);
        }
        self.q.detach(n);
    }

    /// The paper's REPLACE: demote the LRU entry of T1 or of T2 to its ghost list.
    #[inline]
    fn replace(&mut self) {
        let t1 = self.q.used[T1 as usize];
        let t1_over = t1 as f64 > self.p || (t1 as f64 == self.p && self.found_in_b2);
        let (from, to) = if (t1 > 0 && t1_over) || self.q.used[T2 as usize] == 0 { (T1, B1) } else { (T2, B2) };
        let victim = self.q.tail(from);
        debug_assert!(victim != NIL);
        self.q.move_to_head(victim, to);
    }

    /// Makes room for one more object of `size` (libCacheSim's ARC_evict).
    #[inline]
    fn evict(&mut self, size: u32, ghost_hit: bool) {
        if ghost_hit {
            return self.replace();
        }
        let used = self.q.used;
        let (t1, t2, b1, b2) = (used[T1 as usize], used[T2 as usize], used[B1 as usize], used[B2 as usize]);
        if t1 + b1 + u64::from(size) > self.capacity {
            if b1 > 0 {
                self.q.delete(self.q.tail(B1));
                self.replace();
            } else {
                self.q.delete(self.q.tail(T1));
            }
        } else {
            if t1 + b1 + t2 + b2 >= 2 * self.capacity && b2 > 0 {
                self.q.delete(self.q.tail(B2));
            }
            self.replace();
        }
    }

    #[inline]
    fn resident_used(&self) -> u64 {
        self.q.used[T1 as usize] + self.q.used[T2 as usize]
    }
}

impl Registered for ArcCache {
    const SPEC: Spec = Spec::plain("arc", "ARC", "adaptive replacement cache (FAST 2003): an LRU list for keys seen once and one for keys seen again, their split tuned by ghost lists of recently evicted keys");

    fn build(capacity: u64, _params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<ArcCache, String> {
        Ok(ArcCache::new(capacity))
    }

    fn emptied(&self) -> ArcCache {
        ArcCache::new(self.capacity)
    }
}

impl Policy for ArcCache {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        let fits = u64::from(size) <= self.capacity;
        let (n, ghost_hit) = match self.q.find_or_reserve(key, size, fits) {
            Lookup::Found(n) => {
                self.found_in_b2 = false;
                let list = self.q.node(n).queue;
                if list == T1 || list == T2 {
                    self.q.move_to_head(n, T2);
                    return true;
                }
                self.ghost_hit(n, list);
                if !fits {
                    self.q.delete(n);
                    return false;
                }
                self.q.node_mut(n).size = size;
                (n, true)
            }
            Lookup::Reserved(n) => (n, false),
            Lookup::Absent => return false,
        };
        while self.resident_used() + u64::from(size) > self.capacity {
            self.evict(size, ghost_hit);
        }
        if ghost_hit {
            self.found_in_b2 = false;
            self.q.link(n, T2);
        } else {
            self.q.link(n, T1);
        }
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.q.find(key) {
            Some(n) if matches!(self.q.node(n).queue, T1 | T2) => {
                self.q.delete(n);
                true
            }
            _ => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.q.find(key).is_some_and(|n| matches!(self.q.node(n).queue, T1 | T2))
    }

    fn len(&self) -> usize {
        self.q.len[T1 as usize] + self.q.len[T2 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arc_after(capacity: u64, keys: &[u64]) -> (ArcCache, Vec<bool>) {
        let mut arc = ArcCache::new(capacity);
        let hits = keys.iter().map(|&k| arc.access(k, 1)).collect();
        (arc, hits)
    }

    #[test]
    fn a_second_hit_promotes_to_t2_and_scans_stay_in_t1() {
        // c = 3. 1 2 3 fill T1; 1 hits and moves to T2; 4 misses (T1+B1 = 2 < 3, so REPLACE: |T1| = 2 > p = 0
        // demotes T1's LRU, 2, to B1).
        let (arc, hits) = arc_after(3, &[1, 2, 3, 1, 4]);
        assert_eq!(hits, [false, false, false, true, false]);
        assert_eq!(arc.lists(), [vec![4, 3], vec![1], vec![2], vec![]]);
        assert_eq!(arc.len(), 3);
    }

    #[test]
    fn ghost_hits_adapt_p() {
        // Continuing: 2 is in B1, so p grows by max(|B2|/|B1|, 1) = 1 and 2 enters T2. Room comes from REPLACE:
        // |T1| = 2 > p = 1, so T1's LRU (3) goes to B1.
        let (mut arc, _) = arc_after(3, &[1, 2, 3, 1, 4]);
        assert!(!arc.access(2, 1));
        assert_eq!(arc.target_t1(), 1.0);
        assert_eq!(arc.lists(), [vec![4], vec![2, 1], vec![3], vec![]]);
        // 5 is new: T1 + B1 + 1 = 3 is not over c, the lists hold 4 < 2c, so REPLACE: |T1| = 1 = p and this is
        // not a B2 hit, so T2's LRU (1) goes to B2.
        assert!(!arc.access(5, 1));
        assert_eq!(arc.lists(), [vec![5, 4], vec![2], vec![3], vec![1]]);
        // 1 is in B2: p shrinks by max(|B1|/|B2|, 1) = 1 to 0; REPLACE demotes T1's LRU (4) since |T1| = 2 > 0.
        assert!(!arc.access(1, 1));
        assert_eq!(arc.target_t1(), 0.0);
        assert_eq!(arc.lists(), [vec![5], vec![1, 2], vec![4, 3], vec![]]);
    }

    #[test]
    fn case_iv_trims_b1_or_drops_t1_lru() {
        // c = 2: 1 2 fill T1; 3: T1 + B1 + 1 = 3 > 2 and B1 is empty, so T1's LRU (1) is dropped outright.
        let (mut arc, _) = arc_after(2, &[1, 2, 3]);
        assert_eq!(arc.lists(), [vec![3, 2], vec![], vec![], vec![]]);
        // 2 hits (to T2); 4: T1 + B1 + 1 = 2 is not over c, REPLACE moves T1's LRU (3) to B1.
        assert!(arc.access(2, 1));
        arc.access(4, 1);
        assert_eq!(arc.lists(), [vec![4], vec![2], vec![3], vec![]]);
        // 5: T1 + B1 + 1 = 3 > 2 and B1 is not empty: B1's LRU (3) is forgotten, then REPLACE (|T1| = 1 > p = 0).
        arc.access(5, 1);
        assert_eq!(arc.lists(), [vec![5], vec![2], vec![4], vec![]]);
    }

    #[test]
    fn sizes_count_against_the_capacity() {
        let mut arc = ArcCache::new(10);
        arc.access(1, 4);
        arc.access(2, 4);
        assert!(!arc.access(3, 11)); // larger than the cache: not admitted, nothing moves
        assert_eq!(arc.lists(), [vec![2, 1], vec![], vec![], vec![]]);
        // 6 more: T1 + B1 + 6 = 14 > 10, B1 empty: drop T1's LRU (1, 4 bytes); 4 + 6 fits.
        arc.access(4, 6);
        assert_eq!(arc.lists(), [vec![4, 2], vec![], vec![], vec![]]);
        assert!(arc.access(2, 4));
        // 5 (3 bytes): T1 + B1 + 3 = 9 fits the T1 budget; REPLACE (|T1| = 6 > p = 0) demotes 4 (6 bytes) to B1.
        arc.access(5, 3);
        assert_eq!(arc.lists(), [vec![5], vec![2], vec![4], vec![]]);
        // 4 in B1 (6 bytes; B2 empty): p += max(0 / 6, 1) = 1. REPLACE until 6 fits: |T1| = 3 > 1 demotes 5.
        assert!(!arc.access(4, 6));
        assert_eq!(arc.target_t1(), 1.0);
        assert_eq!(arc.lists(), [vec![], vec![4, 2], vec![5], vec![]]);
        assert_eq!(arc.len(), 2);
    }

    #[test]
    fn remove_drops_residents_and_keeps_ghosts() {
        let (mut arc, _) = arc_after(3, &[1, 2, 3, 1, 4]); // T1 [4 3], T2 [1], B1 [2]
        assert!(arc.remove(1));
        assert!(!arc.remove(1));
        assert!(!arc.remove(2)); // a ghost: not resident, and still remembered
        assert_eq!(arc.lists(), [vec![4, 3], vec![], vec![2], vec![]]);
        assert!(!arc.access(2, 1)); // a ghost hit: p adapts, 2 enters T2 (no eviction needed)
        assert_eq!(arc.target_t1(), 1.0);
        assert_eq!(arc.lists(), [vec![4, 3], vec![2], vec![], vec![]]);
    }

    #[test]
    fn capacity_one() {
        let (arc, hits) = arc_after(1, &[7, 7, 8, 7, 8, 8]);
        assert_eq!(hits, [false, true, false, false, false, true]);
        assert_eq!(arc.len(), 1);
    }
}
