//! The unique keys read, counted in constant memory: a HyperLogLog sketch (Flajolet, Fusy, Gandouet and
//! Meunier, 2007) with Ertl's estimator ("New cardinality estimation algorithms for HyperLogLog sketches",
//! 2017, the one Redis uses), which needs no empirical bias tables and is unbiased from a handful of keys to
//! billions. When the infinite cache can lose no entry (no invalidation, restart, TTL or allow list), its
//! misses are exactly the unique keys read, so this sketch stands in for it where only sampled curves are
//! asked for: 64 KiB instead of a set of every key.
//!
//! The estimate is also taken at the end of every timeline window, so that the bound keeps a timeline.

use crate::hash::mix64;
use crate::sim::Events;
use crate::trace::reader::OP_READ;

/// 2^16 one-byte registers: a relative standard error of 1.04 / 256 = 0.41%.
const P: u32 = 16;
const M: usize = 1 << P;
/// Register values run from 0 (empty) to Q + 1.
const Q: usize = 64 - P as usize;

pub struct DistinctReads {
    registers: Vec<u8>,
    /// How many registers hold each value: the estimator reads only this, so an estimate costs O(Q), not O(M).
    histogram: [u32; Q + 2],
    window: u64,
    reads: u64,
    /// The estimate at the end of each completed window.
    window_estimates: Vec<f64>,
}

impl DistinctReads {
    pub fn new(window: u64) -> DistinctReads {
        let mut histogram = [0; Q + 2];
        histogram[0] = M as u32;
        DistinctReads { registers: vec![0; M], histogram, window, reads: 0, window_estimates: Vec::new() }
    }

    /// The relative standard error of the estimate (one standard deviation, over the hash's draws).
    pub const RELATIVE_ERROR: f64 = 1.04 / (1u64 << (P / 2)) as f64;

    pub fn feed(&mut self, ev: &Events) {
        // Reads counted to the end of their window, not divided by it at every read (a division a lookup).
        let (mut to_window_end, mut reads) = (self.window - self.reads % self.window, 0);
        let mut read = |d: &mut DistinctReads, key: u64| {
            d.insert(key);
            reads += 1;
            to_window_end -= 1;
            if to_window_end == 0 {
                d.window_estimates.push(d.estimate());
                to_window_end = d.window;
            }
        };
        match ev.ops {
            None => ev.keys.iter().for_each(|&k| read(self, k)),
            Some(_) => (0..ev.len()).filter(|&i| ev.op(i) == OP_READ).for_each(|i| read(self, ev.keys[i])),
        }
        self.reads += reads;
    }

    #[inline]
    fn insert(&mut self, key: u64) {
        let (index, rank) = register_of(key);
        self.raise(index, rank);
    }

    #[inline]
    fn raise(&mut self, index: usize, rank: u8) {
        let old = self.registers[index];
        if rank > old {
            self.registers[index] = rank;
            self.histogram[old as usize] -= 1;
            self.histogram[rank as usize] += 1;
        }
    }

    /// The registers as they stand: a scan that reads keys apart (`super::sampled_scan`) starts from them, so
    /// that it hands on only the raises they do not already hold.
    pub fn registers(&self) -> &[u8] {
        &self.registers
    }

    /// `reads` more reads, given by the raises they make (`Raise`, in trace order, each at its read's place
    /// among them): the same registers and window estimates as feeding every read's key. A read that raises no
    /// register changes nothing but the count, so only the raises need to reach here.
    pub fn feed_raises(&mut self, raises: &[Raise], reads: u64) {
        // The estimate after the read at place `p` (0-based, this stretch) closes a window when
        // `self.reads + p + 1` is a multiple of the window: the raises up to that read first.
        let mut next_end = self.window - self.reads % self.window - 1;
        for r in raises {
            while next_end < r.at {
                self.window_estimates.push(self.estimate());
                next_end += self.window;
            }
            self.raise(r.register as usize, r.rank);
        }
        while next_end < reads {
            self.window_estimates.push(self.estimate());
            next_end += self.window;
        }
        self.reads += reads;
    }

    /// The estimated number of distinct keys read so far.
    pub fn estimate(&self) -> f64 {
        let m = M as f64;
        let c = &self.histogram;
        let mut z = m * tau(1.0 - c[Q + 1] as f64 / m);
        for k in (1..=Q).rev() {
            z = 0.5 * (z + c[k] as f64);
        }
        z += m * sigma(c[0] as f64 / m);
        if z.is_infinite() {
            return 0.0;
        }
        m * m / (2.0 * std::f64::consts::LN_2) / z
    }

    /// The estimate at the end of each completed window.
    pub fn window_estimates(&self) -> &[f64] {
        &self.window_estimates
    }
}

/// A read that raised a register of the sketch: its place among the reads of a stretch, the register and
/// its new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raise {
    pub at: u64,
    pub register: u32,
    pub rank: u8,
}

/// The register a key falls in and the value it offers it.
#[inline]
pub fn register_of(key: u64) -> (usize, u8) {
    // The trace's key hashes are not uniform in every bit (`crate::hash`): mixed first.
    register_of_mixed(mix64(key))
}

/// `register_of` from the key's `mix64`, which the sampled scan has at hand (`Slices::value` is its top bits):
/// one mix a record instead of two. The index is the top bits too, so a sample's keys fall in a few registers;
/// the sketch counts every key, whose indexes stay uniform and their ranks (the other bits) independent of them.
#[inline]
pub fn register_of_mixed(h: u64) -> (usize, u8) {
    let index = (h >> Q) as usize;
    let rank = ((h << P) | (1 << (P - 1))).leading_zeros() as u8 + 1;
    (index, rank)
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(keys: impl Iterator<Item = u64>) -> DistinctReads {
        let keys: Vec<u64> = keys.collect();
        let mut d = DistinctReads::new(1000);
        d.feed(&Events::reads(&keys));
        d
    }

    #[test]
    fn empty_is_zero_and_repeats_do_not_count() {
        assert_eq!(DistinctReads::new(10).estimate(), 0.0);
        let d = counted((0..50_000u64).map(|i| i % 7));
        assert!((d.estimate() - 7.0).abs() < 0.5, "{}", d.estimate());
    }

    #[test]
    fn within_three_standard_errors_across_the_range() {
        for n in [100u64, 10_000, 70_000, 200_000, 1_000_000, 3_000_000] {
            // Each key read three times, in an order unlike the keys' own.
            let d = counted((0..3 * n).map(|i| (i * 2_654_435_761) % n));
            let err = (d.estimate() - n as f64).abs() / n as f64;
            assert!(err < 3.0 * DistinctReads::RELATIVE_ERROR, "{n} keys: estimate {} ({err:.4})", d.estimate());
        }
    }

    #[test]
    fn batches_of_any_length_end_the_same_windows() {
        let keys: Vec<u64> = (0..10_000u64).map(|i| i * 7).collect();
        let whole = counted(keys.iter().copied());
        let mut parts = DistinctReads::new(1000);
        for part in keys.chunks(333) {
            parts.feed(&Events::reads(part));
        }
        assert_eq!(parts.window_estimates(), whole.window_estimates());
        assert_eq!((parts.reads, parts.window_estimates().len()), (10_000, 10));
    }

    #[test]
    fn window_estimates_rise_with_the_keys() {
        let d = counted(0..10_000u64);
        let w = d.window_estimates();
        assert_eq!(w.len(), 10);
        assert!(w.windows(2).all(|p| p[1] >= p[0]));
        assert!((w[9] - 10_000.0).abs() < 10_000.0 * 3.0 * DistinctReads::RELATIVE_ERROR);
    }
}
