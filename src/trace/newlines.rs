//! Where the newlines of a chunk of text are, 64 bytes at a time: a bit mask per 64 bytes (bit i: a `\n` at
//! i), its set bits handed out in order, the bytes compared 16 at a time (`bytes16`). A word at a time took 5%
//! more of all the instructions that read a `commands` or MONITOR trace (measured with callgrind), and a memchr
//! call per line paid its set-up on every line.

use super::bytes16::newlines16;

/// Where the newlines of `bytes` are, in order.
pub fn newlines(bytes: &[u8]) -> Newlines<'_> {
    Newlines { bytes, at: 0, next: 0, mask: 0 }
}

pub struct Newlines<'a> {
    bytes: &'a [u8],
    /// Where the 64 bytes `mask` marks begin, and where the next 64 do.
    at: usize,
    next: usize,
    mask: u64,
}

impl Iterator for Newlines<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if self.next >= self.bytes.len() {
                return None;
            }
            self.at = self.next;
            self.next += 64;
            self.mask = newline_mask(self.bytes, self.at);
        }
        let i = self.at + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(i)
    }
}

/// Where the `\n` are among `bytes[at..at + 64]` (none past the end).
#[inline]
fn newline_mask(bytes: &[u8], at: usize) -> u64 {
    let mask64 = |block: &[u8; 64]| {
        block.chunks_exact(16).enumerate().fold(0, |m, (k, b)| {
            m | u64::from(newlines16(b.try_into().expect("16 bytes"))) << (16 * k)
        })
    };
    match bytes.get(at..at + 64) {
        Some(block) => mask64(block.try_into().expect("64 bytes")),
        None => {
            // The last bytes, padded with zeros (no newlines).
            let mut padded = [0u8; 64];
            let rest = bytes.get(at..).unwrap_or_default();
            padded[..rest.len()].copy_from_slice(rest);
            mask64(&padded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value in every position of texts of every length up to past two blocks of 64, among
    /// newlines at every spacing.
    #[test]
    fn every_newline_in_order() {
        for b in 0..=255u8 {
            for n in [0usize, 1, 15, 16, 17, 63, 64, 65, 130] {
                for at in (0..n).step_by(5).chain(n.checked_sub(1)) {
                    for step in [2, 3, 64, 1000] {
                        let mut text: Vec<u8> = (0..n).map(|i| if i % step == step - 1 { b'\n' } else { b'x' }).collect();
                        text[at] = b;
                        let plain: Vec<usize> = (0..n).filter(|&i| text[i] == b'\n').collect();
                        assert_eq!(newlines(&text).collect::<Vec<_>>(), plain, "{b} at {at} of {n}, every {step}");
                    }
                }
            }
        }
    }
}
