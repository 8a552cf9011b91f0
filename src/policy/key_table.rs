//! A table from u64 cache keys to small values, in one open-addressed array (linear probing), whose slot for
//! a key can be prefetched before the key is looked up. `KeySet` is the table without values.
//!
//! The infinite cache holds every unique key of a trace, and an LRU of 10 M entries as many: tables far past
//! the processor's caches, so each lookup waits for memory. A hash table that hides its layout (hashbrown)
//! cannot be asked to start loading a key's slot while earlier keys are handled; this one can (`prefetch`).
//! Cache keys are already hashes, so a key's home slot is its bits after one `mix64`. Removal shifts the
//! following run back (no tombstones), so lookups stay as short as inserts made them.

use crate::hash::mix64;

/// Slot key of an empty slot. The key 0 itself is held apart (`zero`).
const EMPTY: u64 = 0;
/// Slots in the first table.
const FIRST_SLOTS: usize = 1 << 10;

pub struct KeyTable<V: Copy> {
    /// (key, value); a value beside its key, so that a lookup loads one cache line.
    slots: Vec<(u64, V)>,
    mask: usize,
    /// Keys in `slots` (the key 0 not counted).
    len: usize,
    zero: Option<V>,
}

/// A set of keys: the table with nothing beside each key (8 bytes a slot).
pub type KeySet = KeyTable<()>;

impl<V: Copy + Default> Default for KeyTable<V> {
    fn default() -> KeyTable<V> {
        KeyTable { slots: vec![(EMPTY, V::default()); FIRST_SLOTS], mask: FIRST_SLOTS - 1, len: 0, zero: None }
    }
}

impl<V: Copy + Default> KeyTable<V> {
    #[inline]
    fn home(&self, key: u64) -> usize {
        mix64(key) as usize & self.mask
    }

    /// Starts loading the slot where `key`'s search begins.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        super::prefetch(&self.slots[self.home(key)]);
    }

    /// Whether the table has outgrown a core's caches (over 4 MiB of slots), where prefetching pays.
    #[inline]
    pub fn is_large(&self) -> bool {
        self.slots.len() * std::mem::size_of::<(u64, V)>() > 1 << 22
    }

    /// The value of `key`, if there.
    #[inline]
    pub fn get(&self, key: u64) -> Option<V> {
        if key == EMPTY {
            return self.zero;
        }
        let (i, found) = self.probe(key);
        found.then(|| self.slots[i].1)
    }

    pub fn contains(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Adds `key` with `value` unless it is there (its value then unchanged); true if it was not there.
    #[inline]
    pub fn insert(&mut self, key: u64, value: V) -> bool {
        if key == EMPTY {
            return self.zero.replace(self.zero.unwrap_or(value)).is_none();
        }
        let (i, found) = self.probe(key);
        if found {
            return false;
        }
        self.slots[i] = (key, value);
        self.len += 1;
        // At most 3/4 full: linear probing's runs stay short.
        if self.len * 4 > self.slots.len() * 3 {
            self.grow();
        }
        true
    }

    /// The slot holding `key` (true), or the empty slot that ends its run, where it would go (false).
    #[inline]
    fn probe(&self, key: u64) -> (usize, bool) {
        let mut i = self.home(key);
        loop {
            match self.slots[i].0 {
                EMPTY => return (i, false),
                k if k == key => return (i, true),
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    /// Drops `key`; its value if it was there.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<V> {
        if key == EMPTY {
            return self.zero.take();
        }
        let (mut hole, found) = self.probe(key);
        if !found {
            return None;
        }
        let value = self.slots[hole].1;
        // Backward shift: a key after the hole whose home is not between the hole and it moves into the hole.
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let slot = self.slots[i];
            if slot.0 == EMPTY {
                break;
            }
            let home = self.home(slot.0);
            let stays = if hole <= i { hole < home && home <= i } else { hole < home || home <= i };
            if !stays {
                self.slots[hole] = slot;
                hole = i;
            }
        }
        self.slots[hole].0 = EMPTY;
        self.len -= 1;
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.len + usize::from(self.zero.is_some())
    }

    fn grow(&mut self) {
        let bigger = vec![(EMPTY, V::default()); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s.0 != EMPTY) {
            let mut i = self.home(slot.0);
            while self.slots[i].0 != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KeySet, KeyTable};
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #[test]
        fn behaves_as_a_hash_map(ops in proptest::collection::vec((0u8..3, 0u64..600, any::<u32>()), 0..5000)) {
            // Keys from a small range (0 included) so that inserts, repeats and removals meet, across growths.
            let (mut ours, mut theirs) = (KeyTable::<u32>::default(), HashMap::new());
            for (op, key, value) in ops {
                let key = if key % 7 == 0 { key } else { key.wrapping_mul(0x9e37_79b9_7f4a_7c15) };
                match op {
                    0 => {
                        let added = !theirs.contains_key(&key);
                        theirs.entry(key).or_insert(value);
                        prop_assert_eq!(ours.insert(key, value), added);
                    }
                    1 => prop_assert_eq!(ours.remove(key), theirs.remove(&key)),
                    _ => prop_assert_eq!(ours.get(key), theirs.get(&key).copied()),
                }
                prop_assert_eq!(ours.len(), theirs.len());
            }
            for (k, v) in &theirs {
                prop_assert_eq!(ours.get(*k), Some(*v));
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
            assert!(s.insert(k, ()));
        }
        for &k in keys.iter().step_by(3) {
            assert!(s.remove(k).is_some());
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(s.contains(k), i % 3 != 0, "key {i}");
        }
    }
}
