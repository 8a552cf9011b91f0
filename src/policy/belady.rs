//! Belady's MIN (Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems
//! Journal 1966): on a miss with a full cache, evict the entry whose next use lies farthest in the future.
//! With unit sizes no policy gets more hits, so it is the upper bound for any real policy at that capacity.
//!
//! It needs the future: `next_access` computes, for every lookup of the stream the policy will see, the
//! position of the next lookup of the same key (`NEVER` if none), and the policy walks that array one
//! access at a time. The entries are ordered by next use in a B-tree, so a lookup costs O(log capacity).
//! As in libCacheSim, the missed key is always admitted (even when its own next use is the farthest), and
//! keys never used again are the first to go. With sizes, entries are evicted farthest-first until the
//! newcomer fits: a heuristic, not optimal (optimal variable-size caching is NP-hard).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Policy, Registered, Spec};
use crate::hash::{KeyMap, KeySet};

pub const NEVER: u64 = u64::MAX;

/// For each position, the next position holding the same key, or `NEVER`. Memory: 8 bytes a lookup plus
/// a table of the unique keys while it runs.
pub fn next_access(keys: &[u64]) -> Vec<u64> {
    let mut next = vec![NEVER; keys.len()];
    let mut seen: KeyMap<u64> = KeyMap::default();
    for (i, &k) in keys.iter().enumerate().rev() {
        if let Some(later) = seen.insert(k, i as u64) {
            next[i] = later;
        }
    }
    next
}

/// `next_access` of a trace too long to hold, a chunk at a time, last chunk first: the chunk's ids start at
/// position `start`; `keys` (sorted) and `later` map each key read after the chunk to its first read there.
/// Returns the chunk's next positions (-1: none) and the map updated with the chunk's first read of each key.
/// Memory: the map (16 bytes a unique key) and a table of the chunk's keys.
pub fn next_access_chunk(ids: &[u64], start: i64, keys: &[u64], later: &[i64]) -> (Vec<i64>, Vec<u64>, Vec<i64>) {
    let mut next = vec![-1i64; ids.len()];
    let mut first: KeyMap<i64> = KeyMap::default();
    for (i, &k) in ids.iter().enumerate().rev() {
        let pos = start + i as i64;
        next[i] = match first.insert(k, pos) {
            Some(p) => p,
            None => keys.binary_search(&k).map_or(-1, |j| later[j]),
        };
    }
    let mut new: Vec<(u64, i64)> = first.into_iter().collect();
    new.sort_unstable_by_key(|&(k, _)| k);
    let (mut out_keys, mut out_later) = (Vec::with_capacity(keys.len() + new.len()), Vec::with_capacity(keys.len() + new.len()));
    let (mut a, mut b) = (0, 0);
    while a < keys.len() || b < new.len() {
        if b == new.len() || (a < keys.len() && keys[a] < new[b].0) {
            out_keys.push(keys[a]);
            out_later.push(later[a]);
            a += 1;
        } else {
            if a < keys.len() && keys[a] == new[b].0 {
                a += 1; // the chunk's read is nearer than the one after it
            }
            out_keys.push(new[b].0);
            out_later.push(new[b].1);
            b += 1;
        }
    }
    (next, out_keys, out_later)
}

pub struct Belady {
    capacity: u64,
    used: u64,
    future: Arc<[u64]>,
    /// Position of the next access in `future`.
    pos: usize,
    /// key -> (next use, size)
    resident: KeyMap<(u64, u32)>,
    /// (next use, key) of every resident entry; the last is the next victim.
    by_next_use: BTreeSet<(u64, u64)>,
}

impl Belady {
    /// A cache at position `pos` of `future` (0 for a new simulation; a restart keeps the clock).
    pub fn new(capacity: u64, future: Arc<[u64]>, pos: usize) -> Belady {
        Belady { capacity, used: 0, future, pos, resident: KeyMap::default(), by_next_use: BTreeSet::new() }
    }

    /// Keys resident now (for tests).
    pub fn keys(&self) -> KeySet {
        self.resident.keys().copied().collect()
    }
}

impl Registered for Belady {
    const SPEC: Spec = Spec {
        needs_future: true,
        ..Spec::plain("belady", "Belady", "Belady's MIN, the optimal offline policy: evict the entry needed \
                      farthest in the future (an upper bound; reads the trace twice)")
    };

    fn build(capacity: u64, _params: &[f64], future: Option<&Arc<[u64]>>) -> Result<Belady, String> {
        let future = future.ok_or("belady needs the future: next_access of its lookups")?;
        Ok(Belady::new(capacity, future.clone(), 0))
    }

    /// The same cache emptied, at the same point of the stream.
    fn emptied(&self) -> Belady {
        Belady::new(self.capacity, self.future.clone(), self.pos)
    }
}

impl Policy for Belady {
    fn access(&mut self, key: u64, size: u32) -> bool {
        // Past the precomputed stream (a caller that looked up more than it announced): no future known.
        let next = self.future.get(self.pos).copied().unwrap_or(NEVER);
        self.pos += 1;
        if let Some(entry) = self.resident.get_mut(&key) {
            self.by_next_use.remove(&(entry.0, key));
            entry.0 = next;
            self.by_next_use.insert((next, key));
            return true;
        }
        if u64::from(size) > self.capacity {
            return false;
        }
        while self.used + u64::from(size) > self.capacity {
            let (_, victim) = self.by_next_use.pop_last().expect("a cache over capacity holds entries");
            let (_, victim_size) = self.resident.remove(&victim).expect("indexed entries are resident");
            self.used -= u64::from(victim_size);
        }
        self.resident.insert(key, (next, size));
        self.by_next_use.insert((next, key));
        self.used += u64::from(size);
        false
    }

    fn remove(&mut self, key: u64) -> bool {
        match self.resident.remove(&key) {
            Some((next, size)) => {
                self.by_next_use.remove(&(next, key));
                self.used -= u64::from(size);
                true
            }
            None => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.resident.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.resident.len()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn next_access_by_chunks_last_first_is_next_access() {
        let ids: Vec<u64> = (0..5000u64).map(|i| (i * 2654435761) % 97 + (i % 7) * (i % 3)).collect();
        let whole: Vec<i64> = next_access(&ids).iter().map(|&n| if n == NEVER { -1 } else { n as i64 }).collect();
        for chunk in [1usize, 13, 97, 5000] {
            let (mut keys, mut later, mut got) = (Vec::new(), Vec::new(), vec![0i64; ids.len()]);
            let mut start = (ids.len() - 1) / chunk * chunk;
            loop {
                let end = (start + chunk).min(ids.len());
                let (next, k, l) = next_access_chunk(&ids[start..end], start as i64, &keys, &later);
                got[start..end].copy_from_slice(&next);
                (keys, later) = (k, l);
                if start == 0 {
                    break;
                }
                start -= chunk;
            }
            assert_eq!(got, whole, "chunk {chunk}");
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
        }
    }
    use super::*;

    fn run(keys: &[u64], capacity: u64) -> u64 {
        let mut b = Belady::new(capacity, next_access(keys).into(), 0);
        keys.iter().map(|&k| b.access(k, 1) as u64).sum()
    }

    #[test]
    fn evicts_the_farthest_next_use() {
        // cap 2: 1m 2m 3m(evicts 2: next use of 1 is at 3, of 2 at 5, of 3 at 4) 1h 3h 2m
        assert_eq!(next_access(&[1, 2, 3, 1, 3, 2]), vec![3, 5, 4, NEVER, NEVER, NEVER]);
        assert_eq!(run(&[1, 2, 3, 1, 3, 2], 2), 2);
    }

    #[test]
    fn beats_or_ties_lru_on_a_loop() {
        // A loop of 3 keys in a cache of 2: LRU never hits; MIN, after the 3 cold misses, hits every other
        // lookup (positions 3, 5, ..., 29).
        let keys: Vec<u64> = (0..30).map(|i| i % 3).collect();
        assert_eq!(run(&keys, 2), 14);
        let mut lru = crate::policy::Lru::new(2);
        assert_eq!(keys.iter().filter(|&&k| lru.access(k, 1)).count(), 0);
    }

    #[test]
    fn an_emptied_cache_keeps_its_place_in_the_stream() {
        let keys = [1u64, 1, 1];
        let mut b = Belady::new(4, next_access(&keys).into(), 0);
        b.access(1, 1);
        let mut b = b.emptied();
        assert!(!b.access(1, 1));
        assert!(b.access(1, 1));
        assert_eq!(b.pos, 3);
    }
}
