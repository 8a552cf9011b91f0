//! A set of u64 cache keys in one open-addressed table (linear probing), whose slot for a key can be
//! prefetched before the key is looked up.
//!
//! The infinite cache holds every unique key of a trace: tens of millions, a table far past the processor's
//! caches, so each lookup waits for memory. A hash table that hides its layout (hashbrown) cannot be asked to
//! start loading a key's slot while earlier keys are handled; this one can (`prefetch`). Cache keys are
//! already hashes, so a key's home slot is its bits after one `mix64`. Removal shifts the following run back
//! (no tombstones), so lookups stay as short as inserts made them.

use crate::hash::mix64;

/// Slot value of an empty slot. The key 0 itself is held apart (`has_zero`).
const EMPTY: u64 = 0;
/// Slots in the first table.
const FIRST_SLOTS: usize = 1 << 10;

pub struct KeySet {
    slots: Vec<u64>,
    mask: usize,
    /// Keys in `slots` (the key 0 not counted).
    len: usize,
    has_zero: bool,
}

impl Default for KeySet {
    fn default() -> KeySet {
        KeySet { slots: vec![EMPTY; FIRST_SLOTS], mask: FIRST_SLOTS - 1, len: 0, has_zero: false }
    }
}

impl KeySet {
    #[inline]
    fn home(&self, key: u64) -> usize {
        mix64(key) as usize & self.mask
    }

    /// Starts loading the slot where `key`'s search begins.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        super::prefetch(&self.slots[self.home(key)]);
    }

    /// Adds `key`; true if it was not there.
    #[inline]
    pub fn insert(&mut self, key: u64) -> bool {
        if key == EMPTY {
            return !std::mem::replace(&mut self.has_zero, true);
        }
        let (i, found) = self.probe(key);
        if found {
            return false;
        }
        self.slots[i] = key;
        self.len += 1;
        // At most 3/4 full: linear probing's runs stay short.
        if self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
        true
    }

    pub fn contains(&self, key: u64) -> bool {
        if key == EMPTY {
            return self.has_zero;
        }
        self.find(key).is_some()
    }

    fn find(&self, key: u64) -> Option<usize> {
        let (i, found) = self.probe(key);
        found.then_some(i)
    }

    /// The slot holding `key` (true), or the empty slot that ends its run, where it would go (false).
    #[inline]
    fn probe(&self, key: u64) -> (usize, bool) {
        let mut i = self.home(key);
        loop {
            match self.slots[i] {
                EMPTY => return (i, false),
                k if k == key => return (i, true),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    /// Drops `key`; true if it was there.
    pub fn remove(&mut self, key: u64) -> bool {
        if key == EMPTY {
            return std::mem::replace(&mut self.has_zero, false);
        }
        let Some(mut hole) = self.find(key) else { return false };
        // Backward shift: a key after the hole whose home is not between the hole and it moves into the hole.
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let k = self.slots[i];
            if k == EMPTY {
                break;
            }
            let home = self.home(k);
            let stays = if hole <= i { hole < home && home <= i } else { hole < home || home <= i };
            if !stays {
                self.slots[hole] = k;
                hole = i;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        true
    }

    pub fn len(&self) -> usize {
        self.len + usize::from(self.has_zero)
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.mask = self.slots.len() - 1;
        for k in old.into_iter().filter(|&k| k != EMPTY) {
            let mut i = self.home(k);
            while self.slots[i] != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeySet;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        #[test]
        fn behaves_as_a_hash_set(ops in proptest::collection::vec((0u8..3, 0u64..600), 0..5000)) {
            // Keys from a small range (0 included) so that inserts, repeats and removals meet, across growths.
            let (mut ours, mut theirs) = (KeySet::default(), HashSet::new());
            for (op, key) in ops {
                let key = if key % 7 == 0 { key } else { key.wrapping_mul(0x9e37_79b9_7f4a_7c15) };
                match op {
                    0 => prop_assert_eq!(ours.insert(key), theirs.insert(key)),
                    1 => prop_assert_eq!(ours.remove(key), theirs.remove(&key)),
                    _ => prop_assert_eq!(ours.contains(key), theirs.contains(&key)),
                }
                prop_assert_eq!(ours.len(), theirs.len());
            }
            for k in &theirs {
                prop_assert!(ours.contains(*k));
            }
        }
    }

    #[test]
    fn keys_sharing_a_home_slot_survive_removals_among_them() {
        // Keys whose home slots collide, removed from the middle of their run: the rest must still be found.
        let mut s = KeySet::default();
        let home = |k: u64| crate::hash::mix64(k) as usize & 1023;
        let keys: Vec<u64> = (1..).filter(|&k| home(k) >= 1020).take(40).collect();
        for &k in &keys {
            assert!(s.insert(k));
        }
        for &k in keys.iter().step_by(3) {
            assert!(s.remove(k));
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(s.contains(k), i % 3 != 0, "key {i}");
        }
    }
}
