//! The frequency sketch behind TinyLFU admission, bit for bit as Caffeine 3.x builds it
//! (`com.github.benmanes.caffeine.cache.FrequencySketch`).
//!
//! A count-min sketch of depth four with 4-bit counters that saturate at 15, packed sixteen to a `u64`. The
//! table has one `u64` per cache entry, rounded up to a power of two (at least 8). To touch one cache line per
//! event, an item's four counters all lie in one 64-byte block of eight words: the item's hash picks the block,
//! and each of the four counters is drawn from its own 16-byte pair of words. Caffeine 3 has no doorkeeper
//! (the TinyLFU paper's Bloom filter in front of the sketch): every event goes straight to the counters.
//!
//! Aging is TinyLFU's reset: after `10 * maximum` increments that changed a counter, every counter is halved,
//! and the increment count is halved too, less a quarter of the odd counters (the truncation error).
//!
//! Caffeine indexes the sketch with the key's Java `hashCode()` passed through `spread` and `rehash`; callers
//! here pass a 32-bit hash of their own (see `WTinyLfu` for which one and why). All arithmetic below is Java's
//! 32-bit `int` arithmetic (wrapping multiplies, `>>>` as a logical shift) so that a given hash lands on exactly
//! the counters Caffeine would use.

const RESET_MASK: u64 = 0x7777_7777_7777_7777;
const ONE_MASK: u64 = 0x1111_1111_1111_1111;

/// Eight words, aligned so that a block is exactly one cache line (Caffeine's `long[]` cannot promise that).
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Block([u64; 8]);

#[derive(Default)]
pub struct FrequencySketch {
    /// Empty until `ensure_capacity`: Caffeine allocates the sketch only once the cache is half full, and
    /// counts nothing before. Caffeine's `table[i]` is `table[i / 8].0[i % 8]` here.
    table: Vec<Block>,
    /// Increments between two resets (Java `int`, so it can overflow exactly as Caffeine's does).
    sample_size: i32,
    block_mask: u32,
    /// Increments since the last reset.
    size: i32,
}

impl FrequencySketch {
    /// Sizes the sketch for a cache of `maximum` entries, forgetting all counts, unless it is already that
    /// large. Caffeine's `ensureCapacity`.
    pub fn ensure_capacity(&mut self, maximum_size: u64) {
        let maximum = maximum_size.min((i32::MAX as u64) >> 1) as u32;
        if !self.table.is_empty() && self.words() >= u64::from(maximum) {
            return;
        }
        let len = ceiling_power_of_two(maximum).max(8);
        self.table = vec![Block::default(); (len / 8) as usize];
        self.sample_size = if maximum_size == 0 { 10 } else { (maximum as i32).wrapping_mul(10) };
        self.block_mask = (len >> 3) - 1;
        if self.sample_size <= 0 {
            self.sample_size = i32::MAX;
        }
        self.size = 0;
    }

    /// The length of Caffeine's `long[] table`.
    fn words(&self) -> u64 {
        self.table.len() as u64 * 8
    }

    pub fn is_initialized(&self) -> bool {
        !self.table.is_empty()
    }

    /// How many increments make one sample (both the aging period and the hill climber's sample); 0 before
    /// initialization.
    pub fn sample_size(&self) -> i32 {
        self.sample_size
    }

    /// The estimated count of `hash`'s item, 0 to 15.
    #[inline]
    pub fn frequency(&self, hash: u32) -> u32 {
        if !self.is_initialized() {
            return 0;
        }
        let (block, counter_hash) = self.locate(hash);
        let words = &self.table[block].0;
        (0..4)
            .map(|i| {
                let h = counter_hash >> (i << 3);
                let index = (h >> 1) & 15;
                let word = words[(h & 1) as usize + ((i as usize) << 1)];
                ((word >> (index << 2)) & 0xf) as u32
            })
            .min()
            .unwrap_or(0)
    }

    /// Counts one more occurrence of `hash`'s item; ages the whole sketch every `sample_size` increments.
    #[inline]
    pub fn increment(&mut self, hash: u32) {
        if !self.is_initialized() {
            return;
        }
        let (block, h) = self.locate(hash);
        let words = &mut self.table[block].0;
        // Non-short-circuiting `|`: all four counters are incremented.
        let added = increment_at(words, (h & 1) as usize, (h >> 1) & 15)
            | increment_at(words, ((h >> 8) & 1) as usize + 2, (h >> 9) & 15)
            | increment_at(words, ((h >> 16) & 1) as usize + 4, (h >> 17) & 15)
            | increment_at(words, ((h >> 24) & 1) as usize + 6, (h >> 25) & 15);
        if added {
            self.size = self.size.wrapping_add(1);
            if self.size == self.sample_size {
                self.reset();
            }
        }
    }

    /// Starts loading the cache line of `hash`'s counters, for an `increment` that will come soon: a buffered
    /// read is applied up to 16 lookups later, long enough for the line to arrive.
    #[inline]
    pub fn prefetch(&self, hash: u32) {
        if let Some(block) = self.table.get((spread(hash) & self.block_mask) as usize) {
            super::prefetch(block);
        }
    }

    /// The item's block, and the hash that picks its four counters.
    #[inline]
    fn locate(&self, hash: u32) -> (usize, u32) {
        let block_hash = spread(hash);
        let counter_hash = rehash(block_hash);
        ((block_hash & self.block_mask) as usize, counter_hash)
    }

    /// Halves every counter.
    fn reset(&mut self) {
        let mut odd: u32 = 0;
        for word in self.table.iter_mut().flat_map(|b| b.0.iter_mut()) {
            odd = odd.wrapping_add((*word & ONE_MASK).count_ones());
            *word = (*word >> 1) & RESET_MASK;
        }
        self.size = (self.size.wrapping_sub((odd >> 2) as i32) as u32 >> 1) as i32;
    }
}

/// Adds one to counter `counter` (0..16) of `words[word]` unless it is 15 already; true if it did.
#[inline]
fn increment_at(words: &mut [u64; 8], word: usize, counter: u32) -> bool {
    let offset = counter << 2;
    let mask = 0xf_u64 << offset;
    if words[word] & mask != mask {
        words[word] += 1 << offset;
        return true;
    }
    false
}

/// Caffeine's supplemental hash against a poor `hashCode` (a three-round function from hash-prospector).
#[inline]
fn spread(mut x: u32) -> u32 {
    x ^= x >> 17;
    x = x.wrapping_mul(0xed5a_d4bb);
    x ^= x >> 11;
    x = x.wrapping_mul(0xac4c_1b51);
    x ^= x >> 15;
    x
}

/// A second round, from which the four counter positions are taken.
#[inline]
fn rehash(mut x: u32) -> u32 {
    x = x.wrapping_mul(0x3184_8bab);
    x ^= x >> 14;
    x
}

/// Java's `Caffeine.ceilingPowerOfTwo(int)`: `1 << -numberOfLeadingZeros(x - 1)`, shift count taken mod 32.
fn ceiling_power_of_two(x: u32) -> u32 {
    let shift = (x.wrapping_sub(1).leading_zeros() as i32).wrapping_neg() & 31;
    1 << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_caffeine() {
        assert_eq!(ceiling_power_of_two(1), 1);
        assert_eq!(ceiling_power_of_two(49), 64);
        assert_eq!(ceiling_power_of_two(64), 64);
        assert_eq!(ceiling_power_of_two(100_000), 131_072);
        let mut s = FrequencySketch::default();
        assert!(!s.is_initialized());
        s.ensure_capacity(1);
        assert_eq!((s.words(), s.sample_size, s.block_mask), (8, 10, 0));
        s.ensure_capacity(490);
        assert_eq!((s.words(), s.sample_size, s.block_mask), (512, 4900, 63));
        assert_eq!(s.table.as_ptr() as usize % 64, 0);
    }

    #[test]
    fn java_int_hashing() {
        // Values computed with Java: FrequencySketch.spread(42), rehash(spread(42)), spread(-1).
        assert_eq!(spread(42) as i32, JAVA_SPREAD_42);
        assert_eq!(rehash(spread(42)) as i32, JAVA_REHASH_SPREAD_42);
        assert_eq!(spread(u32::MAX) as i32, JAVA_SPREAD_MINUS_1);
    }
    const JAVA_SPREAD_42: i32 = 1_930_011_136;
    const JAVA_REHASH_SPREAD_42: i32 = -1_704_501_356;
    const JAVA_SPREAD_MINUS_1: i32 = 973_375_833;

    /// Caffeine 3.2.3's own `FrequencySketch` (a probe class compiled against the jar), `ensureCapacity(64)`,
    /// then 3000 increments of item `i * i % 97` whose `hashCode()` is `item * 0x9E3779B9`: the frequency of
    /// items 0..97 and the final `size` (two resets happened on the way).
    const JAVA_FREQS: &str = "6,12,13,13,12,0,13,0,13,12,0,13,13,0,0,0,12,0,13,0,0,0,13,0,13,12,0,13,0,0,0,13,13,13,\
        0,13,12,0,0,0,0,0,0,13,13,0,0,13,13,12,13,0,0,13,13,0,0,0,0,0,0,13,13,0,13,13,13,0,0,0,13,0,13,13,0,13,0,0,0,\
        13,0,13,0,0,0,13,13,0,13,13,0,13,0,13,13,13,13";
    const JAVA_SIZE: i32 = 626;

    #[test]
    fn same_counts_as_caffeine() {
        let mut s = FrequencySketch::default();
        s.ensure_capacity(64);
        let hash = |item: u32| item.wrapping_mul(0x9E37_79B9);
        for i in 0..3000u32 {
            s.increment(hash(i * i % 97));
        }
        let got: Vec<String> = (0..97).map(|item| s.frequency(hash(item)).to_string()).collect();
        assert_eq!(got.join(","), JAVA_FREQS.replace(' ', ""));
        assert_eq!(s.size, JAVA_SIZE);
    }

    #[test]
    fn counts_saturate_at_fifteen() {
        let mut s = FrequencySketch::default();
        s.ensure_capacity(1024);
        assert_eq!(s.frequency(7), 0);
        for expected in 1..=20 {
            s.increment(7);
            assert_eq!(s.frequency(7), expected.min(15));
        }
    }

    #[test]
    fn reset_halves_counts() {
        let mut s = FrequencySketch::default();
        s.ensure_capacity(64); // sample size 640
        for _ in 0..10 {
            s.increment(1);
        }
        let mut i = 2u32;
        while s.size != 0 && s.size < 639 {
            s.increment(i.wrapping_mul(0x9e37_79b9));
            i += 1;
        }
        // One more counted increment triggers the reset.
        while s.size == 639 {
            s.increment(i.wrapping_mul(0x9e37_79b9));
            i += 1;
        }
        assert!(s.frequency(1) <= 5, "{}", s.frequency(1));
        assert!(s.size < 640 / 2);
    }
}
