//! A short line split into arguments all at once, from bit masks of its bytes (bit i: the byte at i): where
//! its whitespace and quotes are, which bytes lie inside quotes (a running parity of the quotes), and so where
//! each argument starts and ends. It takes lines of up to 127 bytes without a backslash in which every quote
//! opens or closes a whole argument: nearly every line of a `commands` trace and every MONITOR line's command.
//! It gives up on any other line, which `tokenize::split_args` then reads byte by byte as before, to the same
//! arguments or to its error (a test holds the two equal on lines made to trip them).
//!
//! Why: found argument by argument, a line's words cost ~90 instructions each, a third of reading a
//! `commands` line; from the masks, about 10 (measured with callgrind).

use std::ops::{BitAnd, BitOr, BitXor, Not, Shl, Shr, Sub};

use super::tokenize::Span;

/// The longest line taken: one byte short of a u128's bits, so that the end of a word that runs to the end of
/// the line is a bit of its own (and of a u64's for the lines read in one).
pub const MAX_LEN: usize = 127;

/// Splits `line` into `out` (empty when called) as `tokenize::split_args` does, and says so; false, `out`
/// left empty, when the line is not one it takes. A line shorter than 64 bytes (a `commands` line) is read
/// in a u64 of each mask, a longer one (a MONITOR line's command) in a u128.
#[inline]
pub fn split(line: &[u8], out: &mut Vec<Span>) -> bool {
    match line.len() {
        ..64 => {
            let mut padded = [b' '; 64];
            padded[..line.len()].copy_from_slice(line);
            split_masked(line.len(), classify64(&padded), out)
        }
        64..=MAX_LEN => {
            let mut padded = [b' '; 128];
            padded[..line.len()].copy_from_slice(line);
            let (low, high) = padded.split_at(64);
            let (low, high) = (classify64(low.try_into().expect("64 bytes")), classify64(high.try_into().expect("64 bytes")));
            let join = |low: u64, high: u64| u128::from(low) | u128::from(high) << 64;
            split_masked(line.len(), Masks { space: join(low.space, high.space), quote: join(low.quote, high.quote),
                                             backslash: join(low.backslash, high.backslash) }, out)
        }
        _ => false,
    }
}

/// `split` of a line of `n` bytes from its masks, positions past its end spaces.
#[inline]
fn split_masked<B: Bits>(n: usize, Masks { space, quote, backslash }: Masks<B>, out: &mut Vec<Span>) -> bool {
    // Bit i: an odd number of quotes at or before i, so an opening quote and what follows it up to its close.
    let inside = prefix_parity(quote);
    if backslash != B::ZERO || inside >> n as u32 & B::ONE != B::ZERO {
        return false; // an escape to read, or a quote left open
    }
    let (opens, closes) = (quote & inside, quote & !inside);
    // An opening quote starts an argument (at the start or after whitespace); whitespace or the end of the
    // line (a space past it, in the masks) follows a closing one.
    if opens & !(space << 1 | B::ONE) != B::ZERO || closes & !(space >> 1) != B::ZERO {
        return false;
    }
    // The i-th start and the i-th end are the i-th argument's: a bare word from its first byte to the
    // whitespace after it, a quoted one from after its opening quote to its closing quote.
    let bare = !space & !inside & !closes;
    let mut starts = (bare & !(bare << 1)) | (opens << 1);
    let mut ends = (!bare & (bare << 1)) | closes;
    while starts != B::ZERO {
        out.push(Span::bare(starts.trailing_zeros(), ends.trailing_zeros()));
        starts = starts & (starts - B::ONE);
        ends = ends & (ends - B::ONE);
    }
    true
}

/// Bit i: an odd number of bits of `x` at or before i.
#[inline]
fn prefix_parity<B: Bits>(mut x: B) -> B {
    let mut shift = 1;
    while shift < B::WIDTH {
        x = x ^ (x << shift);
        shift *= 2;
    }
    x
}

/// What a line's bytes are, a bit each.
struct Masks<B> {
    /// ASCII whitespace (`u8::is_ascii_whitespace`), and every position past the line's end.
    space: B,
    quote: B,
    backslash: B,
}

/// The masks of 64 bytes.
#[inline]
fn classify64(b: &[u8; 64]) -> Masks<u64> {
    let mut m = Masks { space: 0, quote: 0, backslash: 0 };
    for k in 0..4 {
        let (space, quote, backslash) = classify16(b[16 * k..16 * k + 16].try_into().expect("16 bytes"));
        m.space |= u64::from(space) << (16 * k);
        m.quote |= u64::from(quote) << (16 * k);
        m.backslash |= u64::from(backslash) << (16 * k);
    }
    m
}

/// The masks' integers: u64 and u128.
trait Bits: Copy + Eq + Not<Output = Self> + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self>
    + Shl<u32, Output = Self> + Shr<u32, Output = Self> + Sub<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    const WIDTH: u32;
    fn trailing_zeros(self) -> usize;
}

macro_rules! bits {
    ($t:ty) => {
        impl Bits for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const WIDTH: u32 = <$t>::BITS;
            #[inline]
            fn trailing_zeros(self) -> usize {
                <$t>::trailing_zeros(self) as usize
            }
        }
    };
}
bits!(u64);
bits!(u128);

#[cfg(target_arch = "x86_64")]
use sse2::classify16;
#[cfg(not(target_arch = "x86_64"))]
use portable::classify16;

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};

    // SAFETY (each `unsafe` below): SSE2 is part of x86_64 itself, so its instructions run on every machine
    // this code is built for; the load reads exactly the 16 bytes its argument refers to, unaligned.

    /// 0xff where the byte is `c`.
    #[inline]
    fn eq(v: __m128i, c: u8) -> __m128i {
        unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)) }
    }

    #[inline]
    fn or(a: __m128i, b: __m128i) -> __m128i {
        unsafe { _mm_or_si128(a, b) }
    }

    /// Bit i: the high bit of byte i.
    #[inline]
    fn bits(v: __m128i) -> u16 {
        unsafe { _mm_movemask_epi8(v) as u16 }
    }

    /// (whitespace, quotes, backslashes) of 16 bytes.
    #[inline]
    pub fn classify16(b: &[u8; 16]) -> (u16, u16, u16) {
        let v = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
        let space = or(or(or(eq(v, b'\t'), eq(v, b'\n')), or(eq(v, 0x0c), eq(v, b'\r'))), eq(v, b' '));
        (bits(space), bits(eq(v, b'"')), bits(eq(v, b'\\')))
    }
}

/// The same masks a byte at a time: for other machines, and what SSE2's are tested against.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod portable {
    fn mask(b: &[u8; 16], hit: impl Fn(u8) -> bool) -> u16 {
        b.iter().enumerate().fold(0, |m, (i, &c)| m | (u16::from(hit(c)) << i))
    }

    pub fn classify16(b: &[u8; 16]) -> (u16, u16, u16) {
        (mask(b, |c| c.is_ascii_whitespace()), mask(b, |c| c == b'"'), mask(b, |c| c == b'\\'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[u8]) -> Option<Vec<&[u8]>> {
        let mut out = Vec::new();
        split(line, &mut out).then(|| out.iter().map(|s| s.get(line, &[])).collect())
    }

    /// The lines of the traces it is for are taken whole, at every length up to the longest.
    #[test]
    fn takes_plain_lines() {
        assert_eq!(args(b"HMGET st_1 11 22").unwrap(), [&b"HMGET"[..], b"st_1", b"11", b"22"]);
        assert_eq!(args(b" \t GET  k \r").unwrap(), [&b"GET"[..], b"k"]);
        assert_eq!(args(br#""HMGET" "st 1" "" "x""#).unwrap(), [&b"HMGET"[..], b"st 1", b"", b"x"]);
        assert_eq!(args(b"").unwrap(), Vec::<&[u8]>::new());
        for n in 1..=MAX_LEN {
            let word = vec![b'w'; n];
            assert_eq!(args(&word).unwrap(), [&word[..]], "{n}");
            if n >= 2 {
                let mut quoted = word.clone();
                (quoted[0], quoted[n - 1]) = (b'"', b'"');
                assert_eq!(args(&quoted).unwrap(), [&word[1..n - 1]], "{n}");
            }
        }
        assert_eq!(args(&[b'w'; MAX_LEN + 1]), None);
    }

    /// What only the byte-by-byte reading can read or refuse is left to it.
    #[test]
    fn leaves_the_rest() {
        for line in [&br#"GET "a\"b""#[..], br#"GET "a"#, br#"GET "a"b"#, br#"GET a"b""#, br#"GET "a""b""#, br#"a"b"#] {
            assert_eq!(args(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_agrees_with_the_portable_masks() {
        for b in 0..=255u8 {
            for at in 0..16 {
                let mut block = [b'x'; 16];
                block[at] = b;
                block[(at + 5) % 16] = b.wrapping_add(1);
                assert_eq!(sse2::classify16(&block), portable::classify16(&block), "{b} at {at}");
            }
        }
    }
}
