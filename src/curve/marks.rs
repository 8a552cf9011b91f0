//! The marks of a stack: at every position, how much of the stack it holds (1 per key for entries, the key's
//! weight for bytes), and how much lies after a position. Entries use a bitset with a Fenwick tree over its
//! 64-bit words' counts: the tree is 64 times smaller than one over positions and stays in cache, and the last
//! word is a popcount. Bytes use a Fenwick tree over the weights themselves, and a bitset of the positions
//! marked (a weight may be 0).

use super::fenwick::Fenwick;

pub enum Marks {
    Counts(BitCounts),
    Weights { tree: Fenwick, present: Vec<u64> },
}

impl Marks {
    /// `len` positions, every one of the first `values.len()` marked with its value (1 for counts).
    pub fn new(bytes: bool, len: usize, values: &[u64]) -> Marks {
        if bytes {
            let tree = Fenwick::from_values(values.iter().copied().chain(std::iter::repeat_n(0, len - values.len())));
            let mut present = vec![0u64; len.div_ceil(64)];
            (0..values.len()).for_each(|pos| present[pos >> 6] |= 1 << (pos & 63));
            Marks::Weights { tree, present }
        } else {
            Marks::Counts(BitCounts::new(len, values))
        }
    }

    #[inline]
    pub fn add(&mut self, pos: usize, value: u64) {
        match self {
            Marks::Counts(c) => c.set(pos),
            Marks::Weights { tree, present } => {
                tree.add(pos, value);
                present[pos >> 6] |= 1 << (pos & 63);
            }
        }
    }

    #[inline]
    pub fn sub(&mut self, pos: usize, value: u64) {
        match self {
            Marks::Counts(c) => c.clear(pos),
            Marks::Weights { tree, present } => {
                tree.sub(pos, value);
                present[pos >> 6] &= !(1 << (pos & 63));
            }
        }
    }

    /// The sum of the marks after `pos`.
    #[inline]
    pub fn after(&self, pos: usize) -> u64 {
        match self {
            Marks::Counts(c) => c.after(pos),
            Marks::Weights { tree, .. } => tree.after(pos),
        }
    }

    /// The marked positions, in order.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        let words = match self {
            Marks::Counts(c) => &c.words,
            Marks::Weights { present, .. } => present,
        };
        words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    (w << 6) + b
                })
            })
        })
    }
}

pub struct BitCounts {
    words: Vec<u64>,
    /// Set bits per word.
    per_word: Fenwick,
}

impl BitCounts {
    /// `len` positions, `values` (0 or 1) at the first ones.
    pub fn new(len: usize, values: &[u64]) -> BitCounts {
        let mut words = vec![0u64; len.div_ceil(64)];
        for (pos, &v) in values.iter().enumerate() {
            words[pos >> 6] |= (v & 1) << (pos & 63);
        }
        let per_word = Fenwick::from_values(words.iter().map(|w| u64::from(w.count_ones())));
        BitCounts { words, per_word }
    }

    #[inline]
    pub fn set(&mut self, pos: usize) {
        self.words[pos >> 6] |= 1 << (pos & 63);
        self.per_word.add(pos >> 6, 1);
    }

    #[inline]
    pub fn clear(&mut self, pos: usize) {
        self.words[pos >> 6] &= !(1 << (pos & 63));
        self.per_word.sub(pos >> 6, 1);
    }

    #[inline]
    pub fn after(&self, pos: usize) -> u64 {
        let word = pos >> 6;
        let later_in_word = (self.words[word] >> (pos & 63) >> 1).count_ones();
        self.per_word.after(word) + u64::from(later_in_word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_after_a_position_match_a_plain_count() {
        let len = 1000;
        let initial: Vec<u64> = (0..300u64).map(|i| crate::hash::mix64(i) & 1).collect();
        let mut marks = Marks::new(false, len, &initial);
        let mut plain: Vec<u64> = initial.iter().copied().chain(std::iter::repeat_n(0, len - 300)).collect();
        for step in 0..3000u64 {
            let pos = (crate::hash::mix64(step) % len as u64) as usize;
            if plain[pos] == 1 {
                marks.sub(pos, 1);
                plain[pos] = 0;
            } else {
                marks.add(pos, 1);
                plain[pos] = 1;
            }
            let q = (crate::hash::mix64(step ^ 77) % len as u64) as usize;
            assert_eq!(marks.after(q), plain[q + 1..].iter().sum::<u64>());
            if step % 500 == 0 {
                let want: Vec<usize> = (0..len).filter(|&i| plain[i] == 1).collect();
                assert_eq!(marks.positions().collect::<Vec<_>>(), want);
            }
        }
    }
}
