//! Bytes found eight at a time in a u64 (SWAR). A trace's lines and words are a few bytes long: a memchr call
//! per line or a byte loop per word pays more in set-up and branches than a word-wide test does.

use crate::hash::low_word;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each zero byte of `x`, exactly (no borrow runs from one byte into the next).
#[inline]
fn zero_bytes(x: u64) -> u64 {
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// The high bit of each byte of `x` at or below b' ' (where all ASCII whitespace is), exactly.
#[inline]
fn at_most_space(x: u64) -> u64 {
    // b <= 0x20 exactly when b < 0x80 and (b & 0x7f) + 0x5f does not reach 0x80.
    !(((x & !HIGHS) + ONES * 0x5f) | x) & HIGHS
}

/// The eight bytes at `at`, or those left padded with `pad`.
#[inline]
fn load(bytes: &[u8], at: usize, pad: u8) -> u64 {
    let rest = &bytes[at.min(bytes.len())..];
    match rest.len() {
        8.. => low_word(rest),
        n => low_word(rest) | (ONES * u64::from(pad)) << (8 * n),
    }
}

/// The first `\n` of `hay`: a word at a time over a short line's first 32 bytes (memchr's set-up costs more
/// than such a line: it was a sixth of reading a `keys` trace), memchr beyond.
#[inline]
pub fn find_newline(hay: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + 8 <= hay.len() && at < 32 {
        let zero = zero_bytes(load(hay, at, 0) ^ (ONES * u64::from(b'\n')));
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr::memchr(b'\n', &hay[at..]).map(|i| at + i)
}

/// Where the newlines of `bytes` are, in order.
pub fn newlines(bytes: &[u8]) -> Newlines<'_> {
    Newlines { bytes, at: 0, next: 0, mask: 0 }
}

pub struct Newlines<'a> {
    bytes: &'a [u8],
    /// Where the word `mask` marks begins, and where the next one does.
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
            self.next += 8;
            self.mask = zero_bytes(load(self.bytes, self.at, 0) ^ (ONES * u64::from(b'\n')));
        }
        let i = self.at + (self.mask.trailing_zeros() / 8) as usize;
        self.mask &= self.mask - 1;
        Some(i)
    }
}

/// The end of the word starting at `from`: the first ASCII whitespace at or after it, or the end of `line`.
#[inline]
pub fn word_end(line: &[u8], mut from: usize) -> usize {
    while from < line.len() {
        let mask = at_most_space(load(line, from, b'x'));
        if mask == 0 {
            from += 8;
            continue;
        }
        let i = from + (mask.trailing_zeros() / 8) as usize;
        if line[i].is_ascii_whitespace() {
            return i;
        }
        // A control byte that is no whitespace belongs to the word.
        from = i + 1;
    }
    line.len()
}

/// The first `"` or `\\` at or after `from`, or None: the end of a quoted argument, or where it needs
/// unescaping. Quoted arguments are a few bytes long: memchr2's set-up outweighs its search.
#[inline]
pub fn quote_or_escape(line: &[u8], mut from: usize) -> Option<usize> {
    while from < line.len() {
        let w = load(line, from, 0);
        let mask = zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\')));
        if mask != 0 {
            return Some(from + (mask.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_found_anywhere() {
        for len in 0..80 {
            for nl in 0..len {
                let mut hay = vec![b'x'; len];
                hay[nl] = b'\n';
                if nl + 1 < len {
                    hay[len - 1] = b'\n';
                }
                hay.iter_mut().take(nl).for_each(|c| *c = 0x8a);
                assert_eq!(find_newline(&hay), Some(nl), "{len} {nl}");
            }
            assert_eq!(find_newline(&vec![0x0b; len]), None);
        }
    }

    #[test]
    fn every_byte_value_in_every_position() {
        for b in 0..=255u8 {
            for n in 0..20 {
                for at in 0..n {
                    let mut bytes = vec![b'a'; n];
                    bytes[at] = b;
                    let expected: Vec<usize> = (0..n).filter(|&i| bytes[i] == b'\n').collect();
                    assert_eq!(newlines(&bytes).collect::<Vec<_>>(), expected);
                    for from in 0..=n {
                        let end = (from..n).find(|&i| bytes[i].is_ascii_whitespace()).unwrap_or(n);
                        assert_eq!(word_end(&bytes, from), end, "{b} at {at} of {n}, from {from}");
                        let quote = (from..n).find(|&i| bytes[i] == b'"' || bytes[i] == b'\\');
                        assert_eq!(quote_or_escape(&bytes, from), quote, "{b} at {at} of {n}, from {from}");
                    }
                }
            }
        }
        assert_eq!(word_end(b"a\x01b\x02\x7f\xff \tc", 0), 6);
        assert_eq!(word_end(b"a\x01b\x02cdefghijkl\x03\x0c", 0), 15);
        let text = b"1\n\n22\n333\n4444\n55555\n666666\n7777777\n88888888\n\n";
        let expected: Vec<usize> = (0..text.len()).filter(|&i| text[i] == b'\n').collect();
        assert_eq!(newlines(text).collect::<Vec<_>>(), expected);
    }
}
