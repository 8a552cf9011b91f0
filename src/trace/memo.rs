//! What a reader computes of a short string it meets again and again, remembered: the `key_hash` of each field
//! (a feature-store trace names a few hundred distinct fields, feature ids, millions of times, and hashing one
//! with xxh3 and Java's `String.hashCode` took a tenth of reading a `commands` trace), and the index of each
//! MONITOR client host (found in a table of byte strings under SipHash: a tenth of reading a MONITOR log).

use crate::hash::key_hash;

/// Slots of the table: more than the features of any one model's request, few enough to stay in L1.
const SLOTS: usize = 256;
/// Longer strings are computed every time (a feature id is a number or a short name; an IPv4 host fits).
const MAX_LEN: usize = 24;

#[derive(Clone, Copy)]
struct Slot {
    /// The field's length plus one (0: an empty slot).
    len: u8,
    bytes: [u8; MAX_LEN],
    id: u64,
}

/// A direct-mapped table of the last string seen at each slot, with what was computed of it.
pub struct Memo {
    slots: Box<[Slot]>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").finish_non_exhaustive()
    }
}

impl Default for Memo {
    fn default() -> Self {
        Memo { slots: vec![Slot { len: 0, bytes: [0; MAX_LEN], id: 0 }; SLOTS].into_boxed_slice() }
    }
}

impl Memo {
    /// `compute(s)`, from the table when `s` was the last string seen at its slot: `compute` must give the
    /// same answer for the same string every time.
    #[inline]
    pub fn get(&mut self, s: &[u8], compute: impl FnOnce(&[u8]) -> u64) -> u64 {
        let n = s.len();
        if n > MAX_LEN {
            return compute(s);
        }
        let slot = &mut self.slots[slot_of(s)];
        if usize::from(slot.len) == n + 1 && slot.bytes[..n] == *s {
            return slot.id;
        }
        let id = compute(s);
        slot.len = n as u8 + 1;
        slot.bytes[..n].copy_from_slice(s);
        slot.id = id;
        id
    }
}

/// The `key_hash` of each field.
#[derive(Default)]
pub struct FieldIds(Memo);

impl FieldIds {
    #[inline]
    pub fn get(&mut self, field: &[u8]) -> u64 {
        self.0.get(field, key_hash)
    }
}

/// A string's slot, from its length and last eight bytes: cheap, and where feature ids and hosts differ.
#[inline]
fn slot_of(s: &[u8]) -> usize {
    let n = s.len();
    let tail = &s[n.saturating_sub(8)..];
    let mut word = [0u8; 8];
    word[..tail.len()].copy_from_slice(tail);
    let x = u64::from_le_bytes(word) ^ ((n as u64) << 59);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the fields, their order and their collisions in the table, every answer is `key_hash`'s.
    #[test]
    fn every_answer_is_the_fields_hash() {
        let mut ids = FieldIds::default();
        let mut fields: Vec<Vec<u8>> = (0..2000u32).map(|i| (i * 7919 % 1000).to_string().into_bytes()).collect();
        fields.extend([b"".to_vec(), b"a".to_vec(), b"x".repeat(24), b"x".repeat(25), b"\xff\xfe".to_vec()]);
        fields.extend(fields.clone().into_iter().rev());
        for f in &fields {
            assert_eq!(ids.get(f), key_hash(f), "{f:?}");
        }
    }
}
