//! A small deterministic generator (xorshift64) for the readers' tests: the lines they make up are the same on
//! every run.

pub struct XorShift(u64);

impl XorShift {
    /// `seed`: not zero.
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed)
    }

    /// A number in `0..m` (`m` > 0).
    pub fn below(&mut self, m: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % m as u64) as usize
    }
}
