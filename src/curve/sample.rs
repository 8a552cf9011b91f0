//! Spatial sampling of cache keys, the way SHARDS and miniature simulations pick them: a key is in a sample
//! when a hash of it falls in the sample's range, so every lookup of a sampled key is kept and every other
//! key's lookups are dropped. Several samples (for an error band) take disjoint ranges of one hash, so a
//! lookup is hashed once however many samples there are, and the samples are independent draws of the keys.
//! Keys are mixed first because the trace's 64-bit key hashes carry Java's `String.hashCode` in some bits (see
//! `crate::hash`), which is not uniform.

use crate::hash::mix64;

/// Hash values are out of 2^24, as in the SHARDS paper (P = 2^24).
pub const MODULUS: u64 = 1 << 24;

/// `count` disjoint samples of `rate` of the keys each: sample `s` holds the keys whose value falls in
/// `[s * width, (s + 1) * width)`.
#[derive(Clone, Copy, Debug)]
pub struct Slices {
    pub width: u64,
    pub count: usize,
}

impl Slices {
    pub fn new(rate: f64, count: usize) -> Result<Slices, String> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(format!("a sampling rate must be above 0 and at most 1, not {rate}"));
        }
        if count == 0 || rate * count as f64 > 1.0 + 1e-9 {
            return Err(format!("{count} disjoint samples of {rate} of the keys each do not fit in all the keys"));
        }
        let width = ((rate * MODULUS as f64).round() as u64).clamp(1, MODULUS / count as u64);
        Ok(Slices { width, count })
    }

    /// The key's place in [0, MODULUS).
    #[inline]
    pub fn value(key: u64) -> u64 {
        Slices::value_mixed(mix64(key))
    }

    /// `value` from the key's `mix64`.
    #[inline]
    pub fn value_mixed(h: u64) -> u64 {
        h >> 40
    }

    /// The sample holding the key, and the key's place within the sample's range.
    #[inline]
    pub fn find(&self, key: u64) -> Option<(usize, u64)> {
        let v = Slices::value(key);
        // Most keys are in no sample: told so by one comparison, without the division (a tenth of a sampled
        // curve's time went to it).
        if v >= self.width * self.count as u64 {
            return None;
        }
        let s = (v / self.width) as usize;
        (s < self.count).then(|| (s, v % self.width))
    }

    pub fn rate(&self) -> f64 {
        self.width as f64 / MODULUS as f64
    }
}
