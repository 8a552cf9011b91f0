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

/// The first `byte` of `hay`: a word at a time over its first 32 bytes, memchr beyond. What is looked for in
/// a trace line is mostly near: a short line's end, the space after a MONITOR time, its client's `]`; memchr's
/// set-up costs more than such a search (it was a sixth of reading a `keys` trace, a tenth of a MONITOR log).
#[inline]
pub fn find_near(hay: &[u8], byte: u8) -> Option<usize> {
    let mut at = 0;
    while at < hay.len() && at < 32 {
        let zero = zero_bytes(load(hay, at, !byte) ^ (ONES * u64::from(byte)));
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr::memchr(byte, &hay[at.min(hay.len())..]).map(|i| at + i)
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
                assert_eq!(find_near(&hay, b'\n'), Some(nl), "{len} {nl}");
            }
            assert_eq!(find_near(&vec![0x0b; len], b'\n'), None);
        }
    }

    /// Each byte looked for, with every other byte value before it, at every position of hays short and long
    /// (the word-wide search, its padded tail, and memchr beyond 32 bytes).
    #[test]
    fn find_near_finds_the_first() {
        for target in [b'\n', b' ', b']', 0, 0xff] {
            for other in 0..=255u8 {
                for n in [0, 1, 7, 8, 9, 31, 32, 33, 40, 70] {
                    for at in 0..n {
                        let mut hay = vec![other; n];
                        hay[at] = target;
                        let first = hay.iter().position(|&c| c == target);
                        assert_eq!(find_near(&hay, target), first, "{target} in {other} at {at} of {n}");
                    }
                    let none = vec![other; n];
                    assert_eq!(find_near(&none, target), none.iter().position(|&c| c == target));
                }
            }
        }
    }

    #[test]
    fn every_byte_value_in_every_position() {
        for b in 0..=255u8 {
            for n in 0..20 {
                for at in 0..n {
                    let mut bytes = vec![b'a'; n];
                    bytes[at] = b;
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
    }
}
