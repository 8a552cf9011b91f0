//! What a reader computes of a short string it meets again and again, remembered: the `key_hash` of each field
//! (a feature-store trace names a few hundred distinct fields, feature ids, millions of times, and hashing one
//! with xxh3 and Java's `String.hashCode` took a tenth of reading a `commands` trace), and the index of each
//! MONITOR client host (found in a table of byte strings under SipHash: a tenth of reading a MONITOR log).

use std::mem::MaybeUninit;

use super::same_tail::Rest;
use super::tokenize::Args;
use crate::hash::{key_hash, low_word};

/// Slots of the table: more than the features of any one model's request, few enough to stay in L1.
const SLOTS: usize = 256;
/// Longer strings are computed every time (a feature id is a number or a short name; an IPv4 host fits).
pub(crate) const MAX_LEN: usize = 24;

/// A string of up to `MAX_LEN` bytes as its length plus one (0: no string) and three words that, with the
/// length, spell it whole (overlapping loads, as xxh3 reads short inputs): compared and hashed without a call
/// or a loop.
#[derive(Clone, Copy, Default)]
pub(crate) struct Short {
    len: u64,
    words: [u64; 3],
}

impl Short {
    /// `s`, of at most `MAX_LEN` bytes.
    #[inline]
    pub(crate) fn of(s: &[u8]) -> Short {
        let n = s.len();
        let words = match n {
            8.. => [low_word(s), low_word(&s[8.min(n - 8)..]), low_word(&s[n - 8..])],
            _ => [low_word(s), 0, 0],
        };
        Short { len: n as u64 + 1, words }
    }

    /// Word by word, without branches: a vector compare of a key just built on the stack waits on the
    /// stores that built it (a third of the time of reading a field, measured).
    #[inline]
    pub(crate) fn same(&self, other: &Short) -> bool {
        let [a, b, c] = self.words;
        let [x, y, z] = other.words;
        ((self.len ^ other.len) | (a ^ x) | (b ^ y) | (c ^ z)) == 0
    }

    /// Its slot: where feature ids and hosts differ, their ends, mixed with the length.
    #[inline]
    fn slot(&self) -> usize {
        let x = (self.words[0] ^ self.words[2].rotate_left(29) ^ self.len).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (x >> (64 - SLOTS.trailing_zeros())) as usize
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    /// Length 0: an empty slot.
    key: Short,
    value: u64,
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
        Memo { slots: vec![Slot::default(); SLOTS].into_boxed_slice() }
    }
}

impl Memo {
    /// `compute(s)`, from the table when `s` was the last string seen at its slot: `compute` must give the
    /// same answer for the same string every time.
    #[inline]
    pub fn get(&mut self, s: &[u8], compute: impl FnOnce(&[u8]) -> u64) -> u64 {
        if s.len() > MAX_LEN {
            return compute(s);
        }
        let key = Short::of(s);
        let slot = &mut self.slots[key.slot()];
        if slot.key.same(&key) {
            return slot.value;
        }
        let value = compute(s);
        *slot = Slot { key, value };
        value
    }
}

/// The `key_hash` of each field, and the last command's.
#[derive(Default)]
pub struct FieldIds {
    memo: Memo,
    /// The ids of the last command's fields, when its arguments after its key were kept for the next line
    /// (`Rest::Kept`). A feature store's service asks the same features of one entity after another: a command
    /// whose arguments after its key are the last one's (`Rest::Same`) takes them whole, not a remembered id
    /// per field (each a sixth of reading a `commands` line's field).
    last: Vec<u64>,
    known: bool,
}

impl FieldIds {
    /// Writes into `out` the ids of the fields of `args` from argument 1, every `step`-th, one per slot;
    /// the last command's when `rest` says its arguments after the key are the same.
    #[inline]
    pub fn write(&mut self, args: Args, step: usize, rest: Rest, out: &mut [MaybeUninit<u64>]) {
        if rest == Rest::Same && self.known && self.last.len() == out.len() {
            out.iter_mut().zip(&self.last).for_each(|(o, &id)| _ = o.write(id));
            return;
        }
        self.known = rest != Rest::Other;
        self.last.clear();
        for (k, o) in out.iter_mut().enumerate() {
            let id = self.memo.get(args.get(1 + k * step), key_hash);
            o.write(id);
            if self.known {
                self.last.push(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tokenize::split_args;

    /// Whatever the fields, their order and their collisions in the table, every answer is `key_hash`'s.
    #[test]
    fn every_answer_is_the_fields_hash() {
        let mut memo = Memo::default();
        let mut fields: Vec<Vec<u8>> = (0..2000u32).map(|i| (i * 7919 % 1000).to_string().into_bytes()).collect();
        fields.extend([b"".to_vec(), b"a".to_vec(), b"x".repeat(24), b"x".repeat(25), b"\xff\xfe".to_vec()]);
        // Every length up to past the longest remembered, differing in one byte anywhere.
        for n in 1..=MAX_LEN + 1 {
            for at in 0..n {
                let mut f = vec![b'7'; n];
                f[at] = b'3';
                fields.extend([vec![b'7'; n], f]);
            }
        }
        fields.extend(fields.clone().into_iter().rev());
        for f in &fields {
            assert_eq!(memo.get(f, key_hash), key_hash(f), "{f:?}");
        }
    }

    /// The ids of the fields of each line, whatever its rest is said to be (as long as `Same` is said only of
    /// a rest that is): from the memo, or the last command's.
    #[test]
    fn the_ids_of_every_list_are_its_fields_hashes() {
        let lines: &[(&[u8], Rest)] = &[
            (b"HMGET k 11 22 33", Rest::Kept), (b"HMGET k2 11 22 33", Rest::Same), (b"HMGET k 11 22 34", Rest::Other),
            (b"HMGET k3 11 22 34", Rest::Same), (b"HMGET k 11 22", Rest::Kept), (b"HMGET k3 11 22", Rest::Same),
            (b"HSET k 11 v1 22 v2", Rest::Kept), (b"HSET k2 11 v1 22 v2", Rest::Same), (b"HMGET k 11 22 33", Rest::Kept),
            (b"HMGET k 11 22 33", Rest::Same), (b"HMGET k 11 22 33", Rest::Same),
        ];
        let mut ids = FieldIds::default();
        let (mut spans, mut scratch) = (Vec::new(), Vec::new());
        for (i, &(line, rest)) in lines.iter().enumerate() {
            split_args(line, &mut spans, &mut scratch).unwrap();
            let args = Args::new(line, &scratch, &spans[1..]);
            let step = if line.starts_with(b"HSET") { 2 } else { 1 };
            let count = (args.len() - 1) / step;
            let expected: Vec<u64> = (0..count).map(|k| key_hash(args.get(1 + k * step))).collect();
            let mut out = vec![MaybeUninit::uninit(); count];
            ids.write(args, step, rest, &mut out);
            // SAFETY: `write` writes every slot of `out`.
            let got: Vec<u64> = out.iter().map(|o| unsafe { o.assume_init() }).collect();
            assert_eq!(got, expected, "line {i}");
        }
    }
}
