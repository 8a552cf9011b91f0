//! S3-FIFO (Yang, Zhang, Qiu, Yue & Vinayak, "FIFO Queues are All You Need for Cache Eviction", SOSP 2023),
//! with libCacheSim's semantics.
//!
//! Three FIFO queues and no list moves on a hit, only a small counter: a key seen for the first time enters
//! the small queue (10% of the capacity); most such keys are one-hit wonders and leave it quickly. When the
//! small queue's oldest entry was hit at least `move_to_main_threshold` times it moves to the main queue,
//! otherwise it is evicted and remembered in the ghost queue (keys only, 90% of the capacity). A miss on a
//! key still in the ghost queue sends it straight to main. Main is a FIFO with reinsertion (a CLOCK with a
//! 2-bit counter): its oldest entry, if hit since it was (re)inserted, goes back to the newest end with its
//! counter, capped at 3, minus one; else it is evicted. Main is evicted from when it is over its share or
//! the small queue is empty, the small queue otherwise.
//!
//! Following libCacheSim (`cache/eviction/S3FIFO.c`, the version that fills main once small is full before
//! the first eviction) exactly, so that hit counts are equal:
//! - queue budgets are in units of `size` (entries, or bytes): small gets floor(c * small_ratio), main the
//!   rest, ghost floor(c * ghost_ratio), products taken in double precision as there;
//! - before the cache first evicts, a new key goes to main once the small queue is full;
//! - an object at least as large as the small queue is not admitted (libCacheSim: it would flush the small
//!   queue), unless it comes back from the ghost queue; the room for it has been made all the same. With
//!   unit sizes a capacity below 20 would therefore admit nothing (libCacheSim returns 0 hits, and aborts
//!   below 10), so the constructor refuses a small queue smaller than 2;
//! - a hit does not change the size an entry was admitted with.
//!
//! `remove` (an invalidation or an expiry) drops a resident entry and leaves the ghost queue alone: ghosts
//! record accesses, which a write does not undo (libCacheSim's remove would also forgo a ghost; removal is
//! never part of the runs compared with it).
//!
//! Counters saturate at 65535, which changes no comparison as thresholds are at most that.

use std::sync::Arc;

use super::queues::{Lookup, Queues};
use super::{Param, Policy, Registered, Spec};

const SMALL: u8 = 0;
const MAIN: u8 = 1;
const GHOST: u8 = 2;

pub struct S3Fifo {
    capacity: u64,
    small_cap: u64,
    main_cap: u64,
    ghost_cap: u64,
    threshold: u16,
    /// Whether the cache has evicted yet (libCacheSim's `has_evicted`).
    has_evicted: bool,
    q: Queues<3>,
}

impl S3Fifo {
    pub fn new(capacity: u64, small_ratio: f64, ghost_ratio: f64, move_to_main_threshold: u16) -> Result<S3Fifo, String> {
        if !(small_ratio > 0.0 && small_ratio < 1.0) {
            return Err(format!("s3fifo: small_ratio must be between 0 and 1, not {small_ratio}"));
        }
        if !(ghost_ratio.is_finite() && ghost_ratio >= 0.0) {
            return Err(format!("s3fifo: ghost_ratio must be a share of the capacity, at least 0, not {ghost_ratio}"));
        }
        let small_cap = (capacity as f64 * small_ratio) as u64;
        if small_cap < 2 {
            return Err(format!(
                "s3fifo: a capacity of {capacity} gives a small queue of {small_cap} (small_ratio = {small_ratio}), \
                 and S3-FIFO admits only objects smaller than the small queue; give at least {}",
                min_capacity(small_ratio)
            ));
        }
        Ok(S3Fifo {
            capacity,
            small_cap,
            main_cap: capacity - small_cap,
            ghost_cap: (capacity as f64 * ghost_ratio) as u64,
            threshold: move_to_main_threshold,
            has_evicted: false,
            q: Queues::new(),
        })
    }

    /// Keys of the small, main and ghost queues, each from newest to oldest (for tests and inspection).
    pub fn queues(&self) -> [Vec<u64>; 3] {
        [self.q.keys(SMALL), self.q.keys(MAIN), self.q.keys(GHOST)]
    }

    /// Evicts one entry from the small queue, moving the ones hit often enough to main on the way.
    #[inline]
    fn evict_small(&mut self) {
        while self.q.used[SMALL as usize] > 0 {
            let n = self.q.tail(SMALL);
            let node = self.q.node_mut(n);
            if node.freq >= self.threshold {
                node.freq = 0;
                self.q.move_to_head(n, MAIN);
                continue;
            }
            let size = u64::from(node.size);
            if size > self.ghost_cap {
                self.q.delete(n);
            } else {
                while self.q.used[GHOST as usize] + size > self.ghost_cap {
                    self.q.delete(self.q.tail(GHOST));
                }
                self.q.move_to_head(n, GHOST);
            }
            return;
        }
    }

    /// Evicts one entry from main, giving hit entries another round.
    #[inline]
    fn evict_main(&mut self) {
        while self.q.used[MAIN as usize] > 0 {
            let n = self.q.tail(MAIN);
            let node = self.q.node_mut(n);
            if node.freq == 0 {
                self.q.delete(n);
                return;
            }
            node.freq = node.freq.min(3) - 1;
            self.q.move_to_head(n, MAIN);
        }
    }
}

/// The least capacity whose small queue holds 2 units (for the error message).
fn min_capacity(small_ratio: f64) -> u64 {
    let base = (2.0 / small_ratio).floor() as u64;
    // floor(2 / r) is at most a rounding step short; beyond 2^53 the float steps are coarser than 1 anyway.
    (0..4).map(|i| base.saturating_add(i)).find(|&c| c as f64 * small_ratio >= 2.0).unwrap_or(base)
}

impl Registered for S3Fifo {
    const SPEC: Spec = Spec {
        params: &[
            Param { name: "small_ratio", default: 0.1, help: "share of the capacity for the small queue" },
            Param { name: "ghost_ratio", default: 0.9, help: "size of the ghost queue as a share of the capacity (keys only)" },
            Param { name: "move_to_main_threshold", default: 2.0, help: "hits in the small queue that earn a key main" },
        ],
        ..Spec::plain("s3fifo", "S3-FIFO", "S3-FIFO (SOSP 2023): a small FIFO for new keys, a main FIFO with \
                      reinsertion for keys hit there or back from the ghost FIFO of evicted keys")
    };

    fn build(capacity: u64, params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<S3Fifo, String> {
        let [small, ghost, threshold] = [params[0], params[1], params[2]];
        if !(threshold >= 0.0 && threshold <= f64::from(u16::MAX) && threshold.fract() == 0.0) {
            return Err(format!("s3fifo: move_to_main_threshold must be a whole number of hits, not {threshold}"));
        }
        S3Fifo::new(capacity, small, ghost, threshold as u16)
    }

    fn emptied(&self) -> S3Fifo {
        S3Fifo { has_evicted: false, q: Queues::new(), ..*self }
    }
}

impl Policy for S3Fifo {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        let size64 = u64::from(size);
        // A new key is admitted only if smaller than the small queue; one back from the ghost if no larger.
        let fits_new = size64 < self.small_cap;
        let fits = size64 <= self.small_cap && size64 <= self.capacity;
        let admitted = match self.q.find_or_reserve(key, size, fits_new) {
            Lookup::Found(n) if self.q.node(n).queue != GHOST => {
                let node = self.q.node_mut(n);
                node.freq = node.freq.saturating_add(1);
                return true;
            }
            Lookup::Found(n) => {
                if !fits {
                    self.q.delete(n);
                    return false;
                }
                self.q.detach(n);
                let node = self.q.node_mut(n);
                (node.size, node.freq) = (size, 0);
                Some((n, true))
            }
            Lookup::Reserved(n) => Some((n, false)),
            // Too large to admit; libCacheSim makes the room all the same when it is no larger than small.
            Lookup::Absent if fits => None,
            Lookup::Absent => return false,
        };
        while self.q.used[SMALL as usize] + self.q.used[MAIN as usize] + size64 > self.capacity {
            self.has_evicted = true;
            if self.q.used[MAIN as usize] > self.main_cap || self.q.used[SMALL as usize] == 0 {
                self.evict_main();
            } else {
                self.evict_small();
            }
        }
        match admitted {
            Some((n, true)) => self.q.link(n, MAIN),
            Some((n, false)) => {
                let small_full = self.q.used[SMALL as usize] >= self.small_cap;
                self.q.link(n, if !self.has_evicted && small_full { MAIN } else { SMALL });
            }
            None => {}
        }
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.q.find(key) {
            Some(n) if self.q.node(n).queue != GHOST => {
                self.q.delete(n);
                true
            }
            _ => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.q.find(key).is_some_and(|n| self.q.node(n).queue != GHOST)
    }

    fn len(&self) -> usize {
        self.q.len[SMALL as usize] + self.q.len[MAIN as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3fifo_after(capacity: u64, keys: &[u64]) -> (S3Fifo, Vec<bool>) {
        let mut c = S3Fifo::new(capacity, 0.1, 0.9, 2).unwrap();
        let hits = keys.iter().map(|&k| c.access(k, 1)).collect();
        (c, hits)
    }

    #[test]
    fn fills_small_then_main_before_the_first_eviction() {
        // c = 20: small 2, main 18, ghost 18. Keys 1 and 2 fill small; 3..=20 go to main.
        let keys: Vec<u64> = (1..=20).collect();
        let (c, _) = s3fifo_after(20, &keys);
        let [small, main, ghost] = c.queues();
        assert_eq!(small, vec![2, 1]);
        assert_eq!(main, (3..=20).rev().collect::<Vec<_>>());
        assert!(ghost.is_empty());
    }

    #[test]
    fn one_hit_wonders_go_to_the_ghost_and_come_back_to_main() {
        let keys: Vec<u64> = (1..=20).collect();
        let (mut c, _) = s3fifo_after(20, &keys);
        assert!(c.access(2, 1));
        assert!(c.access(2, 1)); // 2 has now been hit twice in small
        // 21: main is within its share and small is not empty, so small evicts: its oldest, 1 (never hit),
        // goes to the ghost; 21 enters small.
        assert!(!c.access(21, 1));
        assert_eq!(c.queues()[0], vec![21, 2]);
        assert_eq!(c.queues()[2], vec![1]);
        // 22: small's oldest, 2, was hit twice, so it moves to main (now over its share) and small keeps going:
        // 21 goes to the ghost.
        assert!(!c.access(22, 1));
        assert_eq!(c.queues()[0], vec![22]);
        assert_eq!(c.queues()[1][0], 2);
        assert_eq!(c.queues()[2], vec![21, 1]);
        // 1 comes back from the ghost: main is over its share (19 > 18), so main evicts its oldest (3, never
        // hit); 1 goes straight to main.
        assert!(!c.access(1, 1));
        let [small, main, ghost] = c.queues();
        assert_eq!((small, ghost), (vec![22], vec![21]));
        assert_eq!(main[0], 1);
        assert!(!main.contains(&3));
        assert_eq!(c.len(), 20);
    }

    #[test]
    fn main_gives_hit_entries_another_round() {
        let keys: Vec<u64> = (1..=20).collect();
        let (mut c, _) = s3fifo_after(20, &keys);
        for _ in 0..5 {
            assert!(c.access(3, 1)); // main's oldest, counter capped at 3 when it is reinserted
        }
        assert!(c.access(4, 1));
        c.access(2, 1);
        c.access(2, 1);
        c.access(21, 1); // small evicts 1 to the ghost
        c.access(22, 1); // small moves 2 to main (now 19 > 18) and evicts 21
        c.access(23, 1); // main over its share: 3 (counter 5 -> 2) and 4 (1 -> 0) get another round, 5 goes
        let main = c.queues()[1].clone();
        assert_eq!(&main[..3], &[4, 3, 2]);
        assert!(!main.contains(&5));
        c.access(1, 1); // from the ghost to main (19 > 18); small evicts 22 to the ghost to make room
        assert_eq!(c.queues()[2], vec![22, 21]);
        c.access(24, 1); // main is over its share: its oldest, 6, goes
        assert!(!c.queues()[1].contains(&6));
        c.access(25, 1); // main is back at its share: small evicts 23
        assert_eq!(c.queues(), [vec![25, 24], [vec![1, 4, 3, 2], (7..=20).rev().collect()].concat(), vec![23, 22, 21]]);
    }

    #[test]
    fn sizes_count_against_each_queue() {
        let mut c = S3Fifo::new(100, 0.1, 0.9, 2).unwrap(); // small 10, main 90, ghost 90
        assert!(!c.access(1, 10)); // as large as the small queue: not admitted
        assert!(!c.access(1, 11));
        assert_eq!(c.len(), 0);
        c.access(1, 6);
        c.access(2, 4); // small full (10 >= 10)
        c.access(3, 9); // before any eviction: to main
        assert_eq!(c.queues(), [vec![2, 1], vec![3], vec![]]);
        for k in 4..=12 {
            c.access(k, 9); // main: 3..=12, 90 units; the cache is full
        }
        c.access(13, 5); // small evicts 1 (6) to the ghost; 2 + 5 fit
        assert_eq!(c.queues()[0], vec![13, 2]);
        assert_eq!(c.queues()[2], vec![1]);
        assert!(!c.access(1, 6)); // from the ghost to main (main over its share afterwards is fine)
        assert_eq!(c.queues()[1][0], 1);
    }

    #[test]
    fn remove_drops_residents_and_keeps_ghosts() {
        let keys: Vec<u64> = (1..=21).collect();
        let (mut c, _) = s3fifo_after(20, &keys); // 1 is a ghost
        assert_eq!(c.queues()[2], vec![1]);
        assert!(c.remove(21));
        assert!(!c.remove(21));
        assert!(!c.remove(1)); // a ghost: not resident, and still remembered
        assert_eq!(c.queues()[0], vec![2]);
        assert!(!c.access(1, 1)); // back from the ghost: to main, no eviction needed
        assert_eq!(c.queues()[1][0], 1);
        assert_eq!((c.queues()[2].len(), c.len()), (0, 20));
    }

    #[test]
    fn degenerate_configurations_are_refused() {
        assert!(S3Fifo::new(19, 0.1, 0.9, 2).is_err());
        assert!(S3Fifo::new(20, 0.1, 0.9, 2).is_ok());
        assert_eq!(min_capacity(0.1), 20);
        assert_eq!(min_capacity(0.3), 7);
        assert!(S3Fifo::new(100, 1.0, 0.9, 2).is_err());
        assert!(S3Fifo::new(100, 0.1, -1.0, 2).is_err());
        assert!(S3Fifo::new(100, 0.1, 0.0, 2).is_ok()); // no ghost queue at all
    }
}
