//! 2Q (Johnson & Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement Algorithm",
//! VLDB 1994), the full version with A1in, A1out and Am, with libCacheSim's semantics.
//!
//! A key seen for the first time enters A1in, a FIFO of `kin` of the capacity; hits there change nothing,
//! so a burst of references to a new key counts once. Keys that leave A1in are remembered, without their
//! values, in A1out, a FIFO ghost of `kout` of the capacity. A miss on a key still in A1out is a key that
//! came back after its burst: it enters Am, the main LRU, which holds the rest of the capacity. To make
//! room, A1in gives up its oldest entry (to A1out) while it is over its share, else Am its least recent.
//! The paper recommends Kin = 25% and Kout = 50% (of the cache's page slots), libCacheSim's defaults too.
//!
//! Following libCacheSim (`cache/eviction/TwoQ.c`) exactly, so that hit counts are equal:
//! - queue budgets are in units of `size` (entries, or bytes): A1in gets floor(c * kin), A1out
//!   floor(c * kout), Am the rest; A1in may run over its share while the whole cache has room;
//! - an object larger than A1in's share is never admitted (nor, so, anything when that share rounds down to
//!   0, which is why the constructor refuses such a capacity);
//! - a key coming back from A1out enters Am, evicting from Am alone until it fits Am's budget;
//! - a hit does not change the size an entry was admitted with.
//!
//! `remove` (an invalidation or an expiry) drops a resident entry and leaves A1out alone: ghosts record
//! accesses, which a write does not undo (libCacheSim's remove would also forgo a ghost; removal is never
//! part of the runs compared with it).
//!
//! Where libCacheSim would evict from an empty Am (possible only with kin above 0.5), A1in gives up its
//! oldest entry instead.

use std::sync::Arc;

use super::queues::{Lookup, Queues};
use super::{Param, Policy, Registered, Spec};

const AIN: u8 = 0;
const AOUT: u8 = 1;
const AM: u8 = 2;

pub struct TwoQ {
    capacity: u64,
    ain_cap: u64,
    aout_cap: u64,
    am_cap: u64,
    q: Queues<3>,
}

impl TwoQ {
    /// `kin`, `kout`: the shares of the capacity for A1in and for the A1out ghosts.
    pub fn new(capacity: u64, kin: f64, kout: f64) -> Result<TwoQ, String> {
        if !(kin > 0.0 && kin < 1.0) {
            return Err(format!("2q: kin must be between 0 and 1, not {kin}"));
        }
        if !(kout.is_finite() && kout >= 0.0) {
            return Err(format!("2q: kout must be a share of the capacity, at least 0, not {kout}"));
        }
        // As libCacheSim computes them: the product in double precision, truncated.
        let ain_cap = (capacity as f64 * kin) as u64;
        let aout_cap = (capacity as f64 * kout) as u64;
        if ain_cap == 0 {
            return Err(format!(
                "2q: a capacity of {capacity} leaves no room for A1in (kin = {kin}), so nothing could be admitted; \
                 give at least {}",
                (1.0 / kin).ceil()
            ));
        }
        Ok(TwoQ { capacity, ain_cap, aout_cap, am_cap: capacity - ain_cap, q: Queues::new() })
    }

    /// Keys of A1in, A1out and Am, each from newest (most recent) to oldest (for tests and inspection).
    pub fn queues(&self) -> [Vec<u64>; 3] {
        [self.q.keys(AIN), self.q.keys(AOUT), self.q.keys(AM)]
    }

    /// Makes room in the whole cache: A1in's oldest entry moves to A1out while A1in is over its share.
    #[inline]
    fn evict(&mut self) {
        if self.q.used[AIN as usize] > self.ain_cap || self.q.len[AM as usize] == 0 {
            let n = self.q.tail(AIN);
            let size = self.q.node(n).size;
            if u64::from(size) > self.aout_cap {
                self.q.delete(n);
                return;
            }
            while self.q.used[AOUT as usize] + u64::from(size) > self.aout_cap {
                self.q.delete(self.q.tail(AOUT));
            }
            self.q.move_to_head(n, AOUT);
        } else {
            self.q.delete(self.q.tail(AM));
        }
    }
}

impl Registered for TwoQ {
    const SPEC: Spec = Spec {
        keyword: "two_q",
        params: &[
            Param { name: "kin", default: 0.25, help: "share of the capacity for A1in" },
            Param { name: "kout", default: 0.5, help: "size of A1out as a share of the capacity (ghosts hold keys only)" },
        ],
        ..Spec::plain("2q", "2Q", "2Q (VLDB 1994): first references pass through a FIFO (A1in) whose evicted keys are \
                      remembered (A1out); keys that come back from there enter the main LRU (Am)")
    };

    fn build(capacity: u64, params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<TwoQ, String> {
        TwoQ::new(capacity, params[0], params[1])
    }

    fn emptied(&self) -> TwoQ {
        TwoQ { q: Queues::new(), ..*self }
    }
}

impl Policy for TwoQ {
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        let size64 = u64::from(size);
        let fits = size64 <= self.ain_cap && size64 <= self.capacity;
        let (n, returning) = match self.q.find_or_reserve(key, size, fits) {
            Lookup::Found(n) => match self.q.node(n).queue {
                AIN => return true,
                AM => {
                    self.q.move_to_head(n, AM);
                    return true;
                }
                _ => {
                    if !fits {
                        self.q.delete(n);
                        return false;
                    }
                    self.q.detach(n);
                    self.q.node_mut(n).size = size;
                    (n, true)
                }
            },
            Lookup::Reserved(n) => (n, false),
            Lookup::Absent => return false,
        };
        while self.q.used[AIN as usize] + self.q.used[AM as usize] + size64 > self.capacity {
            self.evict();
        }
        if !returning {
            self.q.link(n, AIN);
        } else if size64 <= self.am_cap {
            while self.q.used[AM as usize] + size64 > self.am_cap {
                self.q.delete(self.q.tail(AM));
            }
            self.q.link(n, AM);
        } else {
            self.q.delete(n);
        }
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.q.find(key) {
            Some(n) if self.q.node(n).queue != AOUT => {
                self.q.delete(n);
                true
            }
            _ => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.q.find(key).is_some_and(|n| self.q.node(n).queue != AOUT)
    }

    fn len(&self) -> usize {
        self.q.len[AIN as usize] + self.q.len[AM as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_q_after(capacity: u64, keys: &[u64]) -> (TwoQ, Vec<bool>) {
        let mut q = TwoQ::new(capacity, 0.25, 0.5).unwrap();
        let hits = keys.iter().map(|&k| q.access(k, 1)).collect();
        (q, hits)
    }

    #[test]
    fn first_references_pass_through_a1in_and_returning_keys_enter_am() {
        // c = 4: A1in share 1, A1out 2, Am 3. 1 2 3 4 fill A1in (over its share, but the cache has room); 1 hits
        // and changes nothing.
        let (mut q, hits) = two_q_after(4, &[1, 2, 3, 4, 1]);
        assert_eq!(hits, [false, false, false, false, true]);
        assert_eq!(q.queues(), [vec![4, 3, 2, 1], vec![], vec![]]);
        // 5: A1in is over its share: its oldest (1) goes to A1out.
        q.access(5, 1);
        assert_eq!(q.queues(), [vec![5, 4, 3, 2], vec![1], vec![]]);
        q.access(6, 1);
        q.access(7, 1); // A1out holds 2: 1 is forgotten when 3 arrives
        assert_eq!(q.queues(), [vec![7, 6, 5, 4], vec![3, 2], vec![]]);
        // 2 comes back: a miss, it leaves A1out; A1in (4 > 1) gives up 4 to A1out; 2 enters Am.
        assert!(!q.access(2, 1));
        assert_eq!(q.queues(), [vec![7, 6, 5], vec![4, 3], vec![2]]);
        assert!(q.access(2, 1));
        assert_eq!(q.len(), 4);
    }

    #[test]
    fn am_is_lru_and_a1in_keeps_its_share() {
        // 5 pushes 1 to A1out; 1 and 2 come back (each pushing A1in's oldest to A1out) and enter Am.
        let (mut q, _) = two_q_after(4, &[1, 2, 3, 4, 5, 1, 2]);
        assert_eq!(q.queues(), [vec![5, 4], vec![3], vec![2, 1]]);
        assert!(q.access(1, 1)); // Am is an LRU: 1 is now its most recent
        // 3 returns: A1in (2) is over its share of 1, so 4 moves to A1out; then 3 enters Am.
        assert!(!q.access(3, 1));
        assert_eq!(q.queues(), [vec![5], vec![4], vec![3, 1, 2]]);
        // 6: A1in (1) is within its share, so Am's least recent (2) goes; A1in grows to 2.
        q.access(6, 1);
        assert_eq!(q.queues(), [vec![6, 5], vec![4], vec![3, 1]]);
    }

    #[test]
    fn sizes_count_against_each_share() {
        let mut q = TwoQ::new(40, 0.25, 0.5).unwrap(); // A1in 10, A1out 20, Am 30
        assert!(!q.access(1, 11)); // larger than A1in's share: never admitted
        assert_eq!(q.len(), 0);
        for (k, s) in [(1, 10), (2, 10), (3, 10), (4, 10)] {
            q.access(k, s);
        }
        q.access(5, 5); // A1in (40) over its share: 1 goes to A1out
        assert_eq!(q.queues(), [vec![5, 4, 3, 2], vec![1], vec![]]);
        q.access(6, 8); // 35 + 8 > 40: 2 goes to A1out, and then 8 fits
        assert_eq!(q.queues(), [vec![6, 5, 4, 3], vec![2, 1], vec![]]);
        assert!(!q.access(2, 10)); // returns: leaves A1out; A1in (33 > 10) gives up 3; 2 enters Am
        assert_eq!(q.queues(), [vec![6, 5, 4], vec![3, 1], vec![2]]);
        q.access(7, 10); // A1in gives up 4; A1out (20 + 10 > 20) forgets 1 to hold it
        assert_eq!(q.queues(), [vec![7, 6, 5], vec![4, 3], vec![2]]);
    }

    #[test]
    fn remove_drops_residents_and_keeps_ghosts() {
        let (mut q, _) = two_q_after(4, &[1, 2, 3, 4, 5, 6]); // A1in [6 5 4 3], A1out [2 1]
        assert!(q.remove(6));
        assert!(!q.remove(6));
        assert!(!q.remove(1)); // a ghost: not resident, and still remembered
        assert_eq!(q.queues(), [vec![5, 4, 3], vec![2, 1], vec![]]);
        assert!(!q.access(1, 1)); // a returning key: enters Am
        assert_eq!(q.queues(), [vec![5, 4, 3], vec![2], vec![1]]);
    }

    #[test]
    fn a_capacity_that_leaves_a1in_empty_is_refused() {
        assert!(TwoQ::new(3, 0.25, 0.5).is_err());
        assert!(TwoQ::new(4, 0.25, 0.5).is_ok());
        assert!(TwoQ::new(100, 0.0, 0.5).is_err());
        assert!(TwoQ::new(100, 0.25, f64::NAN).is_err());
    }
}
