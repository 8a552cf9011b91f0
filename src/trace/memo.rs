//! What a reader computes of a short string it meets again and again, remembered: the `key_hash` of each field
//! (a feature-store trace names a few hundred distinct fields, feature ids, millions of times, and hashing one
//! with xxh3 and Java's `String.hashCode` took a tenth of reading a `commands` trace), and the index of each
//! MONITOR client host (found in a table of byte strings under SipHash: a tenth of reading a MONITOR log).

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

/// The `key_hash` of each field, and of the fields of the last command.
#[derive(Default)]
pub struct FieldIds {
    memo: Memo,
    /// The last command's fields as its line wrote them (`Args::raw`), and their ids. A feature store's
    /// service asks the same features command after command, for one entity after another: the same list then
    /// costs a compare of its bytes, not a remembered id per field (each a sixth of reading a `commands` line's
    /// field, callgrind).
    last_list: Vec<u8>,
    last_ids: Vec<u64>,
    last_known: bool,
}

impl FieldIds {
    /// The ids of the `count` fields of `args` that start at argument 1 and follow each other, every `step`-th:
    /// the last command's when the line wrote the same fields the same way.
    #[inline]
    pub fn of_fields(&mut self, args: Args, step: usize, count: usize) -> &[u64] {
        let list = if step == 1 && count > 0 { args.raw(1, count) } else { None };
        if let Some(list) = list {
            if self.last_known && self.last_ids.len() == count && self.last_list == list {
                return &self.last_ids;
            }
        }
        self.last_ids.clear();
        for k in 0..count {
            let id = self.memo.get(args.get(1 + k * step), key_hash);
            self.last_ids.push(id);
        }
        self.last_list.clear();
        self.last_known = list.is_some();
        self.last_list.extend_from_slice(list.unwrap_or_default());
        &self.last_ids
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

    /// The fields of each line, one after another as a trace holds them: the same list again, lists that
    /// differ in one field or in how they are quoted or split, lists of fields and values, escaped fields.
    #[test]
    fn the_ids_of_every_list_are_its_fields_hashes() {
        let lines: &[&[u8]] = &[
            b"HMGET k 11 22 33", b"HMGET k2 11 22 33", b"HMGET k 11 22 34", b"HMGET k 11 22", b"HMGET k 11 22 33",
            br#"HMGET k "11" "22" "33""#, br#""HMGET" "k" "11" "22" "33""#, br#"HMGET k "11 22" 33"#,
            br#"HMGET k 11 "22 33""#, b"HMGET k 11  22 33", br#"HMGET k "11" 22 "33""#, br#"HMGET k "11" 22 33"#,
            br#"HMGET k "11" 22 33"#, b"HMGET k 11 22 33", br#"HMGET k "" 22 33"#, br#"HMGET k "" "" 33"#,
            b"HSET k 11 v1 22 v2", b"HSET k 11 v1 22 v3", b"HMGET k 11 v1 22", b"HMGET k 11	22 33",
        ];
        let mut ids = FieldIds::default();
        let (mut spans, mut scratch) = (Vec::new(), Vec::new());
        for (i, &line) in lines.iter().enumerate() {
            split_args(line, &mut spans, &mut scratch).unwrap();
            let args = Args::new(line, &scratch, &spans[1..]);
            let step = if line.starts_with(b"HSET") { 2 } else { 1 };
            let count = (args.len() - 1) / step;
            let expected: Vec<u64> = (0..count).map(|k| key_hash(args.get(1 + k * step))).collect();
            assert_eq!(ids.of_fields(args, step, count), expected, "line {i}: {}", String::from_utf8_lossy(line));
        }
    }
}
