//! The last bytes delivered on one direction, kept so that a retransmission overlapping them can be compared.
//!
//! TCP resends the same bytes, so a repeated range whose bytes differ means the capture holds two versions of
//! the stream (a broken middlebox, a checksum-failed packet, an injection). The first version was delivered
//! and stays; the disagreement is counted. Keeping every delivered byte would defeat the zero-copy fast path,
//! so only a small ring of the most recent `window` bytes is kept (retransmissions almost always repeat the
//! latest bytes); older repeated bytes go unchecked. The window is rounded up to a power of two so that
//! placing bytes in the ring is a mask, not a division. Bytes before a gap are forgotten: across a gap the ring
//! would hold bytes at the wrong offsets.

pub(super) struct Recent {
    /// Byte at stream offset `o` lives at `ring[o % ring.len()]`; empty until the first delivery.
    ring: Vec<u8>,
    /// No byte before this offset is held.
    valid_from: u64,
}

impl Recent {
    pub fn new() -> Recent {
        Recent { ring: Vec::new(), valid_from: 0 }
    }

    /// Records delivered bytes that end at offset `end` (the stream's new delivered end).
    #[inline]
    pub fn record(&mut self, window: u32, end: u64, data: &[u8]) {
        if window == 0 {
            return;
        }
        if self.ring.is_empty() {
            self.ring = vec![0; window.min(1 << 20).next_power_of_two() as usize];
        }
        let w = self.ring.len();
        let tail = &data[data.len().saturating_sub(w)..];
        let start = end - tail.len() as u64;
        let at = start as usize & (w - 1);
        let first = tail.len().min(w - at);
        self.ring[at..at + first].copy_from_slice(&tail[..first]);
        self.ring[..tail.len() - first].copy_from_slice(&tail[first..]);
    }

    /// Nothing delivered before `offset` may be compared any more (a gap was reported up to it).
    pub fn forget_before(&mut self, offset: u64) {
        self.valid_from = offset;
    }

    /// Whether `data`, claimed to sit at offset `off`, disagrees with any held byte. `end` is the delivered end.
    pub fn differs(&self, end: u64, off: u64, data: &[u8]) -> bool {
        let w = self.ring.len() as u64;
        if w == 0 {
            return false;
        }
        let lo = off.max(self.valid_from).max(end.saturating_sub(w));
        let hi = (off + data.len() as u64).min(end);
        (lo..hi).any(|o| self.ring[(o & (w - 1)) as usize] != data[(o - off) as usize])
    }

    /// Frees the ring (the connection is closed).
    pub fn release(&mut self) {
        self.ring = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_only_the_recent_window() {
        let mut r = Recent::new();
        let data: Vec<u8> = (0..20).collect();
        r.record(8, 10, &data[..10]);
        r.record(8, 20, &data[10..]);
        assert!(!r.differs(20, 12, &data[12..20]));
        let mut changed = data.clone();
        changed[15] = 99;
        assert!(r.differs(20, 10, &changed[10..]));
        // Byte 5 changed, but it is older than the window: not compared.
        changed = data.clone();
        changed[5] = 99;
        assert!(!r.differs(20, 0, &changed));
        r.forget_before(20);
        changed[15] = 99;
        assert!(!r.differs(20, 10, &changed[10..]));
    }

    #[test]
    fn disabled_window_holds_nothing() {
        let mut r = Recent::new();
        r.record(0, 4, b"abcd");
        assert!(!r.differs(4, 0, b"xxxx"));
    }
}
