//! A line split into arguments 64 bytes at a time, from bit masks of its bytes (bit i: the byte at i): where
//! its whitespace and quotes are, which bytes lie inside quotes (a running parity of the quotes), and so where
//! each argument starts and ends, each a bit. It takes lines without a backslash in which every quote opens or
//! closes a whole argument: nearly every line of a `commands` trace and every MONITOR line's command, however
//! many fields. It gives up on any other line, which `tokenize::split_args` then reads byte by byte as before,
//! to the same arguments or to its error (a test holds the two equal on lines made to trip them).
//!
//! Why: found argument by argument (`swar::word_end`), a line's words cost ~90 instructions each, a third of
//! reading a `commands` line; from the masks, a line of six costs about 300 in all, and a line of 200 fields 20
//! fewer a field (measured with callgrind).

use super::bytes16::classify16;
use super::tokenize::Span;

/// Splits `line` into `out` (empty when called) as `tokenize::split_args` does, and says so; false when the
/// line is not one it takes (`out` then holds what it had split, for the caller to clear).
#[inline]
pub fn split(line: &[u8], out: &mut Vec<Span>) -> bool {
    // A line shorter than 64 bytes (a `commands` line) is its first 64 read from the state at a line's start,
    // which the compiler folds into the reading: 3% fewer instructions reading a `commands` trace than the loop.
    if line.len() < 64 {
        return split64(line, 0, Before::START, out).is_some_and(|b| b.inside == 0);
    }
    // Up to and including the 64 bytes that hold the end of the line (a space past its last byte), so that a
    // word running to the end ends there.
    let (mut before, mut base) = (Before::START, 0);
    while base <= line.len() {
        let Some(next) = split64(line, base, before, out) else { return false };
        (before, base) = (next, base + 64);
    }
    before.inside == 0 // else a quote was left open
}

/// What the bytes before the 64 at hand were, as bits: the last one whitespace (so is the start of the line),
/// a bare word's, inside quotes (all ones or none); an opening quote (its argument starts with the next 64),
/// a closing quote (whitespace or the end must come next). And whether the last argument runs on: its end is
/// the next end found.
#[derive(Clone, Copy)]
struct Before {
    space: u64,
    bare: u64,
    inside: u64,
    open: u64,
    close: u64,
    unended: bool,
}

impl Before {
    const START: Before = Before { space: 1, bare: 0, inside: 0, open: 0, close: 0, unended: false };
}

/// The arguments that start or end among `line[base..base + 64]`, after `before`; what these bytes leave for
/// the next 64, or None when the line is not one `split` takes.
#[inline(always)]
fn split64(line: &[u8], base: usize, before: Before, out: &mut Vec<Span>) -> Option<Before> {
    let Masks { space, quote, backslash } = masks(line, base);
    // Bit i: an odd number of quotes before i in the line, counting i: an opening quote and what follows it up
    // to its close.
    let inside = prefix_parity(quote) ^ before.inside;
    let (opens, closes) = (quote & inside, quote & !inside);
    let after_space = space << 1 | before.space;
    let before_space = space >> 1 | 1 << 63; // bit 63's next byte is checked with the next 64
    if backslash != 0 || opens & !after_space != 0 || closes & !before_space != 0 || before.close & !space & 1 != 0 {
        return None; // an escape to read, or a quote inside an argument
    }
    let bare = !space & !inside & !closes;
    let after_bare = bare << 1 | before.bare;
    let mut starts = (bare & !after_bare) | opens << 1 | before.open;
    let mut ends = (!bare & after_bare) | closes;
    let mut unended = before.unended;
    if unended && ends != 0 {
        out.last_mut().expect("an argument runs on").ends_at(base + ends.trailing_zeros() as usize);
        ends &= ends - 1;
        unended = false;
    }
    // The i-th start and the i-th end are an argument's, but for the last start, whose end may lie ahead.
    while starts != 0 {
        let start = base + starts.trailing_zeros() as usize;
        starts &= starts - 1;
        unended = ends == 0;
        out.push(Span::bare(start, base + ends.trailing_zeros() as usize));
        ends &= ends.wrapping_sub(1);
    }
    Some(Before { space: space >> 63, bare: bare >> 63, inside: 0u64.wrapping_sub(inside >> 63), open: opens >> 63,
                  close: closes >> 63, unended })
}

/// Bit i: an odd number of bits of `x` at or before i.
#[inline]
fn prefix_parity(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// What 64 bytes of a line are, a bit each.
struct Masks {
    /// ASCII whitespace (`u8::is_ascii_whitespace`), and every position past the line's end.
    space: u64,
    quote: u64,
    backslash: u64,
}

/// The masks of `line[at..at + 64]`: read where they lie, the last bytes of the line copied and padded with
/// spaces.
#[inline]
fn masks(line: &[u8], at: usize) -> Masks {
    match line.get(at..at + 64) {
        Some(block) => classify64(block.try_into().expect("64 bytes")),
        None => {
            let mut padded = [b' '; 64];
            let rest = &line[at.min(line.len())..];
            padded[..rest.len()].copy_from_slice(rest);
            classify64(&padded)
        }
    }
}

/// The masks of 64 bytes.
#[inline]
fn classify64(b: &[u8; 64]) -> Masks {
    let mut m = Masks { space: 0, quote: 0, backslash: 0 };
    for k in 0..4 {
        let (space, quote, backslash) = classify16(b[16 * k..16 * k + 16].try_into().expect("16 bytes"));
        m.space |= u64::from(space) << (16 * k);
        m.quote |= u64::from(quote) << (16 * k);
        m.backslash |= u64::from(backslash) << (16 * k);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[u8]) -> Option<Vec<&[u8]>> {
        let mut out = Vec::new();
        split(line, &mut out).then(|| out.iter().map(|s| s.get(line, &[])).collect())
    }

    /// The lines of the traces it is for are taken whole, at every length across several 64 bytes.
    #[test]
    fn takes_plain_lines() {
        assert_eq!(args(b"HMGET st_1 11 22").unwrap(), [&b"HMGET"[..], b"st_1", b"11", b"22"]);
        assert_eq!(args(b" \t GET  k \r").unwrap(), [&b"GET"[..], b"k"]);
        assert_eq!(args(br#""HMGET" "st 1" "" "x""#).unwrap(), [&b"HMGET"[..], b"st 1", b"", b"x"]);
        assert_eq!(args(b"").unwrap(), Vec::<&[u8]>::new());
        for n in 1..=300 {
            let word = vec![b'w'; n];
            assert_eq!(args(&word).unwrap(), [&word[..]], "{n}");
            if n >= 2 {
                let mut quoted = word.clone();
                (quoted[0], quoted[n - 1]) = (b'"', b'"');
                assert_eq!(args(&quoted).unwrap(), [&word[1..n - 1]], "{n}");
            }
        }
    }

    /// What only the byte-by-byte reading can read or refuse is left to it.
    #[test]
    fn leaves_the_rest() {
        for line in [&br#"GET "a\"b""#[..], br#"GET "a"#, br#"GET "a"b"#, br#"GET a"b""#, br#"GET "a""b""#, br#"a"b"#] {
            assert_eq!(args(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
