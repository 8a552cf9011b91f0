//! The memory a cache bounded in entries really holds: value + key + field + overhead bytes of its resident
//! entries (the README's memory model, the weight a byte-capacity run gives an entry), at its largest.
//!
//! A policy evicts inside `access` without saying which key, so the bytes are not followed entry by entry.
//! Each admission notes the key's weight; at checkpoints the notes of keys no longer resident are dropped
//! (`Policy::contains`) and the rest summed. Checkpoints come every `max(capacity, 64 Ki)` lookups and before
//! each restart, so a checkpoint costs about what the lookups since the last one did (the notes are at most
//! the resident entries plus the misses since), and the peak is the largest sum seen at any of them.

use crate::hash::KeyMap;
use crate::policy::Policy;

const MIN_CHECK_EVERY: u64 = 1 << 16;

pub struct ResidentBytes {
    pub entry_overhead: u32,
    /// The admitted weight of every key admitted since the last checkpoint or still resident at it.
    weights: KeyMap<u32>,
    peak: u64,
    since_check: u64,
    check_every: u64,
}

impl ResidentBytes {
    pub fn new(entry_overhead: u32, capacity: u64) -> ResidentBytes {
        ResidentBytes {
            entry_overhead,
            weights: KeyMap::default(),
            peak: 0,
            since_check: 0,
            check_every: capacity.max(MIN_CHECK_EVERY),
        }
    }

    /// A lookup of `key` that missed, with the weight its entry would have (a key the policy refused is
    /// dropped at the next checkpoint).
    #[inline]
    pub fn missed(&mut self, key: u64, weight: u32) {
        self.weights.insert(key, weight);
    }

    /// Counts a lookup; checks when one is due.
    #[inline]
    pub fn looked_up<P: Policy>(&mut self, p: &P) {
        self.since_check += 1;
        if self.since_check >= self.check_every {
            self.check(p);
        }
    }

    /// Drops the notes of keys no longer resident and takes the sum of the rest into the peak.
    pub fn check<P: Policy>(&mut self, p: &P) {
        self.weights.retain(|&k, _| p.contains(k));
        self.peak = self.peak.max(self.weights.values().map(|&w| u64::from(w)).sum());
        self.since_check = 0;
    }

    /// The cache was emptied (a restart): checked just before by the caller.
    pub fn emptied(&mut self) {
        self.weights.clear();
    }

    /// The largest resident bytes seen, the cache as it is now included.
    pub fn peak<P: Policy>(&self, p: &P) -> u64 {
        let now: u64 = self.weights.iter().filter(|(&k, _)| p.contains(k)).map(|(_, &w)| u64::from(w)).sum();
        self.peak.max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AnyPolicy;

    #[test]
    fn the_peak_is_the_largest_sum_of_resident_weights() {
        // An LRU of 2 entries: weights 10, 20, then 5 evicts the 10 (20 + 5 = 25 < 30, the peak).
        let mut p = AnyPolicy::new("lru", 2, None).unwrap();
        let mut r = ResidentBytes::new(0, 1);
        r.check_every = 1;
        for (key, weight) in [(1u64, 10u32), (2, 20), (3, 5)] {
            assert!(!p.access(key, 1));
            r.missed(key, weight);
            r.looked_up(&p);
        }
        assert_eq!(r.peak(&p), 30);
        assert_eq!(r.weights.len(), 2, "the evicted key's note was dropped at the checkpoint");
        let mut late = ResidentBytes::new(0, 1 << 20); // no checkpoint reached: the cache as it is now
        let mut q = AnyPolicy::new("lru", 2, None).unwrap();
        for (key, weight) in [(1u64, 10u32), (2, 20), (3, 5)] {
            q.access(key, 1);
            late.missed(key, weight);
            late.looked_up(&q);
        }
        assert_eq!(late.peak(&q), 25);
    }
}
